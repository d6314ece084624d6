"""Azure NetApp Files: the cluster's NFS home/shared file system (account, capacity pool, one volume)."""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure

from .aliases import azure_component_opts
from .locks import delete_lock
from .lustre import AzureFilesystemArgs

GIB = 2**30


class AzureNetAppFiles(pulumi.ComponentResource):
    """Chosen over Azure Files NFS because its throughput is a fixed MiB/s per provisioned TiB (the plan's
    throughput figure holds) and its sizes are documented. One capacity pool of the plan's size and service
    level holds one NFSv4.1 volume of the same size, exported read-write to the compute subnet only (root
    access kept so the tuning step can create home directories). Encrypted at rest by the service."""

    mount_ip: pulumi.Output[str]
    export_path: pulumi.Output[str]

    def __init__(self, name: str, args: AzureFilesystemArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:NetAppFiles", name, {}, azure_component_opts(opts))
        fs = args["filesystem"]
        child = pulumi.ResourceOptions(parent=self)
        rg = args["resource_group_name"]
        account = azure.netapp.Account(f"{name}-account", resource_group_name=rg, location=fs.region, opts=child)
        # the account's lock covers its capacity pool and volume (a lock is inherited by child resources)
        delete_lock(f"{name}-account", account, "NetApp account (its capacity pool and volume)", self)
        pool = azure.netapp.CapacityPool(
            f"{name}-pool",
            resource_group_name=rg,
            account_name=account.name,
            pool_name=fs.name,  # named, so the volume can name it (the resource's `name` output is account/pool)
            location=fs.region,
            service_level=fs.deployment,
            size=fs.capacity_gib * GIB,
            qos_type="Auto",
            opts=child,
        )
        volume = azure.netapp.CapacityPoolVolume(
            f"{name}-volume",
            resource_group_name=rg,
            account_name=account.name,
            pool_name=fs.name,
            location=fs.region,
            creation_token=fs.name,
            service_level=fs.deployment,
            usage_threshold=fs.capacity_gib * GIB,
            subnet_id=args["subnet_id"],
            network_features="Standard",
            protocol_types=["NFSv4.1"],
            export_policy=azure.netapp.VolumePropertiesExportPolicyArgs(
                rules=[
                    azure.netapp.ExportPolicyRuleArgs(
                        rule_index=1,
                        allowed_clients=args["client_cidr"],
                        nfsv3=False,
                        nfsv41=True,
                        unix_read_only=False,
                        unix_read_write=True,
                        has_root_access=True,
                    )
                ]
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[pool]),
        )
        self.mount_ip = volume.mount_targets.apply(lambda m: m[0].ip_address if m else "")
        self.export_path = pulumi.Output.from_input(f"/{fs.name}")
        self.register_outputs({"mount_ip": self.mount_ip, "export_path": self.export_path})
