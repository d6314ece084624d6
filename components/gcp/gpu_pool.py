"""A GCP GPU pool: per placement group, a compact placement policy (where the plan keeps one), an instance
template with every NIC of the machine type in order, and a zonal managed instance group."""

from __future__ import annotations

from typing import TypedDict

import pulumi
import pulumi_gcp as gcp

from aicluster.plan import GcpNic, PlacementGroup, PlannedPool

# The Cloud Platform scope with IAM deciding what the node account may do (Google's recommendation).
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
RESERVATION_KEY = "compute.googleapis.com/reservation-name"


class GcpGpuPoolArgs(TypedDict):
    pool: PlannedPool
    user_data: str  # rendered cloud-init
    vpc_ids: dict[str, pulumi.Output[str]]  # GcpNic.vpc -> network self link ("" = host VPC)
    subnet_ids: dict[tuple[str, int], pulumi.Output[str]]  # (subnet role, index) -> subnetwork self link
    service_account_email: pulumi.Input[str]


def network_interfaces(
    nics: tuple[GcpNic, ...], args: GcpGpuPoolArgs
) -> list[gcp.compute.InstanceTemplateNetworkInterfaceArgs]:
    """nic0 first; no access_configs anywhere, so no NIC gets an external IP."""
    return [
        gcp.compute.InstanceTemplateNetworkInterfaceArgs(
            network=args["vpc_ids"][nic.vpc],
            subnetwork=args["subnet_ids"][(nic.subnet_role, nic.subnet_index)],
            nic_type=nic.nic_type,
            stack_type=nic.stack_type,  # IPV6_ONLY: A4X Max's MRDMA NICs; None: GCP's default
        )
        for nic in nics
    ]


class GcpGpuPool(pulumi.ComponentResource):
    group_names: dict[str, pulumi.Output[str]]  # PlacementGroup.name -> MIG name

    def __init__(self, name: str, args: GcpGpuPoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:GpuPool", name, {}, opts)
        pool = args["pool"]
        d = pool.gcp
        assert d is not None, "a GCP GPU pool needs its plan details"
        assert pool.zone is not None
        self.group_names = {}
        for group in d.groups:
            self.group_names[group.name] = self._group(name, pool, group, args)
        self.register_outputs({"group_names": self.group_names})

    def _group(self, name: str, pool: PlannedPool, group: PlacementGroup, args: GcpGpuPoolArgs) -> pulumi.Output[str]:
        d = pool.gcp
        assert d is not None
        assert pool.zone is not None
        child = pulumi.ResourceOptions(parent=self)
        policy_link: pulumi.Output[str] | None = None
        workload_link: pulumi.Output[str] | None = None
        if d.placement == "compact" and group.gpu_topology:
            # A rack-scale type's group is one NVLink domain. A MIG of A4X/A4X Max VMs must carry a workload policy
            # with the accelerator topology (GCP: "About workload policies"); it takes no compact placement policy.
            workload = gcp.compute.ResourcePolicy(
                f"{name}-{group.name}-workload",
                region=pool.region,
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT", accelerator_topology=group.gpu_topology
                ),
                description=f"NVLink domain {group.name}: {group.nodes} {pool.instance_type} VMs "
                f"({group.gpu_topology})",
                opts=child,
            )
            workload_link = workload.self_link
        elif d.placement == "compact":
            policy = gcp.compute.ResourcePolicy(
                f"{name}-{group.name}-placement",
                region=pool.region,
                group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
                    collocation="COLLOCATED", max_distance=group.max_distance
                ),
                description=f"compact placement for {group.nodes} {pool.instance_type} VMs",
                opts=child,
            )
            policy_link = policy.self_link
        affinity = gcp.compute.InstanceTemplateReservationAffinityArgs(
            type=d.reservation_affinity,
            specific_reservation=gcp.compute.InstanceTemplateReservationAffinitySpecificReservationArgs(
                key=RESERVATION_KEY, values=[d.reservation]
            )
            if d.reservation
            else None,
        )
        spot_like = d.provisioning_model in ("SPOT", "FLEX_START")
        template = gcp.compute.InstanceTemplate(
            f"{name}-{group.name}",
            machine_type=pool.instance_type,
            region=pool.region,
            disks=[
                gcp.compute.InstanceTemplateDiskArgs(
                    boot=True,
                    auto_delete=True,
                    source_image=d.image,
                    disk_size_gb=d.root_volume_gib,
                    disk_type=d.boot_disk_type,
                )
            ],
            network_interfaces=network_interfaces(d.nics, args),
            # GPU VMs cannot live-migrate; they stop for host maintenance.
            scheduling=gcp.compute.InstanceTemplateSchedulingArgs(
                on_host_maintenance=d.on_host_maintenance,
                automatic_restart=not spot_like,
                provisioning_model=d.provisioning_model,
                preemptible=d.provisioning_model == "SPOT",
                instance_termination_action="DELETE" if spot_like else None,
            ),
            reservation_affinity=affinity,
            resource_policies=policy_link,  # an instance template takes one
            shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(
                # Secure Boot stays off: the GPU and GPUDirect kernel modules the tuning step builds are unsigned.
                enable_secure_boot=False,
                enable_vtpm=d.shielded_vm,
                enable_integrity_monitoring=d.shielded_vm,
            ),
            metadata={"enable-oslogin": "TRUE" if d.os_login else "FALSE", "user-data": args["user_data"]},
            service_account=gcp.compute.InstanceTemplateServiceAccountArgs(
                email=args["service_account_email"], scopes=SCOPES
            ),
            opts=child,
        )
        flex = d.provisioning_model == "FLEX_START"
        mig = gcp.compute.InstanceGroupManager(
            f"{name}-{group.name}",
            zone=pool.zone,
            base_instance_name=group.hostname_prefix,
            versions=[gcp.compute.InstanceGroupManagerVersionArgs(instance_template=template.self_link_unique)],
            # flex-start capacity arrives through a resize request, all VMs at once; a burst pool starts empty and
            # Slurm's resume/suspend programs resize it (so `pulumi up` leaves its size alone)
            target_size=0 if flex or pool.burst else group.nodes,
            wait_for_instances=False,
            # a new template never replaces a running Slurm node: VMs get it when they are recreated (a burst
            # pool's resume, a resize, a repair); PROACTIVE would replace them under their jobs
            update_policy=gcp.compute.InstanceGroupManagerUpdatePolicyArgs(
                type="OPPORTUNISTIC", minimal_action="REPLACE"
            ),
            resource_policies=gcp.compute.InstanceGroupManagerResourcePoliciesArgs(workload_policy=workload_link)
            if workload_link is not None
            else None,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["targetSize"]))
            if pool.burst
            else child,
        )
        if flex:
            assert d.max_run_duration_s is not None
            gcp.compute.ResizeRequest(
                f"{name}-{group.name}-request",
                zone=pool.zone,
                instance_group_manager=mig.name,
                resize_by=group.nodes,
                requested_run_duration=gcp.compute.ResizeRequestRequestedRunDurationArgs(
                    seconds=str(d.max_run_duration_s)
                ),
                description=f"flex-start: {group.nodes} VMs for {d.max_run_duration_s // 3600} h",
                opts=pulumi.ResourceOptions(parent=self, depends_on=[mig]),
            )
        return mig.name
