"""p5-small (4 x p5.48xlarge = 32 H100, FSx for Lustre of 48,000 GiB x 250 MB/s/TiB = 11.7 GB/s) run under the
capturing mocks with hand-built estimates (tests/workload_estimates.py) on its plan, as the planner will hand them;
the workload policies' names."""

from __future__ import annotations

from typing import Any

from aicluster.plan import ClusterPlan
from aicluster.preview import PolicyResult
from aicluster.preview.engine import Capture, run
from aicluster.preview.policy import evaluate
from aicluster.sizing.models import WorkloadEstimate
from components import AiCluster
from tests.policies.conftest import policy

FIT = "aicluster-workload-enforce-fit"
DAYS = "aicluster-workload-enforce-target-days"
GOODPUT = "aicluster-workload-enforce-min-goodput"
CHECKPOINT = "aicluster-filesystem-enforce-checkpoint-throughput"
RULES = [FIT, DAYS, GOODPUT, CHECKPOINT]


def capture(cluster_plan: ClusterPlan, *workloads: WorkloadEstimate) -> Capture:
    with_workloads = cluster_plan.model_copy(update={"workloads": workloads})
    return run(lambda: AiCluster(with_workloads.name, {"plan": with_workloads}), "aicluster", "test")


def judged(cap: Capture, name: str, config: dict[str, Any] | None = None) -> PolicyResult:
    return evaluate(cap, {name: config} if config else None, [policy(name)])


def found(result: PolicyResult) -> list[tuple[str, str, str]]:
    return [(v.resource, v.enforcement, v.message) for v in result.violations]
