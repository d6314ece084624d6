"""The collective model: how long one NCCL collective takes on N nodes of one GPU instance type.

busbw is defined exactly as nccl-tests' doc/PERFORMANCE.md: algbw = S / t, busbw = algbw x factor, with factor
2(n-1)/n for all_reduce and (n-1)/n for all_gather, reduce_scatter and all_to_all (S the whole array), n the
number of ranks. Time is an alpha-beta model, t = alpha + S x factor / ceiling, where the ceiling is the busbw the
algorithm reaches on large messages and alpha its effective latency (data/collectives.yaml, fitted at 16 MiB where a
published sweep exists). NCCL chooses among algorithms by message size; the model does the same among:

- one node: NVLink only. all_reduce uses NVLink SHARP ("nvls") on NVSwitches that have it, else a ring; the
  other collectives run as rings over NVLink ("nvlink-ring", "nvlink-pairwise" for all_to_all);
- two nodes, all_reduce: tree / NVLS-tree. Each node sends and receives the array once, so busbw can exceed the
  node's network rate (NVLink carries part of the reduction); bounded by the network and by the NVLink side;
- three or more nodes: ring, bounded by rails x per-NIC effective rate and by NVLink; all_reduce may also run as
  a tree or, on NVSwitches with NVLink SHARP, an NVLS-tree (logarithmic latency, less bandwidth: NCCL's tuning
  model), or, where the fabric reduces in the network (SHARP), as CollNet, whose latency grows with the levels of
  each rail's fat tree; every algorithm's latency grows with the node count, and the fastest at the size wins;
- a fabric with domains (Azure: one InfiniBand scale set of 100 VMs by default): more nodes than one domain holds
  are refused, since NCCL has no path on the fabric between domains;
- all_to_all across nodes: pairwise exchange; each rank's traffic leaving the node goes through its share of the
  node's NICs ((n - g)/n of the array with g ranks per node).

`ranks_per_node` below the type's GPUs per node: the node's other GPUs run groups of the same shape at the same
time (the data-parallel groups of a TP x PP layout) and the node's NICs are shared evenly. With one node it is a
tensor-parallel group of that many GPUs on the NVSwitch. Pure: no I/O; per-catalog lookups are cached.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import get_args

from aicluster.catalog import Catalog
from aicluster.catalog.collectives import CollectiveNetwork, NvlinkDomain, ScaleOut

from .models import CollectiveEstimate, CollectiveOp

OPS: tuple[str, ...] = get_args(CollectiveOp)
MAX_BYTES = 2**50  # 1 PiB: far beyond any buffer a GPU collective moves
MAX_NODES = 100_000


class CollectiveError(ValueError):
    """Input the collective model cannot estimate; the message is one line a user can act on."""


class FabricDomainError(CollectiveError):
    """More nodes than one fabric domain holds (an Azure InfiniBand scale set): no path on the fabric between
    domains. `max_nodes` is the largest node count that has one (a layout search can skip layouts beyond it)."""

    def __init__(self, message: str, max_nodes: int) -> None:
        super().__init__(message)
        self.max_nodes = max_nodes


@dataclass(frozen=True)
class _Platform:
    provider: str
    instance_type: str
    gpus_per_node: int
    domain: NvlinkDomain
    network: CollectiveNetwork
    scale_out: ScaleOut


@dataclass(frozen=True)
class _Index:
    platforms: dict[tuple[str, str], _Platform]
    not_modelled: dict[tuple[str, str], str]  # (provider, name) -> why (Trainium, CPU-only)
    providers_of: dict[str, tuple[str, ...]]  # name -> providers that have it


_CACHE: dict[int, tuple[Catalog, _Index]] = {}


def _index(catalog: Catalog) -> _Index:
    hit = _CACHE.get(id(catalog))
    if hit is not None and hit[0] is catalog:
        return hit[1]
    data = catalog.collectives
    platforms: dict[tuple[str, str], _Platform] = {}
    not_modelled: dict[tuple[str, str], str] = {}
    providers_of: dict[str, list[str]] = {}
    for (prov, name), it in catalog.instance_types.items():
        providers_of.setdefault(name, []).append(prov)
        acc = catalog.accelerator_of(it)
        if acc is None:
            not_modelled[(prov, name)] = "has no GPUs (a CPU-only type): no collective to estimate"
            continue
        if acc.kind != "gpu":
            link = "NeuronLink" if acc.kind == "trainium" else "ICI"
            not_modelled[(prov, name)] = (
                f"has {acc.name} accelerators: their collectives ({link}) are not modelled, only NVIDIA GPU types are"
            )
            continue
        net = data.network_of(prov, name)
        dom = data.domain(net.nvlink) if net is not None else None
        if net is None or dom is None or data.scale_out is None:
            not_modelled[(prov, name)] = "has no collectives.yaml record (a catalog bug: the loader should refuse it)"
            continue
        platforms[(prov, name)] = _Platform(prov, name, it.accelerator_count, dom, net, data.scale_out)
    index = _Index(platforms, not_modelled, {k: tuple(sorted(v)) for k, v in providers_of.items()})
    _CACHE[id(catalog)] = (catalog, index)
    return index


def gpu_instance_types(catalog: Catalog) -> list[tuple[str, str]]:
    """(provider, name) of every instance type the model covers, sorted."""
    return sorted(_index(catalog).platforms)


def fabric_domain_limit(catalog: Catalog, instance_type: str, provider: str | None = None) -> int | None:
    """The most nodes one fabric domain of the type holds where its fabric stops at a domain (an Azure ND
    InfiniBand scale set: 100 VMs unless raised); None where the fabric reaches every node of the pool."""
    return _resolve(catalog, instance_type, provider).network.max_nodes


def _resolve(catalog: Catalog, instance_type: str, provider: str | None) -> _Platform:
    index = _index(catalog)
    known = sorted({p for p, _ in catalog.instance_types})
    if provider is not None and provider not in known:
        raise CollectiveError(f"provider {provider!r}: not a provider of the catalog; use one of {', '.join(known)}")
    providers = index.providers_of.get(instance_type, ())
    if provider is not None:
        if provider not in providers:
            names = [n for (p, n) in index.platforms if p == provider]
            close = difflib.get_close_matches(instance_type, names, n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(close)}?" if close else f"{provider} GPU types: {', '.join(sorted(names))}"
            others = "/".join(providers)
            also = f" (it is {_article(others)} {others} type)" if providers else ""
            kind = f"{_article(provider)} {provider} type"
            raise CollectiveError(f"instance type {instance_type!r}: not {kind} of the catalog{also}; {hint}")
        providers = (provider,)
    if not providers:
        names = sorted({n for (_, n) in index.platforms})
        close = difflib.get_close_matches(instance_type, names, n=3, cutoff=0.5)
        where = {n: "/".join(p for p, m in index.platforms if m == n) for n in close}
        hint = (
            "did you mean " + ", ".join(f"{n} ({where[n]})" for n in close) + "?"
            if close
            else "the GPU types modelled: "
            + "; ".join(
                f"{prov}: {', '.join(n for p, n in index.platforms if p == prov)}"
                for prov in sorted({p for p, _ in index.platforms})
            )
        )
        raise CollectiveError(f"instance type {instance_type!r}: not in the catalog; {hint}")
    if len(providers) > 1:
        raise CollectiveError(
            f"instance type {instance_type!r} exists for {' and '.join(providers)}: give --provider "
            f"({' or '.join(providers)})"
        )
    key = (providers[0], instance_type)
    if key in index.not_modelled:
        raise CollectiveError(f"instance type {instance_type!r} ({key[0]}) {index.not_modelled[key]}")
    return index.platforms[key]


def _article(word: str) -> str:
    """'a' or 'an' before a provider name (by its sound: aws, azure, onprem take 'an'; gcp takes 'a')."""
    return "an" if word[:1].lower() in "aeio" else "a"


def busbw_factor(op: str, ranks: int) -> float:
    """The nccl-tests bus bandwidth factor of `op` at `ranks` ranks (doc/PERFORMANCE.md)."""
    if ranks < 1:
        raise CollectiveError(f"ranks {ranks}: a collective needs at least one rank")
    share = (ranks - 1) / ranks
    return 2.0 * share if op == "all_reduce" else share


@dataclass(frozen=True)
class _Candidate:
    algorithm: str
    ceiling_gb_s: float  # busbw at large messages
    latency_s: float
    bottleneck: str  # "nvlink" | "network"
    notes: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # source ids of the figures this candidate used (besides the common ones)

    def time(self, nbytes: int, factor: float) -> float:
        return self.latency_s + nbytes * factor / (self.ceiling_gb_s * 1e9)


def _bounded(network_gb_s: float, nvlink_gb_s: float | None) -> tuple[float, str]:
    """The lower of a network bound and an NVLink bound (None: NVLink not in the path), and which it is."""
    if nvlink_gb_s is None or network_gb_s <= nvlink_gb_s:
        return network_gb_s, "network"
    return nvlink_gb_s, "nvlink"


def _intra(p: _Platform, op: str, g: int) -> list[_Candidate]:
    dom = p.domain
    alpha = dom.latency_us * 1e-6
    if op == "all_reduce":
        ring = dom.ring_busbw_gb_s if dom.nvls else dom.all_reduce_busbw_gb_s
        out = [_Candidate("nvlink-ring", ring, alpha, "nvlink")]
        if dom.nvls:
            nvls_algbw = dom.all_reduce_busbw_gb_s / busbw_factor("all_reduce", dom.gpus)
            out.append(_Candidate("nvls", nvls_algbw * busbw_factor("all_reduce", g), alpha, "nvlink"))
        return out
    algorithm = "nvlink-pairwise" if op == "all_to_all" else "nvlink-ring"
    return [_Candidate(algorithm, dom.ring_busbw_gb_s, alpha, "nvlink")]


def log2i(n: int) -> int:
    """floor(log2 n), as NCCL's tuning model counts tree levels (log2i in src/graph/tuning.cc)."""
    return max(0, n.bit_length() - 1)


def fat_tree_levels(nodes: int, radix: int) -> int:
    """Switch levels a non-blocking fat tree of `radix`-port switches needs for `nodes` endpoints per rail: one
    switch holds `radix`, L levels hold 2 x (radix / 2)^L."""
    levels, capacity = 1, radix
    while capacity < nodes:
        levels += 1
        capacity = 2 * (radix // 2) ** levels
    return levels


def _inter(p: _Platform, op: str, nodes: int, g: int) -> list[_Candidate]:
    dom, net, scale = p.domain, p.network, p.scale_out
    n = nodes * g
    two_nodes = (dom.latency_us + net.network_latency_us) * 1e-6  # fitted on two-node runs
    ring_step, tree_step = scale.ring_step_us * 1e-6, scale.tree_step_us * 1e-6
    node_gb_s = net.node_gb_s * net.efficiency
    share = node_gb_s * g / p.gpus_per_node  # this group's share of the node's NICs
    nvlink_ring = dom.ring_busbw_gb_s if g > 1 else None  # one rank per node: NVLink is not in the path
    nvlink_algbw = dom.hierarchical_algbw_gb_s if g > 1 else None
    hier_src = (dom.field_sources.get("hierarchical_algbw_gb_s", dom.source),) if g > 1 else ()
    scale_src = scale.source
    fs = scale.field_sources
    notes: list[str] = []
    if g < p.gpus_per_node:
        notes.append(
            f"{p.gpus_per_node / g:g} groups of this shape share each node's {net.rails} NICs: this one gets "
            f"{share:.1f} of {node_gb_s:.1f} GB/s"
        )
    if op == "all_to_all":
        per_rank = node_gb_s / p.gpus_per_node  # each rank's traffic leaving the node uses its share of the NICs
        ceiling, neck = _bounded(per_rank * (n - 1) / (n - g), nvlink_ring)
        alpha = two_nodes + (nodes - 2) * ring_step  # pairwise exchange: one round per other node
        src = (fs.get("ring_step_us", scale_src),) if nodes > 2 else ()
        return [_Candidate("pairwise", ceiling, alpha, neck, tuple(notes), src)]
    ring, neck = _bounded(share, nvlink_ring)
    # NCCL's ring takes 2 x (nodes - 1) network steps for all_reduce, nodes - 1 for all_gather / reduce_scatter
    extra_steps = 2 * (nodes - 2) if op == "all_reduce" else nodes - 2
    ring_src = (fs.get("ring_step_us", scale_src),) if nodes > 2 else ()
    out = [_Candidate("ring", ring, two_nodes + extra_steps * ring_step, neck, tuple(notes), ring_src)]
    if op != "all_reduce":
        return out
    factor = busbw_factor("all_reduce", n)
    nvls_tree = dom.nvls and g > 1  # NVLS-tree: NVLink SHARP inside the node, a tree across nodes
    if nodes == 2:
        # each node sends and receives the array once: algbw <= share; NVLink carries the rest of the reduction
        algbw, neck = _bounded(share * nodes / (2 * (nodes - 1)), nvlink_algbw)
        name = "nvls-tree" if nvls_tree else "tree"
        out.append(_Candidate(name, algbw * factor, two_nodes, neck, (*notes, "two nodes: tree regime"), hier_src))
    else:
        # NCCL's tree: 2 x log2i(nodes) network levels; the two-node fit holds the first level up and down
        extra_levels = 2 * (log2i(nodes) - 1)
        tree_src = (fs.get("tree_step_us", scale_src), scale_src)
        out.append(
            _Candidate(
                "tree",
                ring * scale.tree_bandwidth_share,
                two_nodes + extra_levels * tree_step,
                neck,
                tuple(notes),
                tree_src,
            )
        )
        if nvls_tree:
            # NCCL's model: beyond two nodes NVLS-tree gets half the inter-node bandwidth, converted to algbw by 5/6
            ceiling, neck = _bounded(
                ring * scale.nvls_tree_bandwidth_share, None if nvlink_algbw is None else nvlink_algbw * factor
            )
            alpha = two_nodes + extra_levels * scale.nvls_tree_step_us * 1e-6
            src = (
                fs.get("nvls_tree_step_us", scale_src),
                fs.get("nvls_tree_bandwidth_share", scale_src),
                *hier_src,
            )
            out.append(_Candidate("nvls-tree", ceiling, alpha, neck, tuple(notes), src))
    if net.sharp:
        # SHARP reduces in the switches of each rail's fat tree: each node sends and receives the array once at any
        # node count; every switch level beyond the first adds one CollNet step up and one down
        levels = fat_tree_levels(nodes, net.switch_radix) if net.switch_radix else 1
        alpha = two_nodes + 2 * (levels - 1) * scale.collnet_step_us * 1e-6
        algbw, neck = _bounded(share, nvlink_algbw)
        why = (
            f"in-network reduction (SHARP) over {levels} switch level{'s' if levels > 1 else ''} per rail, bounded "
            "by the NVLink side as measured at two nodes (derived)"
        )
        src = (
            net.field_sources.get("sharp", net.source),
            *((net.field_sources.get("switch_radix", net.source),) if net.switch_radix else ()),
            *((fs.get("collnet_step_us", scale_src), "coll-hpcx-sharp-plugin") if levels > 1 else ()),
            *hier_src,
        )
        out.append(_Candidate("collnet-sharp", algbw * factor, alpha, neck, (*notes, why), src))
    return out


def _check_int(value: object, what: str, low: int, high: int, fix: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CollectiveError(f"{what} {value!r}: expected a whole number; {fix}")
    if not low <= value <= high:
        raise CollectiveError(f"{what} {value}: out of range; {fix}")
    return value


def estimate_collective(
    catalog: Catalog,
    instance_type: str,
    nodes: int,
    op: str,
    nbytes: int,
    *,
    ranks_per_node: int | None = None,
    provider: str | None = None,
    max_nodes: int | None = None,
) -> CollectiveEstimate:
    """Estimate one collective of `nbytes` (nccl-tests' size: the whole array) on `nodes` nodes of a GPU type.

    `max_nodes`: the pool's fabric domain size (an Azure pool whose scale sets were raised beyond 100 VMs); it applies
    only where the catalog gives the fabric a domain limit (`max_nodes` of its network record), and replaces that
    limit. Beyond the domain there is no path on the fabric and the estimate is refused."""
    if op not in OPS:
        close = difflib.get_close_matches(str(op), OPS, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise CollectiveError(f"op {op!r}: not a modelled collective; {hint}use one of {', '.join(OPS)}")
    _check_int(nodes, "nodes", 1, MAX_NODES, f"give 1 to {MAX_NODES:,} nodes")
    _check_int(nbytes, "bytes", 1, MAX_BYTES, "give 1 byte to 1 PiB (2^50 bytes)")
    p = _resolve(catalog, instance_type, provider)
    gpn = p.gpus_per_node
    g = gpn if ranks_per_node is None else ranks_per_node
    _check_int(g, "ranks_per_node", 1, gpn, f"{instance_type} has {gpn} GPUs per node: give 1 to {gpn}")
    n = nodes * g
    net = p.network
    domain_nodes = net.max_nodes if max_nodes is None or net.max_nodes is None else max_nodes
    if domain_nodes is not None and nodes > domain_nodes:
        raise FabricDomainError(
            f"nodes {nodes}: one {instance_type} InfiniBand domain is one scale set of at most {domain_nodes} VMs "
            f"and NCCL has no InfiniBand path between domains; use 1 to {domain_nodes} nodes (Azure support can "
            "raise a subscription's scale sets to 300 VMs: then set the pool's ib_domain_max_vms)",
            domain_nodes,
        )
    base = {
        "op": op,
        "provider": p.provider,
        "instance_type": p.instance_type,
        "nodes": nodes,
        "gpus_per_node": g,
        "gpus": n,
        "bytes": nbytes,
    }
    if n == 1:
        return CollectiveEstimate(
            **base,
            sources=(),
            algorithm="none",
            bottleneck="nvlink",
            algbw_gb_s=0.0,
            busbw_gb_s=0.0,
            time_s=0.0,
            latency_s=0.0,
            bandwidth_gb_s=0.0,
            notes=("one rank: nothing to communicate (busbw factor 0)",),
        )
    factor = busbw_factor(op, n)
    candidates = _intra(p, op, g) if nodes == 1 else _inter(p, op, nodes, g)
    best = min(candidates, key=lambda c: c.time(nbytes, factor))
    t = best.time(nbytes, factor)
    algbw = nbytes / t / 1e9
    notes = list(best.notes)
    used = {p.domain.source, p.domain.field_sources.get("latency_us", p.domain.source), *best.sources}
    if nodes > 1:
        used.update({net.source, net.field_sources.get("efficiency", net.source)})
        used.add(net.field_sources.get("network_latency_us", net.source))
        if net.borrowed:
            notes.append(f"borrowed for {instance_type}: {net.borrowed}")
    if nodes == 1 and g < gpn:
        notes.append(f"a group of {g} of the node's {gpn} GPUs on the NVSwitch; other groups do not slow it")
    return CollectiveEstimate(
        **base,
        algorithm=best.algorithm,
        sources=tuple(sorted(used)),
        bottleneck="network" if best.bottleneck == "network" else "nvlink",
        algbw_gb_s=algbw,
        busbw_gb_s=algbw * factor,
        time_s=t,
        latency_s=best.latency_s,
        bandwidth_gb_s=best.ceiling_gb_s,
        notes=tuple(notes),
    )
