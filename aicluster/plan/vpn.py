"""Cross-site networks: IPsec site-to-site VPN links that make one reachable cluster of a stack's sites and clouds.

Pure: `plan_vpns(networks, sites, catalog)` plans one link from every cloud network to every site, and one between
every pair of cloud networks of different providers (so one controller reaches every node). Each link:

- two sides with their BGP ASNs (a cloud side's is chosen here so that no two speakers of the stack share one; a
  site brings its own and `check_sites` refuses one that clashes) and the routes each side learns (the other
  side's CIDRs, announced over BGP);
- its tunnels, as many as the two clouds' HA designs give: a cloud to a site 2 (AWS: one VPN connection's two
  tunnels; GCP: the two HA VPN interfaces; Azure: the two active-active gateway instances), AWS to GCP or Azure 4
  (one AWS VPN connection per peer interface, as Google's and Microsoft's AWS guides build it), Azure to GCP 2;
- each tunnel's inside /30, unique in the whole stack and clear of each cloud's reserved blocks: AWS refuses
  169.254.0.0/30 .. 169.254.5.0/30 and 169.254.169.252/30, Azure's custom BGP (APIPA) addresses must lie in
  169.254.21.0-169.254.22.255, so links with an Azure side draw from that range and all others stay out of it;
- one cipher set every cloud accepts (IKEv2 only): phase 1 AES-256-CBC + SHA2-384 + DH group 20 (ECP-384),
  phase 2 AES-256-GCM-16 with PFS group 20;
- its cost from the catalog's service prices (AWS VPN connection-hour, GCP tunnel-hour, Azure gateway-hour and its
  two public IPv4 addresses, charged once per Azure network on its first link); unpriced stays None, never 0.

`check_sites` returns (path, message) pairs for site ASNs that clash and for overlapping CIDRs anywhere in the stack;
the caller turns them into problems.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from aicluster.catalog import Catalog
from aicluster.catalog.pricing import Override, cents, service_month, service_price
from aicluster.plan.models import IkePhase, PlannedNetwork, PlannedVpn, VpnCharge, VpnSide, VpnTunnel

__all__ = [
    "PHASE1",
    "PHASE2",
    "VpnPlanError",
    "VpnSite",
    "check_sites",
    "cloud_asns",
    "overlapping_cidrs",
    "plan_vpns",
]

# -- Facts (each with its catalog source id) ---------------------------------------------------------------------
# aws-vpn-tunnel-options: inside CIDRs AWS refuses.
AWS_RESERVED_INSIDE = (*(f"169.254.{i}.0/30" for i in range(6)), "169.254.169.252/30")
# azure-vpn-aws-bgp-apipa: Azure's custom BGP (APIPA) addresses must lie in 169.254.21.0-169.254.22.255.
AZURE_APIPA = ("169.254.21.0/24", "169.254.22.0/24")
# The instance metadata address 169.254.169.254 of all three clouds: no tunnel comes near its /24.
METADATA_BLOCK = "169.254.169.0/24"
LINK_LOCAL = "169.254.0.0/16"
# aws-vpn-cgw-options: ASNs AWS refuses for a customer gateway (7224 everywhere, the others in one region each).
AWS_RESERVED_ASNS = {7224: None, 9059: "eu-west-1", 10124: "ap-northeast-1", 17943: "ap-southeast-1"}
# azure-vpn-bgp-reserved-asns: ASNs an on-premises device peering with an Azure VPN gateway cannot use.
AZURE_RESERVED_ASNS = frozenset({8074, 8075, 12076, 65515, 65517, 65518, 65519, 65520})
# Private 16-bit ASNs (aws-vpn-cgw-options): 64512-65534.
PRIVATE_ASN_16 = (64512, 65534)
# Cloud-side ASNs: AWS's default 64512 and Azure's default 65515 (azure-vpn-aws-bgp-apipa) for the first network
# of each; further networks and GCP's Cloud Routers take private ASNs from fixed bases (our convention).
AWS_ASN_BASE = 64512
GCP_ASN_BASE = 64600
AZURE_DEFAULT_ASN = 65515
AZURE_ASN_BASE = 64700

# One cipher set all three clouds accept: AWS (aws-vpn-tunnel-options), Azure (azure-ipsec-policy-values), GCP
# negotiates any of its table (gcp-vpn-supported-ike-ciphers) and is pinned by what its peers propose.
PHASE1 = IkePhase(encryption="AES-256-CBC", integrity="SHA2-384", dh_group=20, lifetime_s=28800)
PHASE2 = IkePhase(encryption="AES-256-GCM-16", integrity=None, dh_group=20, lifetime_s=3600)
CIPHER_SOURCES = ("aws-vpn-tunnel-options", "azure-ipsec-policy-values", "gcp-vpn-supported-ike-ciphers")

# Public endpoints each side offers and the tunnels between them (see the module docstring).
ENDPOINTS = {"aws-site": 2, "aws-cloud": 4, "gcp": 2, "azure": 2, "site": 1}
# Services that price a link, per cloud (catalog services/*.yaml).
SERVICES = {"aws": "vpn-connection", "gcp": "ha-vpn-tunnel", "azure": "vpn-gateway-vpngw1az"}


class VpnPlanError(ValueError):
    """The sites cannot be joined as given; `problems` are (path, message) pairs, one per problem."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{p}: {m}" for p, m in problems))
        self.problems = problems


class VpnSite(BaseModel):
    """The network side of a site (an owned data centre), as the VPN planner needs it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(description="Site name (e.g. `dc1`).")]
    cidrs: Annotated[tuple[str, ...], Field(min_length=1, description="The site's networks (e.g. `10.200.0.0/16`).")]
    vpn_endpoint: Annotated[str, Field(description="Public IPv4 address of the site's VPN device.")]
    bgp_asn: Annotated[int, Field(ge=1, le=4294967294, description="The site's BGP ASN (e.g. `65010`).")]

    @field_validator("cidrs")
    @classmethod
    def _cidrs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(str(ipaddress.IPv4Network(c, strict=True)) for c in value)

    @field_validator("vpn_endpoint")
    @classmethod
    def _public(cls, value: str) -> str:
        addr = ipaddress.IPv4Address(value)
        # RFC 5737 documentation ranges stand in for real addresses in examples and tests
        documentation = any(
            addr in ipaddress.IPv4Network(b) for b in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
        )
        if not (addr.is_global or documentation):
            raise ValueError(f"{value} is not a public IPv4 address; give the VPN device's address on the internet")
        return value


# -- ASNs ----------------------------------------------------------------------------------------------------------


def cloud_asns(networks: Sequence[PlannedNetwork]) -> dict[str, int]:
    """The BGP ASN of each cloud network's VPN gateway, by network key: distinct across the stack."""
    out: dict[str, int] = {}
    counts: dict[str, int] = {}
    for n in networks:
        i = counts.get(n.provider, 0)
        counts[n.provider] = i + 1
        if n.provider == "aws":
            out[n.key] = AWS_ASN_BASE + i
        elif n.provider == "azure":
            out[n.key] = AZURE_DEFAULT_ASN if i == 0 else AZURE_ASN_BASE + i
        else:
            out[n.key] = GCP_ASN_BASE + i
    return out


# -- Checks --------------------------------------------------------------------------------------------------------


def overlapping_cidrs(networks: Sequence[PlannedNetwork], sites: Sequence[VpnSite]) -> list[tuple[str, str]]:
    """(path, message) for every pair of CIDRs of the stack that overlap: cloud networks and site networks."""
    named: list[tuple[str, str, str]] = [(f"networks[{n.key}]", f"network {n.key}", n.cidr) for n in networks]
    for i, s in enumerate(sites):
        named += [(f"sites[{i}].cidrs[{j}]", f"site {s.name}", c) for j, c in enumerate(s.cidrs)]
    out = []
    for k, (path, who, cidr) in enumerate(named):
        for _, other, ocidr in named[:k]:
            if ipaddress.IPv4Network(cidr).overlaps(ipaddress.IPv4Network(ocidr)):
                fix = (
                    "give the site a range no cloud network uses, or pin the cloud network elsewhere with "
                    "`network.cidrs`"
                    if "site" in who or "site" in other
                    else "pin one of the networks elsewhere with `network.cidrs`"
                )
                out.append((path, f"{who} {cidr} overlaps {other} {ocidr}; {fix}"))
    return out


def check_sites(networks: Sequence[PlannedNetwork], sites: Sequence[VpnSite]) -> list[tuple[str, str]]:
    """Every problem that stops the stack's sites and clouds being joined, as (path, message) pairs."""
    problems: list[tuple[str, str]] = []
    clouds = cloud_asns(networks)
    regions = {n.region for n in networks if n.provider == "aws"}
    taken: dict[int, str] = {asn: f"the {key} VPN gateway" for key, asn in clouds.items()}
    if any(n.provider == "azure" for n in networks):
        taken.setdefault(AZURE_DEFAULT_ASN, "Azure's VPN gateway default")
    for i, s in enumerate(sites):
        path = f"sites[{i}].bgp_asn"
        free = next(
            a
            for a in range(65000, PRIVATE_ASN_16[1])
            if a not in taken and a not in AWS_RESERVED_ASNS and a not in AZURE_RESERVED_ASNS
        )
        if s.bgp_asn in taken:
            problems.append(
                (
                    path,
                    f"site {s.name}: BGP ASN {s.bgp_asn} is already {taken[s.bgp_asn]}'s; every BGP speaker of the "
                    f"stack needs its own ASN: give the site another (e.g. {free}; private ASNs are "
                    f"{PRIVATE_ASN_16[0]}-{PRIVATE_ASN_16[1]})",
                )
            )
        elif (
            s.bgp_asn in AWS_RESERVED_ASNS
            and networks
            and (AWS_RESERVED_ASNS[s.bgp_asn] is None or AWS_RESERVED_ASNS[s.bgp_asn] in regions)
        ):
            where = AWS_RESERVED_ASNS[s.bgp_asn] or "every region"
            problems.append(
                (
                    path,
                    f"site {s.name}: BGP ASN {s.bgp_asn} is reserved by AWS in {where}; give the site another "
                    f"(e.g. {free})",
                )
            )
        elif s.bgp_asn in AZURE_RESERVED_ASNS and any(n.provider == "azure" for n in networks):
            problems.append(
                (
                    path,
                    f"site {s.name}: BGP ASN {s.bgp_asn} is reserved by Azure (8074, 8075, 12076, 65515, "
                    f"65517-65520) and an Azure VPN gateway peers with this site; give the site another (e.g. {free})",
                )
            )
        else:
            taken[s.bgp_asn] = f"site {s.name}"
    return problems + overlapping_cidrs(networks, sites)


# -- Inside addresses ----------------------------------------------------------------------------------------------


@functools.cache
def _slash30s(blocks: tuple[str, ...], avoid: tuple[str, ...]) -> tuple[int, ...]:
    """The first address of every /30 of `blocks` that overlaps none of `avoid`, in order (integers: 16,384 /30s of
    169.254.0.0/16 as network objects cost most of a plan; the allocator builds only the ones it hands out)."""
    bad = [(int(n.network_address), int(n.broadcast_address)) for n in map(ipaddress.IPv4Network, avoid)]
    out = []
    for block in map(ipaddress.IPv4Network, blocks):
        for first in range(int(block.network_address), int(block.broadcast_address) + 1, 4):
            if not any(first <= hi and first + 3 >= lo for lo, hi in bad):
                out.append(first)
    return tuple(out)


class _InsideAllocator:
    """Hands out /30s: Azure links from Azure's APIPA range, all others from the rest of 169.254.0.0/16.

    Site links count up from the bottom of a range and cloud-to-cloud links down from its top, and site links are
    planned site by site, so adding a site (at the end of `sites:`) moves no existing tunnel's addresses; a moved
    inside CIDR would replace the VPN connection.
    """

    def __init__(self) -> None:
        self.pools = {
            True: _slash30s(tuple(AZURE_APIPA), tuple(AWS_RESERVED_INSIDE)),
            False: _slash30s((LINK_LOCAL,), (*AWS_RESERVED_INSIDE, *AZURE_APIPA, METADATA_BLOCK)),
        }
        self.used: set[int] = set()

    def take(self, azure: bool, from_top: bool) -> ipaddress.IPv4Network:
        pool = self.pools[azure]
        first = next((n for n in (reversed(pool) if from_top else pool) if n not in self.used), None)
        if first is None:
            where = "Azure's APIPA range 169.254.21.0-169.254.22.255" if azure else "169.254.0.0/16"
            raise VpnPlanError([("sites", f"the stack's VPN tunnels need more /30s than {where} holds")])
        self.used.add(first)
        return ipaddress.IPv4Network((first, 30))


# -- Links -----------------------------------------------------------------------------------------------------------


def _cloud_side(n: PlannedNetwork, asn: int, peer_is_site: bool, learns: tuple[str, ...]) -> VpnSide:
    endpoints = ENDPOINTS[("aws-site" if peer_is_site else "aws-cloud") if n.provider == "aws" else n.provider]
    return VpnSide(
        kind="network",
        key=n.key,
        provider=n.provider,
        region=n.region,
        cidrs=(n.cidr,),
        asn=asn,
        endpoints=endpoints,
        learns=learns,
    )


def _pairs(a: VpnSide, b: VpnSide) -> list[tuple[int, int]]:
    """(a endpoint, b endpoint) of each tunnel."""
    if b.kind == "site":
        return [(0, 0), (1, 0)]
    if a.provider == "aws":  # one AWS VPN connection (2 tunnels) per interface of the other cloud's gateway
        return [(0, 0), (1, 0), (2, 1), (3, 1)]
    return [(0, 0), (1, 1)]  # Azure to GCP: instance i to interface i


def _tunnels(a: VpnSide, b: VpnSide, inside: _InsideAllocator) -> tuple[VpnTunnel, ...]:
    azure = "azure" in (a.provider, b.provider)
    out = []
    for index, (ea, eb) in enumerate(_pairs(a, b)):
        net = inside.take(azure, from_top=b.kind != "site")
        first, second = list(net.hosts())
        # An Azure connection (one per peer endpoint) carries one shared key for all its tunnels.
        key = (eb if a.provider == "azure" else ea) if azure else index
        out.append(
            VpnTunnel(
                index=index,
                inside_cidr=str(net),
                a_endpoint=ea,
                b_endpoint=eb,
                a_ip=str(first),
                b_ip=str(second),
                key=key,
            )
        )
    return tuple(out)


def _charges(sides: Sequence[VpnSide], tunnels: int, charged_gateways: set[str]) -> list[tuple[str, str, str, int]]:
    """(provider, region, service, quantity) of what the link adds to the bill."""
    out = []
    for side in sides:
        if side.kind != "network" or side.region is None:
            continue
        if side.provider == "aws":
            out.append(("aws", side.region, SERVICES["aws"], side.endpoints // 2))
        elif side.provider == "gcp":
            out.append(("gcp", side.region, SERVICES["gcp"], tunnels))
        elif side.provider == "azure" and side.key not in charged_gateways:
            charged_gateways.add(side.key)
            out.append(("azure", side.region, SERVICES["azure"], 1))
            out.append(("azure", side.region, "public-ipv4", 2))  # active-active: one address per instance
    return out


def _link(
    a: VpnSide,
    b: VpnSide,
    inside: _InsideAllocator,
    catalog: Catalog,
    charged_gateways: set[str],
    overrides: Sequence[Override] = (),
) -> PlannedVpn:
    tunnels = _tunnels(a, b, inside)
    charges = []
    unpriced = []
    for provider, region, service, qty in _charges((a, b), len(tunnels), charged_gateways):
        # the one cost model (a negotiated rate under pricing.overrides, else the catalog's), as the pack prices it
        resolved = service_price(catalog, provider, service, region, overrides)
        month = service_month(catalog, resolved, 1)
        item = f"{provider} {service} x{qty} in {region}"
        if month is None:
            unpriced.append(item)
        charges.append(
            VpnCharge(
                item=item,
                provider=provider,
                region=region,
                service=service,
                quantity=qty,
                usd_per_month=None if month is None else cents(month * qty),
                source=resolved.price.source if resolved.price else catalog.service_source(provider, service),
                basis=resolved.price.basis if resolved.price else None,
            )
        )
    priced = [c.usd_per_month for c in charges if c.usd_per_month is not None]
    sources = {*CIPHER_SOURCES, "aws-vpn-cgw-options"}
    if "azure" in (a.provider, b.provider):
        sources.add("azure-vpn-aws-bgp-apipa")
    return PlannedVpn(
        name=f"{a.key}--{b.key}",
        a=a,
        b=b,
        tunnels=tunnels,
        ike_version=2,
        phase1=PHASE1,
        phase2=PHASE2,
        charges=tuple(charges),
        cost_usd_per_month=round(sum(priced), 2) if priced else None,
        unpriced=tuple(unpriced),
        sources=tuple(sorted(sources)),
    )


def plan_vpns(
    networks: Sequence[PlannedNetwork],
    sites: Sequence[VpnSite],
    catalog: Catalog,
    overrides: Sequence[Override] = (),
) -> tuple[PlannedVpn, ...]:
    """Every VPN link of the stack (see the module docstring). Raises VpnPlanError with every problem
    `check_sites` finds; the caller may run `check_sites` first to report them with the rest of the stack's."""
    problems = check_sites(networks, sites)
    if problems:
        raise VpnPlanError(problems)
    asns = cloud_asns(networks)
    inside = _InsideAllocator()
    charged: set[str] = set()
    links = []
    for s in sites:
        for n in networks:
            a = _cloud_side(n, asns[n.key], True, s.cidrs)
            b = VpnSide(
                kind="site",
                key=s.name,
                provider="site",
                region=None,
                cidrs=s.cidrs,
                asn=s.bgp_asn,
                endpoints=ENDPOINTS["site"],
                public_ip=s.vpn_endpoint,
                learns=(n.cidr,),
            )
            links.append(_link(a, b, inside, catalog, charged, overrides))
    ordered = sorted(networks, key=lambda n: (n.provider, n.key))
    for i, n in enumerate(ordered):
        for m in ordered[i + 1 :]:
            if m.provider == n.provider:
                continue  # two regions of one provider: joined by that provider's peering, not planned here
            a = _cloud_side(n, asns[n.key], False, (m.cidr,))
            b = _cloud_side(m, asns[m.key], False, (n.cidr,))
            links.append(_link(a, b, inside, catalog, charged, overrides))
    return tuple(links)
