"""IMEX on multi-node NVLink pools: GPUs of different nodes in one NVLink domain share memory only through IMEX (an
nvidia-imex daemon on every node of the domain, and an IMEX channel for the job). Without it CUDA's fabric handles
fail and NCCL stops with "Check IMEX channel configuration" (a hard error, not a fallback to the network).

What shows IMEX, as the engine hands it:
- the AiCluster component's declared domains (`nvlink_domains[].imex`: how IMEX runs on each, e.g. "slurm-prolog",
  "switch/nvidia_imex", "compute-domain"; null: not at all): what a Slurm cluster's IMEX comes down to, since its
  prolog and slurm.conf are inside a controller's user data;
- on Kubernetes, a Helm release of the NVIDIA DRA driver with ComputeDomains on (the chart's default), which runs
  the IMEX daemons of each ComputeDomain (facts.kubernetes.compute_domain_drivers)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res
from ..facts.kubernetes import compute_domain_drivers
from ..facts.model import pool_of
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY


@dataclass
class _Pool:
    """A multi-node NVLink pool: the resources that launch it, its nodes, and whether they are Kubernetes nodes."""

    name: str
    instance_type: str
    domain_nodes: int
    resources: list[Res] = field(default_factory=list)
    nodes: int = 0
    kubernetes: bool = False


def _pools(stack: Stack) -> dict[str, _Pool]:
    """Pools (by their aicluster:pool tag, else each resource on its own) of a rack-scale type with more than one
    node, from the clouds' fleets, Kubernetes node groups and the owned sites."""
    groups = {id(g.fleet.res) for g in stack.node_groups if g.fleet is not None}
    out: dict[str, _Pool] = {}
    for g in stack.nvlink_groups:
        f = g.fleet
        name = pool_of(f) or f.res.name
        p = out.setdefault(name, _Pool(name, f.instance_type, g.domain.nodes))
        p.resources.append(f.res)
        p.nodes += f.nodes
        p.kubernetes = p.kubernetes or id(f.res) in groups
    for site in stack.sites:
        for sp in site.pools:
            it = stack.catalog.instance_type("onprem", sp.node_shape)
            if it is not None and it.nvlink_domain is not None:
                p = out.setdefault(sp.name, _Pool(sp.name, sp.node_shape, it.nvlink_domain.nodes))
                p.resources.append(site.res)
                p.nodes += sp.nodes
    return {k: p for k, p in out.items() if p.nodes > 1}


def _missing_imex(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    pools = _pools(stack)
    if not pools:
        raise NotApplicable("no multi-node NVLink pool (GB200/GB300 NVL72) in the stack")
    drivers = compute_domain_drivers(stack)
    for p in pools.values():
        declared = [d for d in stack.declared_domains if d.pool == p.name]
        if declared and all(d.imex for d in declared):
            continue
        if p.kubernetes and drivers:
            continue
        said_none = [d.id for d in declared if d.says_imex and not d.imex]
        why = (
            f"the AiCluster component declares no IMEX for its domain{'s' if len(said_none) > 1 else ''} "
            f"{', '.join(said_none)}"
            if said_none
            else "nothing in the stack runs IMEX on it"
        )
        fix = (
            "install the NVIDIA DRA driver (chart dra-driver-nvidia-gpu) with resources.computeDomains.enabled true"
            if p.kubernetes
            else "run IMEX on every domain (aicluster's scheduler declares it per domain in the AiCluster's "
            "nvlink_domains[].imex; Slurm: an IMEX prolog or SwitchType=switch/nvidia_imex)"
        )
        names = ", ".join(dict.fromkeys(r.name for r in p.resources))
        yield (
            p.resources[0],
            f"pool {p.name} ({names}: {p.nodes} {p.instance_type} nodes in NVLink domains of {p.domain_nodes}) has no "
            f"IMEX: {why}; without an IMEX daemon and channel on every node of a domain its GPUs cannot share memory "
            f"across nodes and NCCL stops (no fallback); {fix}",
        )


POLICY = StackRule(
    Meta(
        name="aicluster-pool-missing-imex",
        display_name="IMEX on multi-node NVLink pools",
        description="Every multi-node NVLink pool (GB200/GB300 NVL72) runs IMEX on its domains.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Run IMEX per NVLink domain: Slurm through an IMEX prolog or switch/nvidia_imex (declared in the "
        "AiCluster's nvlink_domains), Kubernetes through the NVIDIA DRA driver with ComputeDomains enabled.",
    ),
    _missing_imex,
)
