"""Slurm on AWS: the pools as Auto Scaling groups of GPU instances, and the Slurm controller (slurmctld host), all
running as the cluster's node identity. Slurm itself is configured by the tuning step."""

from __future__ import annotations

import base64
from typing import Any, TypedDict

import pulumi
import pulumi_aws as aws

from aicluster.plan import ClusterPlan, PlannedController
from aicluster.render import controller_cloud_init, node_cloud_init

from ..aws import AwsBase
from ..aws.gpu_pool import AwsGpuPool, imds_v2, root_volume
from ..aws.identity import AwsNodeIdentity, NodeIdentityArgs
from ..outputs import pool_outputs
from ..tags import tagging


class ControllerArgs(TypedDict):
    controller: PlannedController
    user_data: str
    subnet_id: pulumi.Input[str]
    node_security_group_id: pulumi.Input[str]
    instance_profile_arn: pulumi.Input[str]


class AwsSlurmController(pulumi.ComponentResource):
    """One private instance (no public IP, IMDSv2, encrypted root), reached through Session Manager.

    Launched from a launch template so the image can be an SSM parameter (`resolve:ssm:`) that
    the template keeps as written, instead of an AMI id that drifts with every image release.
    """

    private_ip: pulumi.Output[str]
    instance_id: pulumi.Output[str]

    def __init__(self, name: str, args: ControllerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:SlurmController", name, {}, opts)
        c = args["controller"]
        assert c.imds_hop_limit is not None  # set for every AWS controller
        child = pulumi.ResourceOptions(parent=self)
        lt = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            description="aicluster Slurm controller",
            image_id=c.image,
            instance_type=c.instance_type,
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=args["instance_profile_arn"]),
            network_interfaces=[
                aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                    device_index=0,
                    subnet_id=args["subnet_id"],
                    security_groups=[args["node_security_group_id"]],
                    associate_public_ip_address="false",
                    delete_on_termination="true",
                )
            ],
            metadata_options=imds_v2(c.imds_hop_limit),
            block_device_mappings=[root_volume(c.root_volume_gib)],
            monitoring=aws.ec2.LaunchTemplateMonitoringArgs(enabled=True),
            user_data=base64.b64encode(args["user_data"].encode()).decode(),
            update_default_version=True,
            region=c.region,
            opts=child,
        )
        instance = aws.ec2.Instance(
            f"{name}-vm",
            # "$Default", not the template's latest version number: a new template version must not
            # replace the controller (changing an instance's launch template forces a new instance).
            launch_template=aws.ec2.InstanceLaunchTemplateArgs(id=lt.id, version="$Default"),
            metadata_options=aws.ec2.InstanceMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=c.imds_hop_limit
            ),
            region=c.region,
            opts=child,
        )
        self.private_ip = instance.private_ip
        self.instance_id = instance.id
        self.register_outputs({"private_ip": instance.private_ip, "instance_id": instance.id})


def build(plan: ClusterPlan, parent: pulumi.ComponentResource, base: AwsBase, outputs: dict[str, Any]) -> None:
    """Slurm's part in AWS (components.Part): the AWS pools and, where it runs on AWS, the controller."""
    name = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    networks = base.networks
    identity_args: NodeIdentityArgs = {"cluster": name}
    m = plan.monitoring
    if base.prometheus is not None and m.collector == "remote-write" and m.write_permission is not None:
        identity_args["remote_write"] = (base.prometheus.workspace_arn, m.write_permission)
    identity = AwsNodeIdentity(f"{name}-nodes", identity_args, opts)
    for pool in plan.pools:
        if pool.provider != "aws":
            continue
        net = networks[pool.network]
        assert pool.zone is not None
        gp = AwsGpuPool(
            f"{name}-{pool.name}",
            {
                "pool": pool,
                "user_data": node_cloud_init(plan, pool),
                "subnet_id": net.compute_subnet_ids[pool.zone],
                "efa_security_group_id": net.efa_security_group_id,
                "node_security_group_id": net.node_security_group_id,
                "instance_profile_arn": identity.instance_profile_arn,
            },
            pulumi.ResourceOptions(parent=parent, transformations=[tagging(pool.tags)]),
        )
        # an UltraServer pool has a group per UltraServer: its first is asg_name, all of them asg_names
        extra = {"asg_names": gp.asg_names} if pool.aws is not None and pool.aws.groups else {}
        outputs["pools"][pool.name] = pool_outputs(
            pool, asg_name=gp.asg_name, launch_template_id=gp.launch_template_id, **extra
        )

    c = plan.controller
    if c is not None and c.provider == "aws":
        net = networks[c.network]
        ctl = AwsSlurmController(
            f"{name}-slurmctld",
            {
                "controller": c,
                "user_data": controller_cloud_init(plan),
                "subnet_id": net.compute_subnet_ids[c.zone or ""],  # AWS controllers are always zonal
                "node_security_group_id": net.node_security_group_id,
                "instance_profile_arn": identity.instance_profile_arn,
            },
            opts,
        )
        outputs["controller"] = {"kind": c.kind, "private_ip": ctl.private_ip, "instance_id": ctl.instance_id}
