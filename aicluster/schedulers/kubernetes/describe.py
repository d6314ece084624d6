"""What the commands that work on nodes (inventory, discover, tune) say of a Kubernetes stack: its nodes are
Kubernetes nodes that the managed node groups create and replace, so Ansible has none of them. The control plane
names and addresses them, and the GPU Operator, Network Operator, EFA device plugin or the service itself configure
them."""

from __future__ import annotations

from aicluster.plan.models import ClusterPlan, PlannedKubernetes
from aicluster.schedulers.base import Suggest, placeholder

# Where the commands suggested here write the kubeconfig and the acceptance manifest: the directory they run in, so
# that the kubectl steps after them find both
KUBECONFIG = "kubeconfig"
ACCEPTANCE = "nccl-acceptance.yaml"

# Add-ons that do on a Kubernetes node what the Slurm path's roles (nvidia, efa, infiniband, nccl) and its node
# health checker do on a VM.
NODE_ADDONS = ("gpu-operator", "network-operator", "efa-device-plugin", "dra-driver-gpu", "node-problem-detector")


def _kube(plan: ClusterPlan) -> PlannedKubernetes:
    assert plan.kubernetes is not None, f"cluster {plan.name} has no Kubernetes control plane"
    return plan.kubernetes


def no_inventory(plan: ClusterPlan, stack: str, suggest: Suggest = placeholder) -> str:
    """Why the stack has no Ansible inventory, and how to list its nodes instead (`suggest` writes the commands)."""
    k = _kube(plan)
    return (
        f"stack {stack} runs on {k.service_name} (scheduler.kind: kubernetes): its nodes are Kubernetes nodes that "
        f"{k.service_name} creates and replaces, so there is no Ansible inventory of them; list them with "
        f"`{suggest('kubeconfig', '-o', KUBECONFIG)}` and "
        f"`KUBECONFIG={KUBECONFIG} kubectl get nodes -L aicluster.io/pool,aicluster.io/fabric-domain`"
    )


def no_discovery(plan: ClusterPlan, suggest: Suggest = placeholder) -> str:
    """Why the clouds' inventory plugins find no VMs of the stack for Ansible (`suggest` writes the command)."""
    k = _kube(plan)
    return (
        f"{plan.name} runs on {k.service_name} (scheduler.kind: kubernetes): its nodes are Kubernetes nodes, "
        f"not VMs for Ansible; list them with `{suggest('kubeconfig', '-o', KUBECONFIG)}` and "
        f"`KUBECONFIG={KUBECONFIG} kubectl get nodes`"
    )


def tune_notes(plan: ClusterPlan, stack: str, suggest: Suggest = placeholder) -> list[str]:
    """Why `tune` runs no Ansible here, who owns the drivers and the fabric, and how to test the fabric instead (the
    acceptance JobSet; `suggest` writes the commands)."""
    k = _kube(plan)
    lines = [
        f"stack {stack} runs on {k.service_name} (scheduler.kind: kubernetes): tune runs no Ansible here. Its nodes "
        f"are Kubernetes nodes that {k.service_name} boots from {k.node_image} and replaces at will, so changes "
        "made over SSH would not outlive a node; what the playbook's roles do on a Slurm VM is done on the cluster:"
    ]
    if k.service == "gke":
        lines.append(
            "  - GKE installs the accelerator drivers on its GPU and TPU node pools itself, and the GKE network "
            "objects aicluster creates attach the GPU NICs to pods"
        )
    lines += [f"  - {a.name} {a.version}: {a.why}" for a in k.addons if a.id in NODE_ADDONS]
    lines.append(
        "Test the fabric with the topology-aware NCCL acceptance JobSet instead: "
        f"`{suggest('acceptance', '-o', ACCEPTANCE)}`, `{suggest('kubeconfig', '-o', KUBECONFIG)}`, then "
        f"`KUBECONFIG={KUBECONFIG} kubectl apply -f {ACCEPTANCE}` (it queues in "
        f"{k.namespace}/{k.local_queue})"
    )
    return lines
