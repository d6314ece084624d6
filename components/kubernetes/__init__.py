"""Kubernetes' components: in the cloud of the control plane, the managed cluster and its node groups (`PARTS`: EKS,
GKE, AKS); then, through the kubeconfig that part returned, the add-ons and Kueue (`finish`, addons.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pulumi

from aicluster.plan import ClusterPlan

if TYPE_CHECKING:
    from .addons import KubernetesAddonsArgs

# cloud -> the module whose `build` is Kubernetes' part there (components.Part)
PARTS: dict[str, str] = {
    "aws": "components.kubernetes.eks",
    "azure": "components.kubernetes.aks",
    "gcp": "components.kubernetes.gke",
}


def finish(
    plan: ClusterPlan, parent: pulumi.ComponentResource, outputs: dict[str, Any], handles: dict[str, Any]
) -> None:
    """The add-ons and Kueue onto the control plane its cloud's part made, through the kubeconfig it returned (a
    secret stack output, which `aicluster kubeconfig` writes out)."""
    from .addons import KubernetesAddons  # pulumi_kubernetes: only Kubernetes stacks

    kube = plan.kubernetes
    assert kube is not None, "a Kubernetes stack's plan has its control plane"
    addons: KubernetesAddonsArgs = {
        "plan": plan,
        "kubeconfig": outputs["kubeconfig"],
        "alert_rules": getattr(parent, "alert_rules", ()),
        "in_cluster_monitoring": getattr(parent, "in_cluster_monitoring", None),
        "alert_secrets": getattr(parent, "alert_secrets", {}),
    }
    net = handles.get(kube.network)
    if net is not None and hasattr(net, "vpc_ids"):  # GKE: the GPU VPCs' real (suffixed) names
        addons["gcp_vpc_ids"] = net.vpc_ids
        addons["gcp_subnet_ids"] = net.subnet_ids
    KubernetesAddons(f"{plan.name}-addons", addons, pulumi.ResourceOptions(parent=parent))
