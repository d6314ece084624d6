"""Fabric design limits: each on-prem fat-tree is built of a catalog switch at a radix it offers, and joins no more
endpoints than its tiers reach. Switch port counts come from the catalog, the records the planner used."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import Catalog

from ..facts.aicluster import ONPREM_SITE
from ..facts.engine import Res, get, num
from ..facts.model import Site
from ..facts.stack import Stack
from ..rule import Ctx, Meta, StackRule
from ._site import as_counted


def _reach(f: Mapping[str, Any]) -> int | None:
    """Endpoints a fat-tree of these switches reaches, from the radix, tiers and leaf split alone: two tiers k
    leaves, three tiers k * k/2 (Al-Fares: k^2/2 and k^3/4 endpoints at 1:1), each with its down ports, times the
    rails when every rail is its own plane."""
    k, tiers, down, rails = (num(get(f, key)) for key in ("radix", "tiers", "leaf_down_ports", "rails"))
    if k is None or tiers is None or down is None:
        return None
    leaves = k if tiers == 2 else k * (k // 2)
    planes = rails if get(f, "planes") == "per-rail" and rails else 1
    return int(leaves * down * planes)


def _design_limits(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    for site in stack.sites:
        for message in _fabric_limits(site, stack.catalog):
            yield site.res, message


def _fabric_limits(site: Site, catalog: Catalog) -> Iterator[str]:
    for f in site.fabrics:
        name = f"fabric {get(f, 'name')} of site {site.name}"
        k, link, switch_id = num(get(f, "radix")), num(get(f, "link_gbps")), get(f, "switch")
        switch = catalog.switches.get(switch_id) if isinstance(switch_id, str) else None
        mode = switch.mode(int(link)) if switch is not None and link is not None else None
        if switch is None:
            yield (
                f"{name} is built of switch {switch_id!r}, which the catalog does not know: its ports cannot be "
                f"checked; use one of {', '.join(sorted(catalog.switches))} (fabric.switch)"
            )
        elif mode is None or k is None or mode.radix != k:
            offered = ", ".join(f"{m.radix} x {m.port_gbps}G" for m in switch.modes)
            yield (
                f"{name} counts {k and int(k)} ports per {switch_id} at {link and int(link)} Gb/s, but the switch "
                f"offers {offered}; set fabric.link_gbps and fabric.switch_radix to one of those"
            )
        endpoints, nodes = num(get(f, "endpoints")), num(get(f, "nodes"))
        max_nodes, reach = num(get(f, "max_nodes")), _reach(f)
        tiers = as_counted(get(f, "tiers"))
        if endpoints is not None and reach is not None and endpoints > reach:
            yield (
                f"{name} cables {endpoints:g} endpoints, more than {tiers} tiers of radix-{k and int(k)} switches "
                f"reach ({reach}); add a tier, use a switch with more ports, or split the pool over two fabrics"
            )
        elif nodes is not None and max_nodes is not None and nodes > max_nodes:
            yield (
                f"{name} joins {nodes:g} nodes, more than the {max_nodes:g} its design reaches; add a tier, use a "
                "switch with more ports, or split the pool over two fabrics"
            )
        used, total = num(get(f, "ports_used")), num(get(f, "ports_total"))
        if used is not None and total is not None and used > total:
            yield (
                f"{name} uses {used:g} switch ports of the {total:g} its switches have; add switches (a tier, or a "
                "switch with more ports)"
            )


POLICY = StackRule(
    Meta(
        name="aicluster-fabric-enforce-design-limits",
        display_name="Fabric design limits",
        description="Each on-prem fat-tree uses a catalog switch at a radix it offers and joins no more endpoints "
        "than its tiers reach (k^2/2 in two tiers, k^3/4 in three).",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Add a tier, use a switch with more ports, or split the pool over two fabrics.",
    ),
    _design_limits,
    [ONPREM_SITE],
)
