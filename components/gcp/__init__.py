"""GCP components and how AiCluster assembles them from a plan: the networks, the nodes' service account, the audit
log and the file systems here; the pools and the control plane in the stack's scheduler's part (components.slurm.gcp:
GPU MIGs, TPU slices and slurmctld's VM; components.kubernetes.gke: a GKE cluster and its node pools)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from aicluster.plan import ClusterPlan

from .. import scheduler_part
from ..outputs import filesystem_outputs
from ..tags import tagging
from .audit import GcpAuditLog
from .filesystems import GcpFilestore, GcpFilesystemArgs, GcpManagedLustre
from .gpu_pool import GcpGpuPool
from .identity import GcpNodeIdentity
from .network import GcpNetwork
from .tpu import GcpTpuSlices

__all__ = [
    "GcpAuditLog",
    "GcpBase",
    "GcpFilestore",
    "GcpGpuPool",
    "GcpManagedLustre",
    "GcpNetwork",
    "GcpNodeIdentity",
    "GcpTpuSlices",
    "build",
]


@dataclass(frozen=True)
class GcpBase:
    """What the GCP builder made that a scheduler's part builds on: the networks, by plan network key, and the
    service account the nodes run as."""

    networks: dict[str, GcpNetwork]
    service_account_email: pulumi.Output[str]


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
    scheduler_part(plan.scheduler, "gcp")(plan, parent, GcpBase(networks, identity.email), outputs)

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
    return outputs
