"""The Azure end of the cluster's IPsec links: one active-active VPN gateway per VNet, a local network gateway and
a connection per peer endpoint.

The gateway (VpnGw1AZ: zone-redundant, BGP, custom IPsec policies) sits in the plan's GatewaySubnet with two
Standard public IPs, one per instance, and takes the plan's APIPA inside addresses as its custom BGP addresses
(azure-vpn-aws-bgp-apipa). Each connection carries one IPsec policy with exactly the plan's algorithms, IKEv2 and
the link's shared key. The VNet's default NSG rule AllowVnetInBound already covers address spaces learnt over the
gateway, so no NSG rule is added.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypedDict

import pulumi
import pulumi_azure_native as azure

from aicluster.plan.models import IkePhase, PlannedNetwork, PlannedVpn

from .aliases import azure_component_opts
from .network import AzureNetwork

SKU = "VpnGw1AZ"  # priced as vpn-gateway-vpngw1az in the catalog
INSTANCES = 2  # active-active
ZONES = ["1", "2", "3"]  # an AZ gateway SKU needs zone-redundant public IPs
# The plan's algorithm names -> Azure's IpsecPolicy values (azure-ipsec-policy-values).
IKE_ENCRYPTION = {"AES-256-CBC": "AES256", "AES-256-GCM-16": "GCMAES256"}
IKE_INTEGRITY = {"SHA2-256": "SHA256", "SHA2-384": "SHA384"}
DH_GROUP = {20: "ECP384", 24: "DHGroup24"}  # Azure offers no group 21 (ECP-521)
PFS_GROUP = {20: "ECP384", 24: "PFS24"}
IPSEC_ENCRYPTION = {"AES-256-CBC": "AES256", "AES-256-GCM-16": "GCMAES256"}
SA_DATA_KB = 102400000  # Azure's default phase 2 data-size limit


def ipsec_policy(phase1: IkePhase, phase2: IkePhase) -> azure.network.IpsecPolicyArgs:
    """One policy, one value per role. With GCM in phase 2, Azure wants the same GCM value as its integrity."""
    assert phase1.integrity is not None, "phase 1 needs an integrity (PRF) algorithm"
    esp_integrity = IPSEC_ENCRYPTION[phase2.encryption] if phase2.integrity is None else IKE_INTEGRITY[phase2.integrity]
    return azure.network.IpsecPolicyArgs(
        ike_encryption=IKE_ENCRYPTION[phase1.encryption],
        ike_integrity=IKE_INTEGRITY[phase1.integrity],
        dh_group=DH_GROUP[phase1.dh_group],
        ipsec_encryption=IPSEC_ENCRYPTION[phase2.encryption],
        ipsec_integrity=esp_integrity,
        pfs_group=PFS_GROUP[phase2.dh_group],
        sa_life_time_seconds=phase2.lifetime_s,
        sa_data_size_kilobytes=SA_DATA_KB,
    )


def apipa_by_instance(network_key: str, vpns: Sequence[PlannedVpn]) -> list[list[str]]:
    """The custom BGP addresses each gateway instance holds: its inside address in every tunnel it ends."""
    out: list[list[str]] = [[] for _ in range(INSTANCES)]
    for v in vpns:
        for t in v.tunnels:
            if v.a.key == network_key:
                out[t.a_endpoint].append(t.a_ip)
            elif v.b.key == network_key:
                out[t.b_endpoint].append(t.b_ip)
    return out


def _ip_configuration_id(gateway_name: str, config: str) -> Callable[[str], str]:
    """The id of a gateway's ip configuration, from its VNet's id (same subscription and resource group)."""

    def make(vnet_id: str) -> str:
        group = vnet_id.split("/providers/", maxsplit=1)[0]
        return f"{group}/providers/Microsoft.Network/virtualNetworkGateways/{gateway_name}/ipConfigurations/{config}"

    return make


class AzureVpnGatewayArgs(TypedDict):
    network: PlannedNetwork
    asn: int
    apipa: list[list[str]]  # per instance
    resource_group_name: pulumi.Input[str]
    vnet_id: pulumi.Input[str]
    gateway_subnet_id: pulumi.Input[str]


class AzureVpnGateway(pulumi.ComponentResource):
    id: pulumi.Output[str]
    resource_group_name: pulumi.Input[str]
    public_ips: list[pulumi.Output[str]]  # per instance
    ip_configuration_ids: list[pulumi.Output[str]]  # per instance

    def __init__(self, name: str, args: AzureVpnGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:VpnGateway", name, {}, azure_component_opts(opts))
        net = args["network"]
        child = pulumi.ResourceOptions(parent=self)
        rg = args["resource_group_name"]
        self.resource_group_name = rg
        gateway_name = f"{name}-vng"
        pips = [
            azure.network.PublicIPAddress(
                f"{name}-ip-{i}",
                resource_group_name=rg,
                location=net.region,
                sku=azure.network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
                public_ip_allocation_method="Static",
                public_ip_address_version="IPv4",
                zones=ZONES,
                opts=child,
            )
            for i in range(INSTANCES)
        ]
        config_names = [f"instance-{i}" for i in range(INSTANCES)]
        # The gateway's own ip configuration ids, which its BGP settings name: derived from the VNet's id (same
        # subscription and resource group) so that no data-source call is needed.
        self.ip_configuration_ids = [
            pulumi.Output.from_input(args["vnet_id"]).apply(_ip_configuration_id(gateway_name, cfg))
            for cfg in config_names
        ]
        vng = azure.network.VirtualNetworkGateway(
            f"{name}-vng",
            virtual_network_gateway_name=gateway_name,
            resource_group_name=rg,
            location=net.region,
            gateway_type="Vpn",
            vpn_type="RouteBased",
            vpn_gateway_generation="Generation1",
            sku=azure.network.VirtualNetworkGatewaySkuArgs(name=SKU, tier=SKU),
            active_active=True,
            enable_bgp=True,
            bgp_settings=azure.network.BgpSettingsArgs(
                asn=args["asn"],
                bgp_peering_addresses=[
                    azure.network.IPConfigurationBgpPeeringAddressArgs(
                        ipconfiguration_id=self.ip_configuration_ids[i], custom_bgp_ip_addresses=args["apipa"][i]
                    )
                    for i in range(INSTANCES)
                ],
            ),
            ip_configurations=[
                azure.network.VirtualNetworkGatewayIPConfigurationArgs(
                    name=config_names[i],
                    private_ip_allocation_method="Dynamic",
                    public_ip_address=azure.network.SubResourceArgs(id=pips[i].id),
                    subnet=azure.network.SubResourceArgs(id=args["gateway_subnet_id"]),
                )
                for i in range(INSTANCES)
            ],
            opts=child,
        )
        self.id = vng.id
        self.public_ips = [p.ip_address.apply(lambda a: a or "") for p in pips]
        self.register_outputs({"gateway_id": vng.id, "public_ips": self.public_ips, "asn": args["asn"]})


class AzureVpnLinkArgs(TypedDict):
    vpn: PlannedVpn
    side: str  # "a" or "b"
    gateway: AzureVpnGateway
    resource_group_name: pulumi.Input[str]
    peer_ips: Sequence[pulumi.Input[str]]
    keys: Sequence[pulumi.Input[str]]


class AzureVpnLink(pulumi.ComponentResource):
    """Per endpoint of the peer: a local network gateway (its public address, BGP ASN and BGP address) and a
    connection (IKEv2, the IPsec policy, the shared key, BGP with the gateway's custom APIPA addresses)."""

    def __init__(self, name: str, args: AzureVpnLinkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:VpnLink", name, {}, azure_component_opts(opts))
        vpn, gw, side = args["vpn"], args["gateway"], args["side"]
        me, peer = (vpn.a, vpn.b) if side == "a" else (vpn.b, vpn.a)
        child = pulumi.ResourceOptions(parent=self)
        # (my instance, peer endpoint, my address, peer address, key) per tunnel
        ends = [
            (t.a_endpoint, t.b_endpoint, t.a_ip, t.b_ip, t.key)
            if side == "a"
            else (t.b_endpoint, t.a_endpoint, t.b_ip, t.a_ip, t.key)
            for t in vpn.tunnels
        ]
        for e in sorted({end[1] for end in ends}):
            to_e = [end for end in ends if end[1] == e]
            lng = azure.network.LocalNetworkGateway(
                f"{name}-peer-{e}",
                resource_group_name=args["resource_group_name"],
                location=me.region,
                gateway_ip_address=args["peer_ips"][e],
                bgp_settings=azure.network.BgpSettingsArgs(asn=peer.asn, bgp_peering_address=to_e[0][3]),
                local_network_address_space=azure.network.AddressSpaceArgs(address_prefixes=[]),  # BGP announces
                opts=child,
            )
            custom = []
            for i in range(INSTANCES):
                mine = [end for end in to_e if end[0] == i] or [end for end in ends if end[0] == i]
                if mine:
                    custom.append(
                        azure.network.GatewayCustomBgpIpAddressIpConfigurationArgs(
                            ip_configuration_id=gw.ip_configuration_ids[i], custom_bgp_ip_address=mine[0][2]
                        )
                    )
            azure.network.VirtualNetworkGatewayConnection(
                f"{name}-{e}",
                resource_group_name=args["resource_group_name"],
                location=me.region,
                connection_type="IPsec",
                connection_protocol="IKEv2",
                virtual_network_gateway1=azure.network.VirtualNetworkGatewayArgs(id=gw.id),
                local_network_gateway2=azure.network.LocalNetworkGatewayArgs(id=lng.id),
                shared_key=args["keys"][to_e[0][4]],
                enable_bgp=True,
                ipsec_policies=[ipsec_policy(vpn.phase1, vpn.phase2)],
                gateway_custom_bgp_ip_addresses=custom,
                opts=child,
            )
        self.register_outputs({})


# -- What the cross-site orchestrator (components/vpn.py) calls -----------------------------------------------------
IPS_FROM_LINK = False  # the gateway's two public IPs exist before any link


def gateway(
    name: str, network: PlannedNetwork, vpns: Sequence[PlannedVpn], handle: AzureNetwork, opts: pulumi.ResourceOptions
) -> AzureVpnGateway:
    if handle.gateway_subnet_id is None:
        raise ValueError(
            f"the plan gives network {network.key} VPN links but no GatewaySubnet: plan its subnets with the "
            '"gateway" role (aicluster.plan.network.azure_subnets)'
        )
    asn = next(side.asn for v in vpns for side in (v.a, v.b) if side.key == network.key)
    return AzureVpnGateway(
        name,
        {
            "network": network,
            "asn": asn,
            "apipa": apipa_by_instance(network.key, vpns),
            "resource_group_name": handle.resource_group_name,
            "vnet_id": handle.vnet_id,
            "gateway_subnet_id": handle.gateway_subnet_id,
        },
        opts,
    )


def link(
    name: str,
    vpn: PlannedVpn,
    side: str,
    gw: AzureVpnGateway,
    peer_ips: Sequence[pulumi.Input[str]],
    keys: Sequence[pulumi.Input[str]],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Output[str]]:
    AzureVpnLink(
        name,
        {
            "vpn": vpn,
            "side": side,
            "gateway": gw,
            "resource_group_name": gw.resource_group_name,
            "peer_ips": peer_ips,
            "keys": keys,
        },
        opts,
    )
    return gw.public_ips
