"""Azure components and how AiCluster assembles them from a plan."""

from __future__ import annotations

from typing import Any

import pulumi

from aicluster.plan import ClusterPlan
from aicluster.render import controller_cloud_init, node_cloud_init

from ..outputs import filesystem_outputs, pool_outputs
from ..tags import tagging
from .aks import AzureKubernetesCluster, node_group_outputs
from .audit import AzureAuditLog
from .controller import AzureSlurmController
from .gpu_pool import AzureGpuPool
from .identity import AzureNodeIdentity
from .lustre import AzureFilesystemArgs, AzureManagedLustre
from .netapp import AzureNetAppFiles
from .network import AzureNetwork

__all__ = [
    "AzureAuditLog",
    "AzureGpuPool",
    "AzureKubernetesCluster",
    "AzureManagedLustre",
    "AzureNetAppFiles",
    "AzureNetwork",
    "AzureNodeIdentity",
    "AzureSlurmController",
    "build",
]


def build(plan: ClusterPlan, parent: pulumi.ComponentResource) -> dict[str, Any]:
    """Create the Azure part of the cluster under `parent`; return the stack outputs it contributes."""
    name = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    networks: dict[str, AzureNetwork] = {}
    identities: dict[str, AzureNodeIdentity] = {}
    outputs: dict[str, Any] = {"networks": {}, "pools": {}, "filesystems": {}}
    kube = plan.kubernetes
    aks = kube is not None and kube.provider == "azure"  # AKS runs the pools; no scale sets or Slurm VMs
    for n in plan.networks:
        if n.provider != "azure":
            continue
        net = AzureNetwork(f"{name}-{n.region}", {"network": n, "cluster": name}, opts)
        networks[n.key] = net
        if not aks:  # the identity the Slurm VMs run as; AKS makes its own
            identities[n.key] = AzureNodeIdentity(
                f"{name}-{n.region}-nodes", {"location": n.region, "resource_group_name": net.resource_group_name}, opts
            )
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

    if kube is not None and aks:
        # Kubernetes: the pools are AKS agent pools (one per scale set), and no Slurm controller exists
        net = networks[kube.network]
        cluster = AzureKubernetesCluster(
            f"{name}-aks",
            {"plan": plan, "resource_group_name": net.resource_group_name, "subnet_id": net.compute_subnet_id},
            opts,
        )
        outputs["kubernetes"] = {
            "service": kube.service,
            "cluster_name": cluster.cluster_name,
            "endpoint": cluster.endpoint,
            "resource_group": net.resource_group_name,
            "oidc_issuer_url": cluster.oidc_issuer_url,
            "node_groups": node_group_outputs(kube.node_groups, cluster.agent_pool_names),
        }
        outputs["kubeconfig"] = cluster.kubeconfig  # a secret
        for pool in plan.pools:  # the stack outputs list every pool, here with its AKS agent pools
            if pool.provider == "azure":
                names = [cluster.agent_pool_names[g.name] for g in kube.node_groups if g.pool == pool.name]
                outputs["pools"][pool.name] = pool_outputs(pool, agent_pool_names=names)

    for pool in plan.pools:
        if pool.provider != "azure" or aks:
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

    c = plan.controller
    if c is not None and c.provider == "azure" and not aks:
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
    return outputs
