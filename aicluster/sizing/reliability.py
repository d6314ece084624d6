"""Failures, checkpoints and goodput of a training run.

The job's mean time between interruptions is the catalog's prior (GPU-hours per unexpected interruption, Llama 3
405B) divided by the job's GPUs: a synchronous job stops when any of its GPUs or their hosts fails, so the rate
scales with the GPUs it holds. A checkpoint (the training state: `checkpoint_bytes`) is written to the parallel
file systems the pools mount, at their combined throughput; the interval between checkpoints is Daly's
higher-order optimum (Daly 2006), which Young's first-order sqrt(2 delta M) (Young 1974) approximates.

The time lost is the writes (delta / tau), the work redone after each interruption (on average half an interval,
tau / 2M) and the restarts (restart / M: requeue, replace a node, read the checkpoint back):

    goodput = 1 - delta/tau - tau/(2M) - restart/M

The file-system throughput the run needs is the one that keeps the first two terms under the target overhead
(the storage policy's 5%). At Young's interval they sum to sqrt(2 delta / M), so delta <= target^2 M / 2 and

    required write GB/s = checkpoint bytes / (target^2 M / 2)

which is the storage policy's formula: `aicluster size` and the policy agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from aicluster.catalog import Catalog, ReliabilityData

from .models import FilesystemFacts, Reliability


class ReliabilityError(ValueError):
    """A one-line user message: an optimizer/precision pair the catalog has no checkpoint size for."""


def _data(catalog: Catalog) -> ReliabilityData:
    if catalog.reliability is None:
        raise ReliabilityError("the catalog has no reliability data (data/reliability.yaml)")
    return catalog.reliability


def young_interval(write_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum checkpoint interval: sqrt(2 delta M)."""
    return math.sqrt(2.0 * write_s * mtbf_s)


def daly_interval(write_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum: sqrt(2 delta M) [1 + (1/3) sqrt(delta/2M) + (1/9)(delta/2M)] - delta for
    delta < 2M, else M (checkpointing cannot beat the failures: write once per MTBF)."""
    if write_s >= 2.0 * mtbf_s:
        return mtbf_s
    x = write_s / (2.0 * mtbf_s)
    return young_interval(write_s, mtbf_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - write_s


def checkpoint_waste(write_s: float, interval_s: float, mtbf_s: float) -> float:
    """Fraction of run time spent writing checkpoints and redoing lost work: delta/tau + tau/(2M)."""
    return write_s / interval_s + interval_s / (2.0 * mtbf_s)


def checkpoint_bytes(catalog: Catalog, *, parameters: float, optimizer: str, precision: str) -> float:
    """Bytes of one training-state checkpoint: parameters x (weights + fp32 master + optimizer state) per
    parameter (catalog: 14 for Adam in bf16 mixed precision, MLPerf Storage's checkpointing workload)."""
    if parameters <= 0:
        raise ReliabilityError(f"parameters must be positive, got {parameters}")
    data = _data(catalog)
    state = data.checkpoint_state(optimizer, precision)
    if state is None:
        known = ", ".join(f"{c.optimizer}/{c.precision}" for c in data.checkpoint_states)
        raise ReliabilityError(
            f"no checkpoint size for optimizer {optimizer!r} in {precision!r} (the catalog knows {known})"
        )
    return parameters * state.bytes_per_parameter


def mtbf_hours(catalog: Catalog, gpus: int) -> float:
    """The job's mean time between unexpected interruptions at `gpus` GPUs, hours (prior / GPUs)."""
    if gpus <= 0:
        raise ReliabilityError(f"gpus must be positive, got {gpus}")
    return _data(catalog).prior.gpu_hours_per_interruption / gpus


def required_write_gb_s(checkpoint_bytes: float, mtbf_s: float, target_overhead: float) -> float:
    """The write throughput (GB/s) that keeps checkpoint writes plus rework at Young's interval under
    `target_overhead`: sqrt(2 delta / M) <= target, so delta <= target^2 M / 2."""
    return checkpoint_bytes / (target_overhead**2 * mtbf_s / 2.0) / 1e9


def reliability(
    catalog: Catalog,
    *,
    gpus: int,
    checkpoint_bytes: float,
    filesystems: Sequence[FilesystemFacts],
    run_hours: float,
) -> Reliability:
    """Failures, checkpoint interval and goodput of a `run_hours` run on `gpus` GPUs writing `checkpoint_bytes`
    to the parallel file systems among `filesystems` (NFS ones are not written to: too slow, not parallel)."""
    data = _data(catalog)
    mtbf_h = mtbf_hours(catalog, gpus)
    mtbf_s = mtbf_h * 3600.0
    target = data.target_checkpoint_overhead.value
    parallel = [fs for fs in filesystems if fs.parallel]
    write_gb_s = sum(fs.throughput_mb_s for fs in parallel) / 1000.0 if parallel else None
    write_s = interval_s = goodput = None
    restart_s = data.restart_s.value
    if write_gb_s is not None and write_gb_s > 0:
        write_s = checkpoint_bytes / (write_gb_s * 1e9)
        interval_s = daly_interval(write_s, mtbf_s)
        restart_s += write_s  # the read back, at the same throughput (Lustre tiers are rated for both)
        goodput = max(0.0, 1.0 - checkpoint_waste(write_s, interval_s, mtbf_s) - restart_s / mtbf_s)
    return Reliability(
        gpu_hours_per_interruption=data.prior.gpu_hours_per_interruption,
        mtbf_h=mtbf_h,
        interruptions=max(0.0, run_hours) / mtbf_h,
        checkpoint_bytes=checkpoint_bytes,
        filesystems=tuple(fs.name for fs in parallel),
        write_gb_s=write_gb_s,
        write_s=write_s,
        interval_s=interval_s,
        restart_s=restart_s,
        goodput=goodput,
        target_overhead=target,
        required_write_gb_s=required_write_gb_s(checkpoint_bytes, mtbf_s, target),
    )


def sources(catalog: Catalog, *, optimizer: str | None = None, precision: str | None = None) -> tuple[str, ...]:
    """Catalog source ids the reliability figures rest on (for WorkloadEstimate.sources)."""
    data = _data(catalog)
    ids = [
        data.prior.source,
        data.restart_s.source,
        data.target_checkpoint_overhead.source,
    ]
    if optimizer is not None and precision is not None:
        state = data.checkpoint_state(optimizer, precision)
        if state is not None:
            ids += [state.source, *state.field_sources.values()]
    return tuple(dict.fromkeys(ids))
