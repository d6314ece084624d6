"""A fleet of identical Azure ND nodes: one Uniform VM scale set per InfiniBand domain."""

from __future__ import annotations

import base64
from typing import TypedDict

import pulumi
import pulumi_azure_native as azure

from aicluster.plan import ClusterPlan, PlannedPool, ScaleSet

from .aliases import azure_component_opts
from .common import image_reference, linux_configuration


class GpuPoolArgs(TypedDict):
    plan: ClusterPlan  # the admin account and keys
    pool: PlannedPool
    user_data: str  # rendered cloud-init
    resource_group_name: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    node_security_group_id: pulumi.Input[str]
    identity_id: pulumi.Input[str]


def vm_profile(
    pool: PlannedPool, args: GpuPoolArgs, scale_set: ScaleSet
) -> azure.compute.VirtualMachineScaleSetVMProfileArgs:
    d = pool.azure
    assert d is not None
    return azure.compute.VirtualMachineScaleSetVMProfileArgs(
        os_profile=azure.compute.VirtualMachineScaleSetOSProfileArgs(
            computer_name_prefix=scale_set.computer_name_prefix,
            admin_username=args["plan"].access.admin_username,
            linux_configuration=linux_configuration(args["plan"]),
            custom_data=base64.b64encode(args["user_data"].encode()).decode(),
        ),
        storage_profile=azure.compute.VirtualMachineScaleSetStorageProfileArgs(
            image_reference=image_reference(d.image),
            os_disk=azure.compute.VirtualMachineScaleSetOSDiskArgs(
                create_option="FromImage",
                caching=azure.compute.CachingTypes.READ_WRITE,
                disk_size_gb=d.root_volume_gib,
                # Managed disks are encrypted at rest with platform-managed keys (server-side encryption).
                managed_disk=azure.compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                    storage_account_type=d.os_disk_type
                ),
            ),
        ),
        network_profile=azure.compute.VirtualMachineScaleSetNetworkProfileArgs(
            network_interface_configurations=[
                azure.compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                    name="primary",
                    primary=True,
                    enable_accelerated_networking=d.accelerated_networking,
                    network_security_group=azure.compute.SubResourceArgs(id=args["node_security_group_id"]),
                    # No public_ip_address_configuration: nodes reach the internet through the NAT gateway.
                    ip_configurations=[
                        azure.compute.VirtualMachineScaleSetIPConfigurationArgs(
                            name="ipv4",
                            primary=True,
                            subnet=azure.compute.ApiEntityReferenceArgs(id=args["subnet_id"]),
                        )
                    ],
                )
            ]
        ),
        diagnostics_profile=azure.compute.DiagnosticsProfileArgs(
            boot_diagnostics=azure.compute.BootDiagnosticsArgs(enabled=True)  # managed storage account
        ),
        priority=d.priority,
        eviction_policy=d.eviction_policy,
        billing_profile=azure.compute.BillingProfileArgs(max_price=d.max_price) if d.max_price is not None else None,
    )


class AzureGpuPool(pulumi.ComponentResource):
    """One Uniform scale set per planned InfiniBand domain (a rack-scale pool: per NVL72 rack, 18 VMs sharing NVLink,
    their InfiniBand reaching across the scale sets), each set up so the fabric stays whole:

    - single placement group (InfiniBand links only VMs of one scale set and one placement group);
    - platform fault domain count 1 and no overprovisioning (extra VMs would join and leave the fabric);
    - manual upgrade policy: a model change never reimages running training nodes;
    - accelerated networking on the one Ethernet NIC, no public IP, the cluster's NSG;
    - the user-assigned managed identity, key-only admin login, encrypted Premium SSD OS disk;
    - spot pools: Spot priority, the planned eviction policy, max price -1 (evicted for capacity only).
    Tags come from the cluster and pool transformations.
    """

    scale_set_names: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: GpuPoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:GpuPool", name, {}, azure_component_opts(opts))
        pool = args["pool"]
        d = pool.azure
        assert d is not None, f"pool {pool.name} has no Azure details"
        self.scale_set_names = {}
        # a rack-scale pool's scale sets are its NVL72 racks (<pool>-nvl<k>), others their InfiniBand domains
        kind = "nvl" if pool.nvlink is not None else "ib"
        for s in d.scale_sets:
            vmss = azure.compute.VirtualMachineScaleSet(
                f"{name}-{kind}{s.index}",
                resource_group_name=args["resource_group_name"],
                location=pool.region,
                zones=[pool.zone] if pool.zone else None,
                # a burst pool starts empty: Slurm's resume/suspend programs set the capacity
                sku=azure.compute.SkuArgs(
                    name=pool.instance_type, tier="Standard", capacity=0 if pool.burst else s.nodes
                ),
                orchestration_mode=d.orchestration_mode,
                single_placement_group=d.single_placement_group,
                platform_fault_domain_count=d.platform_fault_domain_count,
                overprovision=d.overprovision,
                upgrade_policy=azure.compute.UpgradePolicyArgs(mode=azure.compute.UpgradeMode.MANUAL),
                identity=azure.compute.VirtualMachineScaleSetIdentityArgs(
                    type=azure.compute.ResourceIdentityType.USER_ASSIGNED,
                    user_assigned_identities=[args["identity_id"]],
                ),
                virtual_machine_profile=vm_profile(pool, args, s),
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=["sku.capacity"] if pool.burst else None),
            )
            self.scale_set_names[s.name] = vmss.name
        self.register_outputs({"scale_sets": self.scale_set_names})
