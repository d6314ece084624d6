"""The stack's workloads sized on their pools: the planner's side of aicluster/sizing.

For each workload the planner checks its pools (NVIDIA GPUs; one instance type, one provider and region: one job,
one fabric), hands the estimator what the plan knows of them (PoolFacts: nodes, GPUs, the priced rate per node-hour,
power, PUE, fabric domains, multi-node NVLink domains) and of the file systems on their network (FilesystemFacts),
and keeps the estimate.
Problems are reported like every other planner problem (path, value, fix); a workload that fits no layout or misses
its target is a warning of the plan (the policy pack judges it too).

The estimators (aicluster.sizing's layout search, memory, step-time and reliability models) load when a stack has a
workload to size, not with the planner: most stacks have none, and every validate and plan would pay for them.
"""

from __future__ import annotations

from collections.abc import Sequence

from aicluster.sizing.models import FilesystemFacts, PoolFacts, WorkloadEstimate
from aicluster.spec.workload import Workload

from .context import PlanCtx
from .models import PlannedFilesystem, PlannedPool

_KIND = {"tpu": "TPU", "trainium": "Trainium"}


def pool_facts(pool: PlannedPool) -> PoolFacts:
    """What the estimator needs of a planned pool."""
    per_node = (
        pool.cost_usd_per_hour / pool.nodes
        if pool.price is not None and pool.cost_usd_per_hour is not None and pool.nodes
        else None
    )
    domains = tuple(len(nodes) for _, nodes in pool.fabric_domains()) or (pool.nodes,)
    return PoolFacts(
        name=pool.name,
        provider=pool.provider,
        region=pool.region,
        instance_type=pool.instance_type,
        nodes=pool.nodes,
        gpus_per_node=pool.accelerators_per_node,
        usd_per_node_hour=per_node,
        node_power_kw=pool.node_power_kw,
        pue=pool.pue,
        fabric_domain_nodes=domains,
        market=pool.market,
        nvlink_domain_nodes=tuple(d.nodes for d in pool.nvlink.domains) if pool.nvlink is not None else (),
    )


def filesystem_facts(fs: PlannedFilesystem) -> FilesystemFacts:
    return FilesystemFacts(name=fs.name, kind=fs.kind, parallel=fs.kind == "lustre", throughput_mb_s=fs.throughput_mb_s)


def _not_gpu(ctx: PlanCtx, pool: PlannedPool) -> str | None:
    """Why a pool cannot run a sized workload; None: it has NVIDIA GPUs."""
    if pool.accelerator_kind is None:
        return f"pool {pool.name} ({pool.instance_type}) has no accelerators"
    if pool.accelerator_kind != "gpu":
        return f"pool {pool.name} is {_KIND.get(pool.accelerator_kind, pool.accelerator_kind)} ({pool.instance_type})"
    acc = ctx.catalog.accelerators.get(pool.accelerator or "")
    if acc is None or acc.vendor != "nvidia":
        return f"pool {pool.name} ({pool.instance_type}) has no NVIDIA GPUs"
    return None


def _check_pools(ctx: PlanCtx, i: int, names: Sequence[str], by_name: dict[str, PlannedPool]) -> list[PlannedPool]:
    """The workload's planned pools if they can run one job, else [] with a problem per bad pool."""
    gpu_pools = sorted(p.name for p in by_name.values() if _not_gpu(ctx, p) is None)
    mine: list[PlannedPool] = []
    ok = True
    for j, name in enumerate(names):
        pool = by_name.get(name)
        if pool is None:  # not planned: the spec or the pool's planner has reported why
            ok = False
            continue
        why = _not_gpu(ctx, pool)
        if why is not None:
            hint = f"name a GPU pool of this stack: {', '.join(gpu_pools)}" if gpu_pools else "add a GPU pool"
            ctx.problem(
                ("workloads", i, "pools", j),
                f"{why}; the workload estimator models NVIDIA GPUs (memory, FLOPs, NVLink and the GPU fabric)",
                name,
                hint,
            )
            ok = False
            continue
        if mine:
            first = mine[0]
            if pool.instance_type != first.instance_type:
                ctx.problem(
                    ("workloads", i, "pools", j),
                    f"pool {name} is {pool.instance_type} but pool {first.name} is {first.instance_type}: one job runs "
                    "on one instance type (its layout and step time are per GPU type)",
                    name,
                    "list pools of one instance type, or split the workload into one per type",
                )
                ok = False
                continue
            if (pool.provider, pool.region) != (first.provider, first.region):
                ctx.problem(
                    ("workloads", i, "pools", j),
                    f"pool {name} is in {pool.provider}/{pool.region} but pool {first.name} is in "
                    f"{first.provider}/{first.region}: one job runs in one region (one GPU fabric reaches its nodes)",
                    name,
                    "list pools of one provider and region, or split the workload into one per region",
                )
                ok = False
                continue
        mine.append(pool)
    return mine if ok else []


def _check_degrees(ctx: PlanCtx, i: int, workload: Workload, mine: Sequence[PlannedPool]) -> bool:
    """A given pipeline_parallel the model or the pools cannot take (the spec checks it against model.layers when
    the layers are given; a shape derived from `parameters` and the pools' GPUs are known only here)."""
    from aicluster.sizing.shape import shape_of

    pp = workload.training.pipeline_parallel
    if not isinstance(pp, int):
        return True
    shape = shape_of(workload.model)
    path = ("workloads", i, "training", "pipeline_parallel")
    if pp > shape.layers:
        ctx.problem(
            path,
            f"must be at most {shape.layers}, the layers of the model"
            + (f" (the shape derived from parameters: {shape.layers} layers)" if workload.model.layers is None else "")
            + ": each stage holds at least one layer",
            pp,
            "give model.layers (with hidden_size and heads), or set pipeline_parallel: auto"
            if workload.model.layers is None
            else "lower it, or set pipeline_parallel: auto",
        )
        return False
    tp = workload.training.tensor_parallel if isinstance(workload.training.tensor_parallel, int) else 1
    gpus = sum(p.gpus for p in mine)
    if workload.targets.gpus is not None:
        gpus = min(gpus, workload.targets.gpus)
    if pp * tp > gpus:
        ctx.problem(
            path,
            f"needs at least {pp * tp:,} GPUs (pipeline_parallel x tensor_parallel {tp}); the workload has {gpus:,}",
            pp,
            "lower it, or set pipeline_parallel: auto",
        )
        return False
    return True


def plan_workloads(
    ctx: PlanCtx, pools: Sequence[PlannedPool], filesystems: Sequence[PlannedFilesystem]
) -> tuple[WorkloadEstimate, ...]:
    """Every workload of the stack sized on its pools, in stack order. Problems go to ctx (nothing is estimated
    once there is one: the plan fails anyway); warnings for a workload that fits nothing or misses its target."""
    by_name = {p.name: p for p in pools}
    checked = [(i, wl, _check_pools(ctx, i, wl.pools, by_name)) for i, wl in enumerate(ctx.spec.workloads)]
    for i, wl, mine in checked:
        if mine:
            _check_degrees(ctx, i, wl, mine)
    if ctx.problems or not checked:
        return ()
    from aicluster.sizing.collective import CollectiveError
    from aicluster.sizing.reliability import ReliabilityError
    from aicluster.sizing.workload import WorkloadError, estimate_workload

    out: list[WorkloadEstimate] = []
    for i, wl, mine in checked:
        if not mine:
            continue
        first = mine[0]
        facts = [pool_facts(p) for p in mine]
        mounts = [
            filesystem_facts(fs)
            for fs in filesystems
            if fs.provider == first.provider and fs.region == first.region and fs.network == first.network
        ]
        try:
            est = estimate_workload(wl, facts, mounts, ctx.catalog, hours_per_month=ctx.catalog.hours_per_month)
        except (WorkloadError, ReliabilityError, CollectiveError) as exc:
            ctx.problem(("workloads", i), str(exc), has_value=False)
            continue
        out.append(est)
        _warn(ctx, est)
    return tuple(out)


def _warn(ctx: PlanCtx, est: WorkloadEstimate) -> None:
    if not est.fits:
        ctx.warnings.append(
            f"workload {est.name}: no layout fits {est.gpus_available:,} {est.accelerator} GPUs ({est.instance_type})"
            + (f": {est.reason}" if est.reason else "")
        )
        return
    if est.target_days is not None and est.days is not None and est.days > est.target_days:
        gpus = est.chosen.layout.gpus if est.chosen is not None else est.gpus_available
        need = f"; about {est.gpus_for_target_days:,} GPUs would meet it" if est.gpus_for_target_days else ""
        ctx.warnings.append(
            f"workload {est.name}: {est.days:,.1f} calendar days on {gpus:,} GPUs ({est.instance_type}), over its "
            f"target of {est.target_days:g} days{need}"
        )
