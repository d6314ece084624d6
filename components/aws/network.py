"""The cluster's network in one AWS region: VPC, per-zone subnets, egress, security groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Required, TypedDict

import pulumi
import pulumi_aws as aws

from aicluster.plan import PlannedNetwork


class NetworkArgs(TypedDict, total=False):
    network: Required[PlannedNetwork]
    # CIDRs of the sites and clouds this VPC reaches over VPN links (the plan's `vpns`): allowed into the
    # node security group, which otherwise admits traffic from the VPC only
    remote_cidrs: Sequence[str]


class AwsNetwork(pulumi.ComponentResource):
    """VPC with a private compute subnet and a small public (NAT) subnet per zone in use.

    Nodes get no public IPs: egress goes through one NAT gateway per zone, S3 through a gateway
    endpoint. Security groups:
    - `efa`: all traffic to and from itself, ingress and egress (what EFA requires; nothing else);
    - `node`: all traffic within the VPC, all egress; no SSH (or anything) from the internet.
    The VPC's default security group is emptied, so nothing lands in it by accident.
    """

    vpc_id: pulumi.Output[str]
    compute_subnet_ids: dict[str, pulumi.Output[str]]
    efa_security_group_id: pulumi.Output[str]
    node_security_group_id: pulumi.Output[str]
    private_route_table_ids: list[pulumi.Output[str]]  # the compute subnets' route tables (VPN routes go here)

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:Network", name, {}, opts)
        net = args["network"]
        region = net.region
        child = pulumi.ResourceOptions(parent=self)

        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=net.cidr,
            enable_dns_support=True,
            enable_dns_hostnames=True,
            region=region,
            opts=child,
        )
        aws.ec2.DefaultSecurityGroup(f"{name}-default-sg", vpc_id=vpc.id, region=region, opts=child)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, region=region, opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public-rt",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            region=region,
            opts=child,
        )

        self.compute_subnet_ids = {}
        private_rts: list[pulumi.Output[str]] = []
        nats: dict[str, aws.ec2.NatGateway] = {}
        for sub in net.subnets:
            if sub.role != "public":
                continue
            zone = sub.zone
            assert zone is not None  # AWS subnets are zonal
            public = aws.ec2.Subnet(
                f"{name}-public-{zone}",
                vpc_id=vpc.id,
                cidr_block=sub.cidr,
                availability_zone=zone,
                map_public_ip_on_launch=False,
                region=region,
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{zone}",
                subnet_id=public.id,
                route_table_id=public_rt.id,
                region=region,
                opts=child,
            )
            eip = aws.ec2.Eip(f"{name}-nat-{zone}", domain="vpc", region=region, opts=child)
            nat = aws.ec2.NatGateway(
                f"{name}-nat-{zone}",
                allocation_id=eip.id,
                subnet_id=public.id,
                region=region,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
            )
            nats[zone] = nat
            self._compute_subnet(name, vpc, zone, net.subnet(zone, "compute").cidr, nat, private_rts, region)
        # A Local Zone's compute subnet (p6e-gb200 in us-east-1-dfw-2a) has no public subnet or NAT gateway of its
        # own: its default route leaves through the NAT gateway of the region zone the plan names.
        for sub in net.subnets:
            if sub.role == "compute" and sub.nat_zone is not None:
                assert sub.zone is not None
                self._compute_subnet(name, vpc, sub.zone, sub.cidr, nats[sub.nat_zone], private_rts, region)

        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=private_rts,
            region=region,
            opts=child,
        )

        efa = aws.ec2.SecurityGroup(
            f"{name}-efa",
            description="EFA: all traffic to and from members of this group only",
            vpc_id=vpc.id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="-1", from_port=0, to_port=0, self=True, description="EFA from members"
                )
            ],
            egress=[
                aws.ec2.SecurityGroupEgressArgs(
                    protocol="-1", from_port=0, to_port=0, self=True, description="EFA to members"
                )
            ],
            region=region,
            opts=child,
        )
        ingress = [
            aws.ec2.SecurityGroupIngressArgs(
                protocol="-1", from_port=0, to_port=0, cidr_blocks=[net.cidr], description="within the cluster VPC"
            )
        ]
        remote = sorted(args.get("remote_cidrs", ()))
        if remote:
            ingress.append(
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="-1", from_port=0, to_port=0, cidr_blocks=remote, description="sites and clouds over VPN"
                )
            )
        node = aws.ec2.SecurityGroup(
            f"{name}-node",
            description="Cluster nodes: traffic within the VPC; egress through NAT",
            vpc_id=vpc.id,
            ingress=ingress,
            egress=[
                aws.ec2.SecurityGroupEgressArgs(
                    protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"], description="egress via NAT"
                )
            ],
            region=region,
            opts=child,
        )

        self.vpc_id = vpc.id
        self.private_route_table_ids = private_rts
        self.efa_security_group_id = efa.id
        self.node_security_group_id = node.id
        self.register_outputs(
            {
                "vpc_id": vpc.id,
                "cidr": net.cidr,
                "compute_subnet_ids": self.compute_subnet_ids,
                "efa_security_group_id": efa.id,
                "node_security_group_id": node.id,
            }
        )

    def _compute_subnet(
        self,
        name: str,
        vpc: aws.ec2.Vpc,
        zone: str,
        cidr: str,
        nat: aws.ec2.NatGateway,
        private_rts: list[pulumi.Output[str]],
        region: str,
    ) -> None:
        """A zone's private compute subnet, whose default route leaves through `nat`."""
        child = pulumi.ResourceOptions(parent=self)
        private = aws.ec2.Subnet(
            f"{name}-compute-{zone}",
            vpc_id=vpc.id,
            cidr_block=cidr,
            availability_zone=zone,
            map_public_ip_on_launch=False,
            region=region,
            opts=child,
        )
        rt = aws.ec2.RouteTable(
            f"{name}-compute-{zone}-rt",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
            region=region,
            opts=child,
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-compute-{zone}", subnet_id=private.id, route_table_id=rt.id, region=region, opts=child
        )
        private_rts.append(rt.id)
        self.compute_subnet_ids[zone] = private.id
