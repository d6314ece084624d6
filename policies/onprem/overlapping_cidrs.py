"""No overlapping site and cloud networks: an on-prem site's CIDRs overlap no other site's and no cloud network's
(AWS VPC, GCP subnetwork, Azure virtual network) that the VPNs join, wherever those came from."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aicluster import ONPREM_SITE
from ..facts.aws import VPC
from ..facts.azure import AZURE_VNET
from ..facts.engine import Res, items
from ..facts.gcp import GCP_SUBNETWORK
from ..facts.stack import Stack
from ..rule import Ctx, Meta, StackRule

Net = tuple[Res, str, str, ipaddress.IPv4Network | ipaddress.IPv6Network]  # (resource, what, cidr as written, net)


def _parse(cidr: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(cidr, strict=False) if isinstance(cidr, str) else None
    except ValueError:
        return None


def _cloud_networks(stack: Stack) -> list[Net]:
    found: list[tuple[Res, str, Any]] = []
    found += [(r, "AWS VPC", r.get("cidrBlock")) for r in stack.of(VPC)]
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


POLICY = StackRule(
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
