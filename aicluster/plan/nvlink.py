"""Multi-node NVLink domains: a rack-scale pool (GB200/GB300 NVL72) is planned in whole domains, once, here.

A type the catalog sells in an NVLink domain (`InstanceType.nvlink_domain`: 18 nodes x 4 GPUs) makes a pool of whole
domains. A count that would split one is refused with the counts that would not; a smaller unit is planned only
where the vendor sells one (`sizes`: AWS's u-p6e-gb200x36, 9 of an UltraServer's 18 instances), and then it is
named a partial domain. The pool's providers place each domain as one unit (a GCP sub-block, an Azure scale set, an
AWS UltraServer, an owned rack); every later layer (Slurm blocks, IMEX, Kubernetes ComputeDomains, sizing, policies)
reads the domains from the plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from aicluster.catalog import InstanceType

from .context import PlanCtx
from .models import NvlinkSlice, PlannedNvlinkDomain, PlannedPool, PoolNvlink

UNITS = {"ultraserver": "UltraServer", "subblock": "sub-block", "rack": "rack"}


def pool_nvlink(
    ctx: PlanCtx, path: tuple[str | int, ...], pool: str, nodes: int, it: InstanceType
) -> PoolNvlink | None:
    """The pool's NVLink domains, or None (with a problem at `path`, the pool's `nodes`) when the count splits one.
    Call only for a type with an NVLink domain."""
    dom = it.nvlink_domain
    assert dom is not None
    counts = dom.split(nodes)
    gpus = dom.nodes * it.accelerator_count
    if counts is None:
        lower = max(n for n in range(0, nodes) if dom.split(n) is not None)
        upper = min(n for n in range(nodes + 1, nodes + dom.nodes + 1) if dom.split(n) is not None)
        unit = UNITS[dom.unit]
        partial = [s for s in dom.sizes if s != dom.nodes]
        sold = f"whole NVLink domains of {dom.nodes} nodes ({gpus} GPUs: one {unit})" + (
            f", or one {' or '.join(str(s) for s in partial)}-node {unit} beside them" if partial else ""
        )
        ctx.problem(
            path,
            f"{it.name} is sold in {sold}; {nodes} nodes would split a domain, whose GPUs then share no NVLink with "
            f"the rest: use {' or '.join(str(n) for n in (lower, upper) if n > 0)}",
            nodes,
        )
        return None
    width = max(1, len(str(len(counts) - 1)))
    cuts = []
    first = 0
    for k, n in enumerate(counts):
        cuts.append(
            NvlinkSlice(name=f"{pool}-nvl{k:0{width}d}", index=k, first_node=first, nodes=n, whole=n == dom.nodes)
        )
        first += n
    return PoolNvlink(
        unit=dom.unit,
        nodes_per_domain=dom.nodes,
        gpus_per_domain=gpus,
        domains=tuple(cuts),
        rack_kw=dom.rack_kw,
        cooling=dom.cooling,
        scalable_unit=dom.scalable_unit,
    )


def cluster_domains(pools: Sequence[PlannedPool]) -> tuple[PlannedNvlinkDomain, ...]:
    """Every pool's NVLink domains with their node names, pool by pool: the plan's one list of them."""
    domains = []
    for p in pools:
        if p.nvlink is None:
            continue
        names = p.node_names()
        racks = p.onprem.domain_racks if p.onprem is not None else ()
        for d in p.nvlink.domains:
            domains.append(
                PlannedNvlinkDomain(
                    id=d.name,
                    pool=p.name,
                    provider=p.provider,
                    unit=p.nvlink.unit,
                    nodes=tuple(names[d.first_node : d.first_node + d.nodes]),
                    gpus=d.nodes * p.accelerators_per_node,
                    whole=d.whole,
                    rack=racks[d.index] if d.index < len(racks) else None,
                )
            )
    return tuple(domains)
