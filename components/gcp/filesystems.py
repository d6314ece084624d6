"""GCP managed file systems, each in the host VPC through its private services access connection:
Google Cloud Managed Lustre (`kind: lustre`) and Filestore Zonal (`kind: nfs`). Capacities and throughput
tiers are the plan's, already rounded to valid sizes."""

from __future__ import annotations

import re
from typing import TypedDict

import pulumi
import pulumi_gcp as gcp

from aicluster.plan import PlannedFilesystem

LUSTRE_FSNAME_MAX = 8  # a Lustre file-system name is at most 8 characters
FILESTORE_SHARE_MAX = 16


class GcpFilesystemArgs(TypedDict):
    filesystem: PlannedFilesystem
    network_path: pulumi.Input[str]  # projects/<p>/global/networks/<name>: Managed Lustre
    network_name: pulumi.Input[str]  # the bare name: Filestore
    services_connection: pulumi.Resource  # the private services access peering they allocate from


def short_name(name: str, limit: int, sep: str = "") -> str:
    """A file-system name reduced to what Lustre (8 alphanumerics) or Filestore (16, with `_`) accept."""
    out = re.sub(r"[^a-z0-9]", sep, name.lower())
    return (out if out[:1].isalpha() else "f" + out)[:limit]


def _opts(component: pulumi.ComponentResource, args: GcpFilesystemArgs) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=component, depends_on=[args["services_connection"]])


class GcpManagedLustre(pulumi.ComponentResource):
    mount_point: pulumi.Output[str]
    mount_command: pulumi.Output[str]

    def __init__(self, name: str, args: GcpFilesystemArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:ManagedLustre", name, {}, opts)
        fs = args["filesystem"]
        assert fs.zone is not None
        lustre = gcp.lustre.Instance(
            f"{name}-lustre",
            instance_id=fs.name,
            location=fs.zone,
            filesystem=short_name(fs.name, LUSTRE_FSNAME_MAX),
            capacity_gib=str(fs.capacity_gib),
            per_unit_storage_throughput=f"{fs.throughput_mb_s_per_tib:g}",
            network=args["network_path"],
            description=f"{fs.capacity_tib:g} TiB at {fs.throughput_mb_s_per_tib:g} MB/s per TiB",
            deletion_policy="PREVENT",  # the provider refuses to delete it (its only guard: no API-side protection)
            opts=_opts(self, args),
        )
        self.mount_point = lustre.mount_point
        self.mount_command = lustre.mount_point.apply(lambda m: f"mount -t lustre {m} {fs.mount}")
        self.register_outputs({"mount_point": self.mount_point, "mount_command": self.mount_command})


class GcpFilestore(pulumi.ComponentResource):
    mount_ip: pulumi.Output[str]
    export_path: str

    def __init__(self, name: str, args: GcpFilesystemArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:Filestore", name, {}, opts)
        fs = args["filesystem"]
        assert fs.zone is not None
        share = short_name(fs.name, FILESTORE_SHARE_MAX, "_")
        instance = gcp.filestore.Instance(
            f"{name}-filestore",
            location=fs.zone,
            tier="ZONAL",  # both Filestore Zonal capacity ranges are the API's ZONAL tier
            file_shares=gcp.filestore.InstanceFileSharesArgs(name=share, capacity_gb=fs.capacity_gib),
            networks=[
                gcp.filestore.InstanceNetworkArgs(
                    network=args["network_name"], modes=["MODE_IPV4"], connect_mode="PRIVATE_SERVICE_ACCESS"
                )
            ],
            description=f"{fs.capacity_tib:g} TiB NFS for {fs.mount}",
            deletion_policy="PREVENT",
            opts=_opts(self, args),
        )
        self.mount_ip = instance.networks.apply(lambda n: n[0].ip_addresses[0] if n and n[0].ip_addresses else "")
        self.export_path = f"/{share}"
        self.register_outputs({"mount_ip": self.mount_ip, "export_path": self.export_path})
