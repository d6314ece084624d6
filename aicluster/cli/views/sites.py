"""Owned sites and their fabrics, as `plan` and `preview` print them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from .format import accelerators, money, ratio

if TYPE_CHECKING:
    from aicluster.plan import ClusterPlan
    from aicluster.plan.fabric import PlannedFabric


def sites_table(plan: ClusterPlan) -> Table:
    """Each owned site: what its pools draw, cost and emit, against what the site and its racks can deliver."""
    t = Table(title="Sites", title_justify="left")
    for col, just in [
        ("site", "left"),
        ("pools", "left"),
        ("nodes", "right"),
        (accelerators(plan.pools), "right"),
        ("kW IT / max", "right"),
        ("kW facility", "right"),
        ("racks", "right"),
        ("fullest rack / limit", "right"),
        ("hardware $/month", "right"),
        ("energy $/month", "right"),
        ("t CO2e/month", "right"),
    ]:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for s in plan.sites:
        # the site's ceiling (max_kw) is on its IT load, as the site-power policy judges it
        used = s.power_kw_it / s.max_kw * 100 if s.max_kw else 0.0
        it_load = f"{s.power_kw_it:,.1f} / {s.max_kw:,.0f} ({used:.0f}%)"
        if s.power_kw_it > s.max_kw:
            it_load = f"[red]{it_load} over[/]"
        fullest = max(s.racks, key=lambda r: r.power_kw, default=None)
        over = [r for r in s.racks if r.over_limit]
        rack = "" if fullest is None else f"{fullest.power_kw:,.1f} / {fullest.limit_kw:g} kW"
        if over:
            rack = f"[red]{rack}, {len(over)} over[/]"
        t.add_row(
            escape(s.name),
            escape(", ".join(s.pools)),
            f"{s.nodes:,}",
            f"{s.gpus:,}",
            it_load,
            f"{s.power_kw_facility:,.1f}",
            f"{len(s.racks):,}",
            rack,
            money(s.hardware_usd_per_month),
            money(s.energy_usd_per_month),
            f"{s.co2e_t_per_month:,.1f}",
        )
    return t


def _cables(f: PlannedFabric) -> tuple[int, ...]:
    """Cables per tier, node-leaf first: leaf-spine in two tiers, spine-core too in three."""
    tiers = (f.cables_node_leaf, f.cables_leaf_spine, f.cables_spine_core)
    return tiers[: f.tiers]


def fabrics_table(plan: ClusterPlan) -> Table:
    """Each site fabric: its switches by tier, cables by tier, transceivers, ports and oversubscription."""
    t = Table(title="Fabrics", title_justify="left")
    for col, just in [
        ("site", "left"),
        ("fabric", "left"),
        ("switch", "left"),
        ("kind", "left"),
        ("tiers", "right"),
        ("leaf/spine/core switches", "right"),
        ("cables per tier", "right"),
        ("transceivers switch+node", "right"),
        ("ports used/free", "right"),
        ("oversubscription wanted/got", "right"),
    ]:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for s in plan.sites:
        for f in s.fabrics:
            t.add_row(
                escape(s.name),
                escape(f.name),
                escape(f"{f.switch} {f.radix}x{f.link_gbps}G"),
                f"{f.fabric}, {f.rails} rails" + (", per-rail planes" if f.planes == "per-rail" else ""),
                str(f.tiers),
                f"{f.leaf_switches:,}/{f.spine_switches:,}/{f.core_switches:,}",
                "/".join(f"{n:,}" for n in _cables(f)),
                f"{f.switch_transceivers:,}+{f.node_transceivers:,}",
                f"{f.ports_used:,}/{f.ports_free:,}",
                f"{ratio(f.oversubscription_wanted)}/{ratio(f.oversubscription_achieved)}",
            )
    return t
