"""AWS components and how AiCluster assembles them from a plan."""

from __future__ import annotations

from typing import Any

import pulumi

from aicluster.plan import ClusterPlan
from aicluster.render import controller_cloud_init, node_cloud_init

from ..outputs import filesystem_outputs, learned, pool_outputs
from ..tags import tagging
from .audit import AwsAuditTrail
from .controller import AwsSlurmController
from .efs import AwsEfsFileSystem
from .eks import AwsEksCluster
from .gpu_pool import AwsGpuPool
from .identity import AwsNodeIdentity
from .lustre import AwsLustreFileSystem, FilesystemArgs
from .network import AwsNetwork

__all__ = [
    "AwsAuditTrail",
    "AwsEfsFileSystem",
    "AwsEksCluster",
    "AwsGpuPool",
    "AwsLustreFileSystem",
    "AwsNetwork",
    "AwsNodeIdentity",
    "AwsSlurmController",
    "build",
]


def build(plan: ClusterPlan, parent: pulumi.ComponentResource) -> dict[str, Any]:
    """Create the AWS part of the cluster under `parent`; return the stack outputs it contributes."""
    name = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    networks = {
        n.key: AwsNetwork(f"{name}-{n.region}", {"network": n, "remote_cidrs": learned(plan, n.key)}, opts)
        for n in plan.networks
        if n.provider == "aws"
    }
    k = plan.kubernetes
    eks = k is not None and k.provider == "aws"
    # Slurm's nodes run as this identity; EKS nodes run as the cluster's node role instead.
    identity = None if eks else AwsNodeIdentity(f"{name}-nodes", {"cluster": name}, opts)
    outputs: dict[str, Any] = {"networks": {}, "pools": {}, "filesystems": {}, "network_handles": dict(networks)}
    for key, net in networks.items():
        outputs["networks"][key] = {"vpc_id": net.vpc_id, "subnet_ids": net.compute_subnet_ids}
    if "aws" in plan.audit_logging:
        home = next(n.region for n in plan.networks if n.provider == "aws")
        trail = AwsAuditTrail(f"{name}-audit", {"cluster": name, "region": home}, opts)
        outputs["audit"] = {"trail_arn": trail.trail_arn, "bucket": trail.bucket_name}

    if k is not None and eks:
        # Kubernetes instead of Slurm: the pools become EKS node groups; no Auto Scaling groups, no controller.
        net = networks[k.network]
        cluster = AwsEksCluster(
            f"{name}-eks",
            {
                "kubernetes": k,
                "pools": {p.name: p for p in plan.pools},
                "compute_subnet_ids": net.compute_subnet_ids,
                "efa_security_group_id": net.efa_security_group_id,
                "node_security_group_id": net.node_security_group_id,
                "api_cidrs": [plan.network(k.network).cidr, *learned(plan, k.network)],
            },
            opts,
        )
        groups = {g.name: g for g in k.node_groups}
        outputs["kubernetes"] = {
            "service": k.service,
            "cluster_name": cluster.cluster_name,
            "endpoint": cluster.endpoint,
            "node_groups": {
                n: {"pool": groups[n].pool, "nodes": groups[n].nodes, "zone": groups[n].zone, "name": ng}
                if n in groups
                else {"name": ng}
                for n, ng in cluster.node_group_names.items()
            },
        }
        outputs["kubeconfig"] = cluster.kubeconfig  # already a secret
        for pool in plan.pools:
            if pool.provider == "aws":
                names = [cluster.node_group_names[g.name] for g in k.node_groups if g.pool == pool.name]
                outputs["pools"][pool.name] = pool_outputs(pool, node_group_names=names)

    for pool in plan.pools:
        if pool.provider != "aws" or eks:
            continue
        net = networks[pool.network]
        assert pool.zone is not None
        assert identity is not None
        gp = AwsGpuPool(
            f"{name}-{pool.name}",
            {
                "pool": pool,
                "user_data": node_cloud_init(plan, pool),
                "subnet_id": net.compute_subnet_ids[pool.zone],
                "efa_security_group_id": net.efa_security_group_id,
                "node_security_group_id": net.node_security_group_id,
                "instance_profile_arn": identity.instance_profile_arn,
            },
            pulumi.ResourceOptions(parent=parent, transformations=[tagging(pool.tags)]),
        )
        outputs["pools"][pool.name] = pool_outputs(pool, asg_name=gp.asg_name, launch_template_id=gp.launch_template_id)

    for fs in plan.filesystems:
        if fs.provider != "aws":
            continue
        net = networks[fs.network]
        fs_args: FilesystemArgs = {
            "filesystem": fs,
            "vpc_id": net.vpc_id,
            "subnet_ids": net.compute_subnet_ids,
            "client_security_group_id": net.node_security_group_id,
        }
        fs_opts = pulumi.ResourceOptions(parent=parent, transformations=[tagging(fs.tags)])
        if fs.service == "fsx-lustre":
            lustre = AwsLustreFileSystem(f"{name}-{fs.name}", fs_args, fs_opts)
            info = filesystem_outputs(fs, dns_name=lustre.dns_name, mount_name=lustre.mount_name)
        elif fs.service == "efs":
            efs = AwsEfsFileSystem(f"{name}-{fs.name}", fs_args, fs_opts)
            info = filesystem_outputs(fs, dns_name=efs.dns_name)
        else:
            raise ValueError(f"no AWS component for file-system service {fs.service!r}")
        outputs["filesystems"][fs.name] = info

    c = plan.controller
    if c is not None and c.provider == "aws" and identity is not None:
        net = networks[c.network]
        ctl = AwsSlurmController(
            f"{name}-slurmctld",
            {
                "controller": c,
                "user_data": controller_cloud_init(plan),
                "subnet_id": net.compute_subnet_ids[c.zone or ""],  # AWS controllers are always zonal
                "node_security_group_id": net.node_security_group_id,
                "instance_profile_arn": identity.instance_profile_arn,
            },
            opts,
        )
        outputs["controller"] = {"kind": c.kind, "private_ip": ctl.private_ip, "instance_id": ctl.instance_id}
    return outputs
