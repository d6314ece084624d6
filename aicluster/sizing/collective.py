"""The collective model: how long one NCCL collective takes on N nodes of one GPU instance type.

busbw is defined exactly as nccl-tests' doc/PERFORMANCE.md: algbw = S / t, busbw = algbw x factor, with factor
2(n-1)/n for all_reduce and (n-1)/n for all_gather, reduce_scatter and all_to_all (S the whole array), n the
number of ranks. Time is an alpha-beta model, t = alpha + S x factor / ceiling, where the ceiling is the busbw the
algorithm reaches on large messages and alpha its effective latency (data/collectives.yaml, fitted at 16 MiB where a
published sweep exists, at the sweep's sizes for multi-node NVLink domains). NCCL chooses among algorithms by message
size; the model does the same.

The unit is the NVLink domain, as it is NCCL's (with multi-node NVLink, MNNVL, NCCL treats the GPUs of one NVLink
clique as one node: src/graph/topo.cc): one node of an 8-GPU server, or a rack of nodes sharing one NVLink fabric (a
GB200/GB300 NVL72: 18 nodes x 4 GPUs), as the instance type's `nvlink_domain` says. So:

- one domain: NVLink only (across the domain's nodes for NVL72, no NIC in the path). all_reduce uses NVLink SHARP
  ("nvls") on NVSwitches that have it, else a ring; the other collectives run as rings over NVLink
  ("nvlink-ring", "nvlink-pairwise" for all_to_all). Latency grows with the ranks in a multi-node domain (the
  published 72-GPU sweep's alpha is 9x the 8-GPU one: interpolated linearly between them, derived);
- two domains, all_reduce: tree / NVLS-tree. Each domain sends and receives the array once, so busbw can exceed
  the domain's network rate (NVLink carries part of the reduction); bounded by the network and by the NVLink side;
- three or more domains: ring, bounded by the network share of the job's GPUs in a domain (G GPUs x the per-GPU
  NIC rate: a ring across domains reaches G x NIC, NVIDIA/nccl#1801), by NVLink, and where measured by what a ring
  across whole NVL72 domains reached; all_reduce may also run as a tree or, on NVSwitches with NVLink SHARP, an
  NVLS-tree (logarithmic latency, less bandwidth: NCCL's tuning model), or, where the fabric reduces in the network
  (SHARP), as CollNet, whose latency grows with the levels of each rail's fat tree; every algorithm's latency grows
  with the domain count (rings also with their NVLink steps inside multi-node domains), and the fastest at the
  size wins;
- a job that splits domains (a partial domain, or fewer nodes per domain than it holds): across domains the
  smallest part's GPUs carry the traffic (the G of the bound above is the smallest domain's), and the notes say what
  that costs against whole domains;
- a fabric with domains (Azure: one InfiniBand scale set of 100 VMs by default): more nodes than one fabric domain
  holds are refused, since NCCL has no path on the fabric between them;
- all_to_all across domains: pairwise exchange; each rank's traffic leaving its NVLink domain goes through its
  share of the NICs ((n - G)/n of the array with G ranks in the domain).

`ranks_per_node` below the type's GPUs per node: the node's other GPUs run groups of the same shape at the same
time (the data-parallel groups of a TP x PP layout) and the NICs are shared evenly. Within one domain it is a
tensor-parallel group of that many GPUs on the NVSwitch. Each estimate's notes name the nearest published figure of
the same NVLink record and regime (calibration points of data/collectives.yaml). Pure: no I/O; per-catalog lookups
are cached.
"""

from __future__ import annotations

import difflib
import math
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
    domain_nodes: int  # nodes of one whole NVLink domain: 1 where NVLink ends at the node, 18 for an NVL72
    domain_unit: str  # what a domain is called ("node", "rack", "subblock", "ultraserver")

    @property
    def multi_node(self) -> bool:
        return self.domain_nodes > 1


@dataclass(frozen=True)
class _Placement:
    """Where the ranks are: `domains` NVLink domains, each holding `per_domain` ranks except the smallest part,
    which holds `smallest` (a partial last domain); `nodes` nodes of `ranks_per_node` ranks."""

    nodes: int
    ranks_per_node: int
    domains: int
    per_domain: int
    smallest: int
    ranks: int
    node_counts: tuple[int, ...]  # nodes in each domain (for the notes)


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
        nvd = it.nvlink_domain
        platforms[(prov, name)] = _Platform(
            prov,
            name,
            it.accelerator_count,
            dom,
            net,
            data.scale_out,
            nvd.nodes if nvd is not None else 1,
            nvd.unit if nvd is not None else "node",
        )
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
    """'a' or 'an' before a provider name or a domain unit (by its sound: aws, azure, onprem, ultraserver take 'an';
    gcp, rack, subblock take 'a')."""
    return "an" if word[:1].lower() in "aeiou" else "a"


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
    """One NVLink domain holding all `g` ranks (one node, or several nodes of a multi-node domain)."""
    dom = p.domain
    alpha = dom.latency_at(g) * 1e-6
    src = (dom.field_sources.get("domain_latency_us", dom.source),) if p.multi_node and g > 8 else ()
    if op == "all_reduce":
        ring = dom.ring_busbw_gb_s if dom.nvls else dom.all_reduce_busbw_gb_s
        out = [_Candidate("nvlink-ring", ring, alpha, "nvlink", (), src)]
        if dom.nvls:
            nvls_algbw = dom.all_reduce_busbw_gb_s / busbw_factor("all_reduce", dom.gpus)
            out.append(_Candidate("nvls", nvls_algbw * busbw_factor("all_reduce", g), alpha, "nvlink", (), src))
        return out
    algorithm = "nvlink-pairwise" if op == "all_to_all" else "nvlink-ring"
    return [_Candidate(algorithm, dom.ring_busbw_gb_s, alpha, "nvlink", (), src)]


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


def _inter(p: _Platform, op: str, place: _Placement, sharp: bool) -> list[_Candidate]:
    """Ranks on `place.domains` >= 2 NVLink domains: NVLink inside each, the scale-out network between them. For an
    8-GPU server a domain is a node and this is the multi-node model as it always was."""
    dom, net, scale = p.domain, p.network, p.scale_out
    nodes = place.domains  # NCCL's nodes: NVLink domains (cliques under MNNVL)
    n = place.ranks
    g = place.per_domain
    two_nodes = (dom.latency_at(g) + net.network_latency_us) * 1e-6  # fitted on two-domain runs
    ring_step, tree_step = scale.ring_step_us * 1e-6, scale.tree_step_us * 1e-6
    node_gb_s = net.node_gb_s * net.efficiency
    # this group's share of the NICs: one per GPU of the smallest part of the job in a domain (8-GPU servers: the
    # node's share for g of its GPUs)
    share = node_gb_s * place.smallest / p.gpus_per_node
    nvlink_ring = dom.ring_busbw_gb_s if g > 1 else None  # one rank per domain: NVLink is not in the path
    nvlink_algbw = dom.hierarchical_algbw_gb_s if g > 1 else None
    hier_src = (dom.field_sources.get("hierarchical_algbw_gb_s", dom.source),) if g > 1 else ()
    lat_src = (dom.field_sources.get("domain_latency_us", dom.source),) if p.multi_node and g > 8 else ()
    scale_src = scale.source
    fs = scale.field_sources
    notes: list[str] = []
    if place.ranks_per_node < p.gpus_per_node:
        notes.append(
            f"{p.gpus_per_node / place.ranks_per_node:g} groups of this shape share each node's {net.rails} NICs: this "
            f"one gets {node_gb_s * place.ranks_per_node / p.gpus_per_node:.1f} of {node_gb_s:.1f} GB/s"
        )
    if op == "all_to_all":
        per_rank = node_gb_s / p.gpus_per_node  # each rank's traffic leaving the domain uses its share of the NICs
        ceiling, neck = _bounded(per_rank * (n - 1) / (n - place.smallest), nvlink_ring)
        alpha = two_nodes + (nodes - 2) * ring_step  # pairwise exchange: one round per other domain
        src = (fs.get("ring_step_us", scale_src),) if nodes > 2 else ()
        return [_Candidate("pairwise", ceiling, alpha, neck, tuple(notes), (*src, *lat_src))]
    ring, neck = _bounded(share, nvlink_ring)
    ring_src: tuple[str, ...] = lat_src
    if p.multi_node and dom.cross_domain_ring_busbw_gb_s is not None and dom.cross_domain_ring_busbw_gb_s < ring:
        ring, neck = dom.cross_domain_ring_busbw_gb_s, "network"
        ring_src = (*ring_src, dom.field_sources.get("cross_domain_ring_busbw_gb_s", dom.source))
    # NCCL's ring takes 2 x (nodes - 1) network steps for all_reduce, nodes - 1 for all_gather / reduce_scatter
    extra_steps = 2 * (nodes - 2) if op == "all_reduce" else nodes - 2
    ring_alpha = two_nodes + extra_steps * ring_step
    if p.multi_node and dom.nvlink_ring_step_us is not None:
        # and its other steps run over NVLink inside the domains (1,439 x 2 - 38 of them for 20 NVL72 racks)
        steps = 2 * (n - 1) if op == "all_reduce" else n - 1
        network_steps = 2 * (nodes - 1) if op == "all_reduce" else nodes - 1
        ring_alpha += (steps - network_steps) * dom.nvlink_ring_step_us * 1e-6
        ring_src = (*ring_src, dom.field_sources.get("nvlink_ring_step_us", dom.source))
    if nodes > 2:
        ring_src = (fs.get("ring_step_us", scale_src), *ring_src)
    out = [_Candidate("ring", ring, ring_alpha, neck, tuple(notes), ring_src)]
    if op != "all_reduce":
        return out
    factor = busbw_factor("all_reduce", n)
    nvls_tree = dom.nvls and g > 1  # NVLS-tree: NVLink SHARP inside the domain, a tree across domains
    if nodes == 2:
        # each domain sends and receives the array once: algbw <= share; NVLink carries the rest of the reduction
        algbw, neck = _bounded(share * nodes / (2 * (nodes - 1)), nvlink_algbw)
        name = "nvls-tree" if nvls_tree else "tree"
        why = "two domains: tree regime" if p.multi_node else "two nodes: tree regime"
        out.append(_Candidate(name, algbw * factor, two_nodes, neck, (*notes, why), (*hier_src, *lat_src)))
    elif p.multi_node:
        # across 3+ multi-node NVLink domains NCCL ran its ring in every published run, at every size (CoreWeave's 20
        # NVL72 racks; nccl#1801 by default, where a forced tree was faster): the model keeps the ring there
        pass
    else:
        # NCCL's tree: 2 x log2i(nodes) network levels; the two-node fit holds the first level up and down
        extra_levels = 2 * (log2i(nodes) - 1)
        tree_src = (fs.get("tree_step_us", scale_src), scale_src, *lat_src)
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
                *lat_src,
            )
            out.append(_Candidate("nvls-tree", ceiling, alpha, neck, tuple(notes), src))
    if net.sharp and sharp:
        # SHARP reduces in the switches of each rail's fat tree: each node sends and receives the array once at any
        # node count; every switch level beyond the first adds one CollNet step up and one down
        levels = fat_tree_levels(place.nodes, net.switch_radix) if net.switch_radix else 1
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
            *lat_src,
        )
        out.append(_Candidate("collnet-sharp", algbw * factor, alpha, neck, (*notes, why), src))
    return out


def _check_int(value: object, what: str, low: int, high: int, fix: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CollectiveError(f"{what} {value!r}: expected a whole number; {fix}")
    if not low <= value <= high:
        raise CollectiveError(f"{what} {value}: out of range; {fix}")
    return value


def _check_op(op: str) -> None:
    if op not in OPS:
        close = difflib.get_close_matches(str(op), OPS, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise CollectiveError(f"op {op!r}: not a modelled collective; {hint}use one of {', '.join(OPS)}")


def _placement(p: _Platform, nodes: int, g: int, nodes_per_domain: int) -> _Placement:
    """`nodes` nodes of `g` ranks, filling domains of `nodes_per_domain` nodes in order (the last may hold fewer)."""
    counts = [nodes_per_domain] * (nodes // nodes_per_domain)
    if nodes % nodes_per_domain:
        counts.append(nodes % nodes_per_domain)
    return _Placement(
        nodes=nodes,
        ranks_per_node=g,
        domains=len(counts),
        per_domain=max(counts) * g,
        smallest=min(counts) * g,
        ranks=nodes * g,
        node_counts=tuple(counts),
    )


def _fabric_limit(p: _Platform, instance_type: str, nodes: int, max_nodes: int | None) -> None:
    net = p.network
    domain_nodes = net.max_nodes if max_nodes is None or net.max_nodes is None else max_nodes
    if domain_nodes is not None and nodes > domain_nodes:
        raise FabricDomainError(
            f"nodes {nodes}: one {instance_type} InfiniBand domain is one scale set of at most {domain_nodes} VMs "
            f"and NCCL has no InfiniBand path between domains; use 1 to {domain_nodes} nodes (Azure support can "
            "raise a subscription's scale sets to 300 VMs: then set the pool's ib_domain_max_vms)",
            domain_nodes,
        )


@dataclass(frozen=True)
class _Result:
    best: _Candidate
    time_s: float
    factor: float


def _run(p: _Platform, op: str, nbytes: int, place: _Placement, sharp: bool, only: str | None = None) -> _Result:
    factor = busbw_factor(op, place.ranks)
    candidates = _intra(p, op, place.ranks) if place.domains == 1 else _inter(p, op, place, sharp)
    if only is not None:
        names = sorted({c.algorithm for c in candidates})
        candidates = [c for c in candidates if c.algorithm == only]
        if not candidates:
            raise ValueError(f"algorithm {only!r}: this shape runs {', '.join(names)}")
    best = min(candidates, key=lambda c: c.time(nbytes, factor))
    return _Result(best, best.time(nbytes, factor), factor)


def _busbw(p: _Platform, op: str, nbytes: int, place: _Placement, sharp: bool) -> float:
    r = _run(p, op, nbytes, place, sharp)
    return nbytes / r.time_s / 1e9 * r.factor


def _size_text(nbytes: float) -> str:
    for div, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if nbytes >= div:
            return f"{nbytes / div:g} {unit}"
    return f"{nbytes:g} B"


def _published(catalog: Catalog, p: _Platform, op: str, nbytes: int, place: _Placement, sharp: bool) -> str | None:
    """The nearest published figure of the same NVLink record and regime (inside one domain, or across domains),
    with what the model gives at that point: the op first, then the rank count, then the size."""
    across = place.domains > 1
    index = _index(catalog)
    best: tuple[tuple[int, int, int, float, float], str] | None = None
    for pt in catalog.collectives.calibration:
        q = index.platforms.get((pt.provider, pt.instance_type))
        if q is None or q.domain.id != p.domain.id or pt.kind == "minimum":
            continue
        q_place = _placement(q, pt.nodes, pt.gpus_per_node, pt.nodes_per_domain or q.domain_nodes)
        if (q_place.domains > 1) != across:
            continue
        key = (
            0 if pt.op == op else 1,
            0 if q is p else 1,  # the same instance type first, then its fabric, then the same NVLink
            0 if q.network is p.network else 1,
            abs(math.log(q_place.ranks / place.ranks)),
            abs(math.log(pt.bytes / nbytes)),
        )
        if best is not None and key >= best[0]:
            continue
        model = _busbw(q, pt.op, pt.bytes, q_place, sharp if pt.sharp is None else pt.sharp and sharp)
        where = (
            f"{q_place.domains} x {q_place.per_domain} GPUs" if q_place.domains > 1 else f"{q_place.ranks} GPUs"
        ) + f" of {pt.instance_type}"
        text = (
            f"published beside it: {pt.op} on {where}, {_size_text(pt.bytes)}: busbw {pt.busbw_gb_s:g} GB/s "
            f"({pt.kind}, {pt.source}); the model gives {model:.1f} there"
        )
        best = (key, text)
    if best is not None:
        return best[1]
    regime = "across NVLink domains" if across else "inside one NVLink domain"
    return f"no published figure {regime} for {p.domain.id} ({p.domain.generation}): nothing to set beside it"


def _parts_text(counts: tuple[int, ...]) -> str:
    """Nodes per domain as a sum: "18 + 2", or "5,555 x 18 + 10" when many domains are alike."""
    whole, last = counts[:-1], counts[-1]
    if len(counts) <= 4:
        return " + ".join(str(c) for c in counts)
    head = f"{len(whole):,} x {whole[0]}" if len(set(whole)) == 1 else " + ".join(str(c) for c in whole)
    if last == whole[0]:
        return f"{len(counts):,} x {last}"
    return f"{head} + {last}"


def _split_notes(p: _Platform, op: str, nbytes: int, place: _Placement, sharp: bool, busbw: float) -> list[str]:
    """Multi-node NVLink domains: where the ranks are, and what splitting domains costs against whole ones."""
    if not p.multi_node:
        return []
    unit = p.domain_unit
    whole = p.domain_nodes
    g = place.ranks_per_node
    if place.domains == 1:
        return [
            f"one NVLink domain ({unit} of {whole} nodes): {place.nodes} node{'s' if place.nodes > 1 else ''} x {g} "
            "GPUs on its NVLink fabric (multi-node NVLink), no NIC in the path"
        ]
    parts = _parts_text(place.node_counts)
    notes = [
        f"spans {place.domains:,} NVLink domains ({parts} nodes of the {whole} {_article(unit)} {unit} holds): NVLink "
        f"inside each, the scale-out network between them with {place.smallest} GPUs of the job in the smallest part"
    ]
    split = place.smallest < whole * g or place.per_domain != place.smallest
    if not split:
        return notes
    per_gpu = p.network.node_gb_s * p.network.efficiency / p.gpus_per_node
    notes.append(
        f"split domains: across domains the job's {place.smallest} GPUs in the smallest part carry the traffic "
        f"({place.smallest} x {per_gpu:.1f} = {place.smallest * per_gpu:.1f} GB/s of NICs)"
    )
    alternatives: list[tuple[str, _Placement]] = []
    if place.nodes <= whole:
        alternatives.append((f"all {place.nodes} nodes in one domain", _placement(p, place.nodes, g, whole)))
    else:
        packed = _placement(p, place.nodes, g, whole)
        if packed.node_counts != place.node_counts:
            alternatives.append((f"the same {place.nodes} nodes packed into whole domains first", packed))
        lower = place.nodes // whole * whole
        alternatives.append(
            (
                f"{lower} nodes in {lower // whole} whole domain{'s' if lower > whole else ''}",
                _placement(p, lower, g, whole),
            )
        )
        upper = -(-place.nodes // whole) * whole
        if upper <= MAX_NODES:
            alternatives.append((f"{upper} nodes in {upper // whole} whole domains", _placement(p, upper, g, whole)))
    for text, alt in alternatives:
        other = _busbw(p, op, nbytes, alt, sharp)
        change = busbw / other - 1
        notes.append(f"what the split costs: {text} reach busbw {other:.1f} GB/s at this size ({change:+.0%} here)")
    return notes


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
    nodes_per_domain: int | None = None,
    sharp: bool = True,
    algorithm: str | None = None,
) -> CollectiveEstimate:
    """Estimate one collective of `nbytes` (nccl-tests' size: the whole array) on `nodes` nodes of a GPU type.

    `algorithm`: the one NCCL is made to run (NCCL_ALGO, e.g. `ring` for an acceptance test of the network); None
    lets it choose, as it does by default. An algorithm the shape cannot run is refused (ValueError).

    `max_nodes`: the pool's fabric domain size (an Azure pool whose scale sets were raised beyond 100 VMs); it applies
    only where the catalog gives the fabric a domain limit (`max_nodes` of its network record), and replaces that
    limit. Beyond the domain there is no path on the fabric and the estimate is refused.

    `nodes_per_domain`: on types sold in multi-node NVLink domains (NVL72), how many of the job's nodes share each
    domain (Slurm's --segment); None fills whole domains in order, the last one partial when `nodes` is not a
    multiple. `sharp` False leaves in-network reduction (NCCL's CollNet) out where the fabric has it."""
    _check_op(op)
    _check_int(nodes, "nodes", 1, MAX_NODES, f"give 1 to {MAX_NODES:,} nodes")
    _check_int(nbytes, "bytes", 1, MAX_BYTES, "give 1 byte to 1 PiB (2^50 bytes)")
    p = _resolve(catalog, instance_type, provider)
    gpn = p.gpus_per_node
    g = gpn if ranks_per_node is None else ranks_per_node
    _check_int(g, "ranks_per_node", 1, gpn, f"{instance_type} has {gpn} GPUs per node: give 1 to {gpn}")
    whole = p.domain_nodes
    if nodes_per_domain is None:
        npd = whole
    elif whole == 1:
        _check_int(
            nodes_per_domain,
            "nodes_per_domain",
            1,
            1,
            f"{instance_type}'s NVLink ends at the node (no multi-node NVLink domain): leave it out",
        )
        npd = 1
    else:
        npd = _check_int(
            nodes_per_domain,
            "nodes_per_domain",
            1,
            whole,
            f"one {instance_type} NVLink domain ({p.domain_unit}) holds {whole} nodes: give 1 to {whole}",
        )
    _fabric_limit(p, instance_type, nodes, max_nodes)
    place = _placement(p, nodes, g, npd)
    return _estimate(catalog, p, op, nbytes, place, sharp, notes_wanted=True, only=algorithm)


def estimate_on_domains(
    catalog: Catalog,
    instance_type: str,
    op: str,
    nbytes: int,
    *,
    domains: int,
    ranks_per_domain: int,
    provider: str | None = None,
    max_nodes: int | None = None,
) -> CollectiveEstimate:
    """The workload estimator's view: a group of `ranks_per_domain` ranks in each of `domains` NVLink domains
    (8-GPU servers: ranks per node on that many nodes, as estimate_collective). On multi-node domains the ranks sit
    one per node where they can (the data-parallel ranks of tensor-parallel groups that span nodes), each with its
    own NIC. Notes are left out (the caller keeps only time and sources)."""
    _check_op(op)
    _check_int(domains, "domains", 1, MAX_NODES, f"give 1 to {MAX_NODES:,} NVLink domains")
    _check_int(nbytes, "bytes", 1, MAX_BYTES, "give 1 byte to 1 PiB (2^50 bytes)")
    p = _resolve(catalog, instance_type, provider)
    gpn, whole = p.gpus_per_node, p.domain_nodes
    limit = gpn * whole
    _check_int(
        ranks_per_domain,
        "ranks_per_domain",
        1,
        limit,
        f"one {instance_type} NVLink domain has {limit} GPUs: give 1 to {limit}",
    )
    if whole == 1:
        place = _placement(p, domains, ranks_per_domain, 1)
    else:
        per_node = -(-ranks_per_domain // whole)  # spread over the domain's nodes
        nodes_each = -(-ranks_per_domain // per_node)
        place = _Placement(
            nodes=domains * nodes_each,
            ranks_per_node=per_node,
            domains=domains,
            per_domain=ranks_per_domain,
            smallest=ranks_per_domain,
            ranks=domains * ranks_per_domain,
            node_counts=(nodes_each,) * domains,
        )
    _fabric_limit(p, instance_type, place.nodes, max_nodes)
    return _estimate(catalog, p, op, nbytes, place, True, notes_wanted=False)


def _estimate(
    catalog: Catalog,
    p: _Platform,
    op: str,
    nbytes: int,
    place: _Placement,
    sharp: bool,
    *,
    notes_wanted: bool,
    only: str | None = None,
) -> CollectiveEstimate:
    net = p.network
    n = place.ranks
    base = {
        "op": op,
        "provider": p.provider,
        "instance_type": p.instance_type,
        "nodes": place.nodes,
        "gpus_per_node": place.ranks_per_node,
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
    result = _run(p, op, nbytes, place, sharp, only)
    best, t = result.best, result.time_s
    algbw = nbytes / t / 1e9
    notes = list(best.notes)
    used = {p.domain.source, p.domain.field_sources.get("latency_us", p.domain.source), *best.sources}
    if place.domains > 1:
        used.update({net.source, net.field_sources.get("efficiency", net.source)})
        used.add(net.field_sources.get("network_latency_us", net.source))
        if net.borrowed:
            notes.append(f"borrowed for {p.instance_type}: {net.borrowed}")
    if place.domains == 1 and not p.multi_node and place.ranks_per_node < p.gpus_per_node:
        notes.append(
            f"a group of {place.ranks_per_node} of the node's {p.gpus_per_node} GPUs on the NVSwitch; other groups "
            "do not slow it"
        )
    if notes_wanted:
        busbw = algbw * result.factor
        notes.extend(_split_notes(p, op, nbytes, place, sharp, busbw))
        if not sharp and net.sharp and place.domains > 1:
            notes.append("in-network reduction (SHARP, NCCL's CollNet) left out as asked")
        beside = _published(catalog, p, op, nbytes, place, sharp)
        if beside is not None:
            notes.append(beside)
    return CollectiveEstimate(
        **base,
        algorithm=best.algorithm,
        sources=tuple(sorted(used)),
        bottleneck="network" if best.bottleneck == "network" else "nvlink",
        algbw_gb_s=algbw,
        busbw_gb_s=algbw * result.factor,
        time_s=t,
        latency_s=best.latency_s,
        bandwidth_gb_s=best.ceiling_gb_s,
        notes=tuple(notes),
    )
