"""estimate_workload: one workload of the stack sized on its pools (layout, memory, step time, days, cost, energy).

Pure: a function of (workload, pool facts, file-system facts, catalog). Collective times come from the collective
model (aicluster/sizing/collective.py); failures and checkpoints from aicluster/sizing/reliability.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

from aicluster.catalog import Catalog
from aicluster.spec.workload import Workload

from . import reliability as _reliability
from .collective import estimate_collective
from .compute import CommFn
from .layout import Hardware, Priors, SearchResult, describe, gb, layout_memory, search
from .models import CollectiveOp, FilesystemFacts, Layout, PoolFacts, Reliability, WorkloadEstimate
from .shape import Shape, shape_of


class WorkloadError(ValueError):
    """The workload cannot be sized on these pools (a message for the user, naming the fix)."""


def make_comm(catalog: Catalog, pool: PoolFacts) -> tuple[CommFn, set[str]]:
    """The collective model bound to the pool's instance type, cached: (comm, the source ids of the collective
    estimates it made, filled as it is called)."""
    sources: set[str] = set()

    @cache
    def comm(op: CollectiveOp, nodes: int, ranks_per_node: int, nbytes: float) -> float:
        try:
            est = estimate_collective(
                catalog,
                pool.instance_type,
                nodes,
                op,
                max(1, int(nbytes)),
                ranks_per_node=ranks_per_node,
                provider=pool.provider,
            )
        except ValueError as exc:  # CollectiveError: a one-line message for the user
            raise WorkloadError(f"pool {pool.name}: {exc}") from None
        sources.update(est.sources)
        return float(est.time_s)

    return comm, sources


def _pools(workload: Workload, pools: Sequence[PoolFacts]) -> tuple[list[PoolFacts], list[str]]:
    by_name = {p.name: p for p in pools}
    mine = [by_name[n] for n in workload.pools if n in by_name]
    if not mine:
        raise WorkloadError(
            f"workload {workload.name}: none of its pools ({', '.join(workload.pools)}) is in the plan; name pools "
            "of this stack"
        )
    first = mine[0]
    same = [p for p in mine if (p.provider, p.instance_type) == (first.provider, first.instance_type)]
    notes = [
        f"pool {p.name} ({p.instance_type}) left out: one job runs on one instance type ({first.instance_type}, "
        f"pool {first.name})"
        for p in mine
        if p not in same
    ]
    return same, notes


def _hardware(catalog: Catalog, pool: PoolFacts, gpus: int, precision: str) -> tuple[Hardware, list[str], list[str]]:
    assert catalog.sizing is not None, "catalog has no data/sizing.yaml"
    it = catalog.instance_type(pool.provider, pool.instance_type)
    acc = catalog.accelerator_of(it) if it else None
    if it is None or acc is None or acc.kind != "gpu":
        raise WorkloadError(
            f"pool {pool.name}: {pool.provider}/{pool.instance_type} is not a GPU instance type of the catalog; "
            "workloads are sized on NVIDIA GPU pools"
        )
    prior = catalog.sizing.utilisation_for(acc.id, "bf16")
    sources = [acc.source_of("bf16_tflops"), acc.source_of("memory_gb"), prior.source]
    notes: list[str] = []
    peak = acc.bf16_tflops
    rate = acc.bf16_tflops * prior.mfu
    if precision == "fp8":
        fp8 = catalog.sizing.fp8_tflops(acc.id)
        rate *= catalog.sizing.fp8_speedup
        sources.append(catalog.sizing.fp8_speedup_source)
        if fp8 is not None:
            peak = fp8.fp8_tflops
            sources.append(fp8.source)
        notes.append(
            f"fp8: matmuls at the bf16 prior x {catalog.sizing.fp8_speedup} (the published end-to-end FP8 speed-up); "
            f"MFU is against the {'fp8' if fp8 else 'bf16 (no fp8 figure in the catalog)'} peak of {peak:g} TFLOP/s"
        )
    notes.append(
        f"utilisation prior {prior.mfu:.0%} of the {acc.bf16_tflops:g} TFLOP/s bf16 peak ({acc.name}; "
        f"source {prior.source}) for compute; exposed communication and the pipeline bubble come on top"
    )
    hw = Hardware(
        gpus=gpus,
        gpus_per_node=pool.gpus_per_node,
        capacity_bytes=acc.memory_gb * 1e9,
        peak_tflops=peak,
        rate_tflops=rate,
        utilisation=prior.mfu,
    )
    return hw, sources, notes


def _nothing_fits(
    catalog: Catalog, shape: Shape, workload: Workload, hw: Hardware, priors: Priors, found: SearchResult
) -> str:
    if found.smallest is None:
        return (
            f"no layout: the {hw.gpus} GPUs cannot hold one tensor x pipeline group that divides the model "
            f"({shape.layers} layers, {shape.heads} heads); add GPUs or set tensor_parallel/pipeline_parallel to auto"
        )
    lay, mem = found.smallest
    short = mem.total - mem.capacity
    text = (
        f"nothing fits: the smallest layout ({describe(lay)}) needs {gb(mem.total)} per GPU of {gb(mem.capacity)} "
        f"({gb(short)} short)"
    )
    fixes: list[str] = []
    # more GPUs: the same shape with ZeRO-3 and full recompute over more data-parallel ranks
    smallest_shape = lay.model_copy(update={"zero_stage": 3, "recompute": "full", "micro_batch": 1})
    seqs = max(1, round(workload.training.global_batch_tokens / shape.sequence))
    d = lay.data_parallel
    while True:
        trial = smallest_shape.model_copy(
            update={
                "data_parallel": d,
                "gpus": lay.tensor_parallel * lay.pipeline_parallel * d,
                "micro_batches": max(1, seqs // d),
            }
        )
        if layout_memory(shape, trial, workload.training, hw, priors).fits:
            more = "the same GPUs" if d == lay.data_parallel else f"{trial.gpus} GPUs"
            fixes.append(f"{more} with ZeRO-3 and full recompute ({describe(trial)})")
            break
        if d >= seqs:
            break
        d = min(seqs, d * 2)
    if workload.training.recompute not in ("auto", "full"):
        fixes.append("recompute: full (or auto)")
    if workload.training.zero_stage not in ("auto", 3):
        fixes.append("zero_stage: 3 (or auto)")
    bigger = sorted(
        (a for a in catalog.accelerators.values() if a.kind == "gpu" and a.memory_gb * 1e9 >= mem.total),
        key=lambda a: a.memory_gb,
    )
    if bigger:
        fixes.append(f"a larger GPU ({bigger[0].name}, {bigger[0].memory_gb:g} GB)")
    if fixes:
        text += "; would fit with: " + ", or ".join(fixes)
    return text


def estimate_workload(
    workload: Workload,
    pools: Sequence[PoolFacts],
    filesystems: Sequence[FilesystemFacts],
    catalog: Catalog,
    *,
    hours_per_month: float = 730.0,
) -> WorkloadEstimate:
    """Size `workload` on its pools: the layout search, then days, GPU-hours, cost, energy and reliability.

    `hours_per_month` is the month the plan's monthly figures use; the run's cost is priced per node-hour."""
    del hours_per_month  # the run is priced by its own hours; kept for the planner's calling convention
    assert catalog.sizing is not None, "catalog has no data/sizing.yaml"
    mine, notes = _pools(workload, pools)
    first = mine[0]
    shape = shape_of(workload.model)
    notes.extend(shape.notes)
    available = sum(p.nodes * p.gpus_per_node for p in mine)
    target_gpus = workload.targets.gpus
    gpus = min(available, target_gpus) if target_gpus else available
    if target_gpus and target_gpus > available:
        notes.append(f"targets.gpus {target_gpus} is more than the pools' {available} GPUs: sized on {available}")
    training = workload.training
    if training.tensor_parallel != "auto" and training.tensor_parallel > first.gpus_per_node:
        raise WorkloadError(
            f"workload {workload.name}: training.tensor_parallel {training.tensor_parallel} is more than the "
            f"{first.gpus_per_node} GPUs of one {first.instance_type} node (its NVLink domain): use "
            f"{first.gpus_per_node} or less, or auto"
        )
    hw, sources, hw_notes = _hardware(catalog, first, gpus, training.precision)
    notes.extend(hw_notes)
    opt = catalog.sizing.optimizer(training.optimizer)
    priors = Priors(
        optimizer=opt,
        overhead=catalog.sizing.overhead,
        dp_overlap=catalog.sizing.dp_overlap,
        tp_overlap=catalog.sizing.tp_overlap,
    )
    sources += [opt.source, catalog.sizing.overhead.source, catalog.sizing.dp_overlap_source]
    sources.append(catalog.sizing.tp_overlap_source)
    comm, comm_sources = make_comm(catalog, first)
    found = search(shape, training, hw, priors, comm)
    chosen = found.chosen
    reason = None if chosen else _nothing_fits(catalog, shape, workload, hw, priors, found)

    seqs = max(1, round(training.global_batch_tokens / shape.sequence))
    lay: Layout | None = chosen.layout if chosen else None
    batch_tokens = (
        float(lay.micro_batch * lay.micro_batches * lay.data_parallel * shape.sequence)
        if lay
        else float(seqs * shape.sequence)
    )
    if lay and abs(batch_tokens - training.global_batch_tokens) > 0.01 * training.global_batch_tokens:
        notes.append(
            f"global batch as run: {batch_tokens:,.0f} tokens (whole sequences per data-parallel rank), asked "
            f"{training.global_batch_tokens:,}"
        )
    steps = math.ceil(training.tokens / batch_tokens)
    days = gpu_hours = cost = energy = None
    gpus_for_target = None
    reliability: Reliability | None = None
    if chosen is not None and chosen.step is not None and lay is not None:
        seconds = steps * chosen.step.total_s
        hours = seconds / 3600
        days = hours / 24
        gpu_hours = hours * lay.gpus
        nodes_used = math.ceil(lay.gpus / first.gpus_per_node)
        if first.usd_per_node_hour is not None:
            cost = first.usd_per_node_hour * nodes_used * hours
        energy = first.node_power_kw * first.pue * nodes_used * hours / 1000
        if workload.targets.days is not None:
            group = lay.tensor_parallel * lay.pipeline_parallel
            need = lay.gpus * days / workload.targets.days
            gpus_for_target = group * math.ceil(need / group)
            notes.append(
                f"GPUs for {workload.targets.days:g} days: {gpus_for_target} at the chosen layout's throughput per GPU "
                f"(TP{lay.tensor_parallel} x PP{lay.pipeline_parallel} groups; assumes it scales linearly)"
            )
        size = _reliability.checkpoint_bytes(
            catalog, parameters=shape.parameters, optimizer=training.optimizer, precision=training.precision
        )
        reliability = _reliability.reliability(
            catalog, gpus=lay.gpus, checkpoint_bytes=size, filesystems=filesystems, run_hours=hours
        )
    notes.append(
        f"searched {found.considered} layouts; memory is the first pipeline stage's peak (1F1B); the stated overhead "
        f"is {priors.overhead.fixed_bytes / 1e9:g} GB + {priors.overhead.fragmentation:.0%} of states and activations"
    )
    acc = catalog.accelerator_of(catalog.instance_type(first.provider, first.instance_type))  # type: ignore[arg-type]
    assert acc is not None
    if reliability is not None:
        sources.extend(_reliability.sources(catalog, optimizer=training.optimizer, precision=training.precision))
    all_sources = tuple(dict.fromkeys([*sources, *sorted(comm_sources)]))
    return WorkloadEstimate(
        name=workload.name,
        pools=tuple(p.name for p in mine),
        provider=first.provider,
        instance_type=first.instance_type,
        accelerator=acc.id,
        gpus_available=gpus,
        parameters=shape.parameters,
        active_parameters=shape.active_parameters,
        tokens=float(training.tokens),
        sequence_length=shape.sequence,
        global_batch_tokens=batch_tokens,
        fits=chosen is not None,
        reason=reason,
        chosen=chosen,
        runners_up=found.runners_up,
        steps=steps,
        days=days,
        gpu_hours=gpu_hours,
        cost_usd=cost,
        energy_mwh=energy,
        reliability=reliability,
        target_days=workload.targets.days,
        target_gpus=target_gpus,
        gpus_for_target_days=gpus_for_target,
        sources=all_sources,
        notes=tuple(notes),
    )
