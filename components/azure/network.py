"""The cluster's network in one Azure region: resource group, VNet, subnets, NSGs, NAT gateway."""

from __future__ import annotations

from typing import TypedDict

import pulumi
import pulumi_azure_native as azure

from aicluster.plan import PlannedNetwork

from .aliases import azure_component_opts

# Managed Lustre clients and servers talk on 988 (LNet) and 1019-1023 (azure-amlfs-prereqs).
LUSTRE_PORTS = ["988", "1019-1023"]
ADMIN_PORTS = ["22", "3389"]


class NetworkArgs(TypedDict):
    network: PlannedNetwork
    cluster: str


def deny_admin_from_internet(priority: int = 100) -> azure.network.SecurityRuleArgs:
    """SSH and RDP from the internet are denied explicitly, ahead of any allow rule added later."""
    return azure.network.SecurityRuleArgs(
        name="deny-admin-from-internet",
        direction="Inbound",
        access="Deny",
        protocol="Tcp",
        priority=priority,
        source_address_prefix="Internet",
        source_port_range="*",
        destination_address_prefix="*",
        destination_port_ranges=ADMIN_PORTS,
    )


class AzureNetwork(pulumi.ComponentResource):
    """One VNet per region, carved as the plan says, with no way in from the internet.

    - resource group: the one the stack names, else a new one for the cluster in this region;
    - subnets: one regional compute subnet (nodes and controller; Azure subnets span zones), plus, when a
      file system needs it, a dedicated Managed Lustre subnet and a subnet delegated to Azure NetApp Files;
    - egress: one Standard NAT gateway with one static public IP, attached to the compute subnet; nodes
      have no public IPs;
    - NSGs: SSH/RDP from the internet denied explicitly; traffic inside the VNet allowed (Azure's default
      AllowVnetInBound), which the InfiniBand-less paths (Slurm, NFS) need; the Lustre subnet's NSG also
      allows LNet ports 988 and 1019-1023 from the VNet explicitly, as Managed Lustre requires.
    """

    resource_group_name: pulumi.Output[str]
    vnet_id: pulumi.Output[str]
    compute_subnet_id: pulumi.Output[str]
    lustre_subnet_id: pulumi.Output[str] | None
    netapp_subnet_id: pulumi.Output[str] | None
    gateway_subnet_id: pulumi.Output[str] | None  # the GatewaySubnet, when the stack has a VPN link here
    node_security_group_id: pulumi.Output[str]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:Network", name, {}, azure_component_opts(opts))
        net = args["network"]
        child = pulumi.ResourceOptions(parent=self)
        location = net.region

        if net.resource_group is not None:
            self.resource_group_name = pulumi.Output.from_input(net.resource_group)
        else:
            rg = azure.resources.ResourceGroup(f"{name}-rg", location=location, opts=child)
            self.resource_group_name = rg.name
        rg_name = self.resource_group_name

        vnet = azure.network.VirtualNetwork(
            f"{name}-vnet",
            resource_group_name=rg_name,
            location=location,
            address_space=azure.network.AddressSpaceArgs(address_prefixes=[net.cidr]),
            opts=child,
        )
        node_nsg = azure.network.NetworkSecurityGroup(
            f"{name}-nodes-nsg",
            resource_group_name=rg_name,
            location=location,
            security_rules=[deny_admin_from_internet()],
            opts=child,
        )
        ip = azure.network.PublicIPAddress(
            f"{name}-nat-ip",
            resource_group_name=rg_name,
            location=location,
            sku=azure.network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
            public_ip_allocation_method="Static",
            public_ip_address_version="IPv4",
            opts=child,
        )
        nat = azure.network.NatGateway(
            f"{name}-nat",
            resource_group_name=rg_name,
            location=location,
            sku=azure.network.NatGatewaySkuArgs(name="Standard"),
            public_ip_addresses=[azure.network.SubResourceArgs(id=ip.id)],
            idle_timeout_in_minutes=4,
            opts=child,
        )
        compute = net.role("compute")
        assert compute is not None
        subnet = azure.network.Subnet(
            f"{name}-compute",
            resource_group_name=rg_name,
            virtual_network_name=vnet.name,
            address_prefix=compute.cidr,
            network_security_group=azure.network.NetworkSecurityGroupArgs(id=node_nsg.id),
            nat_gateway=azure.network.SubResourceArgs(id=nat.id),
            default_outbound_access=False,  # no implicit internet egress: only through the NAT gateway
            opts=child,
        )
        self.lustre_subnet_id = None
        self.netapp_subnet_id = None
        lustre = net.role("lustre")
        if lustre is not None:
            lustre_nsg = azure.network.NetworkSecurityGroup(
                f"{name}-lustre-nsg",
                resource_group_name=rg_name,
                location=location,
                security_rules=[
                    deny_admin_from_internet(),
                    *(
                        azure.network.SecurityRuleArgs(
                            name=f"allow-lnet-{direction.lower()}",
                            direction=direction,
                            access="Allow",
                            protocol="Tcp",
                            priority=200,
                            source_address_prefix="VirtualNetwork",
                            source_port_range="*",
                            destination_address_prefix="VirtualNetwork",
                            destination_port_ranges=LUSTRE_PORTS,
                        )
                        for direction in ("Inbound", "Outbound")
                    ),
                ],
                opts=child,
            )
            # Created after the compute subnet: Azure updates one VNet's subnets one at a time.
            self.lustre_subnet_id = azure.network.Subnet(
                f"{name}-lustre",
                resource_group_name=rg_name,
                virtual_network_name=vnet.name,
                address_prefix=lustre.cidr,
                network_security_group=azure.network.NetworkSecurityGroupArgs(id=lustre_nsg.id),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[subnet]),
            ).id
        netapp = net.role("netapp")
        if netapp is not None:
            self.netapp_subnet_id = azure.network.Subnet(
                f"{name}-netapp",
                resource_group_name=rg_name,
                virtual_network_name=vnet.name,
                address_prefix=netapp.cidr,
                delegations=[
                    azure.network.DelegationArgs(name="netapp", service_name="Microsoft.NetApp/volumes"),
                ],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[subnet]),
            ).id
        self.gateway_subnet_id = None
        gateway = net.role("gateway")
        if gateway is not None:
            # Azure requires this exact name, and supports no NSG or NAT gateway on it. Created after the other
            # subnets: Azure updates one VNet's subnets one at a time.
            self.gateway_subnet_id = azure.network.Subnet(
                f"{name}-gateway",
                subnet_name="GatewaySubnet",
                resource_group_name=rg_name,
                virtual_network_name=vnet.name,
                address_prefix=gateway.cidr,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[subnet]),
            ).id
        self.vnet_id = vnet.id
        self.compute_subnet_id = subnet.id
        self.node_security_group_id = node_nsg.id
        self.register_outputs(
            {
                "resource_group_name": rg_name,
                "vnet_id": vnet.id,
                "compute_subnet_id": subnet.id,
                "nat_public_ip": ip.ip_address,
            }
        )
