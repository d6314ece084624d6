"""Slurm on Azure: the pools as scale sets (one per InfiniBand domain), the identity the Slurm VMs run as in each
network, and the Slurm controller, one VM with one NIC in the compute subnet, no public IP."""

from __future__ import annotations

import base64
from typing import Any, TypedDict

import pulumi
import pulumi_azure_native as azure

from aicluster.plan import ClusterPlan
from aicluster.render import controller_cloud_init, node_cloud_init

from ..azure import AzureBase
from ..azure.aliases import azure_component_opts
from ..azure.common import image_reference, linux_configuration
from ..azure.gpu_pool import AzureGpuPool
from ..azure.identity import AzureNodeIdentity
from ..outputs import pool_outputs
from ..tags import tagging

OS_DISK_TYPE = "Premium_LRS"


class ControllerArgs(TypedDict):
    plan: ClusterPlan
    user_data: str
    resource_group_name: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    node_security_group_id: pulumi.Input[str]
    identity_id: pulumi.Input[str]


class AzureSlurmController(pulumi.ComponentResource):
    private_ip: pulumi.Output[str]
    vm_id: pulumi.Output[str]

    def __init__(self, name: str, args: ControllerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:SlurmController", name, {}, azure_component_opts(opts))
        plan = args["plan"]
        c = plan.controller
        assert c is not None
        child = pulumi.ResourceOptions(parent=self)
        nic = azure.network.NetworkInterface(
            f"{name}-nic",
            resource_group_name=args["resource_group_name"],
            location=c.region,
            enable_accelerated_networking=True,
            network_security_group=azure.network.NetworkSecurityGroupArgs(id=args["node_security_group_id"]),
            ip_configurations=[
                azure.network.NetworkInterfaceIPConfigurationArgs(
                    name="ipv4",
                    primary=True,
                    private_ip_allocation_method="Dynamic",
                    subnet=azure.network.SubnetArgs(id=args["subnet_id"]),
                )
            ],
            opts=child,
        )
        vm = azure.compute.VirtualMachine(
            f"{name}-vm",
            resource_group_name=args["resource_group_name"],
            location=c.region,
            zones=[c.zone] if c.zone else None,
            hardware_profile=azure.compute.HardwareProfileArgs(vm_size=c.instance_type),
            identity=azure.compute.VirtualMachineIdentityArgs(
                type=azure.compute.ResourceIdentityType.USER_ASSIGNED, user_assigned_identities=[args["identity_id"]]
            ),
            os_profile=azure.compute.OSProfileArgs(
                computer_name=f"{plan.name}-slurmctld"[:64],
                admin_username=plan.access.admin_username,
                linux_configuration=linux_configuration(plan),
                custom_data=base64.b64encode(args["user_data"].encode()).decode(),
            ),
            storage_profile=azure.compute.StorageProfileArgs(
                image_reference=image_reference(c.image),
                os_disk=azure.compute.OSDiskArgs(
                    create_option="FromImage",
                    caching=azure.compute.CachingTypes.READ_WRITE,
                    disk_size_gb=c.root_volume_gib,
                    delete_option="Delete",
                    managed_disk=azure.compute.ManagedDiskParametersArgs(storage_account_type=OS_DISK_TYPE),
                ),
            ),
            network_profile=azure.compute.NetworkProfileArgs(
                network_interfaces=[azure.compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]
            ),
            diagnostics_profile=azure.compute.DiagnosticsProfileArgs(
                boot_diagnostics=azure.compute.BootDiagnosticsArgs(enabled=True)
            ),
            opts=child,
        )
        self.private_ip = nic.ip_configurations.apply(lambda cfgs: (cfgs[0].private_ip_address or "") if cfgs else "")
        self.vm_id = vm.id
        self.register_outputs({"private_ip": self.private_ip, "vm_id": vm.id})


def build(plan: ClusterPlan, parent: pulumi.ComponentResource, base: AzureBase, outputs: dict[str, Any]) -> None:
    """Slurm's part in Azure (components.Part): the Azure pools and, where it runs on Azure, the controller."""
    name = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    networks = base.networks
    identities = {
        key: AzureNodeIdentity(
            f"{name}-{plan.network(key).region}-nodes",
            {"location": plan.network(key).region, "resource_group_name": net.resource_group_name},
            opts,
        )
        for key, net in networks.items()
    }
    for pool in plan.pools:
        if pool.provider != "azure":
            continue
        assert pool.azure is not None
        net = networks[pool.network]
        gp = AzureGpuPool(
            f"{name}-{pool.name}",
            {
                "plan": plan,
                "pool": pool,
                "user_data": node_cloud_init(plan, pool),
                "resource_group_name": net.resource_group_name,
                "subnet_id": net.compute_subnet_id,
                "node_security_group_id": net.node_security_group_id,
                "identity_id": identities[pool.network].id,
            },
            pulumi.ResourceOptions(parent=parent, transformations=[tagging(pool.tags)]),
        )
        outputs["pools"][pool.name] = pool_outputs(
            pool,
            resource_group=net.resource_group_name,
            # one entry per InfiniBand domain: which pool nodes share a fabric, and the scale set behind it
            ib_domains=[
                {
                    "name": s.name,
                    "scale_set": gp.scale_set_names[s.name],
                    "nodes": s.nodes,
                    "first_node": s.first_node,
                    "hostname_prefix": s.computer_name_prefix,
                }
                for s in pool.azure.scale_sets
            ],
        )

    c = plan.controller
    if c is not None and c.provider == "azure":
        net = networks[c.network]
        ctl = AzureSlurmController(
            f"{name}-slurmctld",
            {
                "plan": plan,
                "user_data": controller_cloud_init(plan),
                "resource_group_name": net.resource_group_name,
                "subnet_id": net.compute_subnet_id,
                "node_security_group_id": net.node_security_group_id,
                "identity_id": identities[c.network].id,
            },
            opts,
        )
        outputs["controller"] = {"kind": c.kind, "private_ip": ctl.private_ip, "vm_id": ctl.vm_id}
