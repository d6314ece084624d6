"""Fat-tree (folded Clos) planning for on-prem GPU fabrics: switches, cables, transceivers and ports.

A pure function of (node count, rails, switch record, oversubscription): no spec, no catalog lookups.

The model, and why:

* **Rail-optimised leaves.** Every node has `rails` compute NICs (one per GPU on DGX). A *leaf group* is the set
  of nodes that share leaves: NIC r of every node in the group goes to the group's rail-r leaf, so a group has
  `rails` leaves and as many nodes as a leaf has down ports (32 at k=64, 1:1: the DGX SuperPOD scalable unit).
  `rails=1` is the plain fat tree.
* **Leaf oversubscription only.** A leaf of radix k gives `floor(k*o/(1+o))` ports down and the rest up, so the
  achieved ratio is at most the one asked for. Spines and cores are non-blocking (half down, half up in three
  tiers). Oversubscription then multiplies the reach by `2o/(1+o)` (1.5 at 3:1), not the rough `(1+o)/2` of the
  reference's rule of thumb: the exact count of down ports is what bounds the endpoints.
* **Balanced uplinks.** Each leaf spreads its uplinks evenly over the spines it reaches, so the spine count
  divides the leaf's uplinks: the fewest spines `s` with `s | up` and `s*k >= leaves*up`. This is why the DGX
  SuperPOD H100 RA has 16 spines (not 12) at 3 SU, and the B300-XDR RA 36 spines (not 32) at 8 SU.
* **Full leaf groups.** Leaves and leaf-spine cables are built for the whole group even when it is not full
  (the SuperPOD RA: "design the fabric to support the full SU, including leaf switches and leaf-spine cables");
  node-leaf cables exist only for the nodes and reserved ports there are.
* **Three tiers (Al-Fares).** Pods of k/2 leaves, each with the spines a pod needs (same divisor rule with the
  spine's k/2 down ports); spine j of every pod goes to core group j, which has the fewest cores that divide
  the spine's uplinks evenly. Full build: k pods, (k/2)^2 cores, k^3/4 endpoints.
* **Rail planes.** `planes="shared"` (the default) is one fabric: rail-r leaves of all groups share the spines,
  so cross-rail traffic crosses the spine (the H100 and B200 SuperPOD RAs). `planes="per-rail"` builds `rails`
  separate fat trees, one per rail: R times the reach (R*k^2/2 in two tiers), but NIC r of a node can only reach
  NIC r of another node over the network. The B300 SuperPOD counts (256 leaves, 128 spines at 16 SU with k=64)
  only fit this way; that reading of the RA is an inference, and the caller chooses it explicitly.
* **Reserved ports** (a UFM appliance, storage heads) take leaf ports in the slots after the nodes: one slot
  per `rails` ports. The H100 RA reserves one slot of the whole fabric for UFM (31 DGX in 1 SU, 127 in 4 SU)
  and cables 4 UFM ports.

Switch transceivers count per switch: `ceil(ports used / ports_per_cage)` (a twin-port OSFP serves two NDR
ports). Node transceivers count per node: `ceil(rails / node_ports_per_cage)` (DGX: 4 twin-port cages for 8
NICs, so 2), plus one per reserved port.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from aicluster.catalog import Switch

Planes = Literal["shared", "per-rail"]

__all__ = ["FabricRefused", "Planes", "PlannedFabric", "fabric_reach", "plan_fabric"]


class _Fabric(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FabricRefused(ValueError):
    """The fabric cannot be built as asked. `message` says why and what would work."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PlannedFabric(_Fabric):
    """One compute fabric: its switches, cables, transceivers and ports."""

    name: Annotated[str, Field(description="Fabric name (the pool or site it serves).")]
    kind: Literal["rail-optimized", "fat-tree"]
    planes: Planes
    switch: Annotated[str, Field(description="Switch id in the catalog (every tier uses it).")]
    fabric: Literal["infiniband", "roce"]
    radix: Annotated[int, Field(description="Ports per switch at the link speed (k).")]
    link_gbps: int
    rails: Annotated[int, Field(description="Compute NICs per node.")]
    nodes: int
    reserved_ports: Annotated[int, Field(description="Leaf ports for non-node devices (UFM, storage).")]
    endpoints: Annotated[int, Field(description="Cabled leaf ports: nodes x rails + reserved ports.")]
    tiers: Literal[2, 3]
    leaf_down_ports: Annotated[int, Field(description="Ports of each leaf towards nodes.")]
    leaf_up_ports: Annotated[int, Field(description="Ports of each leaf towards spines.")]
    nodes_per_leaf_group: Annotated[int, Field(description="Nodes sharing one set of rail leaves (SuperPOD SU).")]
    leaf_groups: int
    pods: Annotated[int, Field(description="Three tiers: pods of k/2 leaves per plane; two tiers: 1.")]
    leaf_switches: int
    spine_switches: int
    core_switches: int
    links_per_leaf_spine: Annotated[int, Field(description="Cables between a leaf and each spine it reaches.")]
    cables_node_leaf: int
    cables_leaf_spine: int
    cables_spine_core: int
    switch_transceivers: Annotated[int, Field(description="Switch-side transceivers, all links optical.")]
    node_transceivers: Annotated[int, Field(description="Node-side transceivers (and reserved devices').")]
    ports_total: int
    ports_used: int
    ports_free: int
    oversubscription_wanted: float
    oversubscription_achieved: float
    max_endpoints: Annotated[int, Field(description="Endpoints this design (switch, tiers, ratio, planes) reaches.")]
    max_nodes: Annotated[int, Field(description="Nodes of `rails` NICs this design reaches (less reserved slots).")]
    switch_power_w: Annotated[float | None, Field(description="Switches x published maximum; null: unpublished.")]

    @property
    def switches(self) -> int:
        return self.leaf_switches + self.spine_switches + self.core_switches

    @property
    def cables(self) -> int:
        return self.cables_node_leaf + self.cables_leaf_spine + self.cables_spine_core


def _fewest_dividing(of: int, at_least: int) -> int:
    """The smallest divisor of `of` that is >= at_least (`of` itself when none is smaller)."""
    return next(d for d in range(max(1, at_least), of + 1) if of % d == 0)


def _split(k: int, oversubscription: float) -> tuple[int, int]:
    """Leaf ports (down, up) for a ratio >= 1: at least k/2 down and at least 1 up (k*o/(1+o) < k)."""
    down = math.floor(k * oversubscription / (1 + oversubscription) + 1e-9)
    return down, k - down


def fabric_reach(radix: int, rails: int, tiers: int, oversubscription: float = 1.0, planes: Planes = "shared") -> int:
    """Endpoints (NIC ports) a design reaches: k^2/2 in two tiers and k^3/4 in three at 1:1, one plane."""
    down, _ = _split(radix, oversubscription)
    plane_rails = rails if planes == "shared" else 1
    leaves = radix if tiers == 2 else radix * (radix // 2)
    groups = leaves // plane_rails
    return groups * down * plane_rails * (rails // plane_rails)


def _leaf_usage(nodes: int, reserved: int, rails: int, down: int, groups: int) -> list[list[int]]:
    """Down ports used on each leaf, [group][rail]: nodes fill the slots in order, reserved ports the next ones."""
    usage = [[0] * rails for _ in range(groups)]
    for slot in range(nodes):
        for r in range(rails):
            usage[slot // down][r] += 1
    for i in range(reserved):
        usage[(nodes + i // rails) // down][i % rails] += 1
    return usage


def plan_fabric(
    name: str,
    nodes: int,
    rails: int,
    switch: Switch,
    oversubscription: float = 1.0,
    reserved_ports: int = 0,
    *,
    link_gbps: int | None = None,
    tiers: Literal[2, 3] | None = None,
    planes: Planes = "shared",
    node_ports_per_cage: int = 1,
    alternatives: Iterable[Switch] = (),
) -> PlannedFabric:
    """Plan a rail-optimised fat tree of `switch` for `nodes` nodes of `rails` NICs each.

    `link_gbps` defaults to the switch's native speed; `tiers` None picks two when they reach, else three.
    `alternatives` (e.g. the catalog's switches) are only used to say which bigger switch would work.
    Raises FabricRefused with one message that names the limit and what would work."""
    if nodes < 1 or rails < 1 or reserved_ports < 0 or node_ports_per_cage < 1:
        raise FabricRefused(
            f"fabric {name}: needs at least 1 node and 1 rail, no negative reserved ports and at least 1 port per "
            f"node cage (got nodes={nodes}, rails={rails}, reserved_ports={reserved_ports}, "
            f"node_ports_per_cage={node_ports_per_cage})"
        )
    if oversubscription < 1:
        raise FabricRefused(
            f"fabric {name}: oversubscription {oversubscription:g} is below 1; "
            "give 1 for non-blocking or more (3 = 3:1)"
        )
    speed = link_gbps if link_gbps is not None else switch.port_gbps
    mode = switch.mode(speed)
    if mode is None:
        offered = ", ".join(f"{m.radix} x {m.port_gbps}G" for m in switch.modes)
        raise FabricRefused(
            f"fabric {name}: switch {switch.id} has no {speed} Gb/s ports ({offered}); pick a link speed it offers "
            f"or a switch with {speed}G ports"
        )
    k = mode.radix
    down, up = _split(k, oversubscription)
    plane_rails = rails if planes == "shared" else 1
    n_planes = rails // plane_rails
    slots = nodes + math.ceil(reserved_ports / rails)
    groups = math.ceil(slots / down)
    plane_leaves = groups * plane_rails
    half = k // 2
    two_tier_max = k
    three_tier_max = k * half
    chosen: Literal[2, 3] = 2 if tiers == 2 or (tiers is None and plane_leaves <= two_tier_max) else 3
    limit = two_tier_max if chosen == 2 else three_tier_max
    if plane_leaves > limit:
        raise FabricRefused(
            _refusal(name, nodes, rails, switch, speed, oversubscription, reserved_ports, chosen, planes, alternatives)
        )

    usage = _leaf_usage(nodes, reserved_ports, rails, down, groups)
    leaf_ports = [u + up for g in usage for u in g]
    if chosen == 2:
        pods = 1
        spines_per_pod = _fewest_dividing(up, math.ceil(plane_leaves * up / k))
        plane_spines = spines_per_pod
        spine_ports = [plane_leaves * up // spines_per_pod] * plane_spines
        spine_up = 0
        plane_cores = 0
        core_ports: list[int] = []
    else:
        pods = math.ceil(plane_leaves / half)
        full_pod = min(plane_leaves, half)
        spines_per_pod = _fewest_dividing(up, math.ceil(full_pod * up / half))
        spine_up = full_pod * up // spines_per_pod
        plane_spines = pods * spines_per_pod
        spine_ports = []
        for p in range(pods):
            pod_leaves = min(half, plane_leaves - p * half)
            spine_ports += [pod_leaves * up // spines_per_pod + spine_up] * spines_per_pod
        cores_per_group = _fewest_dividing(spine_up, math.ceil(pods * spine_up / k))
        plane_cores = spines_per_pod * cores_per_group
        core_ports = [pods * spine_up // cores_per_group] * plane_cores

    leaves = plane_leaves * n_planes
    spines = plane_spines * n_planes
    cores = plane_cores * n_planes
    used = sum(leaf_ports) + (sum(spine_ports) + sum(core_ports)) * n_planes
    ppc = mode.ports_per_cage
    switch_transceivers = sum(math.ceil(p / ppc) for p in leaf_ports) + n_planes * (
        sum(math.ceil(p / ppc) for p in spine_ports) + sum(math.ceil(p / ppc) for p in core_ports)
    )
    reach = fabric_reach(k, rails, chosen, oversubscription, planes)
    reserved_slots = math.ceil(reserved_ports / rails)
    return PlannedFabric(
        name=name,
        kind="rail-optimized" if rails > 1 else "fat-tree",
        planes=planes,
        switch=switch.id,
        fabric=switch.fabric,
        radix=k,
        link_gbps=speed,
        rails=rails,
        nodes=nodes,
        reserved_ports=reserved_ports,
        endpoints=nodes * rails + reserved_ports,
        tiers=chosen,
        leaf_down_ports=down,
        leaf_up_ports=up,
        nodes_per_leaf_group=down,
        leaf_groups=groups,
        pods=pods,
        leaf_switches=leaves,
        spine_switches=spines,
        core_switches=cores,
        links_per_leaf_spine=up // spines_per_pod,
        cables_node_leaf=nodes * rails + reserved_ports,
        cables_leaf_spine=leaves * up,
        cables_spine_core=spines * spine_up,
        switch_transceivers=switch_transceivers,
        node_transceivers=nodes * math.ceil(rails / node_ports_per_cage) + reserved_ports,
        ports_total=(leaves + spines + cores) * k,
        ports_used=used,
        ports_free=(leaves + spines + cores) * k - used,
        oversubscription_wanted=oversubscription,
        oversubscription_achieved=round(down / up, 4),
        max_endpoints=reach,
        max_nodes=reach // rails - reserved_slots,
        switch_power_w=None if switch.max_power_w is None else (leaves + spines + cores) * switch.max_power_w,
    )


def _fits(
    nodes: int, rails: int, radix: int, oversubscription: float, reserved: int, tiers: int, planes: Planes
) -> bool:
    down, _ = _split(radix, oversubscription)
    plane_rails = rails if planes == "shared" else 1
    leaves = math.ceil((nodes + math.ceil(reserved / rails)) / down) * plane_rails
    return leaves <= (radix if tiers == 2 else radix * (radix // 2))


def _refusal(
    name: str,
    nodes: int,
    rails: int,
    switch: Switch,
    speed: int,
    oversubscription: float,
    reserved: int,
    tiers: int,
    planes: Planes,
    alternatives: Iterable[Switch],
) -> str:
    mode = switch.mode(speed)
    assert mode is not None
    k = mode.radix
    reach = fabric_reach(k, rails, tiers, oversubscription, planes)
    slots = math.ceil(reserved / rails)
    can = max(0, reach // rails - slots)
    ratio = f"{oversubscription:g}:1"
    head = (
        f"fabric {name}: {nodes} nodes x {rails} rails = {nodes * rails + reserved} endpoints do not fit {tiers} tiers "
        f"of {switch.id} (radix {k} at {speed}G, {planes} rail planes, {ratio}): they reach {reach} endpoints "
        f"({can} nodes)"
    )
    fixes: list[str] = []
    for alt in sorted(alternatives, key=lambda s: s.id):
        m = alt.mode(speed)
        if alt.id == switch.id or alt.fabric != switch.fabric or m is None or m.radix <= k:
            continue
        if _fits(nodes, rails, m.radix, oversubscription, reserved, tiers, planes):
            fixes.append(f"a bigger switch ({alt.id}, radix {m.radix} at {speed}G)")
    fixes.append(f"at most {can} nodes")
    for more in (2.0, 3.0, 5.0, 7.0):
        if more > oversubscription and _fits(nodes, rails, k, more, reserved, tiers, planes):
            fixes.append(f"oversubscription {more:g}:1 at the leaves")
            break
    if planes == "shared" and rails > 1 and _fits(nodes, rails, k, oversubscription, reserved, tiers, "per-rail"):
        fixes.append("separate rail planes (planes: per-rail; NIC r then reaches only NIC r of other nodes)")
    if tiers == 2 and _fits(nodes, rails, k, oversubscription, reserved, 3, planes):
        fixes.append("three tiers (a core layer)")
    return f"{head}; use {', or '.join(fixes)}"
