"""estimate_workload: one workload of the stack sized on its pools (layout, memory, step time, days, cost, energy).

Pure: a function of (workload, pool facts, file-system facts, catalog). Collective times come from the collective
model (aicluster/sizing/collective.py); failures and checkpoints from aicluster/sizing/reliability.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cache

from aicluster.catalog import Accelerator, Catalog
from aicluster.spec.workload import Workload

from . import reliability as _reliability
from .collective import estimate_on_domains, fabric_domain_limit
from .compute import CommFn
from .layout import Hardware, Priors, SearchResult, describe, gb, layout_memory, search
from .models import CollectiveOp, FilesystemFacts, Layout, PoolFacts, Reliability, WorkloadEstimate
from .shape import Shape, shape_of


class WorkloadError(ValueError):
    """The workload cannot be sized on these pools (a message for the user, naming the fix)."""


def make_comm(catalog: Catalog, pool: PoolFacts, max_nodes: int | None = None) -> tuple[CommFn, set[str]]:
    """The collective model bound to the pool's instance type, cached: (comm, the source ids of the collective
    estimates it made, filled as it is called). It takes NVLink domains and ranks per domain (a node of an 8-GPU
    server; a rack of a GB200 NVL72). `max_nodes`: the pool's fabric domain where the fabric stops at one (the plan's
    scale-set size, which may be a raised limit)."""
    sources: set[str] = set()

    @cache
    def comm(op: CollectiveOp, domains: int, ranks_per_domain: int, nbytes: float) -> float:
        try:
            est = estimate_on_domains(
                catalog,
                pool.instance_type,
                op,
                max(1, int(nbytes)),
                domains=domains,
                ranks_per_domain=ranks_per_domain,
                provider=pool.provider,
                max_nodes=max_nodes,
            )
        except ValueError as exc:  # CollectiveError: a one-line message for the user
            raise WorkloadError(f"pool {pool.name}: {exc}") from None
        sources.update(est.sources)
        return float(est.time_s)

    return comm, sources


def _domain_nodes(catalog: Catalog, pools: Sequence[PoolFacts]) -> int | None:
    """The nodes one job can reach where the type's fabric stops at a domain (Azure ND: one scale set): the plan's
    largest domain of the pools; None where the fabric reaches every node."""
    first = pools[0]
    try:
        limit = fabric_domain_limit(catalog, first.instance_type, first.provider)
    except ValueError:  # not a GPU type the model covers: _hardware says so
        return None
    if limit is None:
        return None
    return max(n for p in pools for n in (p.fabric_domain_nodes or (p.nodes,)))


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


def capacity_bytes(catalog: Catalog, acc: Accelerator) -> tuple[float, str]:
    """The GPU memory the memory model compares against, bytes, and its source id: nvidia-smi's total where the
    catalog has it (data/sizing.yaml memory_capacity), else the accelerator's memory_gb x 10^9."""
    rec = catalog.sizing.capacity(acc.id) if catalog.sizing is not None else None
    if rec is not None:
        return rec.total_bytes, rec.source
    return acc.memory_gb * 1e9, acc.source_of("memory_gb")


def capacity_note(catalog: Catalog, acc: Accelerator) -> str:
    rec = catalog.sizing.capacity(acc.id) if catalog.sizing is not None else None
    if rec is not None:
        return (
            f"GPU memory: {rec.total_mib:,.0f} MiB = {rec.total_bytes / 1e9:.1f} GB per {acc.name} (nvidia-smi's "
            f"total; source {rec.source}), not the {acc.memory_gb:g} GB of its name"
        )
    return (
        f"GPU memory: {acc.memory_gb:g} GB per {acc.name}, the catalog's marketing figure (no nvidia-smi total in "
        "data/sizing.yaml for it)"
    )


def nvlink_domains(pools: Sequence[PoolFacts], gpus: int) -> tuple[int, ...]:
    """GPUs of each multi-node NVLink domain of the pools, in order, up to `gpus` (the last one short where a GPU
    budget cuts it); empty where NVLink ends at the node."""
    out: list[int] = []
    left = gpus
    for p in pools:
        for nodes in p.nvlink_domain_nodes:
            if left <= 0:
                break
            take = min(nodes * p.gpus_per_node, left)
            out.append(take)
            left -= take
    return tuple(out)


def _hardware(
    catalog: Catalog,
    pool: PoolFacts,
    gpus: int,
    precision: str,
    domains: tuple[int, ...] = (),
    utilisation: float | None = None,
) -> tuple[Hardware, list[str], list[str]]:
    assert catalog.sizing is not None, "catalog has no data/sizing.yaml"
    it = catalog.instance_type(pool.provider, pool.instance_type)
    acc = catalog.accelerator_of(it) if it else None
    if it is None or acc is None or acc.kind != "gpu":
        raise WorkloadError(
            f"pool {pool.name}: {pool.provider}/{pool.instance_type} is not a GPU instance type of the catalog; "
            "workloads are sized on NVIDIA GPU pools"
        )
    prior = catalog.sizing.utilisation_for(acc.id, "bf16")
    share = prior.compute_utilisation if utilisation is None else utilisation
    capacity, capacity_source = capacity_bytes(catalog, acc)
    # the prior rests on the published runs it was calibrated on
    sources = [acc.source_of("bf16_tflops"), capacity_source, prior.source]
    sources += [catalog.sizing.run(run_id).source for run_id in prior.runs]
    notes: list[str] = [capacity_note(catalog, acc)]
    peak = acc.bf16_tflops
    rate = acc.bf16_tflops * share
    if precision == "fp8":
        fp8 = catalog.sizing.fp8_tflops(acc.id)
        rate *= catalog.sizing.fp8_speedup
        sources.append(catalog.sizing.fp8_speedup_source)
        if fp8 is not None:
            peak = fp8.fp8_tflops
            sources.append(fp8.source)
        elif acc.fp8_tflops is not None:  # the accelerator's own dense FP8 peak (Blackwell records carry it)
            peak = acc.fp8_tflops
            sources.append(acc.source_of("fp8_tflops"))
        notes.append(
            f"fp8: matmuls at the bf16 prior x {catalog.sizing.fp8_speedup} (the published end-to-end FP8 speed-up); "
            f"MFU is against the {'fp8' if peak != acc.bf16_tflops else 'bf16 (no fp8 figure in the catalog)'} "
            f"peak of {peak:g} TFLOP/s"
        )
    if utilisation is None:
        basis = f"source {prior.source}" + ("" if prior.runs else ", borrowed: no published run of this GPU")
        notes.append(
            f"utilisation prior {share:.0%} of the {acc.bf16_tflops:g} TFLOP/s bf16 peak ({acc.name}; {basis}) for "
            "the compute part of a step (calibrated on published runs); exposed communication and the pipeline "
            "bubble come on top"
        )
    else:
        notes.append(f"utilisation {share:.1%} of the {acc.bf16_tflops:g} TFLOP/s bf16 peak, given (not the prior)")
    hw = Hardware(
        gpus=gpus,
        gpus_per_node=pool.gpus_per_node,
        capacity_bytes=capacity,
        peak_tflops=peak,
        rate_tflops=rate,
        utilisation=share,
        domains=domains,
    )
    if domains:
        notes.append(
            f"NVLink domains: {len(domains)} of up to {max(domains)} GPUs ({pool.nvlink_domain_nodes[0]} nodes x "
            f"{pool.gpus_per_node}); tensor and expert parallelism may span a domain's nodes (priced with the "
            "in-domain NVLink collective), pipeline and data parallelism cross domains over the scale-out network"
        )
    return hw, sources, notes


def _fits_with(
    shape: Shape, workload: Workload, hw: Hardware, priors: Priors, lay: Layout, zero: int, recompute: str
) -> Layout | None:
    """The smallest layout's tensor x pipeline group at `zero` and `recompute`, micro-batch 1, over more and more
    data-parallel ranks (doubling, at most one per sequence of the global batch): the first that fits, or None."""
    seqs = max(1, round(workload.training.global_batch_tokens / shape.sequence))
    base = lay.model_copy(update={"zero_stage": zero, "recompute": recompute, "micro_batch": 1, "virtual_stages": 1})
    d = lay.data_parallel
    while True:
        trial = base.model_copy(
            update={
                "data_parallel": d,
                "gpus": lay.tensor_parallel * lay.pipeline_parallel * d,
                "micro_batches": max(1, seqs // d),
            }
        )
        if layout_memory(shape, trial, workload.training, hw, priors).fits:
            return trial
        if d >= seqs:
            return None
        d = min(seqs, d * 2)


def _nothing_fits(
    catalog: Catalog,
    shape: Shape,
    workload: Workload,
    hw: Hardware,
    priors: Priors,
    found: SearchResult,
    *,
    available: int,
    accelerator: Accelerator,
) -> str:
    """Why nothing fits, and only the fixes that would change that: more GPUs (raise targets.gpus when it caps the
    GPUs below the pools', else add nodes), a higher ZeRO stage or full recomputation when the workload fixed a lower
    one, a GPU with more memory. The shortfall is said once."""
    if found.smallest is None:
        return (
            f"no layout: the {hw.gpus:,} GPUs cannot hold one tensor x pipeline group that divides the model "
            f"({shape.layers} layers, {shape.heads} heads); add GPUs or set tensor_parallel/pipeline_parallel to auto"
        )
    lay, mem = found.smallest
    training = workload.training
    text = (
        f"nothing fits: the smallest layout ({describe(lay)}) needs {gb(mem.total)} per GPU of {gb(mem.capacity)} "
        f"({gb(mem.total - mem.capacity)} short)"
    )
    # what the workload allows: its own zero_stage/recompute where it gives them, else the search's maximum
    zero = 3 if training.zero_stage == "auto" else training.zero_stage
    recompute = "full" if training.recompute == "auto" else training.recompute
    fixes: list[str] = []
    more = _fits_with(shape, workload, hw, priors, lay, zero, recompute)
    if more is not None and more.gpus > hw.gpus:
        nodes = -(-more.gpus // hw.gpus_per_node)
        if more.gpus <= available:
            fixes.append(f"raise targets.gpus to {more.gpus:,} (the pools have {available:,}; {describe(more)})")
        else:
            budget = " and targets.gpus" if workload.targets.gpus else ""
            fixes.append(
                f"{more.gpus:,} GPUs: add nodes (pools[].nodes{budget}; {nodes:,} nodes of {hw.gpus_per_node}; "
                f"{describe(more)})"
            )
    if (zero, recompute) != (3, "full"):
        settings = [f"zero_stage: 3 (not {zero})"] if zero != 3 else []
        if recompute != "full":
            settings.append(f"recompute: full (not {recompute})")
        best = _fits_with(shape, workload, hw, priors, lay, 3, "full")
        if best is not None and (more is None or best.gpus < more.gpus):
            where = "on the same GPUs" if best.gpus <= hw.gpus else f"on {best.gpus:,} GPUs"
            fixes.append(f"{' and '.join(settings)} {where} ({describe(best)})")
    bigger = sorted(
        (
            (capacity_bytes(catalog, a)[0], a)
            for a in catalog.accelerators.values()
            if a.kind == "gpu" and a.id != accelerator.id and capacity_bytes(catalog, a)[0] >= mem.total
        ),
        key=lambda c: c[0],
    )
    if bigger:
        cap, acc = bigger[0]
        fixes.append(f"a GPU with more memory ({acc.name}, {gb(cap)}; pools[].instance_type)")
    if fixes:
        return text + "; would fit with: " + ", or ".join(fixes)
    return (
        text + "; no number of GPUs, ZeRO stage or recomputation of the catalog's GPUs makes it fit at this global "
        "batch: shorten sequence_length or raise global_batch_tokens (more data-parallel ranks to shard over)"
    )


def _schedule(lay: Layout | None) -> str:
    """The pipeline schedule the memory and the bubble assume, in words."""
    if lay is None or lay.pipeline_parallel == 1:
        return "no pipeline" if lay is not None else "1F1B, or interleaved 1F1B with 2 or 4 chunks per stage"
    if lay.virtual_stages > 1:
        return f"interleaved 1F1B, {lay.virtual_stages} model chunks per stage"
    return "1F1B"


# the GPUs for the target days: fixed-point iterations on goodput (it falls as the GPUs grow)
MAX_TARGET_STEPS = 64
MAX_TARGET_GPUS = 10_000_000  # the spec's largest GPU budget: a target needing more is reported as such, never computed


def _gpus_for_target(
    lay: Layout, compute_days: float, target_days: float, rel: Callable[[int, float], Reliability] | None
) -> tuple[int | None, str]:
    """The GPUs (whole TP x PP groups) at which the chosen layout's wall-clock days meet `target_days`: the
    failure-free days scale as 1 / GPUs (linear scaling at the layout's throughput per GPU), and the goodput at that
    GPU count (more GPUs fail more often) stretches them. `rel` None: no goodput (no parallel file system)."""
    group = lay.tensor_parallel * lay.pipeline_parallel
    work = lay.gpus * compute_days  # GPU-days without failures

    def whole(n: float) -> int:
        return group * max(1, math.ceil(min(n, MAX_TARGET_GPUS) / group - 1e-9))

    how = (
        f"at the chosen layout's throughput per GPU (TP{lay.tensor_parallel} x PP{lay.pipeline_parallel} groups; "
        "assumes it scales linearly"
    )
    if work / target_days > MAX_TARGET_GPUS:
        return None, f"GPUs for {target_days:g} days: more than {MAX_TARGET_GPUS:,} {how})"
    n = whole(work / target_days)
    if rel is None:
        return n, f"GPUs for {target_days:g} days: {n:,} {how}; failures left out)"
    for _ in range(MAX_TARGET_STEPS):
        goodput = rel(n, work / n * 24).goodput or 0.0
        if goodput <= 0:
            return None, (
                f"GPUs for {target_days:g} days: none; at {n:,} GPUs failures and checkpoints leave no progress "
                "(goodput 0)"
            )
        nxt = whole(work / (target_days * goodput))
        if nxt <= n:
            return n, f"GPUs for {target_days:g} days: {n:,} {how}; goodput {goodput:.1%} at that scale)"
        n = nxt
    return None, f"GPUs for {target_days:g} days: none found; goodput falls faster than GPUs are added"


def _domains_held(lay: Layout, domains: tuple[int, ...]) -> int:
    """The NVLink domains the layout's tensor-parallel groups occupy, filled in order (a group never spans two)."""
    groups = lay.pipeline_parallel * lay.data_parallel
    held = 0
    for gpus in domains:
        if groups <= 0:
            break
        groups -= gpus // lay.tensor_parallel
        held += 1
    return held


def _spot_notes(pools: Sequence[PoolFacts]) -> list[str]:
    return [
        f"pool {p.name} is on the spot market: reclaims are not modelled (failures use the hardware interruption "
        "rate only), so days, goodput and cost are optimistic for it"
        for p in pools
        if p.market == "spot"
    ]


def estimate_workload(
    workload: Workload,
    pools: Sequence[PoolFacts],
    filesystems: Sequence[FilesystemFacts],
    catalog: Catalog,
    *,
    hours_per_month: float = 730.0,
    utilisation: float | None = None,
) -> WorkloadEstimate:
    """Size `workload` on its pools: the layout search, then days, GPU-hours, cost, energy and reliability.

    `hours_per_month` is the month the plan's monthly figures use; the run's cost is priced per node-hour.
    `utilisation`: a compute utilisation to use instead of the catalog's prior (the calibration does)."""
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
        notes.append(f"targets.gpus {target_gpus:,} is more than the pools' {available:,} GPUs: sized on {available:,}")
    domain_nodes = _domain_nodes(catalog, mine)
    if domain_nodes is not None and gpus > domain_nodes * first.gpus_per_node:
        gpus = domain_nodes * first.gpus_per_node
        notes.append(
            f"one job stays inside one InfiniBand domain of {first.instance_type} (a scale set, {domain_nodes:,} "
            f"nodes here): sized on its {gpus:,} GPUs; NCCL has no InfiniBand path to the pools' other domains, so "
            "give each domain its own workload"
        )
    training = workload.training
    domains = nvlink_domains(mine, gpus)
    domain_gpus = max(domains) if domains else first.gpus_per_node
    if training.tensor_parallel != "auto" and training.tensor_parallel > domain_gpus:
        where = (
            f"one NVLink domain of {first.instance_type} ({domain_gpus} GPUs)"
            if domains
            else f"one {first.instance_type} node (its NVLink domain)"
        )
        raise WorkloadError(
            f"workload {workload.name}: training.tensor_parallel {training.tensor_parallel} is more than the "
            f"{domain_gpus} GPUs of {where}: use {domain_gpus} or less, or auto"
        )
    hw, sources, hw_notes = _hardware(catalog, first, gpus, training.precision, domains, utilisation)
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
    comm, comm_sources = make_comm(catalog, first, domain_nodes)
    found = search(shape, training, hw, priors, comm)
    chosen = found.chosen
    acc = catalog.accelerator_of(catalog.instance_type(first.provider, first.instance_type))  # type: ignore[arg-type]
    assert acc is not None
    reason = (
        None
        if chosen
        else _nothing_fits(catalog, shape, workload, hw, priors, found, available=available, accelerator=acc)
    )

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
    days = compute_days = gpu_hours = cost = energy = None
    gpus_for_target = None
    reliability: Reliability | None = None
    if chosen is not None and chosen.step is not None and lay is not None:
        compute_hours = steps * chosen.step.total_s / 3600
        compute_days = compute_hours / 24
        size = _reliability.checkpoint_bytes(
            catalog, parameters=shape.parameters, optimizer=training.optimizer, precision=training.precision
        )

        def rel(gpus: int, hours: float) -> Reliability:
            return _reliability.reliability(
                catalog, gpus=gpus, checkpoint_bytes=size, filesystems=filesystems, run_hours=hours
            )

        reliability = rel(lay.gpus, compute_hours)
        hours: float | None = compute_hours
        if reliability.goodput is None:
            notes.append(
                "days, GPU-hours and cost leave out failures and restarts: with no parallel file system to "
                "checkpoint to, goodput is unknown (add a Lustre file system on the pools' network)"
            )
        elif reliability.goodput > 0:
            hours = compute_hours / reliability.goodput
            reliability = rel(lay.gpus, hours)  # the interruptions of the wall-clock run
        else:
            hours = None
            notes.append(
                f"no progress: at {lay.gpus:,} GPUs checkpoint writes, rework and restarts take all the time "
                "(goodput 0); a faster file system or fewer GPUs"
            )
        if hours is not None:
            days = hours / 24
            gpu_hours = hours * lay.gpus
            nodes_used = math.ceil(lay.gpus / first.gpus_per_node)
            if domains:
                held = _domains_held(lay, domains)
                whole_nodes = held * first.nvlink_domain_nodes[0]
                if whole_nodes > nodes_used:
                    notes.append(
                        f"a multi-node NVLink domain is held whole: the layout uses {nodes_used} nodes, cost and "
                        f"energy count the {whole_nodes} nodes of the {held} domain{'s' if held > 1 else ''} it touches"
                    )
                nodes_used = max(nodes_used, min(whole_nodes, sum(p.nodes for p in mine)))
            if first.usd_per_node_hour is not None:
                cost = first.usd_per_node_hour * nodes_used * hours
            energy = first.node_power_kw * first.pue * nodes_used * hours / 1000
        if workload.targets.days is not None:
            gpus_for_target, target_note = _gpus_for_target(
                lay, compute_days, workload.targets.days, rel if reliability.goodput is not None else None
            )
            notes.append(target_note)
        notes.extend(_spot_notes(mine))
    notes.append(
        f"searched {found.considered:,} layouts; memory is the first pipeline stage's peak ({_schedule(lay)}); the "
        f"stated overhead is {priors.overhead.fixed_bytes / 1e9:g} GB + {priors.overhead.fragmentation:.0%} of states "
        "and activations"
    )
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
        compute_days=compute_days,
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
