"""Workload policies: fit, target days, goodput, and the checkpoint rule reading a workload's real checkpoint size.

The stack is p5-small (4 x p5.48xlarge = 32 H100, FSx for Lustre of 48,000 GiB x 250 MB/s/TiB = 11.7 GB/s) run under the
capturing mocks with hand-built estimates (tests/workload_estimates.py) on its plan, as the planner will hand them.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from aicluster.plan import ClusterPlan
from aicluster.preview import PolicyResult, plan_stack
from aicluster.preview.engine import Capture, Resource, run
from aicluster.preview.locate import stack_field
from aicluster.preview.policy import evaluate
from aicluster.sizing.models import WorkloadEstimate
from aicluster.stackfile import find_project, read_stack
from components import AiCluster
from policies.cost import monthly_budget, monthly_total
from policies.facts import Res, Stack
from policies.facts.aicluster import WORKLOAD
from policies.power import draws
from policies.rule import NotApplicable, StackRule
from policies.workloads import DEFAULT_MIN_GOODPUT
from tests.conftest import ROOT
from tests.workload_estimates import estimate, reliability

from .conftest import policy, res, stack_findings

FIT = "aicluster-workload-enforce-fit"
DAYS = "aicluster-workload-enforce-target-days"
GOODPUT = "aicluster-workload-enforce-min-goodput"
CHECKPOINT = "aicluster-filesystem-enforce-checkpoint-throughput"
RULES = [FIT, DAYS, GOODPUT, CHECKPOINT]


@pytest.fixture(scope="module")
def p5_small() -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), "p5-small"))


@pytest.fixture(scope="module")
def p5_small_capture(p5_small: ClusterPlan) -> Capture:
    return capture(p5_small)


def capture(cluster_plan: ClusterPlan, *workloads: WorkloadEstimate) -> Capture:
    with_workloads = cluster_plan.model_copy(update={"workloads": workloads})
    return run(lambda: AiCluster(with_workloads.name, {"plan": with_workloads}), "aicluster", "test")


def judged(cap: Capture, name: str, config: dict[str, Any] | None = None) -> PolicyResult:
    return evaluate(cap, {name: config} if config else None, [policy(name)])


def found(result: PolicyResult) -> list[tuple[str, str, str]]:
    return [(v.resource, v.enforcement, v.message) for v in result.violations]


# -- fit ------------------------------------------------------------------------------------------------------------


def test_a_workload_that_fits_passes(p5_small: ClusterPlan) -> None:
    result = judged(capture(p5_small, estimate()), FIT)
    assert result.violations == []
    assert result.passed == [FIT]


def test_a_workload_that_fits_no_layout_is_mandatory_with_shortfall_and_reason(p5_small: ClusterPlan) -> None:
    w = estimate("llama-405b", fits=False)
    assert found(judged(capture(p5_small, estimate(), w), FIT)) == [
        (
            "llm-dev-workload-llama-405b",
            "mandatory",
            "workload llama-405b fits no layout on h100 (32 GPUs of p5.48xlarge): the closest layout needs 93.1 GB "
            "per GPU of 80.0 GB (13.1 GB short); 405B parameters' states alone need 5.3 TB; 32 GPUs hold 2.6 TB: use "
            "at least 128 H100s",
        )
    ]


def test_the_fit_finding_keeps_the_estimators_fixes_and_says_the_shortfall_once(p5_small: ClusterPlan) -> None:
    """The estimator's reason names only fixes that would change something (here: the GPU budget caps 16 of the
    pools' 32, ZeRO-3 and full recompute already given); the finding adds no generic advice to it."""
    reason = (
        "nothing fits: the smallest layout (TP8 x PP1 x DP2, ZeRO-3, recompute full, micro-batch 1) needs 109.8 GB "
        "per GPU of 85.5 GB (24.3 GB short); would fit with: raise targets.gpus to 32 (the pools have 32)"
    )
    w = estimate("llama-405b", fits=False).model_copy(update={"reason": reason})
    ((_, _, message),) = found(judged(capture(p5_small, estimate(), w), FIT))
    assert message == f"workload llama-405b fits no layout on h100 (32 GPUs of p5.48xlarge): {reason}"
    assert message.count("short") == 1
    assert "zero_stage" not in message


def test_the_workload_rules_do_not_apply_without_workloads(p5_small: ClusterPlan) -> None:
    result = evaluate(capture(p5_small), None, [policy(n) for n in (FIT, DAYS, GOODPUT)])
    assert result.violations == []
    assert [n["policy"] for n in result.not_applicable] == [FIT, GOODPUT, DAYS]
    assert {n["reason"] for n in result.not_applicable} == {f"no {WORKLOAD} in the stack"}


# -- target days ----------------------------------------------------------------------------------------------------


def test_a_workload_within_its_target_days_passes(p5_small: ClusterPlan) -> None:
    result = judged(capture(p5_small, estimate(days=4.4, target_days=5.0)), DAYS)
    assert (result.violations, result.passed) == ([], [DAYS])


def test_a_workload_over_its_target_days_names_the_gpus_it_would_need(p5_small: ClusterPlan) -> None:
    late = estimate(days=4.4, target_days=3.0, gpus_for_target_days=48)
    assert found(judged(capture(p5_small, late), DAYS)) == [
        (
            "llm-dev-workload-llama-8b",
            "advisory",
            "workload llama-8b takes an estimated 4.4 days on 32 GPUs, over its target of 3.0 days; it would need "
            "about 48 GPUs, more than the 32 its pools have: add nodes (pools[].nodes) or relax "
            "workloads[].targets.days",
        )
    ]


def test_target_days_does_not_apply_when_no_workload_sets_one(p5_small: ClusterPlan) -> None:
    result = judged(capture(p5_small, estimate()), DAYS)
    assert result.not_applicable == [{"policy": DAYS, "reason": "no sized workload sets targets.days"}]


# -- goodput --------------------------------------------------------------------------------------------------------

# Llama 3 405B's scale (sizing.md 3.5, bandwidth -> interval -> waste): a 5.29 TB checkpoint (MLPerf Storage
# Table 2) on 16,384 H100s (MTBF 50,700 / 16,384 = 3.09 h) at 200 GB/s loses 6.9% to checkpoints and rework; with a
# 10-minute restart (600 s / 11,140 s = 5.4%) goodput is 1 - 0.069 - 0.054 = 87.7%, under the 90% Llama 3 reached.
LLAMA3_405B = reliability(gpus=16_384, checkpoint_bytes=5.29e12, write_gb_s=200.0, restart_s=600.0)


def test_published_405b_checkpoint_waste_is_what_the_goodput_rule_reads() -> None:
    # sizing.md 3.5 (derived from Young): 405B / 16,384 GPUs, 5.29 TB at 200 GB/s: write 26 s, interval 12.5 min,
    # waste 6.9%
    assert LLAMA3_405B.write_s == pytest.approx(26.45, abs=0.1)
    assert LLAMA3_405B.interval_s is not None
    # the table's 12.5 min lies between Daly's sqrt(2 write MTBF) - write (12.35) and Young's (12.8), used here
    assert LLAMA3_405B.interval_s / 60 == pytest.approx(12.5, abs=0.35)
    assert LLAMA3_405B.goodput is not None
    assert 1 - LLAMA3_405B.goodput - 600 / (LLAMA3_405B.mtbf_h * 3600) == pytest.approx(0.069, abs=0.001)


def test_goodput_over_the_floor_passes(p5_small: ClusterPlan) -> None:
    result = judged(capture(p5_small, estimate()), GOODPUT)
    assert (result.violations, result.passed) == ([], [GOODPUT])
    assert DEFAULT_MIN_GOODPUT == 0.9


def test_goodput_under_the_floor_gives_write_time_interval_and_the_speed_that_meets_it(p5_small: ClusterPlan) -> None:
    w = estimate("llama-405b", gpus=16_384, rel=LLAMA3_405B)
    # budget 1 - 0.9 - 600/11,140 = 0.0461; write <= 0.0461^2 x 11,140 / 2 = 11.8 s; 5,290 GB / 11.8 s = 446 GB/s
    assert found(judged(capture(p5_small, w), GOODPUT)) == [
        (
            "llm-dev-workload-llama-405b",
            "advisory",
            "workload llama-405b expects 87.7% goodput, under the 90% floor: a 5,290.0 GB checkpoint takes 26 s at "
            "200 GB/s on scratch, written every 12.8 min, with an interruption every 3.1 h; about 446 GB/s of "
            "checkpoint writes would meet it: raise the file system's capacity_tib or throughput_mb_s_per_tib",
        )
    ]


def test_goodput_lost_to_restarts_alone_says_no_speed_meets_it(p5_small: ClusterPlan) -> None:
    w = estimate("llama-405b", gpus=16_384, rel=reliability(gpus=16_384, checkpoint_bytes=5.29e12, restart_s=1500.0))
    (message,) = [m for _, _, m in found(judged(capture(p5_small, w), GOODPUT))]
    assert message.endswith(
        "no write speed meets it: restarts alone lose 13.5% of the time; run on fewer GPUs or lower min_goodput"
    )


def test_min_goodput_is_configurable(p5_small: ClusterPlan) -> None:
    w = estimate("llama-405b", gpus=16_384, rel=LLAMA3_405B)
    assert judged(capture(p5_small, w), GOODPUT, {"min_goodput": 0.85}).violations == []


def test_goodput_does_not_apply_without_a_parallel_file_system(p5_small: ClusterPlan) -> None:
    result = judged(capture(p5_small, estimate(rel=reliability(gpus=32, write_gb_s=None))), GOODPUT)
    assert result.not_applicable == [
        {
            "policy": GOODPUT,
            "reason": "no sized workload has a goodput estimate (none writes to a parallel file system)",
        }
    ]


# -- the checkpoint rule with a workload ----------------------------------------------------------------------------


def test_checkpoint_rule_uses_the_workloads_checkpoint_size_and_says_so(p5_small: ClusterPlan) -> None:
    # 105 GB (Llama3 8B, MLPerf Storage) at 11.7 GB/s: 9 s, over a 5 s target
    assert found(judged(capture(p5_small, estimate()), CHECKPOINT, {"checkpoint_seconds": 5})) == [
        (
            "llm-dev-scratch-fs",
            "advisory",
            "llm-dev-h100-asg (32 GPUs in us-east-1): a 105 GB checkpoint (workload llama-8b's training state, as "
            "sized) takes 9 s at 11.7 GB/s on llm-dev-scratch-fs, over the 5 s target; raise the file system's "
            "capacity or throughput_mb_s_per_tib",
        )
    ]


def test_checkpoint_rule_keeps_the_rule_of_thumb_without_a_workload(p5_small: ClusterPlan) -> None:
    # half of 32 x 80 GB = 1,280 GB at 11.7 GB/s: 109 s
    assert [m for _, _, m in found(judged(capture(p5_small), CHECKPOINT, {"checkpoint_seconds": 5}))] == [
        "llm-dev-h100-asg (32 GPUs in us-east-1): a 1,280 GB checkpoint takes 109 s at 11.7 GB/s on "
        "llm-dev-scratch-fs, over the 5 s target; raise the file system's capacity or throughput_mb_s_per_tib"
    ]


def test_checkpoint_rule_ignores_a_workload_on_other_pools(p5_small: ClusterPlan) -> None:
    elsewhere = estimate(pools=("a3",))
    (message,) = [m for _, _, m in found(judged(capture(p5_small, elsewhere), CHECKPOINT, {"checkpoint_seconds": 5}))]
    assert "a 1,280 GB checkpoint takes 109 s" in message


def test_configured_checkpoint_gb_wins_over_the_workload(p5_small: ClusterPlan) -> None:
    cap = capture(p5_small, estimate())
    assert found(judged(cap, CHECKPOINT, {"checkpoint_seconds": 5, "checkpoint_gb": 50})) == []
    (message,) = [m for _, _, m in found(judged(cap, CHECKPOINT, {"checkpoint_seconds": 3, "checkpoint_gb": 50}))]
    assert "a 50 GB checkpoint takes 4 s" in message
    assert "workload" not in message


def test_the_largest_workload_on_the_pools_sets_the_checkpoint(p5_small: ClusterPlan) -> None:
    big = estimate("llama-70b", rel=reliability(gpus=32, checkpoint_bytes=912e9))  # MLPerf Storage Llama3 70B
    (message,) = [
        m for _, _, m in found(judged(capture(p5_small, estimate(), big), CHECKPOINT, {"checkpoint_seconds": 5}))
    ]
    assert "a 912 GB checkpoint (workload llama-70b's training state, as sized) takes 78 s" in message


# -- estimates are not resources: cost and power ----------------------------------------------------------------------


def _pack_cost(cap: Capture) -> tuple[float, float]:
    seen: list[float] = []

    def probe(stack: Stack, ctx: Any) -> Iterator[tuple[Res | None, str]]:
        seen.append(monthly_total(stack).usd_per_month)
        seen.append(sum(d.facility_kw or 0.0 for d in draws(stack)))
        return iter(())

    evaluate(cap, None, [StackRule(dataclasses.replace(monthly_budget.POLICY.meta, name="cost-probe"), probe)])
    return seen[0], seen[1]


def test_the_pack_counts_no_cost_or_power_for_a_workload(p5_small: ClusterPlan) -> None:
    w = estimate()
    assert w.cost_usd is not None
    assert w.cost_usd > 0
    cost, kw = _pack_cost(capture(p5_small, w, estimate("llama-405b", fits=False)))
    assert cost == p5_small.totals.cost_usd_per_month  # to the cent: the estimate's run cost is not a bill
    assert kw == _pack_cost(capture(p5_small))[1]
    assert kw == pytest.approx(p5_small.totals.power_kw_facility, abs=0.005)  # the plan rounds to 10 W


# -- a hostile program never crashes the pack -------------------------------------------------------------------------

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


def test_a_fit_finding_without_memory_figures_still_names_the_workload() -> None:
    assert stack_findings(FIT, [res(WORKLOAD, "llm-dev-workload-w", {"name": "w", "fits": False})]) == [
        "workload w fits no layout on its pools: no layout's memory fits the GPUs; the estimate gives no reason. "
        "Add GPUs (pools[].nodes) or a larger GPU (pools[].instance_type), or let workloads[].training use "
        "recompute or a higher zero_stage"
    ]


# -- where SARIF points ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [FIT, DAYS, GOODPUT])
def test_workload_findings_point_at_the_workloads_entry(name: str) -> None:
    cluster = {"name": "llm-dev", "workloads": [{"name": "llama-8b"}, {"name": "llama-405b"}]}
    assert stack_field(cluster, name, "llm-dev-workload-llama-405b", "") == ("workloads", 1)
    assert stack_field(cluster, name, "other", "") == ("workloads",)
    assert stack_field({"name": "llm-dev"}, name, "llm-dev-workload-x", "") == ("workloads",)
