"""Workload goodput: p5-small run under the capturing mocks with hand-built estimates
(tests/policies/resources/workloads.py)."""

from __future__ import annotations

import pytest

from aicluster.plan import ClusterPlan
from policies.workloads import DEFAULT_MIN_GOODPUT
from tests.policies.resources.workloads import GOODPUT, capture, found, judged
from tests.workload_estimates import estimate, reliability

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


def test_goodput_over_the_floor_passes(p5_small_plan: ClusterPlan) -> None:
    result = judged(capture(p5_small_plan, estimate()), GOODPUT)
    assert (result.violations, result.passed) == ([], [GOODPUT])
    assert DEFAULT_MIN_GOODPUT == 0.9


def test_goodput_under_the_floor_gives_write_time_interval_and_the_speed_that_meets_it(
    p5_small_plan: ClusterPlan,
) -> None:
    w = estimate("llama-405b", gpus=16_384, rel=LLAMA3_405B)
    # budget 1 - 0.9 - 600/11,140 = 0.0461; write <= 0.0461^2 x 11,140 / 2 = 11.8 s; 5,290 GB / 11.8 s = 446 GB/s
    assert found(judged(capture(p5_small_plan, w), GOODPUT)) == [
        (
            "llm-dev-workload-llama-405b",
            "advisory",
            "workload llama-405b expects 87.7% goodput, under the 90% floor: a 5,290.0 GB checkpoint takes 26 s at "
            "200 GB/s on scratch, written every 12.8 min, with an interruption every 3.1 h; about 446 GB/s of "
            "checkpoint writes would meet it: raise the file system's capacity_tib or throughput_mb_s_per_tib",
        )
    ]


def test_goodput_lost_to_restarts_alone_says_no_speed_meets_it(p5_small_plan: ClusterPlan) -> None:
    w = estimate("llama-405b", gpus=16_384, rel=reliability(gpus=16_384, checkpoint_bytes=5.29e12, restart_s=1500.0))
    (message,) = [m for _, _, m in found(judged(capture(p5_small_plan, w), GOODPUT))]
    assert message.endswith(
        "no write speed meets it: restarts alone lose 13.5% of the time; run on fewer GPUs or lower min_goodput"
    )


def test_min_goodput_is_configurable(p5_small_plan: ClusterPlan) -> None:
    w = estimate("llama-405b", gpus=16_384, rel=LLAMA3_405B)
    assert judged(capture(p5_small_plan, w), GOODPUT, {"min_goodput": 0.85}).violations == []


def test_goodput_does_not_apply_without_a_parallel_file_system(p5_small_plan: ClusterPlan) -> None:
    result = judged(capture(p5_small_plan, estimate(rel=reliability(gpus=32, write_gb_s=None))), GOODPUT)
    assert result.not_applicable == [
        {
            "policy": GOODPUT,
            "reason": "no sized workload has a goodput estimate (none writes to a parallel file system)",
        }
    ]
