"""The Slurm controller on GCP: one private VM in the host VPC's subnet (no external IP), OS Login only."""

from __future__ import annotations

from typing import TypedDict

import pulumi
import pulumi_gcp as gcp

from aicluster.plan import ClusterPlan

from .gpu_pool import SCOPES


class GcpControllerArgs(TypedDict):
    plan: ClusterPlan
    user_data: str
    network_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    service_account_email: pulumi.Input[str]
    boot_disk_type: str


class GcpSlurmController(pulumi.ComponentResource):
    private_ip: pulumi.Output[str]
    instance_id: pulumi.Output[str]

    def __init__(self, name: str, args: GcpControllerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:SlurmController", name, {}, opts)
        c = args["plan"].controller
        assert c is not None
        assert c.zone is not None
        vm = gcp.compute.Instance(
            f"{name}-vm",
            machine_type=c.instance_type,
            zone=c.zone,
            boot_disk=gcp.compute.InstanceBootDiskArgs(
                auto_delete=True,
                initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=c.image, size=c.root_volume_gib, type=args["boot_disk_type"]
                ),
            ),
            network_interfaces=[
                gcp.compute.InstanceNetworkInterfaceArgs(network=args["network_id"], subnetwork=args["subnet_id"])
            ],
            shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_vtpm=True, enable_integrity_monitoring=True
            ),
            metadata={"enable-oslogin": "TRUE", "user-data": args["user_data"]},
            service_account=gcp.compute.InstanceServiceAccountArgs(email=args["service_account_email"], scopes=SCOPES),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.private_ip = vm.network_interfaces.apply(lambda n: (n[0].network_ip or "") if n else "")
        self.instance_id = vm.instance_id
        self.register_outputs({"private_ip": self.private_ip, "instance_id": self.instance_id})
