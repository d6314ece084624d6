"""Workload records across the workload rules: none in the stack, odd ones a hostile program registers (never a
crash), where SARIF points, and estimates that are neither billed nor drawn."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from aicluster.plan import ClusterPlan
from aicluster.preview.engine import Capture, Resource
from aicluster.preview.locate import stack_field
from aicluster.preview.policy import evaluate
from policies.cost import monthly_budget, monthly_total
from policies.facts import Res, Stack
from policies.facts.aicluster import WORKLOAD
from policies.power import draws
from policies.rule import NotApplicable, StackRule
from tests.policies.conftest import policy, res, stack_findings
from tests.policies.resources.workloads import CHECKPOINT, DAYS, FIT, GOODPUT, RULES, capture
from tests.workload_estimates import estimate


def _pack_cost(cap: Capture) -> tuple[float, float]:
    seen: list[float] = []

    def probe(stack: Stack, ctx: Any) -> Iterator[tuple[Res | None, str]]:
        seen.append(monthly_total(stack).usd_per_month)
        seen.append(sum(d.facility_kw or 0.0 for d in draws(stack)))
        return iter(())

    evaluate(cap, None, [StackRule(dataclasses.replace(monthly_budget.POLICY.meta, name="cost-probe"), probe)])
    return seen[0], seen[1]


HOSTILE: list[dict[str, Any]] = [
    {},
    {"name": 7, "pools": "h100", "fits": "false", "memory": [1, 2], "days": "4", "targetDays": None},
    {"fits": False, "memory": {"totalBytes": "big", "capacityBytes": None}, "reason": 3},
    {"fits": False, "memory": {"totalBytes": 1e9, "capacityBytes": 2e9}},  # "fits" nothing, yet under capacity
    {"days": 10, "targetDays": 5, "gpusForTargetDays": "many", "layout": {"gpus": 2.5}},
    {"goodput": 0.5, "mtbfHours": 0, "checkpointBytes": -1, "restartSeconds": "x", "filesystems": [None, 3]},
    {"goodput": 0.5, "mtbfHours": -2.0, "checkpointBytes": 1e12, "checkpointWriteSeconds": 10},
    {"goodput": True, "checkpointBytes": True, "pools": [None, {"a": 1}]},
    {"pools": ["h100"], "cluster": "llm-dev", "checkpointBytes": float("1e400")},
]


@pytest.fixture(scope="module")
def p5_small_capture(p5_small_plan: ClusterPlan) -> Capture:
    return capture(p5_small_plan)


def test_the_workload_rules_do_not_apply_without_workloads(p5_small_plan: ClusterPlan) -> None:
    result = evaluate(capture(p5_small_plan), None, [policy(n) for n in (FIT, DAYS, GOODPUT)])
    assert result.violations == []
    assert [n["policy"] for n in result.not_applicable] == [FIT, GOODPUT, DAYS]
    assert {n["reason"] for n in result.not_applicable} == {f"no {WORKLOAD} in the stack"}


def test_the_pack_counts_no_cost_or_power_for_a_workload(p5_small_plan: ClusterPlan) -> None:
    w = estimate()
    assert w.cost_usd is not None
    assert w.cost_usd > 0
    cost, kw = _pack_cost(capture(p5_small_plan, w, estimate("llama-405b", fits=False)))
    assert cost == p5_small_plan.totals.cost_usd_per_month  # to the cent: the estimate's run cost is not a bill
    assert kw == _pack_cost(capture(p5_small_plan))[1]
    assert kw == pytest.approx(p5_small_plan.totals.power_kw_facility, abs=0.005)  # the plan rounds to 10 W


@pytest.mark.parametrize("props", HOSTILE, ids=lambda p: ",".join(sorted(p)) or "empty")
def test_odd_workload_records_never_crash_a_rule(props: dict[str, Any]) -> None:
    record = res(WORKLOAD, "w", props)
    for name in (FIT, DAYS, GOODPUT):
        try:
            messages = stack_findings(name, [record])
        except NotApplicable:  # how a rule says it has nothing to judge
            continue
        assert all(isinstance(m, str) and m for m in messages)


@pytest.mark.parametrize("props", HOSTILE, ids=lambda p: ",".join(sorted(p)) or "empty")
def test_odd_workload_records_in_a_real_stack_are_judged_not_crashed_on(
    p5_small_capture: Capture, props: dict[str, Any]
) -> None:
    cluster = next(r for r in p5_small_capture.resources if r.type == "aicluster:index:AiCluster")
    odd = Resource(f"{cluster.urn}${WORKLOAD}::odd", WORKLOAD, "odd", cluster.urn, False, copy.deepcopy(props))
    cap = Capture("aicluster", "test", [*p5_small_capture.resources, odd], {}, 0.0)
    # anything but NotApplicable raised by a rule would fail here
    result = evaluate(cap, {CHECKPOINT: {"checkpoint_seconds": 5}}, [policy(n) for n in RULES])
    assert not [v for v in result.violations if "can't run policy" in v.message]
    # no odd record gives a usable checkpoint size for the pool (an infinite one is no figure): the rule of thumb
    (checkpoint,) = [v.message for v in result.violations if v.policy == CHECKPOINT]
    assert "a 1,280 GB checkpoint takes 109 s" in checkpoint


@pytest.mark.parametrize("name", [FIT, DAYS, GOODPUT])
def test_workload_findings_point_at_the_workloads_entry(name: str) -> None:
    cluster = {"name": "llm-dev", "workloads": [{"name": "llama-8b"}, {"name": "llama-405b"}]}
    assert stack_field(cluster, name, "llm-dev-workload-llama-405b", "") == ("workloads", 1)
    assert stack_field(cluster, name, "other", "") == ("workloads",)
    assert stack_field({"name": "llm-dev"}, name, "llm-dev-workload-x", "") == ("workloads",)
