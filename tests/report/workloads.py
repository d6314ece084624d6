"""Hand-built workload estimates (aicluster.sizing.models) for report tests, until the planner fills them: one that
fits with runners-up and reliability, one that does not fit, one on unpriced pools (a mixture of experts), one
without a parallel file system. Their figures are consistent (parts add up to totals, days follow from steps and
step time), so a report that derives anything from them can be checked against plain arithmetic here."""

from __future__ import annotations

import copy
import math
from typing import Any

from aicluster.sizing.models import Candidate, Layout, Memory, Reliability, StepTime, WorkloadEstimate
from tests.report.previews import PASSING

GB = 1e9
H100 = 80 * GB  # catalog memory_gb of the H100 SXM, 10^9 bytes
PEAK_TFLOPS = 989.0  # H100 SXM dense BF16 TFLOP/s
USD_PER_NODE_HOUR = 160877.4 / 730 / 4  # the PASSING preview's h100 pool: 4 nodes at $160,877.40/month
NODE_KW_FACILITY = 46.51 / 4
SEQ = 8192


def layout(tp: int, pp: int, dp: int, *, ep: int = 1, zero: int = 1, recompute: str = "selective") -> Layout:
    return Layout(
        tensor_parallel=tp,
        pipeline_parallel=pp,
        data_parallel=dp,
        expert_parallel=ep,
        zero_stage=zero,
        recompute=recompute,
        micro_batch=2,
        micro_batches=8,
        gpus=tp * pp * dp,
    )


def memory(params: float, grads: float, optimizer: float, activations: float, overhead: float = 5 * GB) -> Memory:
    total = params + grads + optimizer + activations + overhead
    return Memory(
        parameters=params,
        gradients=grads,
        optimizer=optimizer,
        activations=activations,
        overhead=overhead,
        total=total,
        capacity=H100,
        fits=total <= H100,
    )


def step(flops: float, gpus: int, *, tp: float, dp: float, bubble: float, ep: float = 0.0) -> StepTime:
    compute = flops / (gpus * PEAK_TFLOPS * 1e12 * 0.40)
    total = compute + tp + dp + bubble + ep
    return StepTime(
        flops_per_step=flops,
        compute_s=compute,
        tensor_parallel_s=tp,
        data_parallel_s=dp,
        pipeline_bubble_s=bubble,
        expert_parallel_s=ep,
        total_s=total,
        utilisation_prior=0.40,
        mfu=flops / (total * gpus * PEAK_TFLOPS * 1e12),
        tflops_per_gpu=flops / total / gpus / 1e12,
    )


def reliability(gpus: int, run_hours: float, checkpoint: float, write_gb_s: float | None) -> Reliability:
    """Young/Daly as aicluster/sizing/reliability.py states it: interval sqrt(2 write MTBF)."""
    prior = 50676.0  # GPU-hours per interruption: Llama 3, 419 interruptions in 54 days on 16,384 GPUs
    mtbf_s = prior / gpus * 3600
    restart = 600.0
    target = 0.01
    required = checkpoint / (target**2 * mtbf_s / 2) / GB
    if write_gb_s is None:
        write = interval = goodput = None
    else:
        write = checkpoint / GB / write_gb_s
        interval = math.sqrt(2 * write * mtbf_s)
        goodput = 1 - write / interval - interval / (2 * mtbf_s) - restart / mtbf_s
    return Reliability(
        gpu_hours_per_interruption=prior,
        mtbf_h=mtbf_s / 3600,
        interruptions=run_hours * 3600 / mtbf_s,
        checkpoint_bytes=checkpoint,
        filesystems=("scratch",) if write_gb_s is not None else (),
        write_gb_s=write_gb_s,
        write_s=write,
        interval_s=interval,
        restart_s=restart,
        goodput=goodput,
        target_overhead=target,
        required_write_gb_s=required,
    )


def _sized(
    name: str,
    params: float,
    tokens: float,
    chosen: Candidate,
    runners_up: tuple[Candidate, ...],
    *,
    write_gb_s: float | None,
    priced: bool = True,
    active: float | None = None,
    target_days: float | None = 30.0,
    notes: tuple[str, ...] = (),
) -> WorkloadEstimate:
    lay, st = chosen.layout, chosen.step
    assert st is not None
    batch = lay.micro_batch * lay.micro_batches * lay.data_parallel * SEQ
    steps = math.ceil(tokens / batch)
    days = steps * st.total_s / 86400
    gpu_hours = days * 24 * lay.gpus
    node_hours = gpu_hours / 8
    return WorkloadEstimate(
        name=name,
        pools=("h100",),
        provider="aws",
        instance_type="p5.48xlarge",
        accelerator="h100-sxm",
        gpus_available=32,
        parameters=params,
        active_parameters=active or params,
        tokens=tokens,
        sequence_length=SEQ,
        global_batch_tokens=batch,
        fits=True,
        reason=None,
        chosen=chosen,
        runners_up=runners_up,
        steps=steps,
        days=days,
        gpu_hours=gpu_hours,
        cost_usd=node_hours * USD_PER_NODE_HOUR if priced else None,
        energy_mwh=node_hours * NODE_KW_FACILITY / 1000,
        reliability=reliability(lay.gpus, days * 24, params * 14, write_gb_s),
        target_days=target_days,
        target_gpus=None,
        gpus_for_target_days=math.ceil(lay.gpus * days / target_days) if target_days else None,
        sources=("llama3-paper", "h100-datasheet"),
        notes=notes,
    )


def fitting() -> WorkloadEstimate:
    """An 8B dense model on the 32 H100 of the PASSING preview: TP 2 x DP 16, with two runners-up."""
    params = 8e9
    flops = 6 * params * 2 * 8 * 16 * SEQ
    chosen = Candidate(
        layout=layout(2, 1, 16),
        memory=memory(8 * GB, 8 * GB, 3 * GB, 30 * GB),
        step=step(flops, 32, tp=0.40, dp=0.30, bubble=0.0),
        why="chosen",
    )
    slower = Candidate(
        layout=layout(4, 1, 8),
        memory=memory(4 * GB, 4 * GB, 3 * GB, 15 * GB),
        step=step(6 * params * 2 * 8 * 8 * SEQ, 32, tp=1.10, dp=0.20, bubble=0.0),
        why="9% slower: tensor-parallel all-reduces over 4 GPUs do not overlap",
    )
    too_big = Candidate(
        layout=layout(1, 1, 32, recompute="none"),
        memory=memory(16 * GB, 16 * GB, 3 * GB, 53.1 * GB),
        step=None,
        why="does not fit: 93.1 GB of 80.0 GB",
    )
    return _sized(
        "llama-8b",
        params,
        1e12,
        chosen,
        (slower, too_big),
        write_gb_s=0.94,
        notes=("MFU prior 40%: Llama 3 reports 38-43% BF16 MFU on 16K H100",),
    )


def not_fitting() -> WorkloadEstimate:
    """A 405B dense model on 32 H100: no layout holds its model states."""
    params = 405e9
    best = Candidate(
        layout=layout(8, 4, 1, zero=3, recompute="full"),
        memory=memory(25.3 * GB, 25.3 * GB, 151.9 * GB, 6.0 * GB),
        step=None,
        why="does not fit: 213.5 GB of 80.0 GB",
    )
    return WorkloadEstimate(
        name="llama-405b",
        pools=("h100",),
        provider="aws",
        instance_type="p5.48xlarge",
        accelerator="h100-sxm",
        gpus_available=32,
        parameters=params,
        active_parameters=params,
        tokens=15.6e12,
        sequence_length=SEQ,
        global_batch_tokens=16 * 1024 * 1024,
        fits=False,
        reason="405B parameters need 6.5 TB of weights, gradients and Adam states; 32 x 80 GB holds 2.6 TB: "
        "give it at least 88 GPUs",
        chosen=None,
        runners_up=(best,),
        steps=0,
        days=None,
        gpu_hours=None,
        cost_usd=None,
        energy_mwh=None,
        reliability=None,
        target_days=60.0,
        target_gpus=None,
        gpus_for_target_days=None,
        sources=("zero-paper",),
    )


def unpriced() -> WorkloadEstimate:
    """A mixture of experts (47B total, 13B active, expert parallel 8) on pools with no price."""
    params, active = 47e9, 13e9
    flops = 6 * active * 2 * 8 * 4 * SEQ
    chosen = Candidate(
        layout=layout(2, 4, 4, ep=4),
        memory=memory(11.8 * GB, 11.8 * GB, 17.6 * GB, 22 * GB),
        step=step(flops, 32, tp=0.35, dp=0.25, bubble=0.9, ep=0.6),
        why="chosen",
    )
    return _sized("mixtral-47b", params, 2e11, chosen, (), write_gb_s=0.94, priced=False, active=active)


def no_parallel_fs() -> WorkloadEstimate:
    """The 8B run on pools that mount no parallel file system: nowhere to write checkpoints, so no goodput."""
    w = fitting()
    assert w.chosen is not None
    return _sized("llama-8b-nfs", w.parameters, w.tokens, w.chosen, (), write_gb_s=None, target_days=None)


def step_of(w: WorkloadEstimate) -> StepTime:
    """The chosen layout's step time (of a workload that fits)."""
    assert w.chosen is not None
    assert w.chosen.step is not None
    return w.chosen.step


def days_of(w: WorkloadEstimate) -> float:
    assert w.days is not None
    return w.days


def with_workloads(*workloads: WorkloadEstimate, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of the PASSING preview (or `doc`) with these workloads, dumped as the preview writes them."""
    out = copy.deepcopy(doc if doc is not None else PASSING)
    out["workloads"] = [w.model_dump(mode="json") for w in workloads]
    return out


def all_four() -> dict[str, Any]:
    return with_workloads(fitting(), not_fitting(), unpriced(), no_parallel_fs())
