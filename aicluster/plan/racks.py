"""Rack packing for on-prem pools: which nodes share a rack, and the rack's power against its limit.

Pure functions. Hosts that name their rack stay in it (several pools may share a site's rack); hosts that do
not are packed into the pool's own racks, `floor(rack_kw / node_kw)` nodes each, named `<pool>-r01`, ...
A rack over its limit is returned like any other (`over_limit`): the caller turns it into a spec problem that
names the rack, its hosts' pools and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PlannedRack", "RackSlot", "nodes_per_rack", "plan_racks", "plan_site_racks", "racks_over_limit"]


class PlannedRack(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(description="Rack name: the hosts' own, or `<pool>-rNN` when packed.")]
    nodes: Annotated[int, Field(ge=1, description="Nodes in the rack.")]
    power_kw: Annotated[float, Field(description="Sum of the nodes' maximum power, kW.")]
    limit_kw: Annotated[float, Field(gt=0, description="The site's power limit per rack, kW.")]
    pools: Annotated[tuple[str, ...], Field(description="Pools with nodes in the rack, in first-seen order.")]
    named: Annotated[bool, Field(description="True: the hosts named this rack; False: packed by the planner.")]

    @property
    def over_limit(self) -> bool:
        return self.power_kw > self.limit_kw + 1e-9


class RackSlot(NamedTuple):
    """One node to place: its pool, the rack its host names (None: any), its maximum power; a rack-scale node comes
    with its rack (its NVLink domain's), the limit of that rack position (a liquid-cooled one) and whether the hosts
    named it."""

    pool: str
    rack: str | None
    node_kw: float
    limit_kw: float | None = None  # None: the site's rack_kw
    named: bool = True


def _round(kw: float) -> float:
    return round(kw, 3)


def _pack(members: Sequence[RackSlot], rack_kw: float) -> list[list[RackSlot]]:
    """Fill racks in order while the next node stays within the limit (at least one node per rack)."""
    groups: list[list[RackSlot]] = []
    power = 0.0
    for m in members:
        if not groups or power + m.node_kw > rack_kw + 1e-9:
            groups.append([])
            power = 0.0
        groups[-1].append(m)
        power += m.node_kw
    return groups


def plan_site_racks(slots: Sequence[RackSlot], rack_kw: float) -> list[PlannedRack]:
    """Racks of one site for all its pools' nodes: named racks first (in first-seen order), then packed ones.

    Packing fills a pool's racks in order while the next node stays within `rack_kw`; a node larger than the
    limit gets a rack of its own (over the limit, so reported)."""
    if rack_kw <= 0:
        raise ValueError(f"rack_kw must be positive (got {rack_kw})")
    named: dict[str, list[RackSlot]] = {}
    unnamed: dict[str, list[RackSlot]] = {}
    for s in slots:
        if s.node_kw <= 0:
            raise ValueError(f"pool {s.pool}: node_kw must be positive (got {s.node_kw})")
        if s.rack is None:
            unnamed.setdefault(s.pool, []).append(s)
        else:
            named.setdefault(s.rack, []).append(s)
    racks = [
        PlannedRack(
            name=rack,
            nodes=len(members),
            power_kw=_round(sum(m.node_kw for m in members)),
            limit_kw=min(m.limit_kw or rack_kw for m in members),
            pools=tuple(dict.fromkeys(m.pool for m in members)),
            named=any(m.named for m in members),
        )
        for rack, members in named.items()
    ]
    taken = set(named)
    for pool, members in unnamed.items():
        index = 0
        for group in _pack(members, rack_kw):
            index += 1
            while f"{pool}-r{index:02d}" in taken:
                index += 1
            name = f"{pool}-r{index:02d}"
            taken.add(name)
            racks.append(
                PlannedRack(
                    name=name,
                    nodes=len(group),
                    power_kw=_round(sum(m.node_kw for m in group)),
                    limit_kw=rack_kw,
                    pools=(pool,),
                    named=False,
                )
            )
    return racks


def plan_racks(
    pool_name: str, nodes: int, node_kw: float, rack_kw: float, hosts_racks: Sequence[str | None] = ()
) -> list[PlannedRack]:
    """Racks of one pool. `hosts_racks` gives each host's rack (None: not named), or is empty when no host names
    one; with no names the pool packs `floor(rack_kw / node_kw)` nodes per rack."""
    if nodes < 1:
        raise ValueError(f"pool {pool_name}: needs at least one node (got {nodes})")
    if hosts_racks and len(hosts_racks) != nodes:
        raise ValueError(f"pool {pool_name}: {len(hosts_racks)} host racks for {nodes} nodes; give one per node")
    racks = list(hosts_racks) if hosts_racks else [None] * nodes
    return plan_site_racks([RackSlot(pool_name, r, node_kw) for r in racks], rack_kw)


def nodes_per_rack(node_kw: float, rack_kw: float) -> int:
    """How many nodes of `node_kw` a rack of `rack_kw` holds (0: not even one)."""
    return math.floor(rack_kw / node_kw + 1e-9)


def racks_over_limit(racks: Sequence[PlannedRack]) -> list[PlannedRack]:
    """The racks whose nodes' maximum power exceeds the rack limit."""
    return [r for r in racks if r.over_limit]
