"""A fleet of identical AWS accelerator nodes: launch template + Auto Scaling group in one zone."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import TypedDict

import pulumi
import pulumi_aws as aws

from aicluster.plan import AwsGroup, PlannedPool

# Ubuntu-based images (the DLAMI included) boot from /dev/sda1.
ROOT_DEVICE = "/dev/sda1"


class GpuPoolArgs(TypedDict):
    pool: PlannedPool  # plain values from the plan
    user_data: str  # rendered cloud-init
    subnet_id: pulumi.Input[str]  # wiring from the network
    efa_security_group_id: pulumi.Input[str]
    node_security_group_id: pulumi.Input[str]
    instance_profile_arn: pulumi.Input[str]


def network_interfaces(pool: PlannedPool, args: GpuPoolArgs) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """Launch-template interfaces from the plan's NIC layout (every EFA card declared).

    No subnet here: the Auto Scaling group places every interface in its one subnet (as EKS node
    groups require too). Only the primary interface may take `associate_public_ip_address`, and
    it is off: nodes have no public IPs.
    """
    return interfaces(pool, {"efa": args["efa_security_group_id"], "node": args["node_security_group_id"]})


def interfaces(
    pool: PlannedPool,
    groups: Mapping[str, pulumi.Input[str]],
    primary_groups: Sequence[pulumi.Input[str]] = (),
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """The plan's NIC layout with each interface's security groups looked up in `groups` (by the plan's
    group names, `efa` and `node`); `primary_groups` are added to the primary (ENA) interface only (an
    EKS node's cluster security group: EKS adds it only to templates that name no security groups)."""
    assert pool.aws is not None
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=nic.network_card_index,
            device_index=nic.device_index,
            interface_type=nic.interface_type,
            security_groups=[groups[g] for g in nic.security_groups]
            + (list(primary_groups) if (nic.network_card_index, nic.device_index) == (0, 0) else []),
            associate_public_ip_address="false" if nic.interface_type == "interface" else None,
            delete_on_termination="true",
        )
        for nic in pool.aws.nics
    ]


def market_options(pool: PlannedPool) -> aws.ec2.LaunchTemplateInstanceMarketOptionsArgs | None:
    assert pool.aws is not None
    if pool.aws.market_type == "spot":
        return aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
            market_type="spot",
            spot_options=aws.ec2.LaunchTemplateInstanceMarketOptionsSpotOptionsArgs(
                spot_instance_type="one-time", instance_interruption_behavior="terminate"
            ),
        )
    if pool.aws.market_type == "capacity-block":
        return aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
    return None


def capacity_reservation(
    pool: PlannedPool, group: AwsGroup | None = None
) -> aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs | None:
    """The reservation or Capacity Block a template's launches target: an UltraServer group's own block, else the
    pool's."""
    assert pool.aws is not None
    target = group.capacity_reservation_id if group is not None else pool.aws.capacity_reservation_id
    if target:
        return aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=target
            )
        )
    if pool.aws.capacity_reservation_preference:
        return aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_preference=pool.aws.capacity_reservation_preference
        )
    return None


def root_volume(size_gib: int, device: str = ROOT_DEVICE) -> aws.ec2.LaunchTemplateBlockDeviceMappingArgs:
    """Encrypted gp3 root volume, deleted with the node."""
    return aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
        device_name=device,
        ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
            volume_size=size_gib, volume_type="gp3", encrypted="true", delete_on_termination="true"
        ),
    )


def imds_v2(hop_limit: int) -> aws.ec2.LaunchTemplateMetadataOptionsArgs:
    """IMDSv2 only (session tokens required)."""
    return aws.ec2.LaunchTemplateMetadataOptionsArgs(
        http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=hop_limit
    )


class AwsGpuPool(pulumi.ComponentResource):
    """Launch template + Auto Scaling group pinned to one subnet/AZ.

    - every EFA card of the type's layout declared (plan's NIC layout), EFA security group on each;
    - a cluster placement group unless the plan says otherwise (capacity blocks, targeted reservations);
    - capacity-block / spot market options and capacity-reservation targeting from the plan;
    - an UltraServer pool (p6e-gb200): one launch template and group per UltraServer, each targeting that
      UltraServer's own Capacity Block, so every NVLink domain is launched whole into the block bought for it;
    - IMDSv2 required, encrypted gp3 root volume, no public IPs.
    A group is sized to its nodes (min = max = desired); Pulumi does not wait for GPU capacity.
    Template changes reach nodes launched afterwards; running nodes are not replaced automatically.
    """

    asg_name: pulumi.Output[str]  # the pool's group; an UltraServer pool's first
    launch_template_id: pulumi.Output[str]
    asg_names: dict[str, pulumi.Output[str]]  # by group (the pool's name, or each UltraServer's domain name)

    def __init__(self, name: str, args: GpuPoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:GpuPool", name, {}, opts)
        pool = args["pool"]
        assert pool.aws is not None
        region = pool.region
        child = pulumi.ResourceOptions(parent=self)

        placement_group: pulumi.Input[str] | None = None
        if pool.aws.placement_group == "create":
            pg = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", region=region, opts=child)
            placement_group = pg.name
        elif pool.aws.placement_group == "existing":
            placement_group = pool.aws.placement_group_name

        groups: list[tuple[str, AwsGroup | None, int]] = (
            [(f"{name}-nvl{g.index}", g, g.nodes) for g in pool.aws.groups]
            if pool.aws.groups
            else [(name, None, pool.nodes)]
        )
        self.asg_names = {}
        template_ids = []
        for prefix, group, nodes in groups:
            lt = self._launch_template(prefix, pool, args, group, child)
            asg = self._group(prefix, pool, args, lt, nodes, placement_group, child)
            self.asg_names[group.name if group is not None else pool.name] = asg.name
            template_ids.append(lt.id)
        self.asg_name = next(iter(self.asg_names.values()))
        self.launch_template_id = template_ids[0]
        self.register_outputs(
            {"asg_name": self.asg_name, "asg_names": self.asg_names, "launch_template_id": template_ids[0]}
        )

    @staticmethod
    def _launch_template(
        prefix: str, pool: PlannedPool, args: GpuPoolArgs, group: AwsGroup | None, child: pulumi.ResourceOptions
    ) -> aws.ec2.LaunchTemplate:
        assert pool.aws is not None
        what = f"aicluster pool {pool.name} ({pool.instance_type})"
        if group is not None:
            what += f", UltraServer {group.name}" + (f" ({group.ultraserver_type})" if group.ultraserver_type else "")
        return aws.ec2.LaunchTemplate(
            f"{prefix}-lt",
            # static: a node count here would make every resize a new template version
            description=what,
            image_id=pool.aws.image,
            instance_type=pool.instance_type,
            network_interfaces=network_interfaces(pool, args),
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=args["instance_profile_arn"]),
            metadata_options=imds_v2(pool.aws.imds_hop_limit),
            block_device_mappings=[root_volume(pool.aws.root_volume_gib)],
            instance_market_options=market_options(pool),
            capacity_reservation_specification=capacity_reservation(pool, group),
            ebs_optimized="true",
            monitoring=aws.ec2.LaunchTemplateMonitoringArgs(enabled=True),
            user_data=base64.b64encode(args["user_data"].encode()).decode(),
            update_default_version=True,
            region=pool.region,
            opts=child,
        )

    @staticmethod
    def _group(
        prefix: str,
        pool: PlannedPool,
        args: GpuPoolArgs,
        lt: aws.ec2.LaunchTemplate,
        nodes: int,
        placement_group: pulumi.Input[str] | None,
        child: pulumi.ResourceOptions,
    ) -> aws.autoscaling.Group:
        assert pool.aws is not None
        # A burst pool starts empty: Slurm's resume and suspend programs set its desired capacity (never above
        # max), so `pulumi up` must not reset it, and Auto Scaling must not rebalance nodes Slurm has bound.
        burst = pool.burst
        return aws.autoscaling.Group(
            f"{prefix}-asg",
            min_size=0 if burst else nodes,
            max_size=nodes,
            desired_capacity=0 if burst else nodes,
            suspended_processes=["AZRebalance"] if burst else None,
            vpc_zone_identifiers=[args["subnet_id"]],
            placement_group=placement_group,
            # Nodes launched from now on use the newest template; running nodes are not replaced
            # (no instance refresh: that would kill training jobs). Roll them deliberately.
            launch_template=aws.autoscaling.GroupLaunchTemplateArgs(id=lt.id, version="$Latest"),
            capacity_rebalance=pool.aws.capacity_rebalance,
            health_check_type="EC2",
            wait_for_capacity_timeout="0",
            region=pool.region,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["desiredCapacity"]))
            if burst
            else child,
        )
