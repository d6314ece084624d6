"""aicluster's own resources, as any program may register them: the `AiCluster` component (the cluster's
declaration: budgets, compliance, pricing, tags, and its multi-node NVLink domains), an owned site
(`aicluster:onprem:Site`) and a sized workload (`aicluster:sizing:Workload`)."""

from __future__ import annotations

from collections.abc import Mapping

from .engine import UNKNOWN, Res, finite, get, items, num, text, whole
from .model import DeclaredDomain, Site, SitePool, Workload

AICLUSTER_TYPE = "aicluster:index:AiCluster"
ONPREM_SITE = "aicluster:onprem:Site"  # an owned site as aicluster records it (one resource per site)
WORKLOAD = "aicluster:sizing:Workload"  # a workload as aicluster sized it (an estimate, not a billed resource)


def site_of(r: Res) -> Site:
    pools = tuple(
        SitePool(
            name=str(get(p, "name", default="")),
            node_shape=str(get(p, "node_shape", default="")),
            nodes=int(num(get(p, "nodes")) or 0),
            hardware_usd_per_month=num(get(p, "hardware_usd_per_month")),
            energy_usd_per_month=num(get(p, "energy_usd_per_month")),
            power_kw_it=num(get(p, "power_kw_it")) or 0.0,
            co2e_t_per_month=num(get(p, "co2e_t_per_month")) or 0.0,
        )
        for p in items(r.props, "pools")
        if isinstance(p, Mapping)
    )
    return Site(
        res=r,
        name=str(r.get("site", default=r.name)),
        cidrs=tuple(c for c in items(r.props, "cidrs") if isinstance(c, str)),
        max_kw=num(r.get("max_kw")),
        rack_kw=num(r.get("rack_kw")),
        liquid_rack_kw=num(r.get("liquid_rack_kw")),
        it_kw=num(r.get("power", "it_kw")) or 0.0,
        facility_kw=num(r.get("power", "facility_kw")) or 0.0,
        co2e_t_per_month=num(r.get("co2e_t_per_month")) or 0.0,
        pools=pools,
        racks=tuple(x for x in items(r.props, "racks") if isinstance(x, Mapping)),
        fabrics=tuple(x for x in items(r.props, "fabrics") if isinstance(x, Mapping)),
    )


def workload_of(r: Res) -> Workload:
    fits = r.get("fits")
    return Workload(
        res=r,
        name=text(r.get("name")) or r.name,
        cluster=text(r.get("cluster")),
        pools=tuple(p for p in items(r.props, "pools") if isinstance(p, str) and p),
        instance_type=text(r.get("instanceType")),
        gpus_available=whole(r.get("gpusAvailable")),
        fits=fits if isinstance(fits, bool) else None,
        reason=text(r.get("reason")),
        memory_total_bytes=finite(r.get("memory", "totalBytes")),
        memory_capacity_bytes=finite(r.get("memory", "capacityBytes")),
        gpus=whole(r.get("layout", "gpus")),
        days=finite(r.get("days")),
        target_days=finite(r.get("targetDays")),
        gpus_for_target_days=whole(r.get("gpusForTargetDays")),
        checkpoint_bytes=finite(r.get("checkpointBytes")),
        checkpoint_write_s=finite(r.get("checkpointWriteSeconds")),
        checkpoint_interval_s=finite(r.get("checkpointIntervalSeconds")),
        write_gb_s=finite(r.get("writeGbS")),
        mtbf_h=finite(r.get("mtbfHours")),
        restart_s=finite(r.get("restartSeconds")),
        goodput=finite(r.get("goodput")),
        target_overhead=finite(r.get("targetOverhead")),
        required_write_gb_s=finite(r.get("requiredWriteGbS")),
        filesystems=tuple(f for f in items(r.props, "filesystems") if isinstance(f, str) and f),
    )


# What the AiCluster component declares of each multi-node NVLink domain (the plan's nvlink_domains), for what no raw
# resource tells: `block` (the scheduler unit that keeps a job inside the domain: a Slurm topology/block BlockName, a
# Kubernetes ComputeDomain or topology level) and `imex` (how IMEX runs on the domain's nodes: e.g. "slurm-prolog",
# "switch/nvidia_imex", "compute-domain"; null: not at all).
DECLARED_DOMAINS = "nvlink_domains"


def _said(d: Mapping[str, object], key: str) -> tuple[str | None, bool]:
    """(the key's text, whether the declaration says it at all); an unknown value counts as said and set."""
    if key not in d:
        return None, False
    value = get(d, key)
    return ("(unknown during preview)" if value is UNKNOWN else text(value)), True


def declared_domains(cluster: Res | None) -> list[DeclaredDomain]:
    """The multi-node NVLink domains the AiCluster component declares; none when it declares none."""
    if cluster is None:
        return []
    out = []
    for d in items(cluster.props, DECLARED_DOMAINS):
        if not isinstance(d, Mapping):
            continue
        block, says_block = _said(d, "block")
        imex, says_imex = _said(d, "imex")
        out.append(
            DeclaredDomain(
                res=cluster,
                id=str(get(d, "id", default="")),
                pool=str(get(d, "pool", default="")),
                instance_type=text(get(d, "instance_type")),
                provider=text(get(d, "provider")),
                nodes=whole(get(d, "nodes")),
                block=block,
                imex=imex,
                says_block=says_block,
                says_imex=says_imex,
            )
        )
    return out
