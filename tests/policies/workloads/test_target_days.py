"""Workload within its target days: p5-small run under the capturing mocks with hand-built estimates
(tests/policies/resources/workloads.py)."""

from __future__ import annotations

from aicluster.plan import ClusterPlan
from tests.policies.resources.workloads import DAYS, capture, found, judged
from tests.workload_estimates import estimate


def test_a_workload_within_its_target_days_passes(p5_small_plan: ClusterPlan) -> None:
    result = judged(capture(p5_small_plan, estimate(days=4.4, target_days=5.0)), DAYS)
    assert (result.violations, result.passed) == ([], [DAYS])


def test_a_workload_over_its_target_days_names_the_gpus_it_would_need(p5_small_plan: ClusterPlan) -> None:
    late = estimate(days=4.4, target_days=3.0, gpus_for_target_days=48)
    assert found(judged(capture(p5_small_plan, late), DAYS)) == [
        (
            "llm-dev-workload-llama-8b",
            "advisory",
            "workload llama-8b takes an estimated 4.4 days on 32 GPUs, over its target of 3.0 days; it would need "
            "about 48 GPUs, more than the 32 its pools have: add nodes (pools[].nodes) or relax "
            "workloads[].targets.days",
        )
    ]


def test_target_days_does_not_apply_when_no_workload_sets_one(p5_small_plan: ClusterPlan) -> None:
    result = judged(capture(p5_small_plan, estimate()), DAYS)
    assert result.not_applicable == [{"policy": DAYS, "reason": "no sized workload sets targets.days"}]
