"""Kubernetes on rack-scale pools (GB200/GB300 NVL72): what render.py adds for multi-node NVLink, as plain dicts.

A rack-scale pool's node groups are its NVLink domains (plan.py). Pods reach the NVLink fabric across nodes only
through IMEX, which NVIDIA's DRA driver runs per ComputeDomain:

- `dra_values(plan, addon)`: the driver's Helm values: ComputeDomains on, GPU allocation off (whole GPUs stay with the
  device plugin: nvidia.com/gpu), the kubelet plugin on the rack-scale nodes only (the NVLink-domain label aicluster
  sets), tolerating their taints, with the host's driver root for the cloud's driver.
- `dra_prerequisites(plan, addon)`: on GKE, the driver's namespace and a ResourceQuota that admits its
  system-node-critical pods there, created before the release.
- `compute_domain(name, namespace)`: one ComputeDomain (resource.nvidia.com/v1beta1) and its channel template's name.

Why a ComputeDomain per workload and no standing one per NVLink domain: the driver forms a ComputeDomain's IMEX domain
from the nodes its pods land on and tears it down with them ("ephemeral", following the workload: the driver's
ComputeDomain concept page); its spec is immutable; and pods of two jobs sharing one ComputeDomain share IMEX channels,
so GPU memory exported by one job is importable by the other (CoreWeave: "each independent workload should use its own
ComputeDomain"; the EKS P6e-GB200 guide: one ComputeDomain per job). So aicluster queues by NVLink domain (Kueue's
Topology has the domain as a level, and a job requires it) and each job brings its ComputeDomain: the acceptance test
writes one per domain it tests.
"""

from __future__ import annotations

from typing import Any

import yaml

from aicluster.plan import ClusterPlan, PlannedAddon, PlannedNodeGroup

from .plan import DRA_ADDON, NVLINK_LABEL

COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
CHANNEL_CLAIM = "compute-domain-channel"  # the pod's name for its claim (the driver's and Cluster Toolkit's examples)
# The DeviceClass a ComputeDomain's generated claim template asks for (the chart's
# deviceclass-compute-domain-default-channel.yaml: IMEX channel 0 of the node), and the logical resource Kueue charges
# it to. Kueue 0.18+ accounts DRA claims by default (KueueDRAIntegration, beta) and refuses a workload whose claim
# template names a DeviceClass its Configuration does not map ("DeviceClass ... is not mapped in DRA configuration");
# so the Configuration maps the channel class to this resource and the rack-scale flavor has one per node (each pod
# of a job claims its ComputeDomain's channel on its node). Kueue's TAS leaves DRA resources out of its node capacity
# (Kueue docs, concepts/dynamic_resource_allocation.md, "No DRA + TAS"), so the channel counts only as quota.
# kubernetes-sigs/kueue v0.19.2: site/content/en/docs/tasks/manage/setup_dra.md, pkg/dra/claims.go.
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
CHANNEL_RESOURCE = "aicluster.io/imex-channel"
# Kueue 0.19.2's chart default Configuration (charts/kueue/values.yaml managerConfig.controllerManagerConfigYaml, its
# uncommented keys): a value for controllerManagerConfigYaml replaces the whole document, so it is repeated here with
# the DRA mapping added. Move it with the pinned Kueue chart.
KUEUE_DEFAULT_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
    "integrations": {
        "frameworks": [
            "batch/job",
            "kubeflow.org/mpijob",
            "ray.io/rayjob",
            "ray.io/rayservice",
            "ray.io/raycluster",
            "jobset.x-k8s.io/jobset",
            "workload.codeflare.dev/appwrapper",
            "trainer.kubeflow.org/trainjob",
            "pod",
            "deployment",
            "statefulset",
            "leaderworkerset.x-k8s.io/leaderworkerset",
        ]
    },
}

# Where the kubelet plugin finds the NVIDIA driver on the host (chart value nvidiaDriverRoot, docs/install.md): GKE
# installs it under /home/kubernetes/bin/nvidia; the EKS AL2023 NVIDIA AMI has it on the host (/, the chart's
# default); on AKS the GPU Operator's driver container owns it (/run/nvidia/driver).
DRIVER_ROOT = {"gke": "/home/kubernetes/bin/nvidia", "eks": "/", "aks": "/run/nvidia/driver"}
# GKE admits pods of the critical priority classes outside kube-system only under a ResourceQuota scoped to them
# (Cluster Toolkit's gke-a4x applies one in the driver's namespace); the driver's controller and kubelet plugin run
# system-node-critical, its compute-domain daemons without a priority class.
CRITICAL_CLASSES = ["system-node-critical", "system-cluster-critical"]


def nvlink_groups(plan: ClusterPlan) -> list[PlannedNodeGroup]:
    """The node groups that are NVLink domains (empty: no rack-scale pool)."""
    kube = plan.kubernetes
    return [g for g in kube.node_groups if g.nvlink_domain is not None] if kube is not None else []


def _tolerations(groups: list[PlannedNodeGroup]) -> list[dict[str, str]]:
    seen = {(t.key, t.effect): t for g in groups for t in g.all_taints()}
    return [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in seen.values()]


def dra_values(plan: ClusterPlan) -> dict[str, Any]:
    """The DRA driver's Helm values (every key one its chart's values.yaml defines): ComputeDomains only, the kubelet
    plugin on the nodes labelled with an NVLink domain and tolerating their taints (the chart's default affinity
    wants NFD or GPU Operator labels, which GKE's own driver stack does not set)."""
    kube = plan.kubernetes
    assert kube is not None
    groups = nvlink_groups(plan)
    return {
        "nvidiaDriverRoot": DRIVER_ROOT[kube.service],
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": {
            "tolerations": _tolerations(groups),
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": NVLINK_LABEL, "operator": "Exists"}]}]
                    }
                }
            },
        },
    }


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/managed-by": "aicluster"}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def dra_prerequisites(plan: ClusterPlan, addon: PlannedAddon) -> list[dict[str, Any]]:
    """What the release of `addon` needs in the cluster before it installs: on GKE, the DRA driver's namespace and
    a quota admitting its critical pods there (one kubelet plugin per rack-scale node, the controller and one more
    for its rollout); nothing elsewhere."""
    kube = plan.kubernetes
    if kube is None or addon.id != DRA_ADDON or kube.service != "gke":
        return []
    pods = sum(g.nodes for g in nvlink_groups(plan)) + 2
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(addon.namespace)},
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": _meta(f"{addon.id}-critical-pods", addon.namespace),
            "spec": {
                "hard": {"pods": str(pods)},
                "scopeSelector": {
                    "matchExpressions": [
                        {"scopeName": "PriorityClass", "operator": "In", "values": list(CRITICAL_CLASSES)}
                    ]
                },
            },
        },
    ]


def kueue_values(plan: ClusterPlan) -> dict[str, Any]:
    """Kueue's Helm values: the chart's defaults, and on a rack-scale stack its Configuration with the IMEX channel
    DeviceClass mapped to CHANNEL_RESOURCE (without it Kueue refuses every job that claims a channel)."""
    if not nvlink_groups(plan):
        return {}
    config = {
        **KUEUE_DEFAULT_CONFIG,
        "resources": {"deviceClassMappings": [{"name": CHANNEL_RESOURCE, "deviceClassNames": [CHANNEL_DEVICE_CLASS]}]},
    }
    return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)}}


def channel_template(domain: str) -> str:
    """The ResourceClaimTemplate the driver creates for ComputeDomain `domain` (pods claim their channel from it)."""
    return f"{domain}-channel"


def compute_domain(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A ComputeDomain for one workload: numNodes 0, as the CRD recommends with IMEXDaemonsWithDNSNames (the
    default; the field is deprecated), so the workload itself waits for its peers before sharing GPU memory; one
    channel per pod (allocationMode Single, the default, written out)."""
    meta = _meta(name, namespace)
    meta["labels"].update(labels or {})
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "metadata": meta,
        "spec": {
            "numNodes": 0,
            "channel": {"resourceClaimTemplate": {"name": channel_template(name)}, "allocationMode": "Single"},
        },
    }


def channel_claim(domain: str) -> tuple[dict[str, str], dict[str, str]]:
    """(the pod's resourceClaims entry, the container's resources.claims entry) for ComputeDomain `domain`'s
    channel."""
    return (
        {"name": CHANNEL_CLAIM, "resourceClaimTemplateName": channel_template(domain)},
        {"name": CHANNEL_CLAIM},
    )
