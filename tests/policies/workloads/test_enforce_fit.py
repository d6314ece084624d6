"""Workload fits its pools: p5-small run under the capturing mocks with hand-built estimates
(tests/policies/resources/workloads.py)."""

from __future__ import annotations

from aicluster.plan import ClusterPlan
from policies.facts.aicluster import WORKLOAD
from tests.policies.conftest import res, stack_findings
from tests.policies.resources.workloads import FIT, capture, found, judged
from tests.workload_estimates import estimate


def test_a_workload_that_fits_passes(p5_small_plan: ClusterPlan) -> None:
    result = judged(capture(p5_small_plan, estimate()), FIT)
    assert result.violations == []
    assert result.passed == [FIT]


def test_a_workload_that_fits_no_layout_is_mandatory_with_shortfall_and_reason(p5_small_plan: ClusterPlan) -> None:
    w = estimate("llama-405b", fits=False)
    assert found(judged(capture(p5_small_plan, estimate(), w), FIT)) == [
        (
            "llm-dev-workload-llama-405b",
            "mandatory",
            "workload llama-405b fits no layout on h100 (32 GPUs of p5.48xlarge): the closest layout needs 93.1 GB "
            "per GPU of 80.0 GB (13.1 GB short); 405B parameters' states alone need 5.3 TB; 32 GPUs hold 2.6 TB: use "
            "at least 128 H100s",
        )
    ]


def test_the_fit_finding_keeps_the_estimators_fixes_and_says_the_shortfall_once(p5_small_plan: ClusterPlan) -> None:
    """The estimator's reason names only fixes that would change something (here: the GPU budget caps 16 of the
    pools' 32, ZeRO-3 and full recompute already given); the finding adds no generic advice to it."""
    reason = (
        "nothing fits: the smallest layout (TP8 x PP1 x DP2, ZeRO-3, recompute full, micro-batch 1) needs 109.8 GB "
        "per GPU of 85.5 GB (24.3 GB short); would fit with: raise targets.gpus to 32 (the pools have 32)"
    )
    w = estimate("llama-405b", fits=False).model_copy(update={"reason": reason})
    ((_, _, message),) = found(judged(capture(p5_small_plan, estimate(), w), FIT))
    assert message == f"workload llama-405b fits no layout on h100 (32 GPUs of p5.48xlarge): {reason}"
    assert message.count("short") == 1
    assert "zero_stage" not in message


def test_a_fit_finding_without_memory_figures_still_names_the_workload() -> None:
    assert stack_findings(FIT, [res(WORKLOAD, "llm-dev-workload-w", {"name": "w", "fits": False})]) == [
        "workload w fits no layout on its pools: no layout's memory fits the GPUs; the estimate gives no reason. "
        "Add GPUs (pools[].nodes) or a larger GPU (pools[].instance_type), or let workloads[].training use "
        "recompute or a higher zero_stage"
    ]
