"""Amazon EFS: the shared NFS file system (home directories, code, small data)."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from .lustre import FilesystemArgs

NFS_PORT = 2049


class AwsEfsFileSystem(pulumi.ComponentResource):
    """Encrypted EFS with a mount target in every zone whose nodes mount it (the EFS DNS name
    resolves to the mount target of the client's own zone), NFS open to cluster nodes only."""

    dns_name: pulumi.Output[str]

    def __init__(self, name: str, args: FilesystemArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:EfsFileSystem", name, {}, opts)
        fs = args["filesystem"]
        child = pulumi.ResourceOptions(parent=self)
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            description=f"EFS {fs.name}: NFS from cluster nodes",
            vpc_id=args["vpc_id"],
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp",
                    from_port=NFS_PORT,
                    to_port=NFS_PORT,
                    security_groups=[args["client_security_group_id"]],
                    description="NFS from cluster nodes",
                )
            ],
            region=fs.region,
            opts=child,
        )
        efs = aws.efs.FileSystem(
            f"{name}-fs",
            encrypted=True,
            performance_mode="generalPurpose",
            throughput_mode="bursting",
            region=fs.region,
            opts=child,
        )
        for zone in fs.client_zones:
            aws.efs.MountTarget(
                f"{name}-{zone}",
                file_system_id=efs.id,
                subnet_id=args["subnet_ids"][zone],
                security_groups=[sg.id],
                region=fs.region,
                opts=child,
            )
        self.dns_name = efs.dns_name
        self.register_outputs({"dns_name": efs.dns_name, "id": efs.id})
