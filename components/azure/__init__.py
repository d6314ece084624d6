"""Azure components and how AiCluster assembles them from a plan: the networks, the audit log and the file systems
here; the pools and the control plane in the stack's scheduler's part (components.slurm.azure: scale sets, the nodes'
identities and slurmctld's VM; components.kubernetes.aks: an AKS cluster and its agent pools)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from aicluster.plan import ClusterPlan

from .. import scheduler_part
from ..outputs import filesystem_outputs
from ..tags import tagging
from .audit import AzureAuditLog
from .gpu_pool import AzureGpuPool
from .identity import AzureNodeIdentity
from .lustre import AzureFilesystemArgs, AzureManagedLustre
from .monitoring import AzureManagedPrometheus
from .netapp import AzureNetAppFiles
from .network import AzureNetwork

__all__ = [
    "AzureAuditLog",
    "AzureBase",
    "AzureGpuPool",
    "AzureManagedLustre",
    "AzureManagedPrometheus",
    "AzureNetAppFiles",
    "AzureNetwork",
    "AzureNodeIdentity",
    "build",
]


@dataclass(frozen=True)
class AzureBase:
    """What the Azure builder made that a scheduler's part builds on: the networks, by plan network key, and the
    managed Prometheus (workspace and collection rule) when the stack asks for one here."""

    networks: dict[str, AzureNetwork]
    prometheus: AzureManagedPrometheus | None = None


def build(plan: ClusterPlan, parent: pulumi.ComponentResource) -> dict[str, Any]:
    """Create the Azure part of the cluster under `parent`; return the stack outputs it contributes."""
    name = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    networks: dict[str, AzureNetwork] = {}
    outputs: dict[str, Any] = {"networks": {}, "pools": {}, "filesystems": {}}
    for n in plan.networks:
        if n.provider != "azure":
            continue
        net = AzureNetwork(f"{name}-{n.region}", {"network": n, "cluster": name}, opts)
        networks[n.key] = net
        outputs["networks"][n.key] = {
            "resource_group": net.resource_group_name,
            "vnet_id": net.vnet_id,
            "compute_subnet_id": net.compute_subnet_id,
        }
    outputs["network_handles"] = networks
    if "azure" in plan.audit_logging:
        home = next(n for n in plan.networks if n.provider == "azure")
        log = AzureAuditLog(
            f"{name}-audit",
            {"cluster": name, "location": home.region, "resource_group_name": networks[home.key].resource_group_name},
            opts,
        )
        outputs["audit"] = {"workspace_id": log.workspace_id}
    prometheus = None
    m = plan.monitoring
    if m.service is not None and m.provider == "azure":
        home = next(n for n in plan.networks if n.provider == "azure" and n.region == m.region)
        prometheus = AzureManagedPrometheus(
            f"{name}-prometheus",
            {
                "cluster": name,
                "monitoring": m,
                "resource_group_name": networks[home.key].resource_group_name,
                "rule_groups": getattr(parent, "alert_rules", ()),
            },
            opts,
        )
        outputs["monitoring"] = {
            "service": m.service,
            "collector": m.collector,
            "region": m.region,
            "workspace_id": prometheus.workspace_id,
            "data_collection_rule_id": prometheus.rule_id,
        }
    scheduler_part(plan.scheduler, "azure")(plan, parent, AzureBase(networks, prometheus), outputs)

    for fs in plan.filesystems:
        if fs.provider != "azure":
            continue
        net = networks[fs.network]
        compute = plan.network(fs.network).role("compute")
        assert compute is not None
        subnet = net.lustre_subnet_id if fs.service == "azure-managed-lustre" else net.netapp_subnet_id
        assert subnet is not None, f"the plan gave {fs.name} no dedicated subnet"
        fs_args: AzureFilesystemArgs = {
            "filesystem": fs,
            "resource_group_name": net.resource_group_name,
            "subnet_id": subnet,
            "client_cidr": compute.cidr,
        }
        fs_opts = pulumi.ResourceOptions(parent=parent, transformations=[tagging(fs.tags)])
        if fs.service == "azure-managed-lustre":
            lustre = AzureManagedLustre(f"{name}-{fs.name}", fs_args, fs_opts)
            info = filesystem_outputs(fs, mgs_address=lustre.mgs_address, mount_command=lustre.mount_command)
        elif fs.service == "azure-netapp-files":
            anf = AzureNetAppFiles(f"{name}-{fs.name}", fs_args, fs_opts)
            info = filesystem_outputs(fs, mount_ip=anf.mount_ip, export_path=anf.export_path)
        else:
            raise ValueError(f"no Azure component for file-system service {fs.service!r}")
        outputs["filesystems"][fs.name] = info
    return outputs
