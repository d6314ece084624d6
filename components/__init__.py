"""Pulumi components. `AiCluster` takes a plan and creates each provider's part of the cluster, in which the
stack's scheduler builds the pools and its control plane.

Components translate plan records into provider resources and nothing else: they never read
Pulumi config and never recompute what the plan decided.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi

from aicluster.plan import ClusterPlan
from aicluster.render.monitoring import InClusterMonitoring

from . import workload
from .protect import protecting
from .tags import tagging

__all__ = ["AiCluster", "AiClusterArgs"]

Builder = Callable[[ClusterPlan, pulumi.ComponentResource], dict[str, Any]]

# One builder per provider: the module whose `build(plan, parent)` creates that provider's part; on-prem registers
# its own here. A module (and its provider SDK) is imported only when a plan has that provider: importing
# pulumi_gcp alone costs a stack with no GCP pool over a second.
BUILDERS: dict[str, str] = {
    "aws": "components.aws",
    "azure": "components.azure",
    "gcp": "components.gcp",
    "onprem": "components.onprem",
}


def builder(provider: str) -> Builder:
    """The `build` function of `provider`'s components, importing them on first use."""
    build: Builder = importlib.import_module(BUILDERS[provider]).build
    return build


# `part(plan, parent, base, outputs)`: a scheduler's resources in one cloud, on what that cloud's builder made (`base`:
# its networks, and on GCP the nodes' service account), adding the stack outputs they contribute to `outputs`.
Part = Callable[[ClusterPlan, pulumi.ComponentResource, Any, dict[str, Any]], None]
# `finish(plan, parent, outputs, handles)`: what a scheduler puts onto the whole cluster once every cloud is built,
# from the merged stack outputs and every network component (network key -> component).
Finish = Callable[[ClusterPlan, pulumi.ComponentResource, dict[str, Any], dict[str, Any]], None]

# One builder per scheduler, keyed by `scheduler.kind` as aicluster.plan.registry.SCHEDULERS is: the package whose
# PARTS names, per cloud, the module whose `build` is that scheduler's Part there (Slurm: the pools' VMs and
# slurmctld; Kubernetes: the managed control plane and its node groups), and whose `finish(plan, parent, outputs,
# handles)` adds what goes onto the whole cluster once every provider is built (Kubernetes: the add-ons and Kueue).
# Modules (and their SDKs) are imported only when a plan needs them.
SCHEDULER_BUILDERS: dict[str, str] = {
    "slurm": "components.slurm",
    "kubernetes": "components.kubernetes",
}


def scheduler_part(kind: str, provider: str) -> Part:
    """The `build` function of scheduler `kind`'s part in cloud `provider`, importing it on first use."""
    parts: Mapping[str, str] = importlib.import_module(SCHEDULER_BUILDERS[kind]).PARTS
    part: Part = importlib.import_module(parts[provider]).build
    return part


def scheduler_finish(kind: str) -> Finish:
    """The `finish` function of scheduler `kind`'s components, importing them on first use."""
    finish: Finish = importlib.import_module(SCHEDULER_BUILDERS[kind]).finish
    return finish


def _nvlink_domains(plan: ClusterPlan) -> list[dict[str, Any]]:
    """Each multi-node NVLink domain as the rack-scale policies read it: its pool, type and size, and how the stack's
    scheduler keeps a job inside it (its block) and runs IMEX there (SCHEDULERS[...].nvlink_scheduling)."""
    from aicluster.plan.registry import SCHEDULERS

    scheduler = SCHEDULERS[plan.scheduler]
    types = {p.name: p.instance_type for p in plan.pools}
    out = []
    for d in plan.nvlink_domains:
        block, imex = scheduler.nvlink_scheduling(plan, d)
        out.append(
            {
                "id": d.id,
                "pool": d.pool,
                "provider": d.provider,
                "instance_type": types[d.pool],
                "nodes": len(d.nodes),
                "block": block,
                "imex": imex,
            }
        )
    return out


def _burst_groups(plan: ClusterPlan) -> dict[str, int]:
    groups: dict[str, int] = {}
    for p in plan.pools:
        if not p.burst:
            continue
        if p.gcp is not None:
            groups.update({g.hostname_prefix: g.nodes for g in p.gcp.groups})
        if p.azure is not None:
            groups.update({s.computer_name_prefix: s.nodes for s in p.azure.scale_sets})
    return groups


class AiClusterArgs(TypedDict):
    plan: ClusterPlan
    # on-prem hosts' BMC passwords, host name -> secret, read by the Pulumi program from the stack's secrets
    # (components never read config); the on-prem builder hands them to each site's OnPremSite as secrets
    bmc_credentials: NotRequired[Mapping[str, pulumi.Input[str]]]
    # the alert rule groups `aicluster monitoring` writes (rules/*.yml, each file's group as Prometheus holds it),
    # rendered by the Pulumi program (components never read the catalog): a managed Prometheus is given them
    alert_rules: NotRequired[Sequence[Mapping[str, Any]]]
    # the alert manager definition of a managed Prometheus that routes alerts (monitoring.alerts, AMP's YAML),
    # rendered by the Pulumi program as `aicluster monitoring` renders alertmanager.yml; None: no routing
    alert_manager: NotRequired[str | None]
    # a Prometheus the stack deploys in its Kubernetes cluster (self-hosted): its rule groups, routing and dashboards,
    # rendered by the Pulumi program as `aicluster monitoring` writes them (aicluster.monitoring.in_cluster)
    in_cluster_monitoring: NotRequired[InClusterMonitoring | None]
    # the alert receivers' secrets, Pulumi config key -> secret, read by the Pulumi program (monitoring.alerts);
    # the Kubernetes add-ons write them into the in-cluster Alertmanager's Secret
    alert_secrets: NotRequired[Mapping[str, pulumi.Input[str]]]


class AiCluster(pulumi.ComponentResource):
    """The whole cluster. Tags every taggable resource beneath it with the cluster tags (once, here).

    Registers the budgets and compliance settings it was planned with, so the policy pack can read
    them from the component's inputs, and outputs what the tuning step needs.
    """

    outputs: dict[str, Any]

    def __init__(self, name: str, args: AiClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        plan = args["plan"]
        props: dict[str, Any] = {
            "cluster": plan.name,
            "budgets": plan.budgets.model_dump(mode="json", exclude_none=True),
            "compliance": plan.compliance.model_dump(mode="json"),
            "tags": plan.tags,
            "pricing": plan.pricing.model_dump(mode="json", exclude_none=True),
            # the size each file system was planned for: EFS bills per GiB stored, which its resource does not say
            "filesystems": {f.name: {"service": f.service, "capacity_gib": f.capacity_gib} for f in plan.filesystems},
            # limits the stack was planned with, for the fabric policies (Azure support may raise them)
            "fabric": {"ib_domain_max_vms": plan.ib_domain_max_vms()},
            # burst pools start empty and Slurm grows them: the most nodes each group may reach, keyed by what
            # names its VMs (a GCP MIG's base instance name, an Azure scale set's computer name prefix), so the
            # budget counts a burst pool at its ceiling as it does an AWS group at its maxSize
            "burst_groups": _burst_groups(plan),
        }
        if plan.nvlink_domains:  # the rack-scale policies read what no raw resource says: block and IMEX per domain
            props["nvlink_domains"] = _nvlink_domains(plan)
        opts = pulumi.ResourceOptions.merge(
            opts or pulumi.ResourceOptions(),
            pulumi.ResourceOptions(transformations=[tagging(plan.tags), protecting(plan.stateful_types)]),
        )
        super().__init__("aicluster:index:AiCluster", name, props, opts)
        self.bmc_credentials: Mapping[str, pulumi.Input[str]] = args.get("bmc_credentials", {})
        self.alert_rules: Sequence[Mapping[str, Any]] = args.get("alert_rules", ())
        self.alert_manager: str | None = args.get("alert_manager")
        self.in_cluster_monitoring: InClusterMonitoring | None = args.get("in_cluster_monitoring")
        self.alert_secrets: Mapping[str, pulumi.Input[str]] = args.get("alert_secrets", {})
        merged: dict[str, Any] = {
            "cluster": plan.name,
            "scheduler": plan.scheduler,
            "pools": {},
            "filesystems": {},
            "networks": {},
        }
        handles: dict[str, Any] = {}  # network key -> the network component its builder made
        for provider in plan.providers():
            part = builder(provider)(plan, self)
            for key in ("pools", "filesystems", "networks"):
                merged[key].update(part.get(key, {}))
            if "sites" in part:  # only stacks with sites output them
                merged.setdefault("sites", {}).update(part["sites"])
            for key in ("controller", "audit", "kubernetes", "kubeconfig", "monitoring"):
                if key in part:
                    merged[key] = part[key]
            handles.update(part.get("network_handles", {}))
        # Cross-site links need every provider's networks (and each other's public addresses): built last.
        if plan.vpns:
            from .vpn import build_vpns  # pulumi_random and the VPN modules of the providers the links use

            merged["vpns"] = build_vpns(plan, self, handles)
        # What the scheduler puts onto the whole cluster once every cloud's part is built (Kubernetes: the add-ons
        # and Kueue, through the kubeconfig its cloud's part returned).
        scheduler_finish(plan.scheduler)(plan, self, merged, handles)
        # Workloads are estimates, not resources: one record each, for the policy pack and readers of the state
        # (only stacks that declare workloads output them)
        if plan.workloads:
            merged["workloads"] = workload.build(plan, self)
        self.outputs = merged
        self.register_outputs(merged)
