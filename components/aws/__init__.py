"""AWS components and how AiCluster assembles them from a plan: the networks, the audit trail and the file systems
here; the pools and the control plane in the stack's scheduler's part (components.slurm.aws: Auto Scaling groups and
slurmctld's instance; components.kubernetes.eks: an EKS cluster and its node groups)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from aicluster.plan import ClusterPlan

from .. import scheduler_part
from ..outputs import filesystem_outputs, learned
from ..tags import tagging
from .audit import AwsAuditTrail
from .efs import AwsEfsFileSystem
from .gpu_pool import AwsGpuPool
from .identity import AwsNodeIdentity
from .lustre import AwsLustreFileSystem, FilesystemArgs
from .monitoring import AwsManagedPrometheus, AwsPrometheusScraper
from .network import AwsNetwork

__all__ = [
    "AwsAuditTrail",
    "AwsBase",
    "AwsEfsFileSystem",
    "AwsGpuPool",
    "AwsLustreFileSystem",
    "AwsManagedPrometheus",
    "AwsNetwork",
    "AwsNodeIdentity",
    "AwsPrometheusScraper",
    "build",
]


@dataclass(frozen=True)
class AwsBase:
    """What the AWS builder made that a scheduler's part builds on: the networks, by plan network key, and the
    managed Prometheus workspace when the stack asks for one here (the scheduler's part feeds it)."""

    networks: dict[str, AwsNetwork]
    prometheus: AwsManagedPrometheus | None = None


def build(plan: ClusterPlan, parent: pulumi.ComponentResource) -> dict[str, Any]:
    """Create the AWS part of the cluster under `parent`; return the stack outputs it contributes."""
    name = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    networks = {
        n.key: AwsNetwork(f"{name}-{n.region}", {"network": n, "remote_cidrs": learned(plan, n.key)}, opts)
        for n in plan.networks
        if n.provider == "aws"
    }
    outputs: dict[str, Any] = {"networks": {}, "pools": {}, "filesystems": {}, "network_handles": dict(networks)}
    for key, net in networks.items():
        outputs["networks"][key] = {"vpc_id": net.vpc_id, "subnet_ids": net.compute_subnet_ids}
    if "aws" in plan.audit_logging:
        home = next(n.region for n in plan.networks if n.provider == "aws")
        trail = AwsAuditTrail(f"{name}-audit", {"cluster": name, "region": home}, opts)
        outputs["audit"] = {"trail_arn": trail.trail_arn, "bucket": trail.bucket_name}
    prometheus = None
    m = plan.monitoring
    if m.service is not None and m.provider == "aws":
        prometheus = AwsManagedPrometheus(
            f"{name}-prometheus",
            {
                "cluster": name,
                "monitoring": m,
                "rule_groups": getattr(parent, "alert_rules", ()),
                "alert_manager": getattr(parent, "alert_manager", None),
            },
            opts,
        )
        outputs["monitoring"] = {
            "service": m.service,
            "collector": m.collector,
            "region": m.region,
            "workspace_arn": prometheus.workspace_arn,
            "remote_write_url": prometheus.remote_write_url,
        }
    scheduler_part(plan.scheduler, "aws")(plan, parent, AwsBase(networks, prometheus), outputs)

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
    return outputs
