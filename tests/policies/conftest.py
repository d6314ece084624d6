"""What the rule tests share: real captures to mutate (the p5-small, on-prem and hybrid example stacks as the offline
engine records them), hand-built resources (`res`; per cloud in tests/policies/resources), and the helpers that judge
them with one policy and change one property."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from aicluster.plan import ClusterPlan
from aicluster.preview import PolicyResult, Resource, plan_stack
from aicluster.preview.engine import Capture, run_program
from aicluster.preview.policy import evaluate
from aicluster.stackfile import find_project, read_stack
from policies import POLICIES, ResourceRule, Rule, StackRule
from policies.facts import Res, Stack
from tests.conftest import ROOT

_CAPTURES: dict[str, Capture] = {}


def capture_of(stack: str) -> Capture:
    """The example stack's program run under the capturing mocks, as the pack receives it: a fresh deep copy each
    call (tests may mutate it), of one run per stack per test process (a pure function of the stack and the code;
    many tests judge the same example stacks)."""
    if stack not in _CAPTURES:
        st = read_stack(find_project(ROOT), stack)
        _CAPTURES[stack] = run_program(st.project.root, st.project.name, st.stack, st.engine_config(), st.secret_keys)
    return copy.deepcopy(_CAPTURES[stack])


@pytest.fixture(scope="session")
def p5_small() -> Capture:
    return capture_of("p5-small")


@pytest.fixture(scope="session")
def p5_small_plan() -> ClusterPlan:
    """p5-small's plan, for captures of the AiCluster component with hand-built workload estimates."""
    return plan_stack(read_stack(find_project(ROOT), "p5-small"))


@pytest.fixture(scope="session")
def dgx() -> Capture:
    return capture_of("onprem-dgx-h100")


@pytest.fixture(scope="session")
def hybrid() -> Capture:
    return capture_of("hybrid-burst")


@pytest.fixture(scope="session")
def three_cloud() -> Capture:
    return capture_of("three-cloud")


@pytest.fixture
def a4x(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    """A4X on GCP (GB200 NVL72 as VMs): 36 nodes in two sub-blocks (tests/policies/resources/nvlink.py)."""
    from tests.policies.resources.nvlink import A4X, capture

    return capture("a4x", A4X, tmp_path_factory.mktemp("a4x"))


@pytest.fixture
def gb200_site(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    """An owned site of 8 DGX GB200 NVL72 racks in liquid-cooled positions (tests/policies/resources/nvlink.py)."""
    from tests.policies.resources.nvlink import GB200_SITE, capture

    return capture("gb200su", GB200_SITE, tmp_path_factory.mktemp("gb200su"))


# p5-small's resources, as the one-mutation cases name them
LT, ASG, CTL_LT, CTL = "llm-dev-h100-lt", "llm-dev-h100-asg", "llm-dev-slurmctld-lt", "llm-dev-slurmctld-vm"
NODE_SG, EFA_SG, FS = "llm-dev-us-east-1-node", "llm-dev-us-east-1-efa", "llm-dev-scratch-fs"
CLUSTER = "llm-dev"
NO_EFA = {LT: lambda i: i.update(networkInterfaces=[{"deviceIndex": 0}])}  # p5-small's GPU nodes without EFA


def policy(name: str) -> Rule:
    return next(p for p in POLICIES if p.name == name)


def res(type_: str, name: str, props: dict[str, Any], **links: list[Res]) -> Res:
    """A resource as the engine hands it to the pack; `links` are its property dependencies."""
    r = Res(type_, name, f"urn:pulumi:s::p::{type_}::{name}", props)
    r.property_dependencies = dict(links)
    return r


def findings(name: str, type_: str, props: dict[str, Any], config: dict[str, Any] | None = None) -> list[str]:
    """What a resource policy reports on one resource named x."""
    found: list[str] = []
    rule = policy(name)
    assert isinstance(rule, ResourceRule)
    assert rule.types is None or type_ in rule.types
    rule.run(res(type_, "x", props), config or {}, lambda m, u=None: found.append(m))
    return found


def stack_findings(name: str, resources: Sequence[Res], config: dict[str, Any] | None = None) -> list[str]:
    """What a stack policy reports on these resources."""
    found: list[str] = []
    rule = policy(name)
    assert isinstance(rule, StackRule)
    rule.run(Stack(resources), config or {}, lambda m, u=None: found.append(m))
    return found


Mutation = Callable[[dict[str, Any]], None]


def mutated(capture: Capture, changes: dict[str, Mutation]) -> Capture:
    """A copy of the capture with `changes[name](inputs)` applied to the named resources."""
    resources: list[Resource] = copy.deepcopy(capture.resources)
    for r in resources:
        if r.name in changes and not r.type.startswith("aicluster:aws"):
            changes[r.name](r.inputs)
    return Capture(capture.project, capture.stack, resources, capture.outputs, capture.seconds)


def judge(capture: Capture, names: Sequence[str], config: dict[str, Any] | None = None) -> PolicyResult:
    return evaluate(capture, config, [policy(n) for n in names])


def messages(result: PolicyResult) -> list[str]:
    return [v.message for v in result.violations]


def set_at(path: str, value: Any) -> Any:
    """A mutation setting the input at a dotted path (list indices as numbers); DELETE removes it."""
    keys = path.split(".")

    def apply(inputs: dict[str, Any]) -> None:
        cur: Any = inputs
        for k in keys[:-1]:
            cur = cur[int(k)] if isinstance(cur, list) else cur.setdefault(k, {})
        if value is DELETE:
            cur.pop(keys[-1], None)
        elif isinstance(cur, list):
            cur[int(keys[-1])] = value
        else:
            cur[keys[-1]] = value

    return apply


DELETE = object()


def replaced(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy of the props with keys set (None: removed)."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out
