"""The registries: the spec's pool union, the planners and the component builders name the same places; the spec's
scheduler union, the scheduler planners and the scheduler component builders name the same schedulers; and shared
code asks the scheduler registry rather than testing which scheduler a stack has."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from aicluster.plan import ClusterPlan
from aicluster.plan.pools import CloudPlanner
from aicluster.plan.registry import PLANNERS, SCHEDULERS
from aicluster.spec import Pool, Scheduler
from components import BUILDERS, SCHEDULER_BUILDERS, builder, scheduler_finish, scheduler_part
from tests.conftest import ROOT


def pool_tags() -> set[str]:
    union = typing.get_args(Pool)[0]
    return {typing.get_args(m.model_fields["provider"].annotation)[0] for m in typing.get_args(union)}


def test_every_pool_model_has_a_planner_and_every_planner_a_pool_model() -> None:
    assert pool_tags() == set(PLANNERS) == {"aws", "azure", "gcp", "onprem"}


def test_planners_are_keyed_by_their_own_name() -> None:
    assert all(name == planner.name for name, planner in PLANNERS.items())


def test_every_component_builder_has_a_planner() -> None:
    assert set(BUILDERS) <= set(PLANNERS)


def test_every_component_builder_module_has_a_build_function() -> None:
    for provider in BUILDERS:
        assert callable(builder(provider)), provider


def scheduler_models() -> list[type]:
    union = typing.get_args(Scheduler)[0]
    return list(typing.get_args(union))


def scheduler_kinds() -> set[str]:
    return {typing.get_args(m.model_fields["kind"].annotation)[0] for m in scheduler_models()}


def test_every_scheduler_model_has_a_planner_and_every_planner_a_scheduler_model() -> None:
    assert scheduler_kinds() == set(SCHEDULERS) == {"slurm", "kubernetes"}


def test_scheduler_planners_are_keyed_by_their_own_kind() -> None:
    assert all(kind == planner.kind for kind, planner in SCHEDULERS.items())


def test_the_plan_names_every_scheduler() -> None:
    assert set(typing.get_args(ClusterPlan.model_fields["scheduler"].annotation)) == set(SCHEDULERS)


def test_every_scheduler_has_its_component_builder() -> None:
    assert set(SCHEDULER_BUILDERS) == set(SCHEDULERS)
    for kind in SCHEDULER_BUILDERS:
        assert callable(scheduler_finish(kind)), kind


@pytest.mark.parametrize("kind", sorted(SCHEDULER_BUILDERS))
def test_every_scheduler_builds_its_part_in_every_cloud(kind: str) -> None:
    """Each cloud's builder asks the stack's scheduler for its part there (components.scheduler_part)."""
    clouds = {name for name, planner in PLANNERS.items() if isinstance(planner, CloudPlanner)}
    parts = importlib.import_module(SCHEDULER_BUILDERS[kind]).PARTS
    assert set(parts) == clouds
    for cloud in clouds:
        assert callable(scheduler_part(kind, cloud)), (kind, cloud)


# Where a scheduler's own code lives, and may test which scheduler it has: its folders, the spec's models and the
# registry that lists them.
SCHEDULER_CODE = (
    "aicluster/schedulers",
    "aicluster/spec/slurm.py",
    "aicluster/spec/kubernetes.py",
    "aicluster/plan/registry.py",
    "components/slurm",
    "components/kubernetes",
)


def _is_scheduler_field(node: ast.expr) -> bool:
    """`x.kind`, `x.scheduler`, `kind` or `scheduler`: what a scheduler's kind is compared through."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    return name in ("kind", "scheduler")


def _kinds_in(node: ast.expr, kinds: set[str]) -> bool:
    """A scheduler's kind as a string, alone or in a tuple, list or set."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return any(isinstance(i, ast.Constant) and i.value in kinds for i in items)


def _type_names(node: ast.expr) -> set[str]:
    """The class names an isinstance() or a case pattern names: `A`, `spec.A`, `(A, B)`, `A | B`."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Tuple):
        return {n for e in node.elts for n in _type_names(e)}
    if isinstance(node, ast.BinOp):
        return _type_names(node.left) | _type_names(node.right)
    return set()


def scheduler_branches(source: str, models: set[str], kinds: set[str]) -> list[int]:
    """The lines of `source` that test which scheduler a stack has: isinstance() on a scheduler model (or a case
    pattern of one), or a comparison of a `kind`/`scheduler` with a scheduler's kind."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            if len(node.args) == 2 and _type_names(node.args[1]) & models:
                found.append(node.lineno)
        elif isinstance(node, ast.MatchClass) and _type_names(node.cls) & models:
            found.append(node.lineno)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_kinds_in(o, kinds) for o in operands) and any(_is_scheduler_field(o) for o in operands):
                found.append(node.lineno)
    return found


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        pytest.param("if isinstance(spec.scheduler, SlurmScheduler): pass", [1], id="isinstance"),
        pytest.param("ok = isinstance(s, (KubernetesScheduler, int))", [1], id="isinstance-tuple"),
        pytest.param("ok = isinstance(s, spec.SlurmScheduler | None)", [1], id="isinstance-union"),
        pytest.param("x = 1\nif ctx.spec.scheduler.kind == 'kubernetes': pass", [2], id="kind-equals"),
        pytest.param("k = plan.scheduler != 'slurm'", [1], id="plan-scheduler"),
        pytest.param("k = kind in ('slurm', 'gpu')", [1], id="kind-in"),
        pytest.param("match s:\n    case KubernetesScheduler(): pass", [2], id="match"),
        pytest.param("ok = addon.kind == 'helm' and isinstance(p, OnpremPool)", [], id="other-kinds"),
        pytest.param("k = SCHEDULERS[spec.scheduler.kind].pool_images", [], id="the-registry"),
    ],
)
def test_the_structure_check_finds_scheduler_branches(source: str, lines: list[int]) -> None:
    names = {m.__name__ for m in scheduler_models()}
    assert scheduler_branches(source, names, set(SCHEDULERS)) == lines


def test_shared_code_never_tests_which_scheduler_a_stack_has() -> None:
    """Outside the scheduler folders and the registry, code asks SCHEDULERS (or SCHEDULER_BUILDERS) what a scheduler
    does: a new scheduler is new files and a line in each registry, never a new branch in shared code."""
    names = {m.__name__ for m in scheduler_models()}
    skip = tuple(ROOT / p for p in SCHEDULER_CODE)
    files = [ROOT / "__main__.py", *(ROOT / "aicluster").rglob("*.py"), *(ROOT / "components").rglob("*.py")]
    branches = [
        f"{f.relative_to(ROOT)}:{line}"
        for f in files
        if not any(f == s or s in f.parents for s in skip)
        for line in scheduler_branches(f.read_text(encoding="utf-8"), names, set(SCHEDULERS))
    ]
    assert branches == []


def test_the_structure_check_skips_only_what_exists() -> None:
    for path in SCHEDULER_CODE:
        assert (ROOT / path).exists(), path


# the SDK each provider's components import; a stack loads only its own providers'
SDKS = {"aws": "pulumi_aws", "azure": "pulumi_azure_native", "gcp": "pulumi_gcp"}
PREVIEW_MODULES = """
import sys
from aicluster.cli import main
code = main(["-C", sys.argv[1], "-q", "preview", sys.argv[2], "--json", sys.argv[3]])
print(" ".join(sorted(m for m in sys.modules if m.startswith(("pulumi_", "components.")))))
sys.exit(code)
"""


@pytest.mark.parametrize(("stack", "providers"), [("p5-small", {"aws"}), ("gcp-a3mega-slurm", {"gcp"})])
def test_a_preview_imports_only_the_components_and_sdks_of_its_providers(
    stack: str, providers: set[str], tmp_path: Path
) -> None:
    """In a fresh interpreter (this one has imported every provider already): pulumi_gcp alone takes over a second
    to import, so a stack without GCP must not load it, nor any other provider it does not use."""
    proc = subprocess.run(
        [sys.executable, "-c", PREVIEW_MODULES, str(ROOT), stack, str(tmp_path / "p.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.split())
    for provider, sdk in SDKS.items():
        assert (sdk in loaded) == (provider in providers), f"{stack}: {sdk} loaded={sdk in loaded}"
        assert (f"components.{provider}" in loaded) == (provider in providers), provider
