"""The AWS end of the cluster's IPsec links: a virtual private gateway per VPC, a VPN connection per peer endpoint.

Virtual private gateway, not transit gateway: the plan has one VPC per region and nothing to route between VPCs,
and a virtual private gateway has no hourly charge, where a transit gateway adds an attachment-hour and a charge
per GB processed on every byte a training job moves over the link (aws-vpn-connection-price-infracost). Routes
are learnt over BGP and propagated into the compute subnets' route tables; nothing is static.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import pulumi
import pulumi_aws as aws

from aicluster.plan.models import IkePhase, PlannedNetwork, PlannedVpn

from .network import AwsNetwork

# The plan's algorithm names -> the EC2 API's (aws-vpn-tunnel-options).
ENCRYPTION = {"AES-256-CBC": "AES256", "AES-256-GCM-16": "AES256-GCM-16"}
INTEGRITY = {"SHA2-256": "SHA2-256", "SHA2-384": "SHA2-384"}
# With an AEAD cipher no integrity algorithm is negotiated; AWS still takes a list, so allow only the strongest.
AEAD_INTEGRITY = "SHA2-384"
# Sent by AWS to start the tunnel, so neither side waits on the other (a cloud peer never initiates first).
STARTUP = "start"


def algorithms(p: IkePhase) -> tuple[list[str], list[str], list[int]]:
    """(encryption, integrity, DH groups) AWS allows for one phase: exactly one of each."""
    return [ENCRYPTION[p.encryption]], [INTEGRITY[p.integrity] if p.integrity else AEAD_INTEGRITY], [p.dh_group]


class AwsVpnGatewayArgs(TypedDict):
    network: PlannedNetwork
    asn: int
    vpc_id: pulumi.Input[str]
    route_table_ids: Sequence[pulumi.Input[str]]


class AwsVpnGateway(pulumi.ComponentResource):
    """The VPC's virtual private gateway, with BGP routes propagated into every compute route table."""

    id: pulumi.Output[str]
    public_ips: list[pulumi.Output[str]]  # none: AWS's addresses belong to each VPN connection

    def __init__(self, name: str, args: AwsVpnGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:VpnGateway", name, {}, opts)
        net = args["network"]
        child = pulumi.ResourceOptions(parent=self)
        vgw = aws.ec2.VpnGateway(
            f"{name}-vgw", vpc_id=args["vpc_id"], amazon_side_asn=str(args["asn"]), region=net.region, opts=child
        )
        for i, rt in enumerate(args["route_table_ids"]):
            aws.ec2.VpnGatewayRoutePropagation(
                f"{name}-propagate-{i}", vpn_gateway_id=vgw.id, route_table_id=rt, region=net.region, opts=child
            )
        self.id = vgw.id
        self.public_ips = []
        self.register_outputs({"vpn_gateway_id": vgw.id, "asn": args["asn"]})


class AwsVpnLinkArgs(TypedDict):
    vpn: PlannedVpn
    region: str
    vpn_gateway_id: pulumi.Input[str]
    peer_ips: Sequence[pulumi.Input[str]]  # the other side's public address per endpoint
    keys: Sequence[pulumi.Input[str]]  # the link's pre-shared keys (secrets), by PlannedVpn tunnel key


class AwsVpnLink(pulumi.ComponentResource):
    """One customer gateway and one VPN connection (two tunnels) per endpoint of the other side.

    IKEv2 only, one algorithm per role from the plan, the plan's inside /30s (AWS takes the first host), BGP with
    the peer's ASN on the customer gateway. `outside_ips` are AWS's tunnel addresses, in AWS endpoint order.
    """

    outside_ips: list[pulumi.Output[str]]

    def __init__(self, name: str, args: AwsVpnLinkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:VpnLink", name, {}, opts)
        vpn = args["vpn"]
        assert vpn.a.provider == "aws", "the plan puts an AWS network on side a of its links"
        peer = vpn.b
        region = args["region"]
        child = pulumi.ResourceOptions(parent=self)
        by_endpoint = {t.a_endpoint: t for t in vpn.tunnels}
        self.outside_ips = []
        for c in range(vpn.a.endpoints // 2):
            first, second = by_endpoint[2 * c], by_endpoint[2 * c + 1]
            assert first.b_endpoint == second.b_endpoint == c
            cgw = aws.ec2.CustomerGateway(
                f"{name}-cgw-{c}",
                bgp_asn=str(peer.asn),
                ip_address=args["peer_ips"][c],
                type="ipsec.1",
                device_name=f"{peer.key} endpoint {c}",
                region=region,
                opts=child,
            )
            p1_enc, p1_int, p1_dh = algorithms(vpn.phase1)
            p2_enc, p2_int, p2_dh = algorithms(vpn.phase2)
            conn = aws.ec2.VpnConnection(
                f"{name}-{c}",
                customer_gateway_id=cgw.id,
                vpn_gateway_id=args["vpn_gateway_id"],
                type="ipsec.1",
                static_routes_only=False,  # BGP: each side learns the other's CIDRs
                tunnel1_inside_cidr=first.inside_cidr,
                tunnel1_preshared_key=args["keys"][first.key],
                tunnel1_ike_versions=["ikev2"],
                tunnel1_startup_action=STARTUP,
                tunnel1_phase1_encryption_algorithms=p1_enc,
                tunnel1_phase1_integrity_algorithms=p1_int,
                tunnel1_phase1_dh_group_numbers=p1_dh,
                tunnel1_phase1_lifetime_seconds=vpn.phase1.lifetime_s,
                tunnel1_phase2_encryption_algorithms=p2_enc,
                tunnel1_phase2_integrity_algorithms=p2_int,
                tunnel1_phase2_dh_group_numbers=p2_dh,
                tunnel1_phase2_lifetime_seconds=vpn.phase2.lifetime_s,
                tunnel2_inside_cidr=second.inside_cidr,
                tunnel2_preshared_key=args["keys"][second.key],
                tunnel2_ike_versions=["ikev2"],
                tunnel2_startup_action=STARTUP,
                tunnel2_phase1_encryption_algorithms=p1_enc,
                tunnel2_phase1_integrity_algorithms=p1_int,
                tunnel2_phase1_dh_group_numbers=p1_dh,
                tunnel2_phase1_lifetime_seconds=vpn.phase1.lifetime_s,
                tunnel2_phase2_encryption_algorithms=p2_enc,
                tunnel2_phase2_integrity_algorithms=p2_int,
                tunnel2_phase2_dh_group_numbers=p2_dh,
                tunnel2_phase2_lifetime_seconds=vpn.phase2.lifetime_s,
                region=region,
                opts=child,
            )
            self.outside_ips += [conn.tunnel1_address, conn.tunnel2_address]
        self.register_outputs({"outside_ips": self.outside_ips})


# -- What the cross-site orchestrator (components/vpn.py) calls -----------------------------------------------------
IPS_FROM_LINK = True  # AWS's public addresses exist per VPN connection, so the peer's link waits on this one


def gateway(
    name: str, network: PlannedNetwork, vpns: Sequence[PlannedVpn], handle: AwsNetwork, opts: pulumi.ResourceOptions
) -> AwsVpnGateway:
    """The network's gateway for its links `vpns` (the node security group already admits their CIDRs)."""
    asn = next(side.asn for v in vpns for side in (v.a, v.b) if side.key == network.key)
    return AwsVpnGateway(
        name,
        {"network": network, "asn": asn, "vpc_id": handle.vpc_id, "route_table_ids": handle.private_route_table_ids},
        opts,
    )


def link(
    name: str,
    vpn: PlannedVpn,
    side: str,
    gw: AwsVpnGateway,
    peer_ips: Sequence[pulumi.Input[str]],
    keys: Sequence[pulumi.Input[str]],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Output[str]]:
    """Create AWS's end of `vpn` (always its side a); return AWS's public address per endpoint."""
    assert side == "a", "the plan puts an AWS network on side a of its links"
    assert vpn.a.region is not None
    made = AwsVpnLink(
        name,
        {"vpn": vpn, "region": vpn.a.region, "vpn_gateway_id": gw.id, "peer_ips": peer_ips, "keys": keys},
        opts,
    )
    return made.outside_ips
