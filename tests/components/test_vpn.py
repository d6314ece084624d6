"""Cross-site VPN components under the real SDKs and Pulumi's mocks: every resource each cloud needs, IKEv2 and the
plan's algorithms, pre-shared keys that stay secret, and routes into the private route tables."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from aicluster.plan.models import Subnet
from aicluster.plan.network import azure_gateway_subnet
from aicluster.plan.vpn import VpnSite, plan_vpns
from aicluster.preview import engine
from aicluster.preview.engine import SECRET_VALUE, jsonable, run
from components import AiCluster
from tests.components.conftest import Built
from tests.helpers import SSH_KEY, azure_pool, cluster, gcp_pool, plan_of, pool

SITE = VpnSite(name="dc1", cidrs=("10.200.0.0/16",), vpn_endpoint="81.2.69.142", bgp_asn=65010)
# What the mocked random provider hands back as every key: it must never reach the capture or the outputs.
PSK = "PskValueThatMustNeverAppearInThePreviewText"
# The engine's wire form of a secret value (as a provider returns a secret output).
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
PASSWORD = "random:index/randomPassword:RandomPassword"


def with_vpns(p: ClusterPlan, catalog: Catalog) -> ClusterPlan:
    """`p` as the planner will give it once the stack has `sites:`: Azure networks with their GatewaySubnet, and
    the VPN links to SITE and between the clouds."""
    networks = tuple(
        n.model_copy(
            update={
                "subnets": (
                    *n.subnets,
                    Subnet(
                        zone=None,
                        cidr=azure_gateway_subnet(n.cidr),
                        role="gateway",
                        addresses_needed=1,
                        addresses_available=27,
                    ),
                )
            }
        )
        if n.provider == "azure"
        else n
        for n in p.networks
    )
    return p.model_copy(update={"networks": networks, "vpns": plan_vpns(networks, [SITE], catalog)})


@pytest.fixture(scope="module")
def built(catalog: Catalog) -> Built:
    data = cluster(
        pools=[pool(), gcp_pool(name="a3", nodes=2), azure_pool(name="nd", nodes=2)],
        storage=[],
        access={"ssh_public_keys": [SSH_KEY]},
    )
    p = with_vpns(plan_of(catalog, data), catalog)
    original = engine._Mocks.new_resource

    def new_resource(self: engine._Mocks, args: Any) -> tuple[str | None, dict[str, Any]]:
        rid, state = original(self, args)
        if args.typ == PASSWORD:  # as the random provider answers: the key, as a secret
            state = {**state, "result": {"4dabf18193072939515e22adb298388d": SECRET_SIG, "value": PSK}}
        return rid, state

    def program() -> None:
        pulumi.export("cluster", AiCluster(p.name, {"plan": p}).outputs)

    mp = pytest.MonkeyPatch()
    mp.setattr(engine._Mocks, "new_resource", new_resource)
    try:
        return Built(p, run(program, "aicluster", "test", {"gcp:project": "ml-proj"}))
    finally:
        mp.undo()


def test_pre_shared_keys_are_random_secrets_never_in_the_preview_or_outputs(built: Built) -> None:
    keys = built.of_type(PASSWORD)
    assert len(keys) == sum(len(v.key_indexes()) for v in built.plan.vpns)
    for key in keys:
        assert key.inputs["length"] >= 32
        assert key.inputs["special"] is False
        assert key.inputs["numeric"] is False  # never a leading zero, which AWS refuses
    text = json.dumps([r.to_json() for r in built.capture.resources]) + json.dumps(jsonable(built.capture.outputs))
    assert PSK not in text
    consumers = {
        "aws:ec2/vpnConnection:VpnConnection": ["tunnel1PresharedKey", "tunnel2PresharedKey"],
        "gcp:compute/vPNTunnel:VPNTunnel": ["sharedSecret"],
        "azure-native:network:VirtualNetworkGatewayConnection": ["sharedKey"],
    }
    for type_, fields in consumers.items():
        found = built.of_type(type_)
        assert found, type_
        for r in found:
            for f in fields:
                assert r.inputs[f] is SECRET_VALUE, (r.name, f)
    assert "vpns" in built.capture.outputs["cluster"]


def test_aws_virtual_private_gateway_customer_gateways_and_ikev2_connections(built: Built) -> None:
    vgw = built.one("aws:ec2/vpnGateway:VpnGateway")
    assert vgw.inputs["amazonSideAsn"] == "64512"
    assert vgw.property_dependencies["vpcId"] == [built.one("aws:ec2/vpc:Vpc").urn]
    assert not [r for r in built.capture.resources if "transitgateway" in r.type]

    cgws = {r.name: r.inputs for r in built.of_type("aws:ec2/customerGateway:CustomerGateway")}
    site_cgw = cgws["llm-train-aws-us-east-1--dc1-aws-cgw-0"]
    assert (site_cgw["ipAddress"], site_cgw["bgpAsn"], site_cgw["type"]) == ("81.2.69.142", "65010", "ipsec.1")
    # one customer gateway per GCP HA interface and per Azure instance, their addresses known only after `up`
    assert cgws["llm-train-aws-us-east-1--gcp-us-central1-aws-cgw-1"]["bgpAsn"] == "64600"
    assert cgws["llm-train-aws-us-east-1--azure-eastus-aws-cgw-1"]["bgpAsn"] == "65515"
    assert len(cgws) == 5

    plan_vpn = next(v for v in built.plan.vpns if v.name == "aws-us-east-1--dc1")
    conn = built.one("aws:ec2/vpnConnection:VpnConnection", "aws-us-east-1--dc1-aws-0").inputs
    assert conn["staticRoutesOnly"] is False
    for n, t in ((1, plan_vpn.tunnels[0]), (2, plan_vpn.tunnels[1])):
        assert conn[f"tunnel{n}InsideCidr"] == t.inside_cidr
        assert conn[f"tunnel{n}IkeVersions"] == ["ikev2"]
        assert conn[f"tunnel{n}Phase1EncryptionAlgorithms"] == ["AES256"]
        assert conn[f"tunnel{n}Phase1IntegrityAlgorithms"] == ["SHA2-384"]
        assert conn[f"tunnel{n}Phase1DhGroupNumbers"] == [20]
        assert conn[f"tunnel{n}Phase2EncryptionAlgorithms"] == ["AES256-GCM-16"]
        assert conn[f"tunnel{n}Phase2DhGroupNumbers"] == [20]
    assert len(built.of_type("aws:ec2/vpnConnection:VpnConnection")) == 5  # site 1, GCP 2, Azure 2


def test_aws_routes_propagate_into_every_private_route_table_and_peers_may_reach_the_nodes(built: Built) -> None:
    private = {
        r.urn for r in built.of_type("aws:ec2/routeTable:RouteTable") if r.name.endswith("-rt") and "compute" in r.name
    }
    props = built.of_type("aws:ec2/vpnGatewayRoutePropagation:VpnGatewayRoutePropagation")
    assert {u for p in props for u in p.property_dependencies["routeTableId"]} == private
    assert all(
        p.property_dependencies["vpnGatewayId"] == [built.one("aws:ec2/vpnGateway:VpnGateway").urn] for p in props
    )
    node = built.one("aws:ec2/securityGroup:SecurityGroup", "-node").inputs
    remote = next(rule for rule in node["ingress"] if rule["description"] == "sites and clouds over VPN")
    cidrs = {n.key: n.cidr for n in built.plan.networks}
    assert sorted(remote["cidrBlocks"]) == sorted(["10.200.0.0/16", cidrs["gcp-us-central1"], cidrs["azure-eastus"]])


def test_gcp_ha_vpn_cloud_router_tunnels_interfaces_and_bgp_peers(built: Built) -> None:
    built.one("gcp:compute/haVpnGateway:HaVpnGateway")
    router = built.one("gcp:compute/router:Router", "-vpn-router").inputs
    assert router["bgp"]["asn"] == 64600
    peers = {r.name: r.inputs for r in built.of_type("gcp:compute/externalVpnGateway:ExternalVpnGateway")}
    site_peer = peers["llm-train-gcp-us-central1--dc1-gcp-peer"]
    assert site_peer["redundancyType"] == "SINGLE_IP_INTERNALLY_REDUNDANT"
    assert site_peer["interfaces"] == [{"id": 0, "ipAddress": "81.2.69.142"}]
    assert peers["llm-train-aws-us-east-1--gcp-us-central1-gcp-peer"]["redundancyType"] == "FOUR_IPS_REDUNDANCY"
    assert peers["llm-train-azure-eastus--gcp-us-central1-gcp-peer"]["redundancyType"] == "TWO_IPS_REDUNDANCY"

    tunnels = built.of_type("gcp:compute/vPNTunnel:VPNTunnel")
    assert len(tunnels) == 2 + 4 + 2
    assert {t.inputs["ikeVersion"] for t in tunnels} == {2}
    plan_vpn = next(v for v in built.plan.vpns if v.name == "gcp-us-central1--dc1")
    for t in plan_vpn.tunnels:
        tunnel = built.one("gcp:compute/vPNTunnel:VPNTunnel", f"gcp-us-central1--dc1-gcp-{t.index}").inputs
        assert (tunnel["vpnGatewayInterface"], tunnel["peerExternalGatewayInterface"]) == (t.a_endpoint, t.b_endpoint)
        iface = built.one("gcp:compute/routerInterface:RouterInterface", f"gcp-us-central1--dc1-gcp-{t.index}")
        assert iface.inputs["ipRange"] == f"{t.a_ip}/30"
        peer = built.one("gcp:compute/routerPeer:RouterPeer", f"gcp-us-central1--dc1-gcp-{t.index}").inputs
        assert (peer["ipAddress"], peer["peerIpAddress"], peer["peerAsn"]) == (t.a_ip, t.b_ip, 65010)
    firewall = built.one("gcp:compute/firewall:Firewall", "-allow-vpn").inputs
    assert "10.200.0.0/16" in firewall["sourceRanges"]
    assert firewall["sourceRanges"] != ["0.0.0.0/0"]


def test_azure_active_active_gateway_local_gateways_and_ipsec_policies(built: Built) -> None:
    subnet = built.one("azure-native:network:Subnet", "-gateway").inputs
    assert subnet["subnetName"] == "GatewaySubnet"
    assert "networkSecurityGroup" not in subnet

    vng = built.one("azure-native:network:VirtualNetworkGateway").inputs
    assert (vng["gatewayType"], vng["vpnType"], vng["sku"]["name"]) == ("Vpn", "RouteBased", "VpnGw1AZ")
    assert vng["activeActive"] is True
    assert vng["enableBgp"] is True
    assert vng["bgpSettings"]["asn"] == 65515
    custom = [a for peering in vng["bgpSettings"]["bgpPeeringAddresses"] for a in peering["customBgpIpAddresses"]]
    assert custom
    assert all(a.startswith(("169.254.21.", "169.254.22.")) for a in custom)
    assert len(vng["ipConfigurations"]) == 2
    assert len(built.of_type("azure-native:network:PublicIPAddress")) == 3  # the NAT's, and one per instance

    lngs = {r.name: r.inputs for r in built.of_type("azure-native:network:LocalNetworkGateway")}
    site_lng = lngs["llm-train-azure-eastus--dc1-azure-peer-0"]
    assert site_lng["gatewayIpAddress"] == "81.2.69.142"
    assert site_lng["bgpSettings"]["asn"] == 65010
    assert len(lngs) == 1 + 4 + 2  # the site, each AWS outside address, each GCP interface

    connections = built.of_type("azure-native:network:VirtualNetworkGatewayConnection")
    assert len(connections) == len(lngs)
    for c in connections:
        assert (c.inputs["connectionType"], c.inputs["connectionProtocol"]) == ("IPsec", "IKEv2")
        assert c.inputs["enableBgp"] is True
        assert c.inputs["ipsecPolicies"] == [
            {
                "ikeEncryption": "AES256",
                "ikeIntegrity": "SHA384",
                "dhGroup": "ECP384",
                "ipsecEncryption": "GCMAES256",
                "ipsecIntegrity": "GCMAES256",
                "pfsGroup": "ECP384",
                "saLifeTimeSeconds": 3600,
                "saDataSizeKilobytes": 102400000,
            }
        ]
        assert c.inputs["gatewayCustomBgpIpAddresses"]


def test_component_types_and_parents(built: Built) -> None:
    types = {r.type for r in built.capture.resources if r.type.startswith("aicluster:") and "Vpn" in r.type}
    assert types == {
        "aicluster:aws:VpnGateway",
        "aicluster:aws:VpnLink",
        "aicluster:gcp:VpnGateway",
        "aicluster:gcp:VpnLink",
        "aicluster:azure:VpnGateway",
        "aicluster:azure:VpnLink",
    }
    cluster_urn = built.one("aicluster:index:AiCluster").urn
    for r in built.capture.resources:
        if r.type.startswith("aicluster:") and "Vpn" in r.type:
            assert r.parent == cluster_urn


def test_a_plan_without_vpns_adds_nothing(catalog: Catalog) -> None:
    p = plan_of(catalog, cluster())
    capture = run(lambda: AiCluster(p.name, {"plan": p}), "aicluster", "test")
    assert not [r for r in capture.resources if "Vpn" in r.type or "vpn" in r.type or "random" in r.type]
