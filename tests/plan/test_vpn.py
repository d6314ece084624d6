"""The VPN planner: which links, their tunnels' inside addresses, ASNs, ciphers, routes, cost, and what it refuses."""

from __future__ import annotations

import ipaddress
from itertools import combinations

import pytest
from pydantic import ValidationError

from aicluster.catalog import Catalog
from aicluster.plan.models import PlannedNetwork, PlannedVpn
from aicluster.plan.vpn import (
    AWS_RESERVED_INSIDE,
    AZURE_APIPA,
    METADATA_BLOCK,
    VpnPlanError,
    VpnSite,
    check_sites,
    overlapping_cidrs,
    plan_vpns,
)
from tests.helpers import SSH_KEY, azure_pool, cluster, gcp_pool, plan_of, pool

SITE_IP = "81.2.69.142"


def site(name: str = "dc1", cidr: str = "10.200.0.0/16", asn: int = 65010, ip: str = SITE_IP) -> VpnSite:
    return VpnSite(name=name, cidrs=(cidr,), vpn_endpoint=ip, bgp_asn=asn)


@pytest.fixture(scope="module")
def networks(catalog: Catalog) -> tuple[PlannedNetwork, ...]:
    """aws-us-east-1, gcp-us-central1, azure-eastus, as the planner lays them out."""
    data = cluster(
        pools=[pool(), gcp_pool(name="a3", nodes=2), azure_pool(name="nd", nodes=2)],
        storage=[],
        access={"ssh_public_keys": [SSH_KEY]},
    )
    return plan_of(catalog, data).networks


def by_name(vpns: tuple[PlannedVpn, ...]) -> dict[str, PlannedVpn]:
    return {v.name: v for v in vpns}


def aws_gcp(networks: tuple[PlannedNetwork, ...]) -> list[PlannedNetwork]:
    return [n for n in networks if n.provider in ("aws", "gcp")]


def test_one_site_two_clouds_links_each_cloud_to_the_site_and_the_clouds_to_each_other(
    networks: tuple[PlannedNetwork, ...], catalog: Catalog
) -> None:
    vpns = by_name(plan_vpns(aws_gcp(networks), [site()], catalog))
    assert sorted(vpns) == ["aws-us-east-1--dc1", "aws-us-east-1--gcp-us-central1", "gcp-us-central1--dc1"]

    aws_site = vpns["aws-us-east-1--dc1"]
    assert (aws_site.a.kind, aws_site.b.kind) == ("network", "site")
    assert aws_site.b.public_ip == SITE_IP
    # two tunnels: one AWS VPN connection (its two outside addresses) to the site's one device
    assert [(t.a_endpoint, t.b_endpoint) for t in aws_site.tunnels] == [(0, 0), (1, 0)]
    # routes: each side learns the other's CIDRs
    assert aws_site.a.learns == ("10.200.0.0/16",)
    assert aws_site.b.learns == (aws_site.a.cidrs[0],)

    cloud = vpns["aws-us-east-1--gcp-us-central1"]
    # one AWS VPN connection per GCP HA interface: four tunnels, AWS endpoints 0-3, GCP interfaces 0,0,1,1
    assert [(t.a_endpoint, t.b_endpoint) for t in cloud.tunnels] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    assert (cloud.a.endpoints, cloud.b.endpoints) == (4, 2)
    assert cloud.a.learns == cloud.b.cidrs
    assert cloud.b.learns == cloud.a.cidrs
    assert len(cloud.key_indexes()) == 4  # a key per tunnel


def test_every_link_is_ikev2_with_one_strong_algorithm_per_role(
    networks: tuple[PlannedNetwork, ...], catalog: Catalog
) -> None:
    for vpn in plan_vpns(networks, [site()], catalog):
        assert vpn.ike_version == 2
        assert (vpn.phase1.encryption, vpn.phase1.integrity, vpn.phase1.dh_group) == ("AES-256-CBC", "SHA2-384", 20)
        assert (vpn.phase2.encryption, vpn.phase2.integrity, vpn.phase2.dh_group) == ("AES-256-GCM-16", None, 20)
        assert set(vpn.sources) <= set(catalog.sources)


def test_azure_links_take_apipa_inside_addresses_and_share_a_key_per_connection(
    networks: tuple[PlannedNetwork, ...], catalog: Catalog
) -> None:
    vpns = by_name(plan_vpns(networks, [site()], catalog))
    apipa = [ipaddress.IPv4Network(b) for b in AZURE_APIPA]
    for vpn in vpns.values():
        azure = "azure" in (vpn.a.provider, vpn.b.provider)
        for t in vpn.tunnels:
            inside = ipaddress.IPv4Network(t.inside_cidr)
            assert any(inside.subnet_of(b) for b in apipa) == azure, (vpn.name, t.inside_cidr)
    # Azure to a site: one local network gateway, so one connection and one key for both tunnels
    assert {t.key for t in vpns["azure-eastus--dc1"].tunnels} == {0}
    # AWS to Azure: a local network gateway (and key) per AWS outside address
    assert len(vpns["aws-us-east-1--azure-eastus"].key_indexes()) == 4
    assert [(t.a_endpoint, t.b_endpoint) for t in vpns["azure-eastus--gcp-us-central1"].tunnels] == [(0, 0), (1, 1)]


def test_inside_cidrs_never_overlap_across_21_links_and_avoid_reserved_blocks(
    networks: tuple[PlannedNetwork, ...], catalog: Catalog
) -> None:
    sites = [site(f"dc{i}", f"10.{200 + i}.0.0/16", 65010 + i) for i in range(6)]
    vpns = plan_vpns(networks, sites, catalog)
    assert len(vpns) == 3 * 6 + 3
    inside = [ipaddress.IPv4Network(t.inside_cidr) for v in vpns for t in v.tunnels]
    assert all(n.prefixlen == 30 and n.subnet_of(ipaddress.IPv4Network("169.254.0.0/16")) for n in inside)
    for x, y in combinations(inside, 2):
        assert not x.overlaps(y), (x, y)
    reserved = [ipaddress.IPv4Network(r) for r in (*AWS_RESERVED_INSIDE, METADATA_BLOCK)]
    assert not [n for n in inside for r in reserved if n.overlaps(r)]
    for v in vpns:
        for t in v.tunnels:
            net = ipaddress.IPv4Network(t.inside_cidr)
            assert [t.a_ip, t.b_ip] == [str(h) for h in net.hosts()]


def test_no_two_bgp_speakers_share_an_asn(networks: tuple[PlannedNetwork, ...], catalog: Catalog) -> None:
    sites = [site("dc1", "10.200.0.0/16", 65010), site("dc2", "10.201.0.0/16", 4200000001, "81.2.69.143")]
    vpns = plan_vpns(networks, sites, catalog)
    speakers = {(side.key, side.asn) for v in vpns for side in (v.a, v.b)}
    keys = {k for k, _ in speakers}
    assert len(speakers) == len(keys)  # one ASN per speaker
    assert len({asn for _, asn in speakers}) == len(keys)  # and no ASN twice
    asns = {k: asn for k, asn in speakers}
    assert (asns["aws-us-east-1"], asns["azure-eastus"]) == (64512, 65515)  # the clouds' defaults


@pytest.mark.parametrize(
    ("asn", "said"),
    [
        pytest.param(64512, "already the aws-us-east-1 VPN gateway's", id="aws-gateway"),
        pytest.param(65515, "already the azure-eastus VPN gateway's", id="azure-gateway"),
        pytest.param(64600, "already the gcp-us-central1 VPN gateway's", id="gcp-router"),
        pytest.param(7224, "reserved by AWS in every region", id="aws-reserved"),
    ],
)
def test_a_site_asn_that_clashes_is_refused_naming_the_site_and_the_fix(
    networks: tuple[PlannedNetwork, ...], catalog: Catalog, asn: int, said: str
) -> None:
    with pytest.raises(VpnPlanError) as err:
        plan_vpns(networks, [site(asn=asn)], catalog)
    [(path, message)] = err.value.problems
    assert path == "sites[0].bgp_asn"
    assert message.startswith(f"site dc1: BGP ASN {asn} is ")
    assert said in message
    assert "give the site another (e.g. 65000" in message


def test_two_sites_with_one_asn_are_refused(networks: tuple[PlannedNetwork, ...]) -> None:
    problems = check_sites(networks, [site("dc1", asn=65010), site("dc2", "10.201.0.0/16", 65010, "81.2.69.143")])
    assert problems == [
        (
            "sites[1].bgp_asn",
            "site dc2: BGP ASN 65010 is already site dc1's; every BGP speaker of the stack needs its own ASN: give the "
            "site another (e.g. 65000; private ASNs are 64512-65534)",
        )
    ]


def test_overlapping_cidrs_anywhere_in_the_stack_are_reported(
    networks: tuple[PlannedNetwork, ...], catalog: Catalog
) -> None:
    aws = next(n for n in networks if n.provider == "aws")
    sites = [
        site("dc1", "10.8.128.0/20"),  # inside the AWS network
        VpnSite(name="dc2", cidrs=("10.202.0.0/16", "10.202.4.0/24"), vpn_endpoint="81.2.69.143", bgp_asn=65011),
    ]
    problems = overlapping_cidrs(networks, sites)
    assert problems == [
        (
            "sites[0].cidrs[0]",
            f"site dc1 10.8.128.0/20 overlaps network aws-us-east-1 {aws.cidr}; give the site a range no cloud "
            "network uses, or pin the cloud network elsewhere with `network.cidrs`",
        ),
        (
            "sites[1].cidrs[1]",
            "site dc2 10.202.4.0/24 overlaps site dc2 10.202.0.0/16; give the site a range no cloud network uses, "
            "or pin the cloud network elsewhere with `network.cidrs`",
        ),
    ]
    assert overlapping_cidrs(networks, [site()]) == []
    with pytest.raises(VpnPlanError):
        plan_vpns(networks, sites, catalog)


def test_cost_from_catalog_prices_with_the_azure_gateway_charged_once(
    networks: tuple[PlannedNetwork, ...], catalog: Catalog
) -> None:
    vpns = by_name(plan_vpns(networks, [site()], catalog))
    hours = catalog.hours_per_month
    assert vpns["aws-us-east-1--dc1"].cost_usd_per_month == pytest.approx(0.05 * hours)  # one connection
    assert vpns["gcp-us-central1--dc1"].cost_usd_per_month == pytest.approx(2 * 0.05 * hours)  # two tunnels
    # the Azure gateway (and its two public IPs) is billed once, on the network's first link
    assert vpns["azure-eastus--dc1"].cost_usd_per_month == pytest.approx((0.21 + 2 * 0.005) * hours)
    aws_azure = vpns["aws-us-east-1--azure-eastus"]
    assert [c.service for c in aws_azure.charges] == ["vpn-connection"]
    assert aws_azure.cost_usd_per_month == pytest.approx(2 * 0.05 * hours)  # one connection per Azure instance
    assert all(c.source in catalog.sources for v in vpns.values() for c in v.charges)


def test_a_region_without_a_price_stays_unpriced_never_zero(
    networks: tuple[PlannedNetwork, ...], catalog: Catalog
) -> None:
    aws = next(n for n in networks if n.provider == "aws")
    elsewhere = aws.model_copy(update={"region": "eu-north-1", "key": "aws-eu-north-1"})
    [vpn] = plan_vpns([elsewhere], [site()], catalog)
    assert vpn.cost_usd_per_month is None
    assert vpn.unpriced == ("aws vpn-connection x1 in eu-north-1",)
    assert vpn.charges[0].usd_per_month is None


@pytest.mark.parametrize("address", ["10.0.0.1", "100.64.0.1", "not-an-ip"])
def test_a_site_endpoint_must_be_a_public_ipv4_address(address: str) -> None:
    with pytest.raises(ValidationError):
        site(ip=address)


def test_adding_a_site_moves_no_existing_tunnel(networks: tuple[PlannedNetwork, ...], catalog: Catalog) -> None:
    def inside(vpns: tuple[PlannedVpn, ...]) -> dict[str, list[str]]:
        return {v.name: [t.inside_cidr for t in v.tunnels] for v in vpns}

    before = inside(plan_vpns(networks, [site()], catalog))
    after = inside(plan_vpns(networks, [site(), site("dc2", "10.201.0.0/16", 65011, "81.2.69.143")], catalog))
    assert {name: after[name] for name in before} == before
    assert len(after) == len(before) + 3
