"""FSx for Lustre: a PERSISTENT_2 file system next to the pools, with its Lustre security group."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

import pulumi
import pulumi_aws as aws

from aicluster.plan import PlannedFilesystem

# Lustre clients talk to the file servers on TCP 988 and 1018-1023 (FSx for Lustre user guide,
# "File system access control with Amazon VPC").
LUSTRE_PORTS = ((988, 988), (1018, 1023))
LUSTRE_VERSION = "2.15"


class FilesystemArgs(TypedDict):
    """What every AWS file-system component takes: its plan record and where clients are."""

    filesystem: PlannedFilesystem
    vpc_id: pulumi.Input[str]
    subnet_ids: Mapping[str, pulumi.Input[str]]  # compute subnet by zone
    client_security_group_id: pulumi.Input[str]


class AwsLustreFileSystem(pulumi.ComponentResource):
    """PERSISTENT_2 FSx for Lustre (always encrypted at rest), sized and tiered by the plan."""

    dns_name: pulumi.Output[str]
    mount_name: pulumi.Output[str]

    def __init__(self, name: str, args: FilesystemArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:LustreFileSystem", name, {}, opts)
        fs = args["filesystem"]
        child = pulumi.ResourceOptions(parent=self)
        clients = [args["client_security_group_id"]]
        ingress: list[aws.ec2.SecurityGroupIngressArgs] = []
        for lo, hi in LUSTRE_PORTS:
            ingress.append(
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp", from_port=lo, to_port=hi, self=True, description="Lustre between file servers"
                )
            )
            ingress.append(
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp",
                    from_port=lo,
                    to_port=hi,
                    security_groups=clients,
                    description="Lustre from cluster nodes",
                )
            )
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            description=f"FSx for Lustre {fs.name}: Lustre traffic from cluster nodes",
            vpc_id=args["vpc_id"],
            ingress=ingress,
            egress=[
                aws.ec2.SecurityGroupEgressArgs(
                    protocol="-1", from_port=0, to_port=0, self=True, description="to servers"
                ),
                aws.ec2.SecurityGroupEgressArgs(
                    protocol="-1", from_port=0, to_port=0, security_groups=clients, description="to clients"
                ),
            ],
            region=fs.region,
            opts=child,
        )
        lustre = aws.fsx.LustreFileSystem(
            f"{name}-fs",
            deployment_type=fs.deployment,
            storage_type="SSD",
            storage_capacity=fs.capacity_gib,
            per_unit_storage_throughput=int(fs.throughput_mb_s_per_tib),
            subnet_ids=args["subnet_ids"][_zone(fs)],  # pulumi-aws 7: one subnet (FSx for Lustre is single-AZ)
            security_group_ids=[sg.id],
            file_system_type_version=LUSTRE_VERSION,
            data_compression_type="LZ4",
            metadata_configuration=aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC"),
            copy_tags_to_backups=True,
            # a final backup when the file system is deleted (the provider's default is none); `protect` (the
            # AiCluster's) refuses the delete itself
            skip_final_backup=False,
            region=fs.region,
            opts=child,
        )
        self.dns_name = lustre.dns_name
        self.mount_name = lustre.mount_name
        self.register_outputs({"dns_name": lustre.dns_name, "mount_name": lustre.mount_name, "id": lustre.id})


def _zone(fs: PlannedFilesystem) -> str:
    assert fs.zone is not None  # the planner places every AWS file system in a zone
    return fs.zone
