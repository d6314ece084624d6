"""The layering rules of DESIGN.md, checked by parsing imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("aicluster", "components", "policies")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    pkg = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            found.add(mod)
    return {m for m in found if m.split(".")[0] in OURS}


def modules(folder: str) -> list[Path]:
    """The Python files under `folder`, or matching it where it is a glob pattern (`aicluster/schedulers/*/plan.py`)."""
    if any(c in folder for c in "*?["):
        return sorted(ROOT.glob(folder))
    return sorted((ROOT / folder).rglob("*.py"))


def allowed(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


RULES = [
    pytest.param("aicluster/spec", ("aicluster.spec",), id="spec-is-a-leaf"),
    pytest.param("aicluster/catalog", ("aicluster.catalog",), id="catalog-is-a-leaf"),
    pytest.param("aicluster/stackfile.py", ("aicluster.spec",), id="stackfile-reads-files-into-the-spec"),
    pytest.param(
        "aicluster/plan",
        (
            "aicluster.plan",
            "aicluster.providers",
            "aicluster.schedulers",
            "aicluster.spec",
            "aicluster.catalog",
            "aicluster.sizing",
        ),
        id="plan",
    ),
    pytest.param("aicluster/sizing", ("aicluster.sizing", "aicluster.spec", "aicluster.catalog"), id="sizing-is-pure"),
    pytest.param(
        "aicluster/providers",
        (
            "aicluster.providers",
            "aicluster.spec",
            "aicluster.catalog",
            *(
                f"aicluster.plan.{m}"
                for m in ("context", "models", "network", "pools", "groups", "fabric", "racks", "nvlink")
            ),
        ),
        id="providers-import-plan-submodules-never-the-package",
    ),
    *(
        pytest.param(
            planner,
            (
                "aicluster.schedulers",
                "aicluster.providers.base",
                "aicluster.spec",
                "aicluster.catalog",
                *(f"aicluster.plan.{m}" for m in ("context", "models", "network", "pools", "placement", "nvlink")),
            ),
            id=f"schedulers-{name}-import-plan-submodules-never-the-package",
        )
        for name, planner in (
            ("base", "aicluster/schedulers/base.py"),
            ("plan", "aicluster/schedulers/*/plan.py"),
            ("describe", "aicluster/schedulers/*/describe.py"),
        )
    ),
    pytest.param(
        "aicluster/schedulers/*/render.py",
        ("aicluster.schedulers", "aicluster.plan", "aicluster.catalog", "aicluster.render"),
        id="scheduler-renderers-read-the-plan",
    ),
    pytest.param(
        "components",
        # the plan carries the sizing estimates (aicluster.sizing.models: pure data); never the estimators
        (
            "components",
            "aicluster.plan",
            "aicluster.providers",
            "aicluster.schedulers",
            "aicluster.render",
            "aicluster.sizing.models",
        ),
        id="components-read-the-plan",
    ),
    pytest.param("policies", ("policies", "aicluster.catalog"), id="policies-only-catalog"),
    # the cloud readers make facts; the rules judge them: facts never reach back into a rule (nor the providers)
    pytest.param("policies/facts", ("policies.facts", "aicluster.catalog"), id="policy-facts-read-no-rules"),
    pytest.param("aicluster/report", ("aicluster.report",), id="reports-read-only-the-preview-json"),
    # the change classification reads two preview JSONs and the catalog's change rules (and names nodes as the plan)
    pytest.param(
        "aicluster/changes", ("aicluster.changes", "aicluster.catalog", "aicluster.plan.models"), id="changes-from-data"
    ),
    pytest.param("aicluster/burst", ("aicluster.burst",), id="burst-programs-are-self-contained"),
    # copied onto each node alone and run by slurmd: stdlib and pydantic only
    pytest.param("aicluster/health", ("aicluster.health",), id="health-checker-is-self-contained"),
    # shipped into a stock Python image in a ConfigMap, the two files alone: the standard library and each other only
    pytest.param(
        "aicluster/repair/quarantine.py", ("aicluster.repair.breaker",), id="quarantine-controller-ships-alone"
    ),
    pytest.param("aicluster/repair/breaker.py", (), id="circuit-breaker-is-a-leaf"),
    # a pure plan -> files renderer, as the inventory: the plan's models and the catalog's thresholds only
    pytest.param(
        "aicluster/monitoring",
        # the Kubernetes scrape jobs are shared with the AMP scraper component (aicluster.render.monitoring)
        ("aicluster.monitoring", "aicluster.catalog", "aicluster.plan.models", "aicluster.render.monitoring"),
        id="monitoring-renders-the-plan",
    ),
]


@pytest.mark.parametrize(("folder", "may_import"), RULES)
def test_layering(folder: str, may_import: tuple[str, ...]) -> None:
    target = ROOT / folder
    files = [target] if target.is_file() else modules(folder)
    bad = {f"{f.relative_to(ROOT)} imports {m}" for f in files for m in imports_of(f) if not allowed(m, may_import)}
    assert not bad


def test_components_never_read_pulumi_config() -> None:
    for f in modules("components"):
        assert "pulumi.Config" not in f.read_text(encoding="utf-8"), f


def test_the_layering_rules_match_files() -> None:
    """A rule whose folder or pattern matches no file checks nothing (a moved or renamed module)."""
    for rule in RULES:
        folder = str(rule.values[0])
        assert modules(folder) or (ROOT / folder).is_file(), rule.id


@pytest.mark.parametrize(
    "module",
    [
        *sorted(f"providers.{p.parent.name}.plan" for p in (ROOT / "aicluster" / "providers").glob("*/plan.py")),
        "providers.base",
        *sorted(
            f"schedulers.{p.parent.name}.{p.stem}"
            for p in (ROOT / "aicluster" / "schedulers").glob("*/*.py")
            if p.stem != "__init__"
        ),
        "schedulers.base",
        *sorted(f"spec.{p.stem}" for p in (ROOT / "aicluster" / "spec").glob("*.py") if p.stem != "__init__"),
    ],
)
def test_each_planner_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    """The registries import provider and scheduler modules while aicluster.plan initialises, and the spec imports
    its parts while aicluster.spec does: no import cycle may hide there."""
    done = subprocess.run(
        [sys.executable, "-c", f"import aicluster.{module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
