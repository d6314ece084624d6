"""Pulumi components. `AiCluster` takes a plan and creates each provider's part of the cluster.

Components translate plan records into provider resources and nothing else: they never read
Pulumi config and never recompute what the plan decided.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import pulumi

from aicluster.plan import ClusterPlan

from . import workload
from .tags import tagging

if TYPE_CHECKING:
    from .kubernetes import KubernetesAddonsArgs

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


class AiCluster(pulumi.ComponentResource):
    """The whole cluster. Tags every taggable resource beneath it with the cluster tags (once, here).

    Registers the budgets and compliance settings it was planned with, so the policy pack can read
    them from the component's inputs, and outputs what the tuning step needs.
    """

    outputs: dict[str, Any]

    def __init__(self, name: str, args: AiClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        plan = args["plan"]
        props = {
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
        opts = pulumi.ResourceOptions.merge(
            opts or pulumi.ResourceOptions(), pulumi.ResourceOptions(transformations=[tagging(plan.tags)])
        )
        super().__init__("aicluster:index:AiCluster", name, props, opts)
        self.bmc_credentials: Mapping[str, pulumi.Input[str]] = args.get("bmc_credentials", {})
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
            for key in ("controller", "audit", "kubernetes", "kubeconfig"):
                if key in part:
                    merged[key] = part[key]
            handles.update(part.get("network_handles", {}))
        # Cross-site links need every provider's networks (and each other's public addresses): built last.
        if plan.vpns:
            from .vpn import build_vpns  # pulumi_random and the VPN modules of the providers the links use

            merged["vpns"] = build_vpns(plan, self, handles)
        # A Kubernetes stack: its cloud's builder made the control plane; the add-ons and Kueue go onto it through
        # the kubeconfig that builder returned (a secret stack output, which `aicluster kubeconfig` writes out).
        kube = plan.kubernetes
        if kube is not None:
            from .kubernetes import KubernetesAddons  # pulumi_kubernetes: only Kubernetes stacks

            addons: KubernetesAddonsArgs = {"plan": plan, "kubeconfig": merged["kubeconfig"]}
            net = handles.get(kube.network)
            if net is not None and hasattr(net, "vpc_ids"):  # GKE: the GPU VPCs' real (suffixed) names
                addons["gcp_vpc_ids"] = net.vpc_ids
                addons["gcp_subnet_ids"] = net.subnet_ids
            KubernetesAddons(f"{plan.name}-addons", addons, pulumi.ResourceOptions(parent=self))
        # Workloads are estimates, not resources: one record each, for the policy pack and readers of the state
        # (only stacks that declare workloads output them)
        if plan.workloads:
            merged["workloads"] = workload.build(plan, self)
        self.outputs = merged
        self.register_outputs(merged)
