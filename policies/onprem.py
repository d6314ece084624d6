"""On-prem sites: the site's IT load within its ceiling, racks within their power, fabrics as asked and buildable,
and site networks that do not overlap the cloud networks the VPNs join them to.

The rules read the `aicluster:onprem:Site` resource (one per owned site) as the engine hands it over; the CIDR
rule also reads the cloud networks (AWS VPCs, GCP subnetworks, Azure virtual networks) wherever they came from.
Switch port counts come from the catalog, the same records the planner used.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import Catalog

from .facts import GCP_SUBNETWORK, ONPREM_SITE, Res, Site, Stack, get, items
from .rule import Ctx, Meta, StackCheck, StackRule

AWS_VPC = "aws:ec2/vpc:Vpc"
AZURE_VNET = "azure-native:network:VirtualNetwork"
TOLERANCE = 1e-9  # figures are rounded to the watt and the 1/10,000th of a ratio: equal is within


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> Any:
    """Counts as the engine hands them over (numbers are floats on the wire) shown as whole numbers."""
    n = _num(value)
    return int(n) if n is not None and n.is_integer() else value


def _kw(value: float) -> str:
    return f"{value:,.1f} kW"


def _per_site(check: Callable[[Site], Iterable[str]]) -> StackCheck:
    """A stack rule judging each site on its own. Stack rules, because the engine hands component resources (the
    site is one) only to stack policies, never to resource policies."""

    def run(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
        for site in stack.sites:
            for message in check(site):
                yield site.res, message

    return run


# -- site power -------------------------------------------------------------------------------------------------------


def _site_power(site: Site) -> Iterator[str]:
    if site.max_kw is None or site.it_kw <= site.max_kw + TOLERANCE:
        return
    top = sorted(site.pools, key=lambda p: -p.power_kw_it)[:3]
    parts = "; ".join(f"{p.name} {p.nodes} x {p.node_shape} {_kw(p.power_kw_it)}" for p in top)
    yield (
        f"site {site.name} draws {_kw(site.it_kw)} of IT load at its nodes' maximum, over its ceiling of "
        f"{_kw(site.max_kw)} by {_kw(site.it_kw - site.max_kw)}; largest: {parts}. Shrink or move a pool "
        "(pools[].nodes), or raise sites[].power.max_kw to what the site delivers"
    )


site_power = StackRule(
    Meta(
        name="aicluster-site-enforce-power-ceiling",
        display_name="Site power ceiling",
        description="An on-prem site's IT load (its nodes at their maximum draw) stays within the site's max_kw.",
        concern="power",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Shrink or move a pool, or raise sites[].power.max_kw to what the site's feeds deliver.",
    ),
    _per_site(_site_power),
    [ONPREM_SITE],
)


def _rack_power(site: Site) -> Iterator[str]:
    for rack in site.racks:
        kw = _num(get(rack, "kw"))
        limit = _num(get(rack, "limit_kw")) or site.rack_kw
        if kw is None or limit is None or kw <= limit + TOLERANCE:
            continue
        pools = ", ".join(str(p) for p in items(rack, "pools"))
        nodes = _num(get(rack, "nodes")) or 0
        yield (
            f"rack {get(rack, 'name')} of site {site.name} draws {kw:g} kW ({nodes:g} nodes of {pools}), over its "
            f"{limit:g} kW; move hosts to another rack (hosts[].rack) or raise sites[].power.rack_kw to what the "
            "rack's power and cooling deliver"
        )


rack_power = StackRule(
    Meta(
        name="aicluster-site-enforce-rack-power",
        display_name="Site rack power",
        description="Every rack of an on-prem site draws no more than the site's power per rack (rack_kw).",
        concern="power",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Spread the rack's hosts over more racks, or raise sites[].power.rack_kw.",
    ),
    _per_site(_rack_power),
    [ONPREM_SITE],
)


# -- fabrics ----------------------------------------------------------------------------------------------------------


def _oversubscription(site: Site) -> Iterator[str]:
    for f in site.fabrics:
        wanted, achieved = _num(get(f, "oversubscription_wanted")), _num(get(f, "oversubscription_achieved"))
        if wanted is None or achieved is None or achieved <= wanted + 1e-4:
            continue
        down, up = _int(get(f, "leaf_down_ports")), _int(get(f, "leaf_up_ports"))
        yield (
            f"fabric {get(f, 'name')} of site {site.name} is {achieved:g}:1 oversubscribed at its leaves ({down} ports "
            f"down, {up} up), worse than the {wanted:g}:1 asked for: all-reduce traffic across leaves slows by that "
            "ratio; use a switch with more ports (fabric.switch_radix or fabric.switch) or accept the ratio in "
            "fabric.oversubscription"
        )


oversubscription = StackRule(
    Meta(
        name="aicluster-fabric-enforce-oversubscription",
        display_name="Fabric oversubscription as asked",
        description="Each on-prem fabric achieves the leaf oversubscription it was asked for, or better.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Pick a switch with more ports, or set fabric.oversubscription to the ratio the design reaches.",
    ),
    _per_site(_oversubscription),
    [ONPREM_SITE],
)


def _reach(f: Mapping[str, Any]) -> int | None:
    """Endpoints a fat-tree of these switches reaches, from the radix, tiers and leaf split alone: two tiers k
    leaves, three tiers k * k/2 (Al-Fares: k^2/2 and k^3/4 endpoints at 1:1), each with its down ports, times the
    rails when every rail is its own plane."""
    k, tiers, down, rails = (_num(get(f, key)) for key in ("radix", "tiers", "leaf_down_ports", "rails"))
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
        k, link, switch_id = _num(get(f, "radix")), _num(get(f, "link_gbps")), get(f, "switch")
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
        endpoints, nodes = _num(get(f, "endpoints")), _num(get(f, "nodes"))
        max_nodes, reach = _num(get(f, "max_nodes")), _reach(f)
        tiers = _int(get(f, "tiers"))
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
        used, total = _num(get(f, "ports_used")), _num(get(f, "ports_total"))
        if used is not None and total is not None and used > total:
            yield (
                f"{name} uses {used:g} switch ports of the {total:g} its switches have; add switches (a tier, or a "
                "switch with more ports)"
            )


design_limits = StackRule(
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


# -- overlapping networks ---------------------------------------------------------------------------------------------


Net = tuple[Res, str, str, ipaddress.IPv4Network | ipaddress.IPv6Network]  # (resource, what, cidr as written, net)


def _parse(cidr: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(cidr, strict=False) if isinstance(cidr, str) else None
    except ValueError:
        return None


def _cloud_networks(stack: Stack) -> list[Net]:
    found: list[tuple[Res, str, Any]] = []
    found += [(r, "AWS VPC", r.get("cidrBlock")) for r in stack.of(AWS_VPC)]
    found += [(r, "GCP subnetwork", r.get("ipCidrRange")) for r in stack.of(GCP_SUBNETWORK)]
    found += [
        (r, "Azure virtual network", c)
        for r in stack.of(AZURE_VNET)
        for c in items(r.props, "addressSpace", "addressPrefixes")
    ]
    return [(r, what, c, n) for r, what, c in found if (n := _parse(c)) is not None]


def _overlaps(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    sites: list[Net] = [
        (s.res, f"site {s.name}", c, n) for s in stack.sites for c in s.cidrs if (n := _parse(c)) is not None
    ]
    clouds = _cloud_networks(stack)
    for i, (res, what, cidr, net) in enumerate(sites):
        others = [o for o in sites[i + 1 :] if o[0] is not res] + clouds
        for o_res, o_what, o_cidr, o_net in others:
            if net.version == o_net.version and net.overlaps(o_net):
                o_name = o_what if o_what.startswith("site ") else f"{o_what} {o_res.name}"
                yield (
                    res,
                    f"{what} network {cidr} overlaps {o_name} ({o_cidr}): across the VPN, addresses in both are "
                    "routed to one side only; give the site's network.cidrs, or the cloud network's range "
                    "(network.cidrs, e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use",
                )


overlapping_cidrs = StackRule(
    Meta(
        name="aicluster-site-disallow-overlapping-cidrs",
        display_name="No overlapping site and cloud networks",
        description="An on-prem site's CIDRs overlap no other site's and no cloud network's (AWS VPC, GCP "
        "subnetwork, Azure virtual network) that the VPNs join.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Renumber the site (sites[].network.cidrs) or the cloud network so no range is in both.",
    ),
    _overlaps,
    [ONPREM_SITE],
)

POLICIES: list[StackRule] = [site_power, rack_power, oversubscription, design_limits, overlapping_cidrs]
