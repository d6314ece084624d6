"""One cost model: the budget policy judges the monthly total the plan, the preview, the reports and the diff
show, to the cent, for every example stack; an unpriced item is named everywhere, never counted as 0."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from aicluster.catalog.pricing import CostTotal
from aicluster.preview import plan_stack
from aicluster.preview.engine import Capture
from aicluster.preview.policy import evaluate
from aicluster.stackfile import find_project, read_stack
from policies.cost import monthly_budget, monthly_total
from policies.facts import Res, Stack
from policies.rule import StackRule
from tests.conftest import ROOT
from tests.policies.conftest import capture_of, judge, messages, mutated

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
BUDGET = "aicluster-cluster-enforce-monthly-budget"


def pack_total(capture: Capture) -> CostTotal:
    """The monthly cost as the policy pack's budget rule counts it from the captured resources."""
    seen: list[CostTotal] = []

    def probe(stack: Stack, ctx: Any) -> Iterator[tuple[Res | None, str]]:
        seen.append(monthly_total(stack))
        return iter(())

    evaluate(capture, None, [StackRule(dataclasses.replace(monthly_budget.POLICY.meta, name="cost-probe"), probe)])
    return seen[0]


@pytest.mark.parametrize("name", STACKS)
def test_the_pack_costs_every_example_stack_as_the_plan_does(name: str) -> None:
    planned = plan_stack(read_stack(find_project(ROOT), name)).totals
    pack = pack_total(capture_of(name))
    assert pack.usd_per_month == planned.cost_usd_per_month  # to the cent, not approximately
    assert bool(pack.unpriced) == bool(planned.unpriced)


@pytest.fixture(scope="module")
def mixed_spot() -> tuple[float, Capture]:
    """mixed-spot has spot and on-demand pools, FSx and EFS (billed per GiB stored) and a controller."""
    return plan_stack(read_stack(find_project(ROOT), "mixed-spot")).totals.cost_usd_per_month, capture_of("mixed-spot")


@pytest.mark.parametrize(
    ("below", "fails"),
    [
        pytest.param(0.01, True, id="a-cent-under-the-total-fails"),
        pytest.param(0.0, False, id="exactly-the-total-passes"),
    ],
)
def test_the_budget_is_judged_on_the_displayed_total(
    mixed_spot: tuple[float, Capture], below: float, fails: bool
) -> None:
    planned, capture = mixed_spot
    result = judge(capture, [BUDGET], {BUDGET: {"monthly_usd": round(planned - below, 2)}})
    assert bool(messages(result)) == fails
    if fails:
        assert f"monthly cost ${planned:,.2f} exceeds" in messages(result)[0]


def test_efs_is_in_the_budget_at_the_size_it_was_planned_for(mixed_spot: tuple[float, Capture]) -> None:
    planned, capture = mixed_spot
    efs = next(f for f in plan_stack(read_stack(find_project(ROOT), "mixed-spot")).filesystems if f.service == "efs")
    assert efs.cost_usd_per_month  # 2 TiB of EFS Standard
    assert pack_total(capture).usd_per_month == planned


def test_efs_of_undeclared_size_is_named_unpriced_not_left_out(mixed_spot: tuple[float, Capture]) -> None:
    """A program that does not declare what its EFS was planned for: the pack cannot size it, so it says so."""
    planned, capture = mixed_spot
    cluster = next(r for r in capture.resources if r.type == "aicluster:index:AiCluster")
    stripped = mutated(capture, {cluster.name: lambda inputs: inputs.pop("filesystems")})
    cost = pack_total(stripped)
    assert any("efs" in what and "size not declared" in what for what in cost.unpriced)
    assert cost.usd_per_month < planned
    (finding,) = messages(judge(stripped, ["aicluster-cluster-missing-prices"]))
    assert "(size not declared) efs" in finding
    assert " + unpriced items (and the budget check) leaves them out" in finding
