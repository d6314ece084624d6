"""Slurm on GCP: the GPU pools as managed instance groups on their NIC VPCs, the TPU pools as Cloud TPU slices, and
the Slurm controller, one private VM in the host VPC's subnet (no external IP), OS Login only."""

from __future__ import annotations

from typing import Any, TypedDict

import pulumi
import pulumi_gcp as gcp

from aicluster.plan import ClusterPlan
from aicluster.render import controller_cloud_init, node_cloud_init

from ..gcp import GcpBase
from ..gcp.gpu_pool import SCOPES, GcpGpuPool
from ..gcp.tpu import GcpTpuSlices
from ..outputs import pool_outputs
from ..tags import tagging


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


def build(plan: ClusterPlan, parent: pulumi.ComponentResource, base: GcpBase, outputs: dict[str, Any]) -> None:
    """Slurm's part in GCP (components.Part): the GCP pools and, where it runs on GCP, the controller."""
    name = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    networks = base.networks
    for pool in plan.pools:
        if pool.provider != "gcp":
            continue
        net = networks[pool.network]
        pool_opts = pulumi.ResourceOptions(parent=parent, transformations=[tagging(pool.tags)])
        if pool.tpu is not None:
            tpu = GcpTpuSlices(
                f"{name}-{pool.name}",
                {
                    "pool": pool,
                    "project": net.project,
                    "network_id": net.host_network_path,
                    "subnet_id": net.compute_subnet_path,
                    "service_account_email": base.service_account_email,
                },
                pool_opts,
            )
            outputs["pools"][pool.name] = pool_outputs(
                pool,
                accelerator_type=pool.tpu.accelerator_type,
                runtime_version=pool.tpu.runtime_version,
                slices=[
                    {"name": s.name, "resource": tpu.slice_names[s.name], "hosts": s.hosts, "first_node": s.first_node}
                    for s in pool.tpu.slices
                ],
            )
            continue
        assert pool.gcp is not None
        gp = GcpGpuPool(
            f"{name}-{pool.name}",
            {
                "pool": pool,
                "user_data": node_cloud_init(plan, pool),
                "vpc_ids": net.vpc_ids,
                "subnet_ids": net.subnet_ids,
                "service_account_email": base.service_account_email,
            },
            pool_opts,
        )
        outputs["pools"][pool.name] = pool_outputs(
            pool,
            gpu_nics=[{"nic": f"nic{n.index}", "type": n.nic_type, "network": n.vpc or "host"} for n in pool.gcp.nics],
            # one entry per placement group: which pool nodes share a compact placement, and its MIG
            placement_groups=[
                {
                    "name": g.name,
                    "instance_group": gp.group_names[g.name],
                    "nodes": g.nodes,
                    "first_node": g.first_node,
                    "hostname_prefix": g.hostname_prefix,
                    "max_distance": g.max_distance,
                }
                for g in pool.gcp.groups
            ],
        )

    c = plan.controller
    if c is not None and c.provider == "gcp":
        net = networks[c.network]
        ctl = GcpSlurmController(
            f"{name}-slurmctld",
            {
                "plan": plan,
                "user_data": controller_cloud_init(plan),
                "network_id": net.host_network_id,
                "subnet_id": net.subnet_ids[("compute", 0)],
                "service_account_email": base.service_account_email,
                "boot_disk_type": c.root_disk_service,
            },
            opts,
        )
        outputs["controller"] = {"kind": c.kind, "private_ip": ctl.private_ip, "instance_id": ctl.instance_id}
