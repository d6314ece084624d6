"""GCP components and how AiCluster assembles them from a plan."""

from __future__ import annotations

from typing import Any

import pulumi

from aicluster.plan import ClusterPlan
from aicluster.render import controller_cloud_init, node_cloud_init

from ..outputs import filesystem_outputs, learned, pool_outputs
from ..tags import tagging
from .audit import GcpAuditLog
from .controller import GcpSlurmController
from .filesystems import GcpFilestore, GcpFilesystemArgs, GcpManagedLustre
from .gke import GkeCluster
from .gpu_pool import GcpGpuPool
from .identity import GcpNodeIdentity
from .network import GcpNetwork
from .tpu import GcpTpuSlices

__all__ = [
    "GcpAuditLog",
    "GcpFilestore",
    "GcpGpuPool",
    "GcpManagedLustre",
    "GcpNetwork",
    "GcpNodeIdentity",
    "GcpSlurmController",
    "GcpTpuSlices",
    "GkeCluster",
    "build",
]


def build(plan: ClusterPlan, parent: pulumi.ComponentResource) -> dict[str, Any]:
    """Create the GCP part of the cluster under `parent`; return the stack outputs it contributes."""
    name = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    outputs: dict[str, Any] = {"networks": {}, "pools": {}, "filesystems": {}}
    networks: dict[str, GcpNetwork] = {}
    for n in plan.networks:
        if n.provider != "gcp":
            continue
        net = GcpNetwork(f"{name}-{n.region}", {"network": n, "cluster": name}, opts)
        networks[n.key] = net
        outputs["networks"][n.key] = {
            "network": net.host_network_id,
            "mtu": n.mtu,
            "gpu_vpcs": {vpc.name: net.vpc_ids[vpc.name] for vpc in n.vpcs},
        }
    outputs["network_handles"] = networks
    if not networks:
        return outputs
    identity = GcpNodeIdentity(f"{name}-nodes", name, opts)
    home = next(iter(networks.values()))
    if "gcp" in plan.audit_logging:
        GcpAuditLog(f"{name}-audit", home.project, opts)
        outputs["audit"] = {"data_access_logs": True}

    kube = plan.kubernetes
    if kube is not None and kube.provider == "gcp":
        # GKE node pools replace the MIGs, TPU VMs and slurmctld; the GPU VPCs stay, the node pools attach to them
        _build_gke(plan, parent, networks[kube.network], identity.email, outputs)
    for pool in plan.pools:
        if pool.provider != "gcp" or kube is not None:
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
                    "service_account_email": identity.email,
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
                "service_account_email": identity.email,
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

    for fs in plan.filesystems:
        if fs.provider != "gcp":
            continue
        net = networks[fs.network]
        assert net.services_connection is not None, f"the plan gave {fs.name} no private services access range"
        fs_args: GcpFilesystemArgs = {
            "filesystem": fs,
            "network_path": net.host_network_path,
            "network_name": net.host_network_name,
            "services_connection": net.services_connection,
        }
        fs_opts = pulumi.ResourceOptions(parent=parent, transformations=[tagging(fs.tags)])
        if fs.service == "gcp-managed-lustre":
            lustre = GcpManagedLustre(f"{name}-{fs.name}", fs_args, fs_opts)
            info = filesystem_outputs(fs, mount_point=lustre.mount_point, mount_command=lustre.mount_command)
        elif fs.service == "filestore":
            nfs = GcpFilestore(f"{name}-{fs.name}", fs_args, fs_opts)
            info = filesystem_outputs(fs, mount_ip=nfs.mount_ip, export_path=nfs.export_path)
        else:
            raise ValueError(f"no GCP component for file-system service {fs.service!r}")
        outputs["filesystems"][fs.name] = info

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
                "service_account_email": identity.email,
                "boot_disk_type": c.root_disk_service,
            },
            opts,
        )
        outputs["controller"] = {"kind": c.kind, "private_ip": ctl.private_ip, "instance_id": ctl.instance_id}
    return outputs


def _build_gke(
    plan: ClusterPlan,
    parent: pulumi.ComponentResource,
    net: GcpNetwork,
    service_account_email: pulumi.Output[str],
    outputs: dict[str, Any],
) -> None:
    kube = plan.kubernetes
    assert kube is not None
    planned = next(n for n in plan.networks if n.key == kube.network)
    gke = GkeCluster(
        f"{plan.name}-gke",
        {
            "plan": plan,
            "project": net.project,
            "network_id": net.host_network_id,
            "subnet_id": net.subnet_ids[("compute", 0)],
            "network_cidr": planned.cidr,
            "learned_cidrs": learned(plan, kube.network),
            "vpc_ids": net.vpc_ids,
            "subnet_ids": net.subnet_ids,
            "service_account_email": service_account_email,
        },
        pulumi.ResourceOptions(parent=parent),
    )
    outputs["kubernetes"] = {
        "service": kube.service,
        "cluster_name": gke.cluster_name,
        "endpoint": gke.endpoint,
        "node_groups": {
            g.name: {
                "node_pool": gke.node_pools[g.name],
                "pool": g.pool,
                "zone": g.zone,
                "nodes": g.nodes,
                "accelerator_kind": g.accelerator_kind,
                "labels": g.labels,
            }
            for g in kube.node_groups
        },
    }
    outputs["kubeconfig"] = gke.kubeconfig
    for pool in plan.pools:  # the stack outputs list every pool, here with its GKE node pools
        if pool.provider == "gcp":
            names = [gke.node_pools[g.name] for g in kube.node_groups if g.pool == pool.name]
            outputs["pools"][pool.name] = pool_outputs(pool, node_pool_names=names)
