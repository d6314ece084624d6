"""The GCP end of the cluster's IPsec links: an HA VPN gateway and a Cloud Router per region, tunnels per link.

HA VPN's two interfaces each carry a tunnel to the peer (99.99% SLA design); the Cloud Router speaks BGP on every
tunnel with the plan's ASN and announces the network's subnets. Cloud VPN picks its ciphers from what the peer
proposes (gcp-vpn-supported-ike-ciphers); every peer of the stack proposes exactly the plan's one set, so the
tunnel always lands on it. A firewall rule lets the sites' and other clouds' CIDRs in (the network's own rule
admits the VPC's range only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypedDict

import pulumi
import pulumi_gcp as gcp

from aicluster.plan.models import PlannedNetwork, PlannedVpn, VpnSide

from .network import GcpNetwork, allow_all

# External VPN gateway redundancy by the number of the peer's public endpoints.
REDUNDANCY = {1: "SINGLE_IP_INTERNALLY_REDUNDANT", 2: "TWO_IPS_REDUNDANCY", 4: "FOUR_IPS_REDUNDANCY"}
HA_INTERFACES = 2


class GcpVpnGatewayArgs(TypedDict):
    network: PlannedNetwork
    asn: int
    network_id: pulumi.Input[str]
    remote_cidrs: Sequence[str]


class GcpVpnGateway(pulumi.ComponentResource):
    """The region's HA VPN gateway, the Cloud Router that runs BGP for its tunnels, and the firewall rule."""

    id: pulumi.Output[str]
    router_name: pulumi.Output[str]
    public_ips: list[pulumi.Output[str]]  # interface 0 and 1

    def __init__(self, name: str, args: GcpVpnGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:VpnGateway", name, {}, opts)
        net = args["network"]
        child = pulumi.ResourceOptions(parent=self)
        gw = gcp.compute.HaVpnGateway(
            f"{name}-gw", region=net.region, network=args["network_id"], stack_type="IPV4_ONLY", opts=child
        )
        router = gcp.compute.Router(
            f"{name}-router",
            region=net.region,
            network=args["network_id"],
            bgp=gcp.compute.RouterBgpArgs(asn=args["asn"], advertise_mode="CUSTOM", advertised_groups=["ALL_SUBNETS"]),
            description="BGP for the cluster's VPN tunnels",
            opts=child,
        )
        gcp.compute.Firewall(
            f"{name}-allow-vpn",
            network=args["network_id"],
            direction="INGRESS",
            source_ranges=sorted(args["remote_cidrs"]),
            allows=allow_all(),
            description="Sites and other clouds of the cluster, over the VPN tunnels",
            opts=child,
        )
        self.id = gw.id
        self.router_name = router.name
        self.public_ips = [gw.vpn_interfaces.apply(_interface_ip(k)) for k in range(HA_INTERFACES)]
        self.register_outputs({"gateway_id": gw.id, "router": router.name, "asn": args["asn"]})


class GcpVpnLinkArgs(TypedDict):
    vpn: PlannedVpn
    side: str  # "a" or "b": which side of the link is this GCP network
    gateway: GcpVpnGateway
    peer_ips: Sequence[pulumi.Input[str]]
    keys: Sequence[pulumi.Input[str]]


class GcpVpnLink(pulumi.ComponentResource):
    """An external VPN gateway for the peer, and per tunnel: the tunnel (IKEv2, the shared secret), a Cloud Router
    interface with the tunnel's inside address, and the BGP peer."""

    def __init__(self, name: str, args: GcpVpnLinkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:VpnLink", name, {}, opts)
        vpn, gw = args["vpn"], args["gateway"]
        me, peer = (vpn.a, vpn.b) if args["side"] == "a" else (vpn.b, vpn.a)
        region = me.region
        child = pulumi.ResourceOptions(parent=self)
        external = gcp.compute.ExternalVpnGateway(
            f"{name}-peer",
            redundancy_type=REDUNDANCY[peer.endpoints],
            interfaces=[
                gcp.compute.ExternalVpnGatewayInterfaceArgs(id=k, ip_address=args["peer_ips"][k])
                for k in range(peer.endpoints)
            ],
            description=f"{peer.key}: the peer of the cluster's VPN link {vpn.name}",
            opts=child,
        )
        for t in vpn.tunnels:
            mine, theirs = _ends(args["side"], t.a_endpoint, t.b_endpoint)
            my_ip, peer_ip = (t.a_ip, t.b_ip) if args["side"] == "a" else (t.b_ip, t.a_ip)
            tunnel = gcp.compute.VPNTunnel(
                f"{name}-{t.index}",
                region=region,
                vpn_gateway=gw.id,
                vpn_gateway_interface=mine,
                peer_external_gateway=external.id,
                peer_external_gateway_interface=theirs,
                shared_secret=args["keys"][t.key],
                ike_version=2,
                router=gw.router_name,
                description=f"{vpn.name} tunnel {t.index}",
                opts=child,
            )
            prefix = t.inside_cidr.split("/")[1]
            iface = gcp.compute.RouterInterface(
                f"{name}-{t.index}",
                region=region,
                router=gw.router_name,
                ip_range=f"{my_ip}/{prefix}",
                vpn_tunnel=tunnel.name,
                opts=child,
            )
            gcp.compute.RouterPeer(
                f"{name}-{t.index}",
                region=region,
                router=gw.router_name,
                interface=iface.name,
                ip_address=my_ip,
                peer_ip_address=peer_ip,
                peer_asn=peer.asn,
                opts=child,
            )
        self.register_outputs({})


def _interface_ip(k: int) -> Callable[[Sequence[gcp.compute.outputs.HaVpnGatewayVpnInterface] | None], str]:
    """Reads interface k's address (known after `up`) from the gateway's interfaces."""

    def read(interfaces: Sequence[gcp.compute.outputs.HaVpnGatewayVpnInterface] | None) -> str:
        return (interfaces[k].ip_address or "") if interfaces and len(interfaces) > k else ""

    return read


def _ends(side: str, a_endpoint: int, b_endpoint: int) -> tuple[int, int]:
    """(my endpoint, the peer's endpoint) of a tunnel."""
    return (a_endpoint, b_endpoint) if side == "a" else (b_endpoint, a_endpoint)


# -- What the cross-site orchestrator (components/vpn.py) calls -----------------------------------------------------
IPS_FROM_LINK = False  # the HA VPN gateway's two addresses exist before any link


def gateway(
    name: str, network: PlannedNetwork, vpns: Sequence[PlannedVpn], handle: GcpNetwork, opts: pulumi.ResourceOptions
) -> GcpVpnGateway:
    sides: list[VpnSide] = [side for v in vpns for side in (v.a, v.b) if side.key == network.key]
    return GcpVpnGateway(
        name,
        {
            "network": network,
            "asn": sides[0].asn,
            "network_id": handle.host_network_id,
            "remote_cidrs": sorted({c for side in sides for c in side.learns}),
        },
        opts,
    )


def link(
    name: str,
    vpn: PlannedVpn,
    side: str,
    gw: GcpVpnGateway,
    peer_ips: Sequence[pulumi.Input[str]],
    keys: Sequence[pulumi.Input[str]],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Output[str]]:
    GcpVpnLink(name, {"vpn": vpn, "side": side, "gateway": gw, "peer_ips": peer_ips, "keys": keys}, opts)
    return gw.public_ips
