"""The instance identity every node of a cluster runs as."""

from __future__ import annotations

import json
from typing import NotRequired, TypedDict

import pulumi
import pulumi_aws as aws

# Session Manager access instead of SSH from anywhere; nodes need nothing else from the AWS API
# for provisioning. The tuning step adds what it needs (e.g. FSx, S3 checkpoints) explicitly.
MANAGED_POLICIES = ("arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",)

ASSUME_EC2 = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    },
    sort_keys=True,
)


class NodeIdentityArgs(TypedDict):
    cluster: str
    # a managed Prometheus the controller's Prometheus writes to: (workspace ARN, the permission that takes)
    remote_write: NotRequired[tuple[pulumi.Input[str], str]]


class AwsNodeIdentity(pulumi.ComponentResource):
    """IAM role + instance profile for the cluster's nodes (IAM is global: one per cluster)."""

    instance_profile_arn: pulumi.Output[str]
    instance_profile_name: pulumi.Output[str]

    def __init__(self, name: str, args: NodeIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:NodeIdentity", name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-role",
            description=f"aicluster {args['cluster']} nodes",
            assume_role_policy=ASSUME_EC2,
            opts=child,
        )
        for i, arn in enumerate(MANAGED_POLICIES):
            aws.iam.RolePolicyAttachment(f"{name}-policy-{i}", role=role.name, policy_arn=arn, opts=child)
        if "remote_write" in args:
            from .monitoring import remote_write_policy

            workspace_arn, action = args["remote_write"]
            aws.iam.RolePolicy(
                f"{name}-prometheus-write",
                role=role.id,
                policy=pulumi.Output.from_input(workspace_arn).apply(lambda a: remote_write_policy(a, action)),
                opts=child,
            )
        profile = aws.iam.InstanceProfile(f"{name}-profile", role=role.name, opts=child)
        self.instance_profile_arn = profile.arn
        self.instance_profile_name = profile.name
        self.register_outputs({"role_arn": role.arn, "instance_profile_arn": profile.arn})
