"""One GCP network per cluster region: the host VPC and the extra VPCs the GPU NICs need.

- Host VPC: custom-mode, MTU pinned by the plan (8244 for A3 High/Mega, 8896 for A3 Ultra/A4 and TPU), one
  regional subnet with Private Google Access; firewall rules allow all traffic inside the network and SSH
  only from Identity-Aware Proxy's range (never 0.0.0.0/0); Cloud NAT on a regional router for egress, so
  no node needs an external IP.
- GPU VPCs (A3 High: 4, A3 Mega: 8): one subnet each, MTU 8244, a firewall rule allowing internal traffic.
- A3 Ultra/A4/A4X: a second gVNIC VPC (MTU 8896) and one RoCE VPC made with the zonal network profile
  `<zone>-vpc-roce`, one subnet per MRDMA NIC. A RoCE VPC accepts no firewall rules (its traffic is allowed
  implicitly), so it gets none. Bare-metal A4X Max: the RoCE VPC's profile is `<zone>-vpc-roce-metal`, which
  makes the VPC's one (IPv6) subnet itself; no subnet is created for it here.
- When a file system needs it, a private services access range (the plan's `services` block) and the
  peering connection Managed Lustre and Filestore allocate their addresses from.
"""

from __future__ import annotations

import ipaddress
from typing import TypedDict

import pulumi
import pulumi_gcp as gcp

from aicluster.plan import PlannedNetwork
from aicluster.providers.gcp.pool import IAP_SSH_RANGE


def allow_all() -> list[gcp.compute.FirewallAllowArgs]:
    """Every TCP, UDP and ICMP port: a fresh list per firewall (built on use, not at import: building it loads
    pulumi_gcp.compute)."""
    return [gcp.compute.FirewallAllowArgs(protocol=p) for p in ("tcp", "udp", "icmp")]


def roce_profile(project: pulumi.Output[str], zone: str, suffix: str = "vpc-roce") -> pulumi.Output[str]:
    """The zonal network profile a RoCE VPC is created with (gcp-rdma-vpc; bare metal: `vpc-roce-metal`)."""
    return project.apply(lambda p: f"projects/{p}/global/networkProfiles/{zone}-{suffix}")


def profile_subnet(project: pulumi.Output[str], region: str, network: pulumi.Output[str]) -> pulumi.Output[str]:
    """The subnet a `vpc-roce-metal` profile makes in its VPC, `default-subnet-1-<network>` (gcp-ct-a4xmax): the
    one every MRDMA NIC of an A4X Max instance is on."""
    return pulumi.Output.all(project, network).apply(
        lambda a: f"projects/{a[0]}/regions/{region}/subnetworks/default-subnet-1-{a[1]}"
    )


class GcpNetworkArgs(TypedDict):
    network: PlannedNetwork
    cluster: str


class GcpNetwork(pulumi.ComponentResource):
    host_network_id: pulumi.Output[str]
    host_network_path: pulumi.Output[str]  # projects/<p>/global/networks/<name> (TPU, Managed Lustre)
    host_network_name: pulumi.Output[str]  # the bare name (Filestore)
    project: pulumi.Output[str]
    # (subnet role, index) -> subnetwork self link; VPC name ("" = host) -> network self link
    subnet_ids: dict[tuple[str, int], pulumi.Output[str]]
    vpc_ids: dict[str, pulumi.Output[str]]
    compute_subnet_path: pulumi.Output[str]  # projects/<p>/regions/<r>/subnetworks/<name> (TPU VMs)
    services_connection: gcp.servicenetworking.Connection | None

    def __init__(self, name: str, args: GcpNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:Network", name, {}, opts)
        n = args["network"]
        child = pulumi.ResourceOptions(parent=self)
        host = gcp.compute.Network(
            f"{name}-vpc",
            auto_create_subnetworks=False,
            mtu=n.mtu,
            routing_mode="REGIONAL",
            description=f"aicluster {args['cluster']}: host VPC for {n.region}",
            opts=child,
        )
        self.host_network_id = host.self_link
        self.host_network_path = host.id
        self.host_network_name = host.name
        self.project = host.project
        self.vpc_ids = {"": host.self_link}
        self.subnet_ids = {}
        compute = n.role("compute")
        assert compute is not None
        nodes = gcp.compute.Subnetwork(
            f"{name}-nodes",
            network=host.id,
            region=n.region,
            ip_cidr_range=compute.cidr,
            private_ip_google_access=True,
            opts=child,
        )
        self.subnet_ids[("compute", 0)] = nodes.self_link
        self.compute_subnet_path = nodes.id
        gcp.compute.Firewall(
            f"{name}-allow-internal",
            network=host.id,
            direction="INGRESS",
            source_ranges=[n.cidr],
            allows=allow_all(),
            description="Node, controller and file-system traffic inside the cluster network",
            opts=child,
        )
        gcp.compute.Firewall(
            f"{name}-allow-ssh-iap",
            network=host.id,
            direction="INGRESS",
            source_ranges=[IAP_SSH_RANGE],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
            description="SSH through Identity-Aware Proxy only; nodes have no external address",
            opts=child,
        )
        router = gcp.compute.Router(f"{name}-router", network=host.id, region=n.region, opts=child)
        gcp.compute.RouterNat(
            f"{name}-nat",
            router=router.name,
            region=n.region,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=child,
        )
        for vpc in n.vpcs:
            profile = (
                roce_profile(host.project, vpc.network_profile_zone, vpc.network_profile)
                if vpc.network_profile_zone
                else None
            )
            net = gcp.compute.Network(
                f"{name}-{vpc.name}",
                auto_create_subnetworks=False,
                mtu=vpc.mtu,
                network_profile=profile,
                description=f"aicluster {args['cluster']}: {vpc.role} NIC network for {n.region}",
                opts=child,
            )
            self.vpc_ids[vpc.name] = net.self_link
            if vpc.network_profile == "vpc-roce-metal":
                self.subnet_ids[(vpc.role, 0)] = profile_subnet(host.project, n.region, net.name)
            ranges = []
            for index in vpc.subnets:
                sub = n.role(vpc.role, index)
                assert sub is not None, f"the plan gave {vpc.name} no subnet {index}"
                ranges.append(sub.cidr)
                self.subnet_ids[(vpc.role, index)] = gcp.compute.Subnetwork(
                    f"{name}-{vpc.role}-{index}" if vpc.role == "rdma" else f"{name}-{vpc.name}",
                    network=net.id,
                    region=n.region,
                    ip_cidr_range=sub.cidr,
                    opts=child,
                ).self_link
            if vpc.firewall_internal:
                gcp.compute.Firewall(
                    f"{name}-{vpc.name}-allow-internal",
                    network=net.id,
                    direction="INGRESS",
                    source_ranges=ranges,
                    allows=allow_all(),
                    description="GPU-to-GPU traffic between the nodes' NICs on this network",
                    opts=child,
                )
        self.services_connection = None
        services = n.role("services")
        if services is not None:
            block = ipaddress.IPv4Network(services.cidr)
            reserved = gcp.compute.GlobalAddress(
                f"{name}-services",
                purpose="VPC_PEERING",
                address_type="INTERNAL",
                address=str(block.network_address),
                prefix_length=block.prefixlen,
                network=host.id,
                description="Private services access range for the cluster's managed file systems",
                opts=child,
            )
            self.services_connection = gcp.servicenetworking.Connection(
                f"{name}-services",
                network=host.id,
                service="servicenetworking.googleapis.com",
                reserved_peering_ranges=[reserved.name],
                opts=child,
            )
        self.register_outputs({"host_network_id": self.host_network_id})
