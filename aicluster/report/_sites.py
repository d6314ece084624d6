"""What the reports say about owned sites, computed once from the records: a row per site (power against the
site's ceiling, racks against the rack limit, cost and carbon), a bill of materials per fabric, a bar per rack,
and, for the diff, which site and fabric figures changed. Renderers only lay these out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._doc import Fabric, PreviewDoc, Rack, Site
from ._views import kw, number, pct, usd, whole


@dataclass(frozen=True)
class SiteRow:
    name: str
    pools: str
    nodes: str
    gpus: str
    power_it: str
    power_facility: str  # "1,632.00 kW of 2,500.00 kW"
    site_used: str  # "65.3%"
    over_site: bool  # the facility power exceeds the site's ceiling
    racks: str
    fullest_rack: str  # "40.80 kW of 41.00 kW"
    racks_over: int
    hardware: str
    energy: str
    cost: str
    carbon: str


def fullest(racks: Sequence[Rack]) -> Rack | None:
    """The rack that draws the most (the first of equals)."""
    return max(racks, key=lambda r: r.power_kw, default=None)


def site_rows(sites: Sequence[Site]) -> list[SiteRow]:
    rows = []
    for s in sites:
        top = fullest(s.racks)
        rows.append(
            SiteRow(
                name=s.name,
                pools=", ".join(s.pools),
                nodes=whole(s.nodes),
                gpus=whole(s.gpus),
                # the site's ceiling is on its IT load (the spec's max_kw), as the site-power policy judges it
                power_it=f"{kw(s.power_kw_it)} of {kw(s.max_kw)}",
                power_facility=kw(s.power_kw_facility),
                site_used=pct(s.power_kw_it / s.max_kw * 100) if s.max_kw > 0 else "",
                over_site=s.power_kw_it > s.max_kw + 1e-9,
                racks=whole(len(s.racks)),
                fullest_rack="" if top is None else f"{kw(top.power_kw)} of {kw(top.limit_kw)}",
                racks_over=sum(r.over_limit for r in s.racks),
                hardware=usd(s.hardware_usd_per_month),
                energy=usd(s.energy_usd_per_month),
                cost=usd(s.cost_usd_per_month),
                carbon=number(s.co2e_t_per_month),
            )
        )
    return rows


@dataclass(frozen=True)
class BomLine:
    """One line of a fabric's bill of materials."""

    item: Literal["switch", "cable", "transceiver"]
    what: str  # "leaf", "node-leaf", "switch ports"
    model: str  # the catalog switch, or what the cable or transceiver carries
    quantity: int

    @property
    def label(self) -> str:
        """`leaf switches`, `node-leaf cables`, `switch side transceivers`."""
        return f"{self.what} {self.item}{'es' if self.item == 'switch' else 's'}"


TIERS = ("leaf", "spine", "core")


def bill_of_materials(f: Fabric) -> list[BomLine]:
    """Switches by tier and model, cables by tier, transceivers on the switch and node sides; a tier the fabric
    does not have (core in two tiers) is left out rather than listed as zero."""
    switches = (f.leaf_switches, f.spine_switches, f.core_switches)
    cables = (f.cables_node_leaf, f.cables_leaf_spine, f.cables_spine_core)
    link = f"{f.link_gbps}G {'InfiniBand' if f.fabric == 'infiniband' else 'Ethernet (RoCE)'}"
    lines = [BomLine("switch", tier, f.switch, n) for tier, n in zip(TIERS[: f.tiers], switches, strict=False)]
    lines += [
        BomLine("cable", tier, link, n)
        for tier, n in zip(("node-leaf", "leaf-spine", "spine-core")[: f.tiers], cables, strict=False)
    ]
    lines += [
        BomLine("transceiver", "switch side", f"{f.switch} ports", f.switch_transceivers),
        BomLine("transceiver", "node side", "node NIC ports", f.node_transceivers),
    ]
    return lines


def fabric_line(f: Fabric) -> str:
    """The fabric in one line: switch, tiers, switches, cables, transceivers, ports, oversubscription."""
    tiers = "/".join(TIERS[: f.tiers])
    counts = "/".join(whole(n) for n in (f.leaf_switches, f.spine_switches, f.core_switches)[: f.tiers])
    cables = "/".join(whole(n) for n in (f.cables_node_leaf, f.cables_leaf_spine, f.cables_spine_core)[: f.tiers])
    return (
        f"{f.switch} (radix {f.radix} at {f.link_gbps}G, {f.fabric}, {f.rails} rails), {f.tiers} tiers: "
        f"{counts} {tiers} switches, cables {cables}, transceivers {whole(f.switch_transceivers)} switch + "
        f"{whole(f.node_transceivers)} node, ports {whole(f.ports_used)} used / {whole(f.ports_free)} free, "
        f"oversubscription {ratio(f.oversubscription_wanted)} wanted / {ratio(f.oversubscription_achieved)} achieved"
    )


def ratio(x: float) -> str:
    return f"{x:g}:1"


@dataclass(frozen=True)
class RackBar:
    """One rack's bar: its fill and the limit's mark as shares of the track (the larger of the limit and the
    fullest rack of the site, so an over-limit rack runs past the mark instead of off the track)."""

    name: str
    nodes: int
    pools: str
    fill_pct: float
    limit_pct: float
    over: bool
    text: str  # "40.80 of 41.00 kW", "43.00 of 41.00 kW: 2.00 kW over"


def rack_bars(site: Site) -> list[RackBar]:
    track = max([site.rack_kw, *(r.limit_kw for r in site.racks), *(r.power_kw for r in site.racks)])
    bars = []
    for r in site.racks:
        over = f": {kw(r.power_kw - r.limit_kw)} over" if r.over_limit else ""
        bars.append(
            RackBar(
                name=r.name,
                nodes=r.nodes,
                pools=", ".join(r.pools),
                fill_pct=r.power_kw / track * 100,
                limit_pct=r.limit_kw / track * 100,
                over=r.over_limit,
                text=f"{number(r.power_kw)} of {kw(r.limit_kw)}{over}",
            )
        )
    return bars


def racks_summary(site: Site) -> str:
    """`32 racks; the fullest draws 40.80 kW of 41.00 kW; none over the limit`."""
    if not site.racks:
        return "no racks"
    top = fullest(site.racks)
    assert top is not None
    over = [r.name for r in site.racks if r.over_limit]
    n = len(site.racks)
    head = f"{whole(n)} rack{'s' if n != 1 else ''}; the fullest draws {kw(top.power_kw)} of {kw(top.limit_kw)}"
    if not over:
        return f"{head}; none over the limit"
    return f"{head}; {len(over)} over the limit: {', '.join(over)}"


# -- the diff -------------------------------------------------------------------------------------------------


def _site_figures(s: Site) -> list[tuple[str, float | None, Callable[[float], str]]]:
    return [
        ("nodes", s.nodes, whole_f),
        ("accelerators", s.gpus, whole_f),
        ("power (facility)", s.power_kw_facility, kw),
        ("site ceiling", s.max_kw, kw),
        ("racks", len(s.racks), whole_f),
        ("racks over the limit", sum(r.over_limit for r in s.racks), whole_f),
        ("hardware $/month", s.hardware_usd_per_month, usd),
        ("energy $/month", s.energy_usd_per_month, usd),
        ("carbon t CO2e/month", s.co2e_t_per_month, number),
    ]


def _fabric_figures(f: Fabric) -> list[tuple[str, float | str | None, Callable[[float], str]]]:
    return [
        ("switch", f.switch, str),
        ("tiers", f.tiers, whole_f),
        ("leaf switches", f.leaf_switches, whole_f),
        ("spine switches", f.spine_switches, whole_f),
        ("core switches", f.core_switches, whole_f),
        ("node-leaf cables", f.cables_node_leaf, whole_f),
        ("leaf-spine cables", f.cables_leaf_spine, whole_f),
        ("spine-core cables", f.cables_spine_core, whole_f),
        ("switch transceivers", f.switch_transceivers, whole_f),
        ("node transceivers", f.node_transceivers, whole_f),
        ("ports used", f.ports_used, whole_f),
        ("ports free", f.ports_free, whole_f),
        ("oversubscription achieved", f.oversubscription_achieved, ratio),
    ]


def whole_f(x: float) -> str:
    return whole(int(x))


def _shown(value: float | str | None, fmt: Callable[[float], str]) -> str:
    if value is None:
        return "unpriced"
    return value if isinstance(value, str) else fmt(value)


def _changes(
    old: Sequence[tuple[str, float | str | None, Callable[[float], str]]],
    new: Sequence[tuple[str, float | str | None, Callable[[float], str]]],
) -> list[str]:
    return [
        f"{label}: {_shown(a, fmt)} → {_shown(b, fmt)}"
        for (label, a, fmt), (_, b, _) in zip(old, new, strict=True)
        if _shown(a, fmt) != _shown(b, fmt)
    ]


@dataclass(frozen=True)
class SiteChange:
    """One site or fabric that was added, removed or changed, with the figures that changed."""

    text: str  # "site fra1", "fabric fra1 (site fra1)"
    status: Literal["added", "removed", "changed"]
    details: tuple[str, ...] = ()


def site_changes(base: PreviewDoc, head: PreviewDoc) -> list[SiteChange]:
    """Sites by name, and their fabrics by name: what was added or removed, and each figure that changed
    (`spine switches: 16 → 24`)."""
    old = {s.name: s for s in base.sites}
    new = {s.name: s for s in head.sites}
    found: list[SiteChange] = []
    for name in [*old, *(n for n in new if n not in old)]:
        b, h = old.get(name), new.get(name)
        if b is None or h is None:
            site = h or b
            assert site is not None
            status: Literal["added", "removed"] = "added" if b is None else "removed"
            found.append(SiteChange(f"site {name}", status, (f"{whole(site.nodes)} nodes", *_fabric_lines(site))))
            continue
        figures = _changes(_site_figures(b), _site_figures(h))
        if figures:
            found.append(SiteChange(f"site {name}", "changed", tuple(figures)))
        old_f = {f.name: f for f in b.fabrics}
        new_f = {f.name: f for f in h.fabrics}
        for fname in [*old_f, *(n for n in new_f if n not in old_f)]:
            fb, fh = old_f.get(fname), new_f.get(fname)
            label = f"fabric {fname} (site {name})"
            if fb is None or fh is None:
                fabric = fh or fb
                assert fabric is not None
                found.append(SiteChange(label, "added" if fb is None else "removed", (fabric_line(fabric),)))
                continue
            figures = _changes(_fabric_figures(fb), _fabric_figures(fh))
            if figures:
                found.append(SiteChange(label, "changed", tuple(figures)))
    return found


def _fabric_lines(site: Site) -> tuple[str, ...]:
    return tuple(f"fabric {f.name}: {fabric_line(f)}" for f in site.fabrics)
