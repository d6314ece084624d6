"""Whole NVLink domains: a rack-scale type (GB200/GB300 NVL72: the catalog's nvlink_domain) is launched, placed and
scheduled in whole multi-node NVLink domains, or the GPUs of a split domain share no NVLink with the rest of their
job and fall back to the network (about 50 GB/s a GPU instead of NVLink's 900).

Judged from the resources as the engine hands them: each cloud resource that launches rack-scale nodes (its size in
the domains the type is sold in; an Azure scale set exactly one rack; a GCP MIG or VM asking for the domain's
topology, "1x72"), each owned site's rack-scale pool (whole racks), and, for what no raw resource tells, the domains
the AiCluster component declares (their size, and the scheduler block that keeps a job inside each)."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import InstanceType, NvlinkDomain

from ..facts.engine import UNKNOWN, Res
from ..facts.model import NvlinkGroup
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY
UNITS = {"ultraserver": "UltraServer", "subblock": "sub-block", "rack": "rack"}


def sold(it: InstanceType, domain: NvlinkDomain) -> str:
    """How the type is sold, in words: "NVLink domains of 18 nodes (72 GPUs, one sub-block)"."""
    unit = UNITS[domain.unit]
    partial = [s for s in domain.sizes if s != domain.nodes]
    return f"NVLink domains of {domain.nodes} nodes ({domain.nodes * it.accelerator_count} GPUs, one {unit})" + (
        f", or one {' or '.join(map(str, partial))}-node {unit} beside them" if partial else ""
    )


def counts_near(domain: NvlinkDomain, nodes: int) -> str:
    """The counts next to `nodes` that keep every domain whole: "18 or 36"."""
    lower = max((n for n in range(1, nodes) if domain.split(n) is not None), default=0)
    upper = min(n for n in range(nodes + 1, nodes + domain.nodes + 1) if domain.split(n) is not None)
    return " or ".join(str(n) for n in (lower, upper) if n > 0)


def _group(g: NvlinkGroup) -> Iterator[str]:
    f, d = g.fleet, g.domain
    it = f.spec
    assert it is not None
    what = f"{g.what} {f.res.name}"
    if g.one_domain and f.nodes != d.nodes:
        yield (
            f"{what} holds {f.nodes} {f.instance_type} nodes ({g.size_key} {f.nodes}); one {g.what} is one "
            f"{UNITS[d.unit]}, one NVLink domain of {d.nodes} nodes ({g.gpus_per_domain} GPUs): make it {d.nodes} "
            f"and add a {g.what} per domain (pools[].nodes a multiple of {d.nodes}; aicluster plans one each)"
        )
    elif not g.one_domain and d.split(f.nodes) is None:
        yield (
            f"{what} launches {f.nodes} {f.instance_type} nodes ({g.size_key} {f.nodes}); {f.instance_type} is sold "
            f"in {sold(it, d)}: {f.nodes} splits a domain, whose GPUs then share no NVLink with the rest; use "
            f"{counts_near(d, f.nodes)} (pools[].nodes)"
        )
    if g.wants is not None and g.asks is not UNKNOWN and g.asks != g.wants:
        asked = f"asks for NVLink topology {g.asks}" if g.asks else "asks for no NVLink topology"
        yield (
            f"{what} ({f.instance_type}) {asked}: its VMs may land on several sub-blocks, splitting NVLink domains of "
            f"{g.gpus_per_domain} GPUs; {g.fix_topology.format(t=g.wants)} (aicluster's GCP pools do)"
        )


def _split_domains(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    judged = False
    for g in stack.nvlink_groups:
        judged = True
        for message in _group(g):
            yield g.fleet.res, message
    for site in stack.sites:
        for p in site.pools:
            it = stack.catalog.instance_type("onprem", p.node_shape)
            if it is None or it.nvlink_domain is None:
                continue
            judged = True
            d = it.nvlink_domain
            if d.split(p.nodes) is None:
                yield (
                    site.res,
                    f"pool {p.name} of site {site.name} has {p.nodes} {p.node_shape} nodes; {p.node_shape} is built "
                    f"in {sold(it, d)}: {p.nodes} splits a rack, whose GPUs then share no NVLink with the rest; use "
                    f"{counts_near(d, p.nodes)} (pools[].hosts, each rack's {d.nodes} trays in one rack)",
                )
    for dd in stack.declared_domains:
        judged = True
        it = stack.catalog.instance_type(dd.provider, dd.instance_type) if dd.provider and dd.instance_type else None
        dom = it.nvlink_domain if it is not None else None
        if it is not None and dom is not None and dd.nodes is not None and dd.nodes not in dom.sizes:
            yield (
                dd.res,
                f"NVLink domain {dd.id} of pool {dd.pool} is declared with {dd.nodes} {it.name} nodes; {it.name} is "
                f"sold in {sold(it, dom)}: a domain of {dd.nodes} nodes is not one; plan the pool in whole domains "
                "(pools[].nodes)",
            )
        if dd.says_block and dd.block is None:
            yield (
                dd.res,
                f"NVLink domain {dd.id} of pool {dd.pool} has no scheduler block: a job may take part of it and part "
                "of another domain, and its GPUs across the two share no NVLink; keep jobs inside domains (Slurm: "
                "topology/block, one block per domain; Kubernetes: one ComputeDomain per job, placed by "
                "nvidia.com/gpu.clique)",
            )
    if not judged:
        raise NotApplicable("no rack-scale (multi-node NVLink) node in the stack")


POLICY = StackRule(
    Meta(
        name="aicluster-pool-disallow-split-nvlink-domain",
        display_name="Whole NVLink domains",
        description="Rack-scale pools (GB200/GB300 NVL72) are launched, placed and scheduled in whole NVLink domains.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Size rack-scale pools in whole domains (pools[].nodes a multiple of 18), one scale set or "
        "placement per domain, and schedule jobs by domain (Slurm blocks, ComputeDomains); aicluster plans them so.",
    ),
    _split_domains,
)
