"""Hand-built `WorkloadEstimate`s for tests of what reads them (components, policies), until the planner sizes the
stack's workloads itself: a plan gets them with `plan.model_copy(update={"workloads": (estimate(...),)})`.

The figures are inputs, not results under test: a Llama-3-8B-class dense model on the p5-small stack (4 x
p5.48xlarge, 32 H100 80 GB; FSx for Lustre of 48,000 GiB, which FSx calls 48 TiB, x 250 MB/s per TiB = 11.7 GB/s).
Its checkpoint is MLPerf Storage's Llama3 8B training state, 105 GB (Submission_guidelines.md Table 2); the failure
prior is Llama 3's 50,700 GPU-hours per unexpected interruption (16,384 GPUs x 1,296 h / 419); the interval is
Young's sqrt(2 write MTBF) and the goodput 1 - write/interval - interval/(2 MTBF) - restart/MTBF, so the record is
self-consistent.
"""

from __future__ import annotations

import math

from aicluster.sizing.models import Candidate, Layout, Memory, Reliability, StepTime, WorkloadEstimate

H100_BYTES = 80e9
GPU_HOURS_PER_INTERRUPTION = 50_700.0  # Llama 3 (arXiv:2407.21783): 16,384 x 1,296 h / 419
LLAMA3_8B_CHECKPOINT = 105e9  # MLPerf Storage checkpointing, Llama3 8B (Submission_guidelines.md Table 2)
P5_SMALL_WRITE_GB_S = 48_000 / 1024 * 250 / 1000  # the plan's 48,000 GiB x 250 MB/s per TiB


def reliability(
    *,
    gpus: int,
    checkpoint_bytes: float = LLAMA3_8B_CHECKPOINT,
    write_gb_s: float | None = P5_SMALL_WRITE_GB_S,
    filesystems: tuple[str, ...] = ("scratch",),
    restart_s: float = 600.0,
    target_overhead: float = 0.05,
) -> Reliability:
    mtbf_h = GPU_HOURS_PER_INTERRUPTION / gpus
    mtbf_s = mtbf_h * 3600
    write_s = checkpoint_bytes / 1e9 / write_gb_s if write_gb_s else None
    interval_s = math.sqrt(2 * write_s * mtbf_s) if write_s is not None else None
    goodput = (
        1 - write_s / interval_s - interval_s / (2 * mtbf_s) - restart_s / mtbf_s
        if write_s is not None and interval_s is not None
        else None
    )
    return Reliability(
        gpu_hours_per_interruption=GPU_HOURS_PER_INTERRUPTION,
        mtbf_h=mtbf_h,
        interruptions=0.0,
        checkpoint_bytes=checkpoint_bytes,
        filesystems=filesystems if write_gb_s else (),
        write_gb_s=write_gb_s,
        write_s=write_s,
        interval_s=interval_s,
        restart_s=restart_s,
        goodput=goodput,
        target_overhead=target_overhead,
        # Young's overhead sqrt(2 write / MTBF) = target: write = target^2 MTBF / 2
        required_write_gb_s=checkpoint_bytes / 1e9 / (target_overhead**2 * mtbf_s / 2),
    )


def candidate(
    *, tp: int = 1, pp: int = 1, dp: int = 32, total: float = 70e9, why: str = "chosen", timed: bool = True
) -> Candidate:
    parts = {"parameters": 16e9, "gradients": 16e9, "optimizer": 3e9, "overhead": 8e9}
    activations = total - sum(parts.values())
    memory = Memory(**parts, activations=activations, total=total, capacity=H100_BYTES, fits=total <= H100_BYTES)
    step = StepTime(
        flops_per_step=6 * 8e9 * 4e6,
        compute_s=4.85,
        tensor_parallel_s=0.0,
        data_parallel_s=0.3,
        pipeline_bubble_s=0.0,
        total_s=5.15,
        utilisation_prior=0.4,
        mfu=0.377,
        tflops_per_gpu=373.0,
    )
    layout = Layout(
        tensor_parallel=tp,
        pipeline_parallel=pp,
        data_parallel=dp,
        zero_stage=1,
        recompute="selective",
        micro_batch=1,
        micro_batches=16,
        gpus=tp * pp * dp,
    )
    return Candidate(layout=layout, memory=memory, step=step if timed else None, why=why)


def estimate(
    name: str = "llama-8b",
    pools: tuple[str, ...] = ("h100",),
    *,
    gpus: int = 32,
    fits: bool = True,
    days: float = 4.4,
    target_days: float | None = None,
    gpus_for_target_days: int | None = None,
    rel: Reliability | None = None,
    no_reliability: bool = False,
) -> WorkloadEstimate:
    """A workload sized on `pools` (p5-small's `h100` by default); `fits=False` gives one that fits nothing, its
    closest layout 93.1 GB per GPU of 80 GB."""
    chosen = candidate(dp=gpus) if fits else None
    runners = (
        (candidate(tp=2, dp=gpus // 2, total=72e9, why="3% slower: more tensor-parallel traffic"),)
        if fits
        else (candidate(tp=8, pp=4, dp=1, total=93.1e9, why="does not fit: 93.1 GB of 80 GB", timed=False),)
    )
    return WorkloadEstimate(
        name=name,
        pools=pools,
        provider="aws",
        instance_type="p5.48xlarge",
        accelerator="h100-sxm-80gb",
        gpus_available=gpus,
        parameters=8e9 if fits else 405e9,
        active_parameters=8e9 if fits else 405e9,
        tokens=1e11,
        sequence_length=8192,
        global_batch_tokens=4_194_304,
        fits=fits,
        reason=None
        if fits
        else "405B parameters' states alone need 5.3 TB; 32 GPUs hold 2.6 TB: use at least 128 H100s",
        chosen=chosen,
        runners_up=runners,
        steps=23_842 if fits else 0,
        days=days if fits else None,
        gpu_hours=days * 24 * gpus if fits else None,
        cost_usd=days * 24 * 4 * 98.32 if fits else None,
        energy_mwh=days * 24 * 4 * 10.2 * 1.2 / 1000 if fits else None,
        reliability=None if no_reliability or not fits else (rel or reliability(gpus=gpus)),
        target_days=target_days,
        target_gpus=None,
        gpus_for_target_days=gpus_for_target_days,
        sources=("llama3-paper",),
    )
