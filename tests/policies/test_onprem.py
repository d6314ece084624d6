"""Hybrid policies: the on-prem example stack as compliant baseline, then one mutation per case with the exact
finding; VPN resources shaped as the SDKs register them; the pack over its gRPC protocol."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from pulumi.runtime.proto import analyzer_pb2

from aicluster.preview.engine import Capture
from aicluster.preview.policy import evaluate
from policies import onprem, vpn
from policies.facts.aicluster import ONPREM_SITE

from .conftest import capture_of, findings, judge, messages, mutated, res, stack_findings
from .test_engine_protocol import _stack_request, _struct, analyzer  # noqa: F401  (analyzer: the pack's process)

SITE = "dgx-fra1-fra1"
CLUSTER = "dgx-fra1"
SITE_POLICIES = [p.name for p in onprem.POLICIES]
VPN_POLICIES = [p.name for p in vpn.POLICIES]


@pytest.fixture(scope="module")
def dgx() -> Capture:
    return capture_of("onprem-dgx-h100")


def test_the_onprem_example_passes_every_site_policy(dgx: Capture) -> None:
    result = judge(dgx, [*SITE_POLICIES, *VPN_POLICIES])
    assert result.violations == []
    assert set(result.passed) == set(SITE_POLICIES)
    na = {n["policy"]: n["reason"] for n in result.not_applicable}
    assert na == {
        "aws-ec2-vpnconnection-enforce-strong-ike": "no aws:ec2/vpnConnection:VpnConnection in the stack",
        "gcp-compute-vpntunnel-enforce-strong-ike": "no gcp:compute/vPNTunnel:VPNTunnel in the stack",
        "azure-network-vpnconnection-enforce-strong-ike": "no azure-native:network:VirtualNetworkGatewayConnection "
        "in the stack",
    }


def test_a_cloud_only_stack_gives_the_site_policies_nothing_to_judge(p5_small: Capture) -> None:
    na = {n["policy"]: n["reason"] for n in judge(p5_small, SITE_POLICIES).not_applicable}
    assert na == {name: "no aicluster:onprem:Site in the stack" for name in SITE_POLICIES}


def _site(change: Callable[[dict[str, Any]], None]) -> dict[str, Callable[[dict[str, Any]], None]]:
    return {SITE: change}


def _fabric(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda i: i["fabrics"][0].update(values)


SITE_CASES = [
    pytest.param(
        "aicluster-site-enforce-power-ceiling",
        lambda i: i.update(max_kw=1000.0),
        "site fra1 draws 1,305.6 kW of IT load at its nodes' maximum, over its ceiling of 1,000.0 kW by 305.6 kW; "
        "largest: h100 128 x dgx-h100 1,305.6 kW. Shrink or move a pool (pools[].nodes), or raise "
        "sites[].power.max_kw to what the site delivers",
        id="site-over-its-ceiling",
    ),
    pytest.param(
        "aicluster-site-enforce-rack-power",
        lambda i: i["racks"][0].update(kw=42.0),
        "rack h100-r01 of site fra1 draws 42 kW (4 nodes of h100), over its 41 kW; move hosts to another rack "
        "(hosts[].rack) or raise sites[].power.rack_kw to what the rack's power and cooling deliver",
        id="rack-over-its-kw",
    ),
    pytest.param(
        "aicluster-fabric-enforce-oversubscription",
        _fabric(oversubscription_achieved=1.5),
        "fabric fra1 of site fra1 is 1.5:1 oversubscribed at its leaves (32 ports down, 32 up), worse than the 1:1 "
        "asked for: all-reduce traffic across leaves slows by that ratio; use a switch with more ports "
        "(fabric.switch_radix or fabric.switch) or accept the ratio in fabric.oversubscription",
        id="oversubscribed-worse-than-asked",
    ),
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        _fabric(radix=128.0),
        "fabric fra1 of site fra1 counts 128 ports per qm9700 at 400 Gb/s, but the switch offers 64 x 400G, "
        "128 x 200G; set fabric.link_gbps and fabric.switch_radix to one of those",
        id="radix-the-switch-lacks-at-that-speed",
    ),
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        _fabric(endpoints=2400.0, nodes=300.0),
        "fabric fra1 of site fra1 cables 2400 endpoints, more than 2 tiers of radix-64 switches reach (2048); add a "
        "tier, use a switch with more ports, or split the pool over two fabrics",
        id="more-endpoints-than-two-tiers-reach",
    ),
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        _fabric(nodes=300.0),
        "fabric fra1 of site fra1 joins 300 nodes, more than the 256 its design reaches; add a tier, use a switch "
        "with more ports, or split the pool over two fabrics",
        id="more-nodes-than-the-design-reaches",
    ),
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        _fabric(ports_used=3100.0),
        "fabric fra1 of site fra1 uses 3100 switch ports of the 3072 its switches have; add switches (a tier, or a "
        "switch with more ports)",
        id="more-ports-than-the-switches-have",
    ),
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        _fabric(switch="qm9999"),
        "fabric fra1 of site fra1 is built of switch 'qm9999', which the catalog does not know: its ports cannot be "
        "checked; use one of q3400, qm8700, qm9700, sn5600 (fabric.switch)",
        id="switch-not-in-the-catalog",
    ),
    pytest.param(
        "aicluster-site-disallow-overlapping-cidrs",
        lambda i: i.update(cidrs=["10.200.0.0/16", "10.200.128.0/17"]),
        None,  # one site's own ranges are the spec's concern, not a cross-site overlap
        id="a-site-overlapping-itself-is-not-judged-here",
    ),
]


@pytest.mark.parametrize(("name", "change", "expected"), SITE_CASES)
def test_each_site_policy_reports_one_mutation(
    dgx: Capture, name: str, change: Callable[[dict[str, Any]], None], expected: str | None
) -> None:
    result = judge(mutated(dgx, _site(change)), [name])
    assert messages(result) == ([expected] if expected else [])
    assert all(v.urn.endswith(f"aicluster:onprem:Site::{SITE}") for v in result.violations)


def _site_res(dgx: Capture) -> Any:
    site = next(r for r in dgx.resources if r.type == ONPREM_SITE)
    return res(ONPREM_SITE, site.name, copy.deepcopy(site.inputs))


@pytest.mark.parametrize(
    ("type_", "props", "expected"),
    [
        pytest.param(
            "aws:ec2/vpc:Vpc",
            {"cidrBlock": "10.200.64.0/18"},
            "site fra1 network 10.200.0.0/16 overlaps AWS VPC net (10.200.64.0/18): across the VPN, addresses in "
            "both are routed to one side only; give the site's network.cidrs, or the cloud network's range "
            "(network.cidrs, e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use",
            id="aws-vpc",
        ),
        pytest.param(
            "gcp:compute/subnetwork:Subnetwork",
            {"ipCidrRange": "10.0.0.0/8"},
            "site fra1 network 10.200.0.0/16 overlaps GCP subnetwork net (10.0.0.0/8): across the VPN, addresses in "
            "both are routed to one side only; give the site's network.cidrs, or the cloud network's range "
            "(network.cidrs, e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use",
            id="gcp-subnetwork",
        ),
        pytest.param(
            "azure-native:network:VirtualNetwork",
            {"addressSpace": {"addressPrefixes": ["10.1.0.0/16", "10.200.10.0/24"]}},
            "site fra1 network 10.200.0.0/16 overlaps Azure virtual network net (10.200.10.0/24): across the VPN, "
            "addresses in both are routed to one side only; give the site's network.cidrs, or the cloud network's "
            "range (network.cidrs, e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use",
            id="azure-vnet",
        ),
        pytest.param("aws:ec2/vpc:Vpc", {"cidrBlock": "10.201.0.0/16"}, None, id="disjoint-passes"),
    ],
)
def test_site_cidrs_must_not_overlap_a_cloud_network(
    dgx: Capture, type_: str, props: dict[str, Any], expected: str | None
) -> None:
    found = stack_findings("aicluster-site-disallow-overlapping-cidrs", [_site_res(dgx), res(type_, "net", props)])
    assert found == ([expected] if expected else [])


def test_two_sites_must_not_overlap(dgx: Capture) -> None:
    other = _site_res(dgx)
    other.name = "dgx-fra1-ams1"
    other.props = {**other.props, "site": "ams1", "cidrs": ["10.200.200.0/24"]}
    assert stack_findings("aicluster-site-disallow-overlapping-cidrs", [_site_res(dgx), other]) == [
        "site fra1 network 10.200.0.0/16 overlaps site ams1 (10.200.200.0/24): across the VPN, addresses in both "
        "are routed to one side only; give the site's network.cidrs, or the cloud network's range (network.cidrs, "
        "e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use"
    ]


# -- cost, power and carbon count the site -----------------------------------------------------------------------


def test_the_budget_counts_the_sites_hardware_and_energy(dgx: Capture) -> None:
    budget = "aicluster-cluster-enforce-monthly-budget"
    assert messages(judge(dgx, [budget], {budget: {"monthly_usd": 1156296.53}})) == []
    assert messages(judge(dgx, [budget], {budget: {"monthly_usd": 1156296.52}})) == [
        "monthly cost $1,156,296.53 exceeds the budget $1,156,296.52 by $0.01 (0.0%); largest: dgx-fra1-fra1 "
        "(hardware of 128 x dgx-h100 at site fra1, energy of 128 x dgx-h100 at site fra1) $1,156,296.53. Shrink or "
        "remove a pool, move it to spot or reserved capacity, or raise budgets.monthly_usd"
    ]


def test_a_site_without_hardware_cost_is_named_unpriced(dgx: Capture) -> None:
    stripped = mutated(dgx, _site(lambda i: i["pools"][0].update(hardware_usd_per_month=None)))
    (finding,) = messages(judge(stripped, ["aicluster-cluster-missing-prices"]))
    assert finding == (
        "no catalog price for dgx-fra1-fra1: hardware of 128 x dgx-h100 at site fra1: the monthly cost $142,963 + "
        "unpriced items (and the budget check) leaves them out; give the site a hardware_cost "
        "(purchase_usd_per_node and amortization_years, or usd_per_node_hour)"
    )


def test_the_power_budget_counts_the_sites_facility_power(dgx: Capture) -> None:
    power = "aicluster-cluster-enforce-power-budget"
    assert messages(judge(dgx, [power], {power: {"power_kw": 1632}})) == []
    assert messages(judge(dgx, [power], {power: {"power_kw": 1600}})) == [
        "facility power 1,632.0 kW (IT kW x PUE) exceeds the budget 1,600.0 kW by 32.0 kW; largest: dgx-fra1-fra1 "
        "(site fra1, 128 owned nodes) 1,632.00 kW. Shrink a pool or raise budgets.power_kw"
    ]


def test_carbon_counts_the_site(dgx: Capture) -> None:
    carbon = "aicluster-cluster-configure-carbon-ceiling"
    assert messages(judge(dgx, [carbon], {carbon: {"max_t_co2e_per_month": 400}})) == [
        "the cluster emits about 452.7 t CO2e/month, over the ceiling of 400; most from dgx-fra1-fra1 (site fra1 grid "
        "380 g CO2e/kWh). A lower-carbon region cuts it"
    ]


# -- VPNs ------------------------------------------------------------------------------------------------------


def _aws_tunnels() -> dict[str, Any]:
    """Both tunnels as pulumi_aws registers the VPN component's connection (IKEv2, one algorithm per role)."""
    props: dict[str, Any] = {"type": "ipsec.1", "staticRoutesOnly": False, "tunnel1PresharedKey": "[secret]"}
    for t in (1, 2):
        props |= {
            f"tunnel{t}IkeVersions": ["ikev2"],
            f"tunnel{t}Phase1EncryptionAlgorithms": ["AES256"],
            f"tunnel{t}Phase1IntegrityAlgorithms": ["SHA2-384"],
            f"tunnel{t}Phase1DhGroupNumbers": [20],
            f"tunnel{t}Phase1LifetimeSeconds": 28800,
            f"tunnel{t}Phase2EncryptionAlgorithms": ["AES256-GCM-16"],
            f"tunnel{t}Phase2IntegrityAlgorithms": ["SHA2-384"],
            f"tunnel{t}Phase2DhGroupNumbers": [20],
            f"tunnel{t}Phase2LifetimeSeconds": 3600,
        }
    return props


AZURE_POLICY = {
    "ikeEncryption": "AES256",
    "ikeIntegrity": "SHA384",
    "dhGroup": "ECP384",
    "ipsecEncryption": "GCMAES256",
    "ipsecIntegrity": "GCMAES256",
    "pfsGroup": "ECP384",
    "saLifeTimeSeconds": 3600,
    "saDataSizeKilobytes": 102400000,
}
AZURE_CONNECTION = {
    "connectionType": "IPsec",
    "connectionProtocol": "IKEv2",
    "enableBgp": True,
    "ipsecPolicies": [AZURE_POLICY],
}
GCP_TUNNEL = {"ikeVersion": 2, "region": "us-central1", "sharedSecret": "[secret]"}
GCP_SUITE = {
    "phase1": {
        "encryptions": ["AES-GCM-16-256"],
        "integrities": ["HMAC-SHA2-384-192"],
        "prves": ["PRF-HMAC-SHA2-384"],
        "dhs": ["Group-20"],
    },
    "phase2": {"encryptions": ["AES-GCM-16-256"], "integrities": ["HMAC-SHA2-384-192"], "pfs": ["Group-20"]},
}

AWS_T = "aws:ec2/vpnConnection:VpnConnection"
GCP_T = "gcp:compute/vPNTunnel:VPNTunnel"
AZ_T = "azure-native:network:VirtualNetworkGatewayConnection"


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


VPN_CASES = [
    pytest.param(AWS_T, _aws_tunnels(), [], id="aws-baseline"),
    pytest.param(
        AWS_T,
        _with(_aws_tunnels(), tunnel2IkeVersions=["ikev1", "ikev2"]),
        [
            "VPN connection x: tunnel2IkeVersions permits ikev1; allow only ikev2 (IKEv2, AES-256, SHA-2, DH group 14 "
            "or stronger)"
        ],
        id="aws-ikev1",
    ),
    pytest.param(
        AWS_T,
        _with(_aws_tunnels(), tunnel1Phase1EncryptionAlgorithms=["AES128", "AES256"]),
        [
            "VPN connection x: tunnel1Phase1EncryptionAlgorithms permits AES128; allow only AES256, AES256-GCM-16 "
            "(IKEv2, AES-256, SHA-2, DH group 14 or stronger)"
        ],
        id="aws-aes128",
    ),
    pytest.param(
        AWS_T,
        _with(_aws_tunnels(), tunnel2Phase2IntegrityAlgorithms=["SHA1"]),
        [
            "VPN connection x: tunnel2Phase2IntegrityAlgorithms permits SHA1; allow only SHA2-256, SHA2-384, SHA2-512 "
            "(IKEv2, AES-256, SHA-2, DH group 14 or stronger)"
        ],
        id="aws-sha1",
    ),
    pytest.param(
        AWS_T,
        _with(_aws_tunnels(), tunnel1Phase2DhGroupNumbers=[2, 20]),
        [
            "VPN connection x: tunnel1Phase2DhGroupNumbers permits 2; allow only 14, 15, 16, 17, 18, 19, 20, 21, 24 "
            "(IKEv2, AES-256, SHA-2, DH group 14 or stronger)"
        ],
        id="aws-dh2",
    ),
    pytest.param(
        AWS_T,
        _with(_aws_tunnels(), tunnel1Phase1DhGroupNumbers=None),
        [
            "VPN connection x: tunnel1Phase1DhGroupNumbers is not set, so AWS permits all its values, weak ones "
            "included; set tunnel1Phase1DhGroupNumbers = [14, 15, 16, 17, 18, 19, 20, 21, 24] (or a subset)"
        ],
        id="aws-unset-list-permits-aws-defaults",
    ),
    pytest.param(GCP_T, GCP_TUNNEL, [], id="gcp-baseline"),
    pytest.param(GCP_T, _with(GCP_TUNNEL, ikeVersion=None), [], id="gcp-default-ikev2"),
    pytest.param(GCP_T, _with(GCP_TUNNEL, cipherSuite=GCP_SUITE), [], id="gcp-strong-suite"),
    pytest.param(
        GCP_T,
        _with(GCP_TUNNEL, ikeVersion=1),
        ["VPN tunnel x: ikeVersion is 1; set ikeVersion = 2 (IKEv1 is refused)"],
        id="gcp-ikev1",
    ),
    pytest.param(
        GCP_T,
        _with(
            GCP_TUNNEL,
            cipherSuite={**GCP_SUITE, "phase2": {**GCP_SUITE["phase2"], "encryptions": ["AES-CBC-128"]}},
        ),
        ["VPN tunnel x: cipherSuite.phase2.encryptions allows AES-CBC-128; allow only AES-GCM-16-256, AES-CBC-256"],
        id="gcp-aes128",
    ),
    pytest.param(
        GCP_T,
        _with(GCP_TUNNEL, cipherSuite={**GCP_SUITE, "phase1": {**GCP_SUITE["phase1"], "dhs": ["Group-2"]}}),
        [
            "VPN tunnel x: cipherSuite.phase1.dhs allows Group-2; allow only Group-14, Group-15, Group-16, Group-17, "
            "Group-18, Group-19, Group-20, Group-21, Group-24"
        ],
        id="gcp-dh2",
    ),
    pytest.param(AZ_T, AZURE_CONNECTION, [], id="azure-baseline"),
    pytest.param(
        AZ_T, _with(AZURE_CONNECTION, connectionType="ExpressRoute", connectionProtocol=None), [], id="azure-er"
    ),
    pytest.param(
        AZ_T,
        _with(AZURE_CONNECTION, connectionProtocol="IKEv1"),
        ["VPN connection x: connectionProtocol is IKEv1; set connectionProtocol = IKEv2"],
        id="azure-ikev1",
    ),
    pytest.param(
        AZ_T,
        _with(AZURE_CONNECTION, ipsecPolicies=None),
        [
            "VPN connection x: no ipsecPolicies, so Azure offers its default proposals (SHA1 and DH group 2 among "
            "them); set one IPsec policy with ikeEncryption GCMAES256 or AES256, ikeIntegrity SHA384, dhGroup ECP384, "
            "ipsecEncryption GCMAES256, ipsecIntegrity GCMAES256 and pfsGroup ECP384"
        ],
        id="azure-default-policies",
    ),
    pytest.param(
        AZ_T,
        _with(AZURE_CONNECTION, ipsecPolicies=[{**AZURE_POLICY, "ipsecIntegrity": "SHA1", "pfsGroup": "PFS2"}]),
        [
            "VPN connection x: ipsecPolicies[0].ipsecIntegrity is SHA1; use one of SHA256, GCMAES256",
            "VPN connection x: ipsecPolicies[0].pfsGroup is PFS2; use one of PFS14, PFS2048, ECP256, ECP384, PFS24",
        ],
        id="azure-sha1-pfs2",
    ),
]


@pytest.mark.parametrize(("type_", "props", "expected"), VPN_CASES)
def test_vpn_policies_allow_only_ikev2_and_strong_algorithms(
    type_: str, props: dict[str, Any], expected: list[str]
) -> None:
    name = next(p.name for p in vpn.POLICIES if p.types is not None and type_ in p.types)
    assert findings(name, type_, props) == expected


# -- over the engine's gRPC protocol -------------------------------------------------------------------------------


def test_the_pack_judges_a_site_over_the_wire_as_in_process(analyzer: Any, dgx: Capture) -> None:  # noqa: F811
    cap = mutated(dgx, _site(lambda i: (i.update(max_kw=1000.0), i["racks"][0].update(kw=42.0))))
    diags = analyzer.AnalyzeStack(_stack_request(cap)).diagnostics
    over_the_wire = sorted((d.policyName, d.urn, d.message.split("\n", 1)[1]) for d in diags)
    in_process = sorted((v.policy, v.urn, v.message) for v in evaluate(cap).violations)
    assert over_the_wire == in_process
    assert {d.policyName for d in diags} == {
        "aicluster-site-enforce-power-ceiling",
        "aicluster-site-enforce-rack-power",
    }
    assert all(d.enforcementLevel == analyzer_pb2.MANDATORY for d in diags)


def test_the_pack_judges_a_weak_vpn_over_the_wire(analyzer: Any) -> None:  # noqa: F811
    props = _with(_aws_tunnels(), tunnel1IkeVersions=["ikev1"])
    request = analyzer_pb2.AnalyzeRequest(
        type=AWS_T, properties=_struct(props), urn=f"urn:pulumi:s::p::{AWS_T}::vpn", name="vpn"
    )
    diags = analyzer.Analyze(request).diagnostics
    assert [(d.policyName, d.enforcementLevel) for d in diags] == [
        ("aws-ec2-vpnconnection-enforce-strong-ike", analyzer_pb2.MANDATORY)
    ]
    assert diags[0].message.split("\n", 1)[1] == (
        "VPN connection vpn: tunnel1IkeVersions permits ikev1; allow only ikev2 (IKEv2, AES-256, SHA-2, DH group 14 "
        "or stronger)"
    )


# -- against captured previews of the hybrid example stacks (the VPN components as they register) ------------------

AWS_LINK = "hybrid-burst-aws-us-east-1--fra1-aws-0"
GCP_LINK = "hybrid-burst-gcp-us-east5--fra1-gcp-0"
AZURE_LINK = "tri-aws-us-east-1--azure-eastus-azure-0"


@pytest.fixture(scope="module")
def hybrid() -> Capture:
    return capture_of("hybrid-burst")


@pytest.fixture(scope="module")
def three_cloud() -> Capture:
    return capture_of("three-cloud")


def test_the_hybrid_stacks_vpns_and_site_pass(hybrid: Capture, three_cloud: Capture) -> None:
    result = judge(hybrid, [*SITE_POLICIES, *VPN_POLICIES])
    assert result.violations == []
    assert set(result.passed) == {*SITE_POLICIES, *VPN_POLICIES} - {"azure-network-vpnconnection-enforce-strong-ike"}
    assert "azure-network-vpnconnection-enforce-strong-ike" in judge(three_cloud, VPN_POLICIES).passed


@pytest.mark.parametrize(
    ("stack", "resource", "change", "expected"),
    [
        pytest.param(
            "hybrid",
            AWS_LINK,
            lambda i: i.update(tunnel2Phase1IntegrityAlgorithms=["SHA1"]),
            f"VPN connection {AWS_LINK}: tunnel2Phase1IntegrityAlgorithms permits SHA1; allow only SHA2-256, "
            "SHA2-384, SHA2-512 (IKEv2, AES-256, SHA-2, DH group 14 or stronger)",
            id="aws-sha1",
        ),
        pytest.param(
            "hybrid",
            GCP_LINK,
            lambda i: i.update(ikeVersion=1),
            f"VPN tunnel {GCP_LINK}: ikeVersion is 1; set ikeVersion = 2 (IKEv1 is refused)",
            id="gcp-ikev1",
        ),
        pytest.param(
            "three_cloud",
            AZURE_LINK,
            lambda i: i["ipsecPolicies"][0].update(dhGroup="DHGroup2"),
            f"VPN connection {AZURE_LINK}: ipsecPolicies[0].dhGroup is DHGroup2; use one of DHGroup14, DHGroup2048, "
            "ECP256, ECP384, DHGroup24",
            id="azure-dh2",
        ),
        pytest.param(
            "hybrid",
            "hybrid-burst-fra1",
            lambda i: i.update(cidrs=["10.8.128.0/20"]),
            "site fra1 network 10.8.128.0/20 overlaps AWS VPC hybrid-burst-us-east-1-vpc (10.8.0.0/16): across the "
            "VPN, addresses in both are routed to one side only; give the site's network.cidrs, or the cloud "
            "network's range (network.cidrs, e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use",
            id="site-inside-the-aws-vpc",
        ),
    ],
)
def test_one_mutation_of_a_captured_hybrid_preview_fails(
    request: pytest.FixtureRequest, stack: str, resource: str, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    capture = request.getfixturevalue(stack)
    policies = [*SITE_POLICIES, *VPN_POLICIES]
    assert messages(judge(mutated(capture, {resource: change}), policies)) == [expected]
