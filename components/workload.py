"""Workloads: one `Workload` component per sized workload of the plan, recording what the estimate found.

A workload is an estimate, not a resource: nothing is provisioned for it and it costs nothing of its own. The
component is its record in the Pulumi state, so that the policy pack (which sees only resources, never the plan)
and readers of the state see whether the job fits its pools, how long it takes against its target, and how its
checkpoints fare against its failure rate. Its inputs are plain figures of the plan's `WorkloadEstimate`, with
camelCase keys as the engine hands a resource's inputs to a policy; units are in the key names (bytes, seconds,
hours, days, GB/s of 10^9 bytes, USD, MWh). The pools are named as the stack names them; a pool's resources carry
the same name in their `aicluster:pool` tag (GCP: the `aicluster_pool` label), which is how a policy finds the
fleets a workload runs on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

import pulumi

from aicluster.plan import ClusterPlan, PlannedPool
from aicluster.sizing.models import Candidate, Memory, WorkloadEstimate

__all__ = ["WORKLOAD_TYPE", "Workload", "WorkloadArgs", "build", "workload_inputs"]

WORKLOAD_TYPE = "aicluster:sizing:Workload"
POOL_TAG = "aicluster:pool"


class WorkloadArgs(TypedDict):
    estimate: WorkloadEstimate
    cluster: str  # the cluster's name: its resources are named `<cluster>-<pool>-...`
    pools: Sequence[PlannedPool]  # the plan's pools the workload runs on (where they are)


def _layout(c: Candidate | None) -> dict[str, Any] | None:
    if c is None:
        return None
    lay = c.layout
    return {
        "tp": lay.tensor_parallel,
        "pp": lay.pipeline_parallel,
        "dp": lay.data_parallel,
        "ep": lay.expert_parallel,
        "zero": lay.zero_stage,
        "recompute": lay.recompute,
        "microBatch": lay.micro_batch,
        "microBatches": lay.micro_batches,
        "gpus": lay.gpus,
    }


def _memory(m: Memory | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "parametersBytes": m.parameters,
        "gradientsBytes": m.gradients,
        "optimizerBytes": m.optimizer,
        "activationsBytes": m.activations,
        "overheadBytes": m.overhead,
        "totalBytes": m.total,
        "capacityBytes": m.capacity,
        "fits": m.fits,
    }


def _closest(w: WorkloadEstimate) -> Candidate | None:
    """The layout whose memory the record shows: the chosen one, else (nothing fits) the first runner-up, which the
    estimator ranks best first, so it is the one closest to fitting."""
    if w.chosen is not None:
        return w.chosen
    return w.runners_up[0] if w.runners_up else None


def workload_inputs(w: WorkloadEstimate, cluster: str, pools: Sequence[PlannedPool]) -> dict[str, Any]:
    """The plain inputs of a workload's component: what the policy pack and a reader of the state need."""
    shown = _closest(w)
    rel = w.reliability
    regions = sorted({p.region for p in pools})
    return {
        "name": w.name,
        "cluster": cluster,
        "pools": list(w.pools),
        "poolTag": POOL_TAG,
        "provider": w.provider,
        "region": regions[0] if len(regions) == 1 else None,
        "regions": regions,
        "instanceType": w.instance_type,
        "accelerator": w.accelerator,
        "gpusAvailable": w.gpus_available,
        "parameters": w.parameters,
        "activeParameters": w.active_parameters,
        "fits": w.fits,
        "reason": w.reason,
        "layout": _layout(w.chosen),
        # per GPU, at the peak of a step: the chosen layout's, else the closest layout that does not fit
        "memory": _memory(shown.memory if shown else None),
        "memoryOf": "chosen" if w.chosen is not None else ("closest" if shown is not None else None),
        "stepSeconds": w.chosen.step.total_s if w.chosen is not None and w.chosen.step is not None else None,
        "mfu": w.chosen.step.mfu if w.chosen is not None and w.chosen.step is not None else None,
        "tokens": w.tokens,
        "steps": w.steps,
        "days": w.days,
        "targetDays": w.target_days,
        "targetGpus": w.target_gpus,
        "gpusForTargetDays": w.gpus_for_target_days,
        "gpuHours": w.gpu_hours,
        "costUsd": w.cost_usd,
        "energyMwh": w.energy_mwh,
        "checkpointBytes": rel.checkpoint_bytes if rel else None,
        "checkpointWriteSeconds": rel.write_s if rel else None,
        "checkpointIntervalSeconds": rel.interval_s if rel else None,
        "filesystems": list(rel.filesystems) if rel else [],
        "writeGbS": rel.write_gb_s if rel else None,
        "mtbfHours": rel.mtbf_h if rel else None,
        "gpuHoursPerInterruption": rel.gpu_hours_per_interruption if rel else None,
        "restartSeconds": rel.restart_s if rel else None,
        "goodput": rel.goodput if rel else None,
        "targetOverhead": rel.target_overhead if rel else None,
        "requiredWriteGbS": rel.required_write_gb_s if rel else None,
        "sources": list(w.sources),
    }


class Workload(pulumi.ComponentResource):
    """A workload as sized on its pools. Creates no children: it records an estimate, provisions nothing."""

    def __init__(self, name: str, args: WorkloadArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        w = args["estimate"]
        props = workload_inputs(w, args["cluster"], args["pools"])
        super().__init__(WORKLOAD_TYPE, name, props, opts)
        self.outputs: dict[str, Any] = {
            "name": w.name,
            "fits": w.fits,
            "days": w.days,
            "gpus": w.chosen.layout.gpus if w.chosen is not None else None,
            "goodput": props["goodput"],
            "checkpointIntervalSeconds": props["checkpointIntervalSeconds"],
        }
        self.register_outputs(self.outputs)


def build(plan: ClusterPlan, parent: pulumi.ComponentResource) -> dict[str, Any]:
    """One Workload per entry of `plan.workloads`, in stack order, under `parent`; their outputs by name."""
    opts = pulumi.ResourceOptions(parent=parent)
    out: dict[str, Any] = {}
    for w in plan.workloads:
        pools = [p for p in plan.pools if p.name in w.pools]
        comp = Workload(f"{plan.name}-workload-{w.name}", {"estimate": w, "cluster": plan.name, "pools": pools}, opts)
        out[w.name] = comp.outputs
    return out
