"""Storage: the parallel file system writes a checkpoint fast enough for the fleet's failure rate.

The time lost to checkpointing is the writes themselves plus the work redone after each failure.
At Young's optimum interval (Young 1974, tau = sqrt(2 delta M)) that overhead is about
sqrt(2 delta / M): delta the time to write one checkpoint, M the job's mean time between failures.
M shrinks as the job grows: Llama 3 405B training (Grattafiori et al. 2024, 16,384 H100s, 419
unexpected interruptions in 54 days) saw about one per 50,700 GPU-hours. So the same file system
that is plenty for 32 GPUs can cost a 3,000-GPU job a fifth of its time.

Checkpoint size defaults to half the fleet's GPU memory (weights, gradients and optimizer state of a
sharded job that fills HBM with activations too); set `checkpoint_gb` when the model is known.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from .facts import Res, Stack
from .rule import Ctx, Meta, NotApplicable, StackRule

GPU_HOURS_PER_INTERRUPTION = 50_700  # Llama 3 (arXiv:2407.21783): 16,384 GPUs x 1,296 h / 419
DEFAULT_MAX_OVERHEAD = 0.05
DEFAULT_HBM_FRACTION = 0.5


def young_overhead(write_s: float, mtbf_s: float) -> float:
    """Fraction of time lost to checkpoint writes and rework at Young's optimal interval."""
    return math.sqrt(2 * write_s / mtbf_s)


def _checkpoint(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    gpus = chips = 0
    hbm_gb = 0.0
    for f in stack.fleets:
        if f.tpu is not None:
            acc = stack.catalog.accelerators.get(f.tpu.accelerator)
            chips += f.chips
        else:
            acc = stack.catalog.accelerator_of(f.spec) if f.spec else None
        if acc is None or not f.accelerators:
            continue
        gpus += f.accelerators
        hbm_gb += acc.memory_gb * f.accelerators
    if gpus == 0:
        raise NotApplicable("no accelerator fleets")
    # TPU chips are counted like GPUs, at the same failure rate per device-hour (none is published for TPUs)
    devices = "GPUs" if not chips else "TPU chips" if chips == gpus else "GPUs and TPU chips"
    size_gb = float(
        ctx.setting("checkpoint_gb", default=hbm_gb * float(ctx.setting("hbm_fraction", default=DEFAULT_HBM_FRACTION)))
    )
    parallel = [fs for fs in stack.filesystems if fs.parallel and fs.throughput_mb_s]  # FSx, Managed Lustre
    anchor = stack.fleets[0].res
    if not parallel:
        yield (
            anchor,
            f"{gpus:,} {devices} and no parallel file system in the stack: a {size_gb:,.0f} GB checkpoint has nowhere "
            "fast to go; add storage (kind: lustre)",
        )
        return
    mb_s = sum(fs.throughput_mb_s or 0.0 for fs in parallel)
    write_s = size_gb * 1000 / mb_s
    mtbf_s = float(ctx.setting("gpu_hours_per_interruption", default=GPU_HOURS_PER_INTERRUPTION)) / gpus * 3600
    overhead = young_overhead(write_s, mtbf_s)
    limit = float(ctx.setting("max_overhead", default=DEFAULT_MAX_OVERHEAD))
    target_s = ctx.setting("checkpoint_seconds")
    if target_s is not None and write_s > float(target_s):
        yield (
            parallel[0].res,
            f"a {size_gb:,.0f} GB checkpoint takes {write_s:,.0f} s at {mb_s / 1000:,.1f} GB/s, over the "
            f"{float(target_s):g} s target; raise the file system's capacity or throughput_mb_s_per_tib",
        )
    elif target_s is None and overhead > limit:
        need = size_gb * 1000 / (limit**2 * mtbf_s / 2)
        yield (
            parallel[0].res,
            f"a {size_gb:,.0f} GB checkpoint of {gpus:,} {devices} takes {write_s:,.0f} s at {mb_s / 1000:,.1f} GB/s; "
            f"with a failure every {mtbf_s / 3600:,.1f} h the job loses {overhead:.0%} of its time to checkpoints and "
            f"rework (limit {limit:.0%}); it needs about {need / 1000:,.0f} GB/s: raise capacity_tib or "
            "throughput_mb_s_per_tib",
        )


checkpoint_throughput = StackRule(
    Meta(
        name="aicluster-filesystem-enforce-checkpoint-throughput",
        display_name="Checkpoint throughput",
        description="The parallel file system writes a checkpoint fast enough for the fleet's failure rate.",
        concern="storage",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.ADVISORY,
        remediation="Raise the Lustre file system's capacity or per-TiB throughput, or checkpoint less state.",
        config={
            "checkpoint_gb": {"type": "number", "exclusiveMinimum": 0, "description": "Checkpoint size, GB."},
            "hbm_fraction": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1,
                "description": "Checkpoint size as a share of the fleet's GPU memory without checkpoint_gb (0.5).",
            },
            "max_overhead": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1,
                "description": "Largest share of time lost to checkpoint writes and rework (0.05).",
            },
            "gpu_hours_per_interruption": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Failure rate of the fleet (50,700 GPU-hours, Llama 3 405B training).",
            },
            "checkpoint_seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "A fixed write-time target instead of the failure-rate model.",
            },
        },
    ),
    _checkpoint,
)

POLICIES: list[StackRule] = [checkpoint_throughput]
