"""Checkpoint throughput: the parallel file system writes a checkpoint fast enough for the fleet's failure rate.

The time lost to checkpointing is the writes themselves plus the work redone after each failure.
At Young's optimum interval (Young 1974, tau = sqrt(2 delta M)) that overhead is about
sqrt(2 delta / M): delta the time to write one checkpoint, M the job's mean time between failures.
M shrinks as the job grows: Llama 3 405B training (Grattafiori et al. 2024, 16,384 H100s, 419
unexpected interruptions in 54 days) saw about one per 50,700 GPU-hours. So the same file system
that is plenty for 32 GPUs can cost a 3,000-GPU job a fifth of its time.

A job runs on the pools of one cloud, region and network that one GPU fabric reaches (EFA and GCP's GPU
networks stay inside a zone; an Azure InfiniBand domain is one scale set), and writes to the file systems on
that network: each such group is judged on its own, never the stack's sum.

Checkpoint size: `checkpoint_gb` when set; else, when a sized workload (an `aicluster:sizing:Workload` resource)
runs on the job's pools, its training state as the estimate sized it (the largest, when several share the pools);
else half the fleet's GPU memory (weights, gradients and optimizer state of a sharded job that fills HBM with
activations too), a rule of thumb that says so.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aws import VPC
from ..facts.azure import AZURE_VNET
from ..facts.engine import Res
from ..facts.gcp import GCP_NETWORK
from ..facts.model import Filesystem, Fleet, Workload
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

GPU_HOURS_PER_INTERRUPTION = 50_700  # Llama 3 (arXiv:2407.21783): 16,384 GPUs x 1,296 h / 419

DEFAULT_MAX_OVERHEAD = 0.05

DEFAULT_HBM_FRACTION = 0.5


def young_overhead(write_s: float, mtbf_s: float) -> float:
    """Fraction of time lost to checkpoint writes and rework at Young's optimal interval."""
    return math.sqrt(2 * write_s / mtbf_s)


# The networks a job's nodes and file systems meet on: one VPC (AWS), VNet (Azure) or VPC network (GCP) in
# one region. Nodes in different clouds, regions or networks do not run one job (no shared fabric), and mount
# only the file systems on their own network.
NETWORKS = frozenset({VPC, AZURE_VNET, GCP_NETWORK})

_LINK_DEPTH = 4  # pool -> template -> subnet -> network is the longest chain of links the providers use


def _networks(res: Res, depth: int = 0, seen: set[int] | None = None) -> set[str]:
    """URNs of the networks a resource reaches through its inputs (its subnets', its template's)."""
    seen = set() if seen is None else seen
    if id(res) in seen or depth > _LINK_DEPTH:
        return set()
    seen.add(id(res))
    if res.type in NETWORKS:
        return {res.urn}
    return {n for deps in res.property_dependencies.values() for d in deps for n in _networks(d, depth + 1, seen)}


def _reach(res: Res, region: str | None) -> set[tuple[str, str | None, str]]:
    """Where a fleet or file system sits: (provider, region, network); a resource whose network is given by id
    (not a resource of this stack) shares a network with the others of its provider and region."""
    return {(res.catalog_provider, region, n) for n in _networks(res)} or {(res.catalog_provider, region, "")}


@dataclass
class Job:
    """Pools that can run one job (one provider, region and network) and the file systems they mount."""

    fleets: list[Fleet] = field(default_factory=list)
    filesystems: list[Filesystem] = field(default_factory=list)


def fabric_reach(f: Fleet) -> str:
    """What one GPU fabric reaches, within a network: AWS EFA an availability zone (the Auto Scaling group's
    zones, else its subnet's), a GCP GPU network a zone, an Azure InfiniBand domain one scale set (its own URN).
    "" where it cannot be told (given by id): such fleets share the reach of the others on their network."""
    res = f.res
    if f.provider == "azure":
        return res.urn
    if f.provider == "gcp":
        zone = res.get("zone")
        return zone if isinstance(zone, str) else ""
    zones = res.get("availabilityZones")
    if isinstance(zones, list) and len(zones) == 1 and isinstance(zones[0], str):
        return zones[0]
    subnet_zones = {z for s in res.linked("vpcZoneIdentifiers") if isinstance(z := s.get("availabilityZone"), str)}
    return subnet_zones.pop() if len(subnet_zones) == 1 else ""


def jobs(stack: Stack) -> list[Job]:
    """The stack's accelerator fleets grouped by the network they share and the fabric that reaches them, each
    group with the file systems on its network."""
    return [part for job in _by_network(stack) for part in _by_fabric(job)]


def _by_fabric(job: Job) -> list[Job]:
    """One network's job split by fabric reach; every part mounts the network's file systems."""
    reach: dict[str, list[Fleet]] = {}
    for f in job.fleets:
        reach.setdefault(fabric_reach(f), []).append(f)
    unknown = reach.pop("", [])
    if not reach:
        return [job]
    parts = [Job(fleets, list(job.filesystems)) for fleets in reach.values()]
    parts[0].fleets[:0] = unknown  # a fleet given by id: judged with the first fabric (cannot be told apart)
    return parts


def _by_network(stack: Stack) -> list[Job]:
    """The stack's accelerator fleets grouped by the network they share, with the file systems on it."""
    groups: list[tuple[set[tuple[str, str | None, str]], Job]] = []
    members: list[tuple[set[tuple[str, str | None, str]], Fleet | Filesystem]] = [
        *((_reach(f.res, f.region), f) for f in stack.fleets if f.accelerators),
        *((_reach(fs.res, fs.region), fs) for fs in stack.filesystems),
    ]
    for own, member in members:
        joined = [g for g in groups if g[0] & own]
        merged, reach = Job(), set(own)
        for g in joined:
            groups.remove(g)
            reach |= g[0]
            merged.fleets += g[1].fleets
            merged.filesystems += g[1].filesystems
        if isinstance(member, Fleet):
            merged.fleets.append(member)
        else:
            merged.filesystems.append(member)
        groups.append((reach, merged))
    return [job for _, job in groups if job.fleets]


def _names(resources: list[Res]) -> str:
    return ", ".join(r.name for r in resources)


def _checkpoint(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    groups = jobs(stack)
    if not groups:
        raise NotApplicable("no accelerator fleets")
    for job in groups:
        yield from _judge(stack, ctx, job)


def job_workload(stack: Stack, job: Job) -> Workload | None:
    """The sized workload on the job's pools with the largest training state (None: no workload with a checkpoint
    size runs on them)."""
    sized = [
        w
        for w in stack.workloads
        if w.checkpoint_bytes is not None and w.checkpoint_bytes > 0 and any(w.runs_on(f) for f in job.fleets)
    ]
    return max(sized, key=lambda w: w.checkpoint_bytes or 0.0) if sized else None


def _checkpoint_size(stack: Stack, ctx: Ctx, job: Job, hbm_gb: float) -> tuple[float, str]:
    """GB one checkpoint writes, and what the figure rests on (said in the message unless it was configured)."""
    given = ctx.setting("checkpoint_gb")
    if given is not None:
        return float(given), ""
    workload = job_workload(stack, job)
    if workload is not None and workload.checkpoint_bytes is not None:
        return workload.checkpoint_bytes / 1e9, f" (workload {workload.name}'s training state, as sized)"
    fraction = float(ctx.setting("hbm_fraction", default=DEFAULT_HBM_FRACTION))
    return hbm_gb * fraction, ""


def _judge(stack: Stack, ctx: Ctx, job: Job) -> Iterator[tuple[Res | None, str]]:
    """One job's checkpoint: the job's accelerators' memory written to the parallel file systems it mounts."""
    gpus = chips = 0
    hbm_gb = 0.0
    for f in job.fleets:
        if f.tpu is not None:
            acc = stack.catalog.accelerators.get(f.tpu.accelerator)
            chips += f.chips
        else:
            acc = stack.catalog.accelerator_of(f.spec) if f.spec else None
        if acc is None:
            continue
        gpus += f.accelerators
        hbm_gb += acc.memory_gb * f.accelerators
    if gpus == 0:
        return
    # TPU chips are counted like GPUs, at the same failure rate per device-hour (none is published for TPUs)
    devices = "GPUs" if not chips else "TPU chips" if chips == gpus else "GPUs and TPU chips"
    size_gb, basis = _checkpoint_size(stack, ctx, job, hbm_gb)
    pools = _names([f.res for f in job.fleets])
    region = job.fleets[0].region or "its region"
    who = f"{pools} ({gpus:,} {devices} in {region})"
    parallel = [fs for fs in job.filesystems if fs.parallel and fs.throughput_mb_s]  # FSx, Managed Lustre
    if not parallel:
        elsewhere = [fs.res.name for fs in stack.filesystems if fs.parallel and fs not in job.filesystems]
        yield (
            job.fleets[0].res,
            f"{who}: no parallel file system on their network: a {size_gb:,.0f} GB checkpoint{basis} has nowhere "
            "fast to go"
            + (f" ({', '.join(elsewhere)} is on another network, cloud or region)" if elsewhere else "")
            + "; add storage (kind: lustre) in the pool's cloud and region",
        )
        return
    mb_s = sum(fs.throughput_mb_s or 0.0 for fs in parallel)
    on = _names([fs.res for fs in parallel])
    write_s = size_gb * 1000 / mb_s
    mtbf_s = float(ctx.setting("gpu_hours_per_interruption", default=GPU_HOURS_PER_INTERRUPTION)) / gpus * 3600
    overhead = young_overhead(write_s, mtbf_s)
    limit = float(ctx.setting("max_overhead", default=DEFAULT_MAX_OVERHEAD))
    target_s = ctx.setting("checkpoint_seconds")
    if target_s is not None and write_s > float(target_s):
        yield (
            parallel[0].res,
            f"{who}: a {size_gb:,.0f} GB checkpoint{basis} takes {write_s:,.0f} s at {mb_s / 1000:,.1f} GB/s on {on}, "
            "over "
            f"the {float(target_s):g} s target; raise the file system's capacity or throughput_mb_s_per_tib",
        )
    elif target_s is None and overhead > limit:
        need = size_gb * 1000 / (limit**2 * mtbf_s / 2)
        yield (
            parallel[0].res,
            f"{who}: a {size_gb:,.0f} GB checkpoint{basis} takes {write_s:,.0f} s at {mb_s / 1000:,.1f} GB/s on {on}; "
            f"with a failure every {mtbf_s / 3600:,.1f} h the job loses {overhead:.0%} of its time to checkpoints and "
            f"rework (limit {limit:.0%}); it needs about {need / 1000:,.0f} GB/s: raise capacity_tib or "
            "throughput_mb_s_per_tib",
        )


POLICY = StackRule(
    Meta(
        name="aicluster-filesystem-enforce-checkpoint-throughput",
        display_name="Checkpoint throughput",
        description="Each group of pools that can run one job (one network and fabric reach) checkpoints to a "
        "parallel file system on its network fast enough for its failure rate.",
        concern="storage",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.ADVISORY,
        remediation="Raise the Lustre file system's capacity or per-TiB throughput, or checkpoint less state.",
        config={
            "checkpoint_gb": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Checkpoint size, GB (wins over a sized workload's training state).",
            },
            "hbm_fraction": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1,
                "description": "Checkpoint size as a share of the fleet's GPU memory without checkpoint_gb or a "
                "sized workload (0.5).",
            },
            "max_overhead": {
                "type": "number",
                "minimum": 0.001,  # a tighter limit asks for more GB/s than any file system sells
                "maximum": 1,
                "description": "Largest share of time lost to checkpoint writes and rework (0.05).",
            },
            "gpu_hours_per_interruption": {
                "type": "number",
                "minimum": 1,
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
