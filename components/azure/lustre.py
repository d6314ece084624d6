"""Azure Managed Lustre: one AMLFS file system in its own subnet and zone."""

from __future__ import annotations

from typing import TypedDict

import pulumi
import pulumi_azure_native as azure

from aicluster.plan import PlannedFilesystem

from .aliases import azure_component_opts
from .locks import delete_lock

# A 30-minute weekly window in which Azure may patch the file system: Sunday 02:00 UTC.
MAINTENANCE_TIME_UTC = "02:00"


class AzureFilesystemArgs(TypedDict):
    filesystem: PlannedFilesystem
    resource_group_name: pulumi.Input[str]
    subnet_id: pulumi.Input[str]  # the dedicated subnet (Lustre) or delegated subnet (NetApp)
    client_cidr: str  # the compute subnet, whose nodes mount it


class AzureManagedLustre(pulumi.ComponentResource):
    """The SKU is the plan's throughput tier (AMLFS-Durable-Premium-<MB/s per TiB>) and the capacity the plan's
    rounded size. Data is encrypted at rest with Microsoft-managed keys (the service default)."""

    mgs_address: pulumi.Output[str]
    mount_command: pulumi.Output[str]

    def __init__(self, name: str, args: AzureFilesystemArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:ManagedLustre", name, {}, azure_component_opts(opts))
        fs = args["filesystem"]
        amlfs = azure.storagecache.AmlFilesystem(
            f"{name}-amlfs",
            resource_group_name=args["resource_group_name"],
            location=fs.region,
            zones=[fs.zone] if fs.zone else None,
            sku=azure.storagecache.SkuNameArgs(name=fs.deployment),
            storage_capacity_ti_b=fs.capacity_gib / 1024,
            filesystem_subnet=args["subnet_id"],
            maintenance_window=azure.storagecache.AmlFilesystemMaintenanceWindowArgs(
                day_of_week=azure.storagecache.MaintenanceDayOfWeekType.SUNDAY,
                time_of_day_utc=MAINTENANCE_TIME_UTC,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        delete_lock(f"{name}-amlfs", amlfs, "Azure Managed Lustre file system", self)
        self.mgs_address = amlfs.client_info.apply(lambda c: c.mgs_address)
        self.mount_command = amlfs.client_info.apply(lambda c: c.mount_command)
        self.register_outputs({"mgs_address": self.mgs_address, "mount_command": self.mount_command})
