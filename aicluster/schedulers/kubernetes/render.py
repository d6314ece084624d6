"""Kubernetes objects and Helm values for a cluster with a managed control plane (plan.kubernetes): plain dicts.

- `helm_values(plan, addon)`: the values of one Helm add-on release for this cluster's cloud;
  `release_prerequisites(plan, addon)`: what a release needs in the cluster first (GKE: the DRA driver's quota).
- `kubernetes_objects(plan)`: what aicluster applies after the add-ons: the namespace, Kueue's Topology,
  ResourceFlavors (one per node group; one per rack-scale pool), ClusterQueue and LocalQueue, the Network Operator's
  NicClusterPolicy (Azure InfiniBand) and GKE's multi-network objects (GPU NIC VPCs).
- `acceptance_jobset(plan)`: a topology-aware JobSet that runs NCCL's all_reduce_perf over the fabric of every node
  of the largest node group (of a rack-scale pool: every NVLink domain, each its own ranks) and fails below the
  expected bus bandwidth; `acceptance_compute_domains(plan)`: the ComputeDomain of each NVLink domain it tests;
  `acceptance_ssh_secret(plan, ...)`: the SSH key Secret its pods share (all written out by `aicluster acceptance`,
  never deployed by the program).
- `installed_by(obj)`: the add-on whose Helm release installs an object's CRD (the component waits for it).
- `manifest_objects(plan, addon)`: the DaemonSets of a manifest add-on (GKE's GPUDirect NCCL plugin installers and
  NRI device injector), as upstream's manifests have them, scoped to the node groups whose pools need them.

Kueue objects use `kueue.x-k8s.io/v1beta2`: Kueue serves it since v0.15 and stores it since v0.16, v1beta1 is
deprecated since v0.16 and due to go (kubernetes-sigs/kueue#7304, #8020); the pinned Kueue (catalog, 0.19) serves
both, and the CRDs upstream define both.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from aicluster.catalog import Catalog, load_catalog
from aicluster.plan import ClusterPlan, PlannedAddon, PlannedKubernetes, PlannedNodeGroup, PlannedPool
from aicluster.render.monitoring import InClusterMonitoring
from aicluster.render.nccl import acceptance_busbw

from .collector import collector_objects
from .health import npd_objects
from .nvlink import CHANNEL_RESOURCE, channel_claim, compute_domain, dra_prerequisites, dra_values, kueue_values
from .plan import (
    DRA_ADDON,
    NODE_EXPORTER_ADDON,
    NPD_ADDON,
    NVLINK_LABEL,
    POOL_LABEL,
    PROMETHEUS_STACK_ADDON,
    QUARANTINE_ADDON,
    gpu_operator_operands,
)
from .prometheus import prometheus_stack_values
from .quarantine import quarantine_objects

KUEUE_API = "kueue.x-k8s.io/v1beta2"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
NIC_POLICY_API = "mellanox.com/v1alpha1"
GKE_NETWORK_API = "networking.gke.io/v1"
# API group -> catalog add-on whose chart installs the CRD (GKE's networking.gke.io is GKE's own)
CRD_ADDONS = {
    "kueue.x-k8s.io": "kueue",
    "jobset.x-k8s.io": "jobset",
    "mellanox.com": "network-operator",
    "resource.nvidia.com": DRA_ADDON,
    "monitoring.coreos.com": PROMETHEUS_STACK_ADDON,
}

# Hugepages are a node resource a pod must request (EFA's libfabric uses them), not a capacity worth queueing on:
# Kueue admits by GPUs and fabric devices; the scheduler still checks hugepages on the node.
UNQUEUED_PREFIXES = ("hugepages-",)

# NicClusterPolicy images. DOCA driver: the version Azure's aks-rdma-infiniband guide deploys on ND H100 v5
# (configs/nicclusterpolicy/base, https://azure.github.io/aks-rdma-infiniband/, the DOCA-OFED container of Network
# Operator 25.10's platform support list). RDMA shared device plugin: the component tag of the Network Operator
# release the catalog pins (Network Operator v26.7.0 release notes, "Container Images": network-operator-v26.7.0).
MELLANOX_REPOSITORY = "nvcr.io/nvidia/mellanox"
DOCA_DRIVER_VERSION = "doca3.2.0-25.10-1.2.8.0-2"
RDMA_SHARED_DEVICE_PLUGIN_VERSION = "network-operator-v26.7.0"
MELLANOX_VENDOR = "15b3"  # PCI vendor id of NVIDIA (Mellanox) ConnectX
MELLANOX_PCI_LABEL = f"feature.node.kubernetes.io/pci-{MELLANOX_VENDOR}.present"  # set by NFD
RDMA_HCA_MAX = 63  # pods per node sharing the HCAs (Network Operator examples, aks-rdma-infiniband)

# GKE's accelerator type of each GPU machine type (the `--accelerator type=` value and the
# `cloud.google.com/gke-accelerator` node label): "NVIDIA B200 GPUs (corresponding to the nvidia-b200
# accelerator type and A4 machine series), NVIDIA H200 141 GB GPUs (nvidia-h200-141gb, A3 Ultra), NVIDIA H100
# 80 GB GPUs (nvidia-h100-80gb, A3 High), NVIDIA H100 80GB Mega GPUs (nvidia-h100-mega-80gb, A3 Mega)" -- GKE,
# "Run GPUs in Standard node pools", https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (retrieved
# 2026-11-24). It belongs in the catalog's GCP instance types; until it is there, an unlisted type is refused.
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
GKE_ACCELERATOR = {
    "a4x-highgpu-4g": "nvidia-gb200",  # Cluster Toolkit examples/gke-a4x accelerator_type (k8s-gke-toolkit-a4x)
    "a4-highgpu-8g": "nvidia-b200",
    "a3-ultragpu-8g": "nvidia-h200-141gb",
    "a3-highgpu-8g": "nvidia-h100-80gb",
    "a3-megagpu-8g": "nvidia-h100-mega-80gb",
}

# Manifest add-ons (catalog kind: manifest): the fabric whose pools need each, and the image the catalog's version
# pins, as GoogleCloudPlatform/container-engine-accelerators' manifests name them (commits in the catalog sources).
# (fabric, CPU architecture or None for any): the gIB plugin is built per architecture, in its own image.
MANIFEST_FABRICS: dict[str, tuple[str, str | None]] = {
    "nccl-tcpxo-installer": ("gpudirect-tcpxo", None),
    "nri-device-injector": ("gpudirect-tcpxo", None),
    "nccl-rdma-installer": ("gpudirect-rdma", "x86_64"),
    "nccl-rdma-installer-arm64": ("gpudirect-rdma", "arm64"),
}
TCPXO_PLUGIN_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev"
GIB_PLUGIN_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib"
GIB_PLUGIN_IMAGE_ARM64 = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-arm64"
NRI_INJECTOR_IMAGE = "gcr.io/gke-release/nri-device-injector"
# The installers finish in init containers; the pod then idles in GKE's pause image, pinned by digest upstream.
GKE_PAUSE_IMAGE = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
# Upstream's helper init containers use floating tags (`ubuntu`, `alpine:latest`); they only supply nsenter (the
# TCPXO script runs in the host's namespaces) and busybox sysctl, so any release does: pinned to current LTS /
# stable releases so a node never pulls a moving tag.
NSENTER_IMAGE = "ubuntu:24.04"
SYSCTL_IMAGE = "alpine:3.22"
INSTALLER_CPU = "150m"  # upstream's request for each installer / injector container

# GKE multi-networking object names, as GKE's guides name them (pod annotations refer to them): TCPX/TCPXO GPU
# NICs vpc1..vpcN; A3 Ultra / A4 the second gVNIC gvnic-1 and the RDMA NICs rdma-0..rdma-N.
# https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx
# https://cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute-custom


def _kube(plan: ClusterPlan) -> PlannedKubernetes:
    if plan.kubernetes is None:
        raise ValueError(f"cluster {plan.name} has no Kubernetes control plane (scheduler kind is not kubernetes)")
    return plan.kubernetes


def _pool(plan: ClusterPlan, group: PlannedNodeGroup) -> PlannedPool:
    return next(p for p in plan.pools if p.name == group.pool)


def tolerations(group: PlannedNodeGroup) -> list[dict[str, str]]:
    """Tolerations that let a pod (or a flavor's pods) onto the group's nodes: exactly its taints (those aicluster
    sets and those the service sets itself, e.g. GKE's on Arm nodes)."""
    return [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect} for t in group.all_taints()]


def gke_accelerator(pool: PlannedPool) -> str:
    """The pool's GKE accelerator type (the node pool's `--accelerator type=`, the gke-accelerator node label)."""
    found = GKE_ACCELERATOR.get(pool.instance_type)
    if found is None:
        raise ValueError(
            f"pool {pool.name}: aicluster knows no GKE accelerator type for {pool.instance_type} (it knows "
            f"{', '.join(sorted(GKE_ACCELERATOR))}): use one of them, or scheduler kind slurm"
        )
    return found


def _accelerator_tolerations(kube: PlannedKubernetes, kind: str = "gpu") -> list[dict[str, str]]:
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for g in kube.node_groups:
        if g.accelerator_kind == kind:
            for t in g.all_taints():
                seen.setdefault((t.key, t.effect), {"key": t.key, "operator": "Exists", "effect": t.effect})
    return list(seen.values())


# ---------------------------------------------------------------------------------------------------- Helm values


def _gpu_operator(plan: ClusterPlan, kube: PlannedKubernetes) -> dict[str, Any]:
    infiniband = any(p.fabric == "infiniband" for p in plan.pools if p.provider == kube.provider)
    enabled = gpu_operator_operands(kube.service)  # what the add-on's `why` says it installs
    values: dict[str, Any] = {
        # the operands run on the GPU nodes: tolerate their taint (the chart's default list, kept explicit)
        "daemonsets": {"tolerations": _accelerator_tolerations(kube)},
        "dcgmExporter": {"enabled": enabled["dcgmExporter"]},
        "devicePlugin": {"enabled": enabled["devicePlugin"]},
        "driver": {"enabled": enabled["driver"]},
        "toolkit": {"enabled": enabled["toolkit"]},
    }
    if enabled["driver"]:
        # the operator owns the driver, with GPUDirect RDMA (nvidia-peermem) where the nodes have InfiniBand
        # (aks-rdma-infiniband)
        values["driver"]["rdma"] = {"enabled": infiniband}
    if any(a.id == "network-operator" for a in kube.addons):
        values["nfd"] = {"enabled": False}  # the Network Operator runs Node Feature Discovery
    return values


def _node_exporter(plan: ClusterPlan, kube: PlannedKubernetes) -> dict[str, Any]:
    """node_exporter on every node where the `node` job (render/monitoring.py kubernetes_jobs) looks: the node's
    InternalIP (the chart's hostNetwork) at the catalog's port (service.port sets the listen address and hostPort
    too; targetPort follows it). Tolerations: the chart's default (any NoSchedule taint) plus, explicitly, every
    taint of every node group (GPU, rack-scale, Arm), so no taint aicluster sets keeps it off a node."""
    port = plan.monitoring.node_exporter_port
    tolerations: list[dict[str, str]] = [{"effect": "NoSchedule", "operator": "Exists"}]  # the chart's default
    seen: set[tuple[str, str]] = set()
    for g in kube.node_groups:
        for t in g.all_taints():
            if (t.key, t.effect) not in seen:
                seen.add((t.key, t.effect))
                tolerations.append({"key": t.key, "operator": "Exists", "effect": t.effect})
    return {
        "hostNetwork": True,
        "service": {"port": port, "targetPort": port},
        # on by default in node_exporter; named so the InfiniBand rules' counters never depend on that default
        "extraArgs": ["--collector.infiniband"],
        "tolerations": tolerations,
    }


def _network_operator(kube: PlannedKubernetes) -> dict[str, Any]:
    return {
        # NFD labels the nodes with pci-15b3.present, which the NicClusterPolicy selects on
        "nfd": {"enabled": True, "deployNodeFeatureRules": kube.service != "aks"},
        "sriovNetworkOperator": {"enabled": False},
    }


def helm_values(
    plan: ClusterPlan, addon: PlannedAddon, monitoring: InClusterMonitoring | None = None
) -> dict[str, Any]:
    """The values of `addon`'s Helm release for this cluster; every key is one the chart's values.yaml defines.
    `monitoring`: what the Pulumi program rendered for a Prometheus in the cluster (kube-prometheus-stack's routing).

    Kueue and JobSet keep their chart defaults: Topology-Aware Scheduling is beta and on by default since Kueue
    v0.14, and the JobSet integration is in Kueue's default integrations list; on a rack-scale stack Kueue's
    Configuration also maps the IMEX channel DeviceClass (`kueue_values`)."""
    kube = _kube(plan)
    if addon.id == "gpu-operator":
        return _gpu_operator(plan, kube)
    if addon.id == "network-operator":
        return _network_operator(kube)
    if addon.id == "efa-device-plugin":
        # the plugin's DaemonSet has no tolerations by default; the EFA nodes carry the GPU taint
        return {"tolerations": _accelerator_tolerations(kube)}
    if addon.id == NODE_EXPORTER_ADDON:
        return _node_exporter(plan, kube)
    if addon.id == PROMETHEUS_STACK_ADDON:
        return prometheus_stack_values(plan, monitoring)
    if addon.id == "kueue":
        return kueue_values(plan)
    if addon.id == "jobset":
        return {}
    if addon.id == DRA_ADDON:
        return dra_values(plan)
    raise ValueError(f"add-on {addon.id!r} is not a Helm chart aicluster knows how to configure")


# ------------------------------------------------------------------------------------------------------- objects


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/managed-by": "aicluster", **labels}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def flavor_name(group: PlannedNodeGroup) -> str:
    """The group's Kueue ResourceFlavor: its own; a rack-scale pool's groups (its NVLink domains) share the pool's,
    and Topology-Aware Scheduling picks the domain (the Topology has it as a level), so one job may take several
    domains (a PodSet is admitted in one flavor), as Cluster Toolkit's gke-a4x flavors all its A4X node pools alike."""
    return (group.pool if group.nvlink_domain is not None else group.name).lower()


def flavor_labels(group: PlannedNodeGroup) -> dict[str, str]:
    """The node labels the group's flavor selects on: the group's own, or its pool's for an NVLink domain."""
    if group.nvlink_domain is not None:
        return {POOL_LABEL: group.labels[POOL_LABEL]}
    return dict(group.labels)


def queued_resources(group: PlannedNodeGroup) -> dict[str, str]:
    """The group's per-node resources Kueue queues on (everything but hugepages); an NVLink domain's node also offers
    one IMEX channel, claimed through the job's ComputeDomain (Kueue charges the claim to CHANNEL_RESOURCE)."""
    queued = {k: v for k, v in group.resources.items() if not k.startswith(UNQUEUED_PREFIXES)}
    if group.nvlink_domain is not None:
        queued[CHANNEL_RESOURCE] = "1"
    return queued


def _quantity(value: str, nodes: int) -> str:
    """`nodes` x a per-node quantity, in the quantity's own suffix (plain integers, or Mi/Gi/Ki)."""
    for suffix in ("Ki", "Mi", "Gi", "Ti"):
        if value.endswith(suffix):
            return f"{int(value[: -len(suffix)]) * nodes}{suffix}"
    return str(int(value) * nodes)


def _kueue(kube: PlannedKubernetes) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": KUEUE_API,
            "kind": "Topology",
            "metadata": _meta(t.name),
            "spec": {"levels": [{"nodeLabel": level} for level in t.levels]},
        }
        for t in kube.topologies
    ]
    topologies = {t.name for t in kube.topologies}
    flavors: dict[str, list[PlannedNodeGroup]] = {}
    for g in kube.node_groups:
        flavors.setdefault(flavor_name(g), []).append(g)
    for name, (g, *_) in flavors.items():
        spec: dict[str, Any] = {"nodeLabels": flavor_labels(g), "tolerations": tolerations(g)}
        if g.topology in topologies:
            spec["topologyName"] = g.topology
        objs.append({"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": _meta(name), "spec": spec})
    # One resource group per set of covered resources: a flavor in a group must offer every covered resource
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, (g, *_) in flavors.items():
        groups.setdefault(tuple(sorted(queued_resources(g))), []).append(name)
    resource_groups = [
        {
            "coveredResources": list(covered),
            "flavors": [
                {
                    "name": name,
                    "resources": [
                        {
                            "name": r,
                            "nominalQuota": _quantity(
                                queued_resources(flavors[name][0])[r], sum(m.nodes for m in flavors[name])
                            ),
                        }
                        for r in covered
                    ],
                }
                for name in members
            ],
        }
        for covered, members in groups.items()
    ]
    objs.append(
        {
            "apiVersion": KUEUE_API,
            "kind": "ClusterQueue",
            "metadata": _meta(kube.cluster_queue),
            "spec": {"namespaceSelector": {}, "resourceGroups": resource_groups},
        }
    )
    objs.append(
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": _meta(kube.local_queue, kube.namespace),
            "spec": {"clusterQueue": kube.cluster_queue},
        }
    )
    return objs


def _nic_cluster_policy() -> dict[str, Any]:
    rdma_config = {
        "configList": [
            {
                "resourceName": "shared_ib",  # pods request rdma/shared_ib
                "rdmaHcaMax": RDMA_HCA_MAX,
                "selectors": {"vendors": [MELLANOX_VENDOR], "linkTypes": ["infiniband"]},
            }
        ]
    }
    return {
        "apiVersion": NIC_POLICY_API,
        "kind": "NicClusterPolicy",
        "metadata": _meta("nic-cluster-policy"),  # the one name the operator reconciles
        "spec": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": MELLANOX_PCI_LABEL, "operator": "In", "values": ["true"]}]}
                    ]
                }
            },
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "ofedDriver": {
                "image": "doca-driver",
                "repository": MELLANOX_REPOSITORY,
                "version": DOCA_DRIVER_VERSION,
                "upgradePolicy": {
                    "autoUpgrade": True,
                    "maxParallelUpgrades": 1,
                    "drain": {"enable": True, "force": True, "deleteEmptyDir": True, "timeoutSeconds": 300},
                },
            },
            "rdmaSharedDevicePlugin": {
                "image": "k8s-rdma-shared-dev-plugin",
                "repository": MELLANOX_REPOSITORY,
                "version": RDMA_SHARED_DEVICE_PLUGIN_VERSION,
                "config": json.dumps(rdma_config, indent=2),
            },
        },
    }


class GkeNetwork(NamedTuple):
    """One GKE multi-network for a GPU NIC: the Kubernetes name pods refer to, GKE's device mode, and the VPC and
    subnet, by the names components/gcp/network.py gives them (`<cluster>-<region>-<vpc>`, RDMA subnets
    `<cluster>-<region>-rdma-<i>`) and by its keys (GcpNetwork.vpc_ids[vpc_key], .subnet_ids[subnet_key])."""

    name: str
    device_mode: Literal["NetDevice", "RDMA"]
    vpc: str
    subnet: str
    vpc_key: str
    subnet_key: tuple[str, int]


def gke_networks(plan: ClusterPlan) -> list[GkeNetwork]:
    """The GKE networks of the GPU NIC VPCs (empty off GKE). Pulumi suffixes the VPC and subnet names it creates,
    so the component swaps in the cloud's names when the builder hands them over."""
    kube = _kube(plan)
    if kube.service != "gke":
        return []
    fabrics = {_pool(plan, g).fabric for g in kube.node_groups}
    net = next((n for n in plan.networks if n.key == kube.network), None)
    if net is None:
        return []
    base = f"{plan.name}-{net.region}"
    out: list[GkeNetwork] = []
    tcpx = fabrics & {"gpudirect-tcpx", "gpudirect-tcpxo"}
    for vpc in net.vpcs:
        name = f"{base}-{vpc.name}"
        if vpc.role == "gpu" and tcpx:
            for i in vpc.subnets:
                out.append(GkeNetwork(f"vpc{i + 1}", "NetDevice", name, name, vpc.name, (vpc.role, i)))
        elif vpc.role == "gvnic" and "gpudirect-rdma" in fabrics:
            for i in vpc.subnets:
                out.append(GkeNetwork(vpc.name, "NetDevice", name, name, vpc.name, (vpc.role, i)))
        elif vpc.role == "rdma" and "gpudirect-rdma" in fabrics:
            for i in vpc.subnets:
                out.append(GkeNetwork(f"rdma-{i}", "RDMA", name, f"{base}-rdma-{i}", vpc.name, (vpc.role, i)))
    return out


def _gke_networks(plan: ClusterPlan) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for name, mode, vpc, subnet, _, _ in gke_networks(plan):
        objs.append(
            {
                "apiVersion": GKE_NETWORK_API,
                "kind": "GKENetworkParamSet",
                "metadata": _meta(name),
                "spec": {"vpc": vpc, "vpcSubnet": subnet, "deviceMode": mode},
            }
        )
        objs.append(
            {
                "apiVersion": GKE_NETWORK_API,
                "kind": "Network",
                "metadata": _meta(name),
                "spec": {
                    "type": "Device",
                    "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": name},
                },
            }
        )
    return objs


def _tcpxo_installer(addon: PlannedAddon) -> dict[str, Any]:
    # the pre-installation script, as upstream runs it in the host's namespaces (nsenter -at 1): open TCP in the host
    # firewall, load import-helper, and bind-mount each aperture device (PCI 1ae0:0084) under /dev/aperture_devices
    script = (
        "/sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT && modprobe import-helper\n"
        "sudo mkdir -p /dev/aperture_devices\n"
        "while IFS= read -r line; do\n"
        "  BDF=$( echo \"$line\" | awk '{print $1}' );\n"
        '  target_aperture_path="/dev/aperture_devices/$BDF"\n'
        '  host_aperture_device=$(readlink -f "/sys/bus/pci/devices/$BDF");\n'
        "  sudo mkdir -p $target_aperture_path;\n"
        "  sudo umount -R $target_aperture_path;\n"
        "  sudo mount --bind $host_aperture_device $target_aperture_path;\n"
        "done < <(lspci -nn -D | grep '1ae0:0084')\n"
        "if [ -d /dev/aperture_devices ]; then\n"
        "    chmod -R a+r /dev/aperture_devices/\n"
        "    chmod a+rw /dev/aperture_devices/*/resource*\n"
        "fi\n"
    )
    install = (
        "set -ex\n"
        "chmod 755 /scripts/container_entry.sh\n"
        "/scripts/container_entry.sh install --install-nccl\n"
        "mkdir -p /usr/local/nvidia/lib64\n"
        "cp -r /var/lib/tcpxo/lib64/. /usr/local/nvidia/lib64\n"
        'echo "installation finishes"\n'
    )
    return {
        "volumes": [
            {"name": "var-lib", "hostPath": {"path": "/var/lib"}},
            {"name": "tcpxo", "hostPath": {"path": "/var/lib/tcpxo"}},
            {"name": "library-dir-host", "hostPath": {"path": "/home/kubernetes/bin"}},
        ],
        "initContainers": [
            {
                "name": "pre-installation",
                "image": NSENTER_IMAGE,
                "securityContext": {"privileged": True},
                "command": ["nsenter", "-at", "1", "--", "sh", "-c", script],
            },
            {
                "name": "nccl-tcpxo-installer",
                "image": f"{TCPXO_PLUGIN_IMAGE}:{addon.version}",
                "resources": {"requests": {"cpu": INSTALLER_CPU}},
                "securityContext": {"privileged": True},
                "volumeMounts": [
                    {"name": "var-lib", "mountPath": "/var/lib"},
                    {"name": "library-dir-host", "mountPath": "/usr/local"},
                ],
                "command": ["/bin/sh", "-c"],
                "args": [install],
            },
        ],
        "containers": [{"name": "pause", "image": GKE_PAUSE_IMAGE}],
    }


def _rdma_installer(addon: PlannedAddon) -> dict[str, Any]:
    """The gIB installer of A3 Ultra / A4 (x86) and, for `nccl-rdma-installer-arm64`, of A4X: the Arm build of the
    plugin, installed the same way, without the martian-logging step (Cluster Toolkit's A4X template has none: its
    RDMA NICs are not the gpu<N>rdma0 devices of the 8-GPU machines)."""
    arm = addon.id == "nccl-rdma-installer-arm64"
    # the RDMA NICs' addresses are answered on other NICs by design; upstream keeps the kernel from logging them
    martians = "".join(f"sysctl -w net.ipv4.conf.gpu{i}rdma0.log_martians=0\n" for i in range(8))
    install = (
        "set -ex\n"
        "/scripts/container_entry.sh install --install-nccl\n"
        "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
        "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\n"
        'echo "installation finishes"\n'
    )
    quiet = {
        "name": "disable-log-martian",
        "image": SYSCTL_IMAGE,
        "securityContext": {"privileged": True},
        "command": ["/bin/sh"],
        "args": ["-c", martians],
    }
    return {
        "volumes": [
            {
                "name": "library-dir-host",
                "hostPath": {"path": "/home/kubernetes/bin/nvidia/lib64", "type": "DirectoryOrCreate"},
            },
            {"name": "gib", "hostPath": {"path": "/home/kubernetes/bin/gib"}},
        ],
        "initContainers": [
            *(() if arm else (quiet,)),
            {
                "name": "nccl-rdma-installer",
                "image": f"{GIB_PLUGIN_IMAGE_ARM64 if arm else GIB_PLUGIN_IMAGE}:{addon.version}",
                "resources": {"requests": {"cpu": INSTALLER_CPU}},
                "securityContext": {"privileged": True},
                "volumeMounts": [
                    {"name": "library-dir-host", "mountPath": "/usr/local/home/kubernetes/bin/nvidia/lib64"},
                    {"name": "gib", "mountPath": "/usr/local/home/kubernetes/bin/gib"},
                ],
                "command": ["/bin/sh", "-c"],
                "args": [install],
            },
        ],
        "containers": [{"name": "pause", "image": GKE_PAUSE_IMAGE}],
    }


def _nri_device_injector(addon: PlannedAddon) -> dict[str, Any]:
    # upstream pins the image by digest only; it also declares a hostPath volume of / that no container mounts,
    # left out here (an unmounted host root is only a policy finding)
    sep = "@" if addon.version.startswith("sha256:") else ":"
    return {
        "volumes": [
            {"name": "nri", "hostPath": {"path": "/var/run/nri"}},
            {"name": "dev", "hostPath": {"path": "/dev"}},
        ],
        "containers": [
            {
                "name": "device-injector",
                "image": f"{NRI_INJECTOR_IMAGE}{sep}{addon.version}",
                "resources": {"requests": {"cpu": INSTALLER_CPU}},
                "securityContext": {"privileged": True},
                "volumeMounts": [
                    {"name": "dev", "mountPath": "/dev"},
                    {"name": "nri", "mountPath": "/var/run/nri"},
                ],
            }
        ],
    }


MANIFEST_PODS = {
    "nccl-tcpxo-installer": _tcpxo_installer,
    "nri-device-injector": _nri_device_injector,
    "nccl-rdma-installer": _rdma_installer,
    "nccl-rdma-installer-arm64": _rdma_installer,
}
# upstream's object names (the TCPXO workload guides refer to the DaemonSets by them)
MANIFEST_NAMES = {"nri-device-injector": "device-injector"}


def manifest_objects(plan: ClusterPlan, addon: PlannedAddon) -> list[dict[str, Any]]:
    """The objects of manifest add-on `addon`: one DaemonSet, as upstream's manifest has it (host network and PID,
    system-node-critical, the pinned images, upstream's host paths and commands), in the add-on's namespace, on the
    nodes whose GKE accelerator is one of the node groups that need it (pools of the add-on's fabric), tolerating
    their GPU taint."""
    kube = _kube(plan)
    if addon.id == NPD_ADDON:  # its own objects, from the plan's node health (health.py)
        return npd_objects(plan, addon)
    if addon.id == QUARANTINE_ADDON:  # the controller that acts on NPD's conditions (quarantine.py)
        return quarantine_objects(plan, addon)
    if addon.kind != "manifest" or addon.id not in MANIFEST_PODS:
        raise ValueError(f"add-on {addon.id!r} is not a manifest aicluster knows how to render")
    fabric, arch = MANIFEST_FABRICS[addon.id]
    groups = [g for g in kube.node_groups if _pool(plan, g).fabric == fabric and arch in (None, g.cpu_arch)]
    accelerators = sorted({gke_accelerator(_pool(plan, g)) for g in groups})
    if not accelerators:
        return []
    name = MANIFEST_NAMES.get(addon.id, addon.id)
    selector = {"k8s-app": name}
    tolerations = [
        {"key": t.key, "operator": "Exists", "effect": t.effect}
        for t in {(t.key, t.effect): t for g in groups for t in g.all_taints()}.values()
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": GKE_ACCELERATOR_LABEL, "operator": "In", "values": accelerators}]}
                ]
            }
        }
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": _meta(name, addon.namespace, **selector),
            "spec": {
                "selector": {"matchLabels": selector},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {"labels": {"name": name, **selector}},
                    "spec": {
                        "priorityClassName": "system-node-critical",
                        "affinity": affinity,
                        "tolerations": tolerations,
                        "hostNetwork": True,
                        "hostPID": True,
                        **MANIFEST_PODS[addon.id](addon),
                    },
                },
            },
        }
    ]


def kubernetes_objects(plan: ClusterPlan) -> list[dict[str, Any]]:
    """Every object aicluster applies to the cluster besides the Helm releases, in apply order."""
    kube = _kube(plan)
    objs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(kube.namespace)}]
    objs += _kueue(kube)
    if kube.service == "aks" and any(a.id == "network-operator" for a in kube.addons):
        objs.append(_nic_cluster_policy())
    objs += _gke_networks(plan)
    for addon in kube.addons:
        if addon.kind == "manifest":
            objs += manifest_objects(plan, addon)
    objs += collector_objects(plan)  # the managed Prometheus collector's RBAC or scrape jobs (collector.py)
    return objs


def release_prerequisites(plan: ClusterPlan, addon: PlannedAddon) -> list[dict[str, Any]]:
    """Core objects the Helm release of `addon` needs before it installs (the component creates them first, the
    release after them): on GKE the DRA driver's namespace and the quota that admits its critical pods."""
    _kube(plan)
    return dra_prerequisites(plan, addon)


def installed_by(obj: dict[str, Any]) -> str | None:
    """The add-on id whose Helm release installs `obj`'s CRD; None for core objects and GKE's own."""
    group = str(obj["apiVersion"]).rpartition("/")[0]
    return CRD_ADDONS.get(group)


# ---------------------------------------------------------------------------------------------- acceptance test

ACCEPTANCE_NAME = "nccl-allreduce"
ACCEPTANCE_SSH_SECRET = f"{ACCEPTANCE_NAME}-ssh"
ACCEPTANCE_SSH_PORT = 2222
# Pass when the measured bus bandwidth is at least this fraction of the expected figure: the Slurm acceptance
# role's default (playbooks/roles/acceptance/defaults/main.yml acceptance_min_fraction), so both gates agree.
ACCEPTANCE_MIN_FRACTION = 0.9
JOBSET_LARGEST_BYTES = 16 * 2**30  # all_reduce_perf -e: the size the gate reads
EXPECTED_BUSBW_ANNOTATION = "aicluster.io/expected-busbw-gb-s"
MIN_BUSBW_ENV = "AICLUSTER_MIN_BUSBW_GB_S"
ACCEPTANCE_LOG = "/tmp/all_reduce_perf.log"

# Generic: nccl-tests built with MPI on CUDA 12.8 / NCCL 2.26.2, with OpenMPI and sshd, no cloud network plugin
# (NCCL's own IB verbs and socket transports).
# https://github.com/coreweave/nccl-tests (image tags: ghcr.io/coreweave/nccl-tests)
GENERIC_NCCL_TESTS_IMAGE = "ghcr.io/coreweave/nccl-tests:12.8.1-devel-ubuntu22.04-nccl2.26.2-1-0708d2e"
GENERIC_ALL_REDUCE_PERF = "/opt/nccl_tests/build/all_reduce_perf"

# EFA: AWS's prebuilt nccl-tests image (EFA installer 1.43.2, aws-ofi-nccl v1.16.3, NCCL v2.27.7-1, nccl-tests
# v2.16.9 on CUDA 12.8.1: the README's default versions, the image the catalog's p5.48xlarge busbw figure comes from),
# its paths (nccl-tests.Dockerfile) and the environment of its EKS MPIJob (kubernetes/nccl-tests.yaml).
# https://github.com/aws-samples/awsome-distributed-training/tree/0162aacd5da07d424e13f44bef8dd2c4cfcc66e4/micro-benchmarks/nccl-tests
EFA_NCCL_TESTS_IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"
EFA_ALL_REDUCE_PERF = "/opt/nccl-tests/build/all_reduce_perf"
EFA_MPIRUN = "/opt/amazon/openmpi/bin/mpirun"  # by its full path, so the remote ranks find Open MPI's prefix
EFA_ENV = {
    "FI_PROVIDER": "efa",
    "FI_EFA_FORK_SAFE": "1",
    "NCCL_BUFFSIZE": "8388608",
    "NCCL_P2P_NET_CHUNKSIZE": "524288",
    "NCCL_TUNER_PLUGIN": "/opt/aws-ofi-nccl/install/lib/libnccl-ofi-tuner.so",
}

# GPUDirect-TCPXO (A3 Mega): Google's release of Nov 19, 2025 pairs the NCCL plugin image v1.0.14 (NCCL 2.28.7,
# nccl-tests under /third_party/nccl-tests-mpi) with the RxDM (tcpxo-daemon) v1.0.20; the pod shape (RxDM next to the
# test, the GPU devices it is handed, host /sys and /proc/sys, /dev/aperture_devices, the plugin the installer
# DaemonSet puts in /home/kubernetes/bin/nvidia/lib64 mounted at /usr/local/nvidia/lib64, the eth1..eth8 networks)
# follows GKE's nccl-test-latest.yaml; every rank sources the plugin's nccl-env-profile.sh (NCCL_LIB_DIR), as the
# release notes say to.
# https://github.com/GoogleCloudPlatform/container-engine-accelerators/blob/master/gpudirect-tcpxo/README.md
# https://github.com/GoogleCloudPlatform/container-engine-accelerators/blob/master/gpudirect-tcpxo/nccl-test-latest.yaml
# https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx
TCPXO_NCCL_TESTS_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.14"
TCPXO_RXDM_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.20"
TCPXO_ALL_REDUCE_PERF = "/third_party/nccl-tests-mpi/build/all_reduce_perf"
TCPXO_LIB_DIR = "/usr/local/nvidia/lib64"
TCPXO_HOST_LIB_DIR = "/home/kubernetes/bin/nvidia/lib64"
TCPXO_RXDM_DEVICES = [*(f"/dev/nvidia{i}" for i in range(8)), "/dev/nvidiactl", "/dev/nvidia-uvm"]
TCPXO_RXDM_DEVICES.append("/dev/dmabuf_import_helper")

# InfiniBand on AKS: the NCCL environment of Azure's aks-rdma-infiniband NCCL test (NCCL_IB_DISABLE=0 to force IB,
# NCCL_NET_GDR_LEVEL=SYS, CUDA_DEVICE_ORDER=PCI_BUS_ID), the pod asking for rdma/shared_ib with IPC_LOCK.
# https://github.com/Azure/aks-rdma-infiniband/tree/main/tests/scenarios/k8s (values.yaml, templates/mpi-job.yaml)
IB_ENV = {"NCCL_IB_DISABLE": "0", "NCCL_NET_GDR_LEVEL": "SYS", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

# Multi-node NVLink (rack-scale pools): every rank of one NVLink domain claims the channel of its ComputeDomain, and
# NCCL is told to use MNNVL (NCCL_MNNVL_ENABLE=1, not the default 2 = auto, which falls back to the network when the
# fabric or the IMEX channel is not ready: the test would then pass on the wrong path; a broken channel makes NCCL
# fail instead, "Check IMEX channel configuration") with cuMem on, which MNNVL needs (NCCL src/mnnvl.cc; the AWS EKS
# and CoreWeave GB200 recipes set both or MNNVL with NVLS; rack-scale reference §3.5).
MNNVL_ENV = {"NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1"}
# GKE A4X: Cluster Toolkit's gke-a4x NCCL JobSet runs Google's Arm gIB diagnostic image (nccl-tests under
# /third_party/nccl-tests/build, MPI, sshd) with GKE's driver libraries at /usr/local/nvidia/lib64; within one NVLink
# domain NCCL's traffic stays on NVLink, so no RDMA network is attached.
GIB_DIAGNOSTIC_ARM64_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic-arm64:v1.0.6"
GIB_ALL_REDUCE_PERF = "/third_party/nccl-tests/build/all_reduce_perf"
GKE_DRIVER_LIB_DIR = "/usr/local/nvidia/lib64"


@dataclass(frozen=True)
class NcclTransport:
    """How the acceptance pods reach the node group's fabric: the nccl-tests image, where its binaries are, the
    environment every rank gets (forwarded by mpirun), what each rank runs first, and any sidecar, volumes and pod
    annotations the fabric needs."""

    fabric: str
    image: str
    all_reduce_perf: str
    mpirun: str = "mpirun"
    env: dict[str, str] = field(default_factory=dict)
    rank_setup: str = ""
    sidecars: tuple[dict[str, Any], ...] = ()
    volumes: tuple[dict[str, Any], ...] = ()
    mounts: tuple[dict[str, Any], ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)


def _tcpxo(plan: ClusterPlan) -> NcclTransport:
    nets = [n.name for n in gke_networks(plan) if n.device_mode == "NetDevice"]
    interfaces = [{"interfaceName": "eth0", "network": "default"}]
    interfaces += [{"interfaceName": f"eth{i + 1}", "network": n} for i, n in enumerate(nets)]
    lib = {"name": "tcpxo-lib", "mountPath": TCPXO_LIB_DIR}
    rxdm = {
        "name": "tcpxo-daemon",
        "image": TCPXO_RXDM_IMAGE,
        # a native sidecar (an init container that keeps running): the pod completes when the test does
        "restartPolicy": "Always",
        "command": [
            "/bin/sh",
            "-c",
            "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n"
            "exec /fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8",
        ],
        "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}},
        "env": [{"name": "LD_LIBRARY_PATH", "value": TCPXO_LIB_DIR}],
        "volumeMounts": [
            lib,
            {"name": "sys", "mountPath": "/hostsysfs"},
            {"name": "proc-sys", "mountPath": "/hostprocsysfs"},
        ],
    }
    return NcclTransport(
        fabric="gpudirect-tcpxo",
        image=TCPXO_NCCL_TESTS_IMAGE,
        all_reduce_perf=TCPXO_ALL_REDUCE_PERF,
        env={
            "LD_LIBRARY_PATH": TCPXO_LIB_DIR,
            "NCCL_LIB_DIR": TCPXO_LIB_DIR,
            "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices",
        },
        rank_setup='source "$NCCL_LIB_DIR/nccl-env-profile.sh"',
        sidecars=(rxdm,),
        volumes=(
            {"name": "tcpxo-lib", "hostPath": {"path": TCPXO_HOST_LIB_DIR}},
            {"name": "sys", "hostPath": {"path": "/sys"}},
            {"name": "proc-sys", "hostPath": {"path": "/proc/sys"}},
            {"name": "aperture-devices", "hostPath": {"path": "/dev/aperture_devices"}},
        ),
        mounts=(lib, {"name": "aperture-devices", "mountPath": "/dev/aperture_devices"}),
        annotations={
            "devices.gke.io/container.tcpxo-daemon": "".join(f"- path: {d}\n" for d in TCPXO_RXDM_DEVICES),
            "networking.gke.io/default-interface": "eth0",
            "networking.gke.io/interfaces": json.dumps(interfaces),
        },
    )


def _mnnvl(plan: ClusterPlan, group: PlannedNodeGroup) -> NcclTransport:
    pool = _pool(plan, group)
    if pool.provider == "gcp" and group.cpu_arch == "arm64":
        env = {"LD_LIBRARY_PATH": GKE_DRIVER_LIB_DIR, **MNNVL_ENV}
        return NcclTransport("mnnvl", GIB_DIAGNOSTIC_ARM64_IMAGE, GIB_ALL_REDUCE_PERF, env=env)
    raise ValueError(
        f"node group {group.name}: aicluster knows no pinned {group.cpu_arch} nccl-tests image for multi-node NVLink "
        f"on {pool.provider} (AWS's GB200 example pulls an unversioned image): the acceptance test is not written; "
        "run nccl-tests with a ComputeDomain by hand"
    )


def nccl_transport(plan: ClusterPlan, group: PlannedNodeGroup) -> NcclTransport:
    """The image and environment that make all_reduce_perf use the node group's fabric: EFA through aws-ofi-nccl
    (EKS), GPUDirect-TCPXO through Google's plugin and RxDM (GKE A3 Mega), InfiniBand verbs (AKS), multi-node NVLink
    within an NVLink domain (rack-scale groups: GKE A4X). GKE's GPUDirect-TCPX (A3 High) and GPUDirect-RDMA (A3 Ultra /
    A4) were not sourced for a pod: those groups get the generic image, which measures the pod network (TCP sockets),
    not the GPU NICs."""
    if group.nvlink_domain is not None:
        return _mnnvl(plan, group)
    fabric = _pool(plan, group).fabric
    if fabric == "efa":
        return NcclTransport(fabric, EFA_NCCL_TESTS_IMAGE, EFA_ALL_REDUCE_PERF, mpirun=EFA_MPIRUN, env=dict(EFA_ENV))
    if fabric == "gpudirect-tcpxo":
        return _tcpxo(plan)
    if fabric == "infiniband":
        return NcclTransport(fabric, GENERIC_NCCL_TESTS_IMAGE, GENERIC_ALL_REDUCE_PERF, env=dict(IB_ENV))
    return NcclTransport("sockets", GENERIC_NCCL_TESTS_IMAGE, GENERIC_ALL_REDUCE_PERF)


def acceptance_min_busbw(plan: ClusterPlan, group: PlannedNodeGroup, catalog: Catalog) -> tuple[float, float] | None:
    """(expected, threshold) all_reduce bus bandwidth in GB/s for the group's nodes: the collective model for the
    JobSet's shape (all the group's nodes, NCCL's own algorithm, no SHARP; render/nccl.py acceptance_busbw) and
    ACCEPTANCE_MIN_FRACTION of it. A published figure of another shape (AWS's 2-node tree, Azure's single-VM NVLink
    minimum) would hold the fabric to more than its wire carries. None: one node, or no GPU model for the type."""
    pool = _pool(plan, group)
    if group.nvlink_domain is not None:
        return _mnnvl_min_busbw(pool, group, catalog)
    if group.nodes < 2:
        return None
    # the JobSet lets NCCL choose, and the gate reads its largest message
    busbw = acceptance_busbw(pool, catalog, group.nodes, algorithm=None, message_bytes=JOBSET_LARGEST_BYTES)
    if busbw is None:
        return None
    return busbw.busbw_gb_s, round(busbw.busbw_gb_s * ACCEPTANCE_MIN_FRACTION, 2)


def _mnnvl_min_busbw(pool: PlannedPool, group: PlannedNodeGroup, catalog: Catalog) -> tuple[float, float] | None:
    """An NVLink domain's all_reduce figure: the catalog's NVLink record of the type (collectives.yaml), measured on
    as many GPUs as the group has (a whole NVL72: 72); a partial domain has no figure of its own."""
    net = catalog.collectives.network_of(pool.provider, pool.instance_type)
    domain = catalog.collectives.domain(net.nvlink) if net is not None else None
    gpus = group.nodes * pool.accelerators_per_node
    if domain is None or domain.gpus != gpus:
        return None
    busbw = domain.all_reduce_busbw_gb_s
    return busbw, round(busbw * ACCEPTANCE_MIN_FRACTION, 2)


# The gate on rank 0's output (nccl-tests all_reduce_perf with -c 1): the out-of-place busbw and #wrong of the largest
# message size, as playbooks/roles/acceptance/filter_plugins/nccl_tests.py reads them (a row is size count type redop
# root time algbw busbw #wrong, then the same four in-place columns). No result row fails the test.
def busbw_gate(log: str) -> str:
    """The shell command that reads `log` and exits non-zero below $AICLUSTER_MIN_BUSBW_GB_S (0: no minimum)."""
    return BUSBW_GATE + f" {shlex.quote(log)}\n"


BUSBW_GATE = r"""awk -v min="${AICLUSTER_MIN_BUSBW_GB_S:-0}" '
$1 ~ /^[0-9]+$/ && NF >= 12 { size = $1; busbw = $(NF - 5); wrong = $(NF - 4) }
END {
  if (size == "") { print "acceptance: FAIL, no all_reduce_perf result rows"; exit 1 }
  verdict = (busbw + 0 >= min + 0 && wrong == "0") ? "ok" : "FAIL"
  printf "acceptance: %s, busbw %s GB/s at %s B (minimum %s GB/s), wrong %s\n", verdict, busbw, size, min, wrong
  exit verdict != "ok"
}'"""


def _launcher_script(name: str, nodes: int, gpus: int, transport: NcclTransport, job: str = "node") -> str:
    """Pod 0 of replicated job `job` launches MPI over the job's pods (JobSet hostnames <name>-<job>-0-<i>)."""
    host = f"{name}-{job}-0"
    hosts = ",".join(f"{host}-{i}.{name}:{gpus}" for i in range(nodes))
    rank = f"exec {transport.all_reduce_perf} -b 8 -e {JOBSET_LARGEST_BYTES // 2**30}G -f 2 -g 1 -c 1"
    if transport.rank_setup:
        rank = f"{transport.rank_setup} && {rank}"
    forwarded = " ".join(f"-x {k}" for k in dict.fromkeys(("PATH", "LD_LIBRARY_PATH", *transport.env)))
    return (
        "set -eu -o pipefail\n"
        "ssh-keygen -A >/dev/null\n"  # host keys, where the image has none
        f"mkdir -p /run/sshd && /usr/sbin/sshd -p {ACCEPTANCE_SSH_PORT}\n"
        # workers serve MPI until pod 0 (the launcher) finishes and leaves the headless service
        'if [ "$JOB_COMPLETION_INDEX" != 0 ]; then\n'
        f"  until getent hosts {host}-0.{name}; do sleep 2; done\n"
        f"  while getent hosts {host}-0.{name}; do sleep 10; done\n"
        "  exit 0\n"
        "fi\n"
        f"for i in $(seq 0 {nodes - 1}); do\n"
        f"  until getent hosts {host}-$i.{name}; do sleep 2; done\n"
        "done\n"
        f"{transport.mpirun} --allow-run-as-root -np {gpus * nodes} -H {hosts} --bind-to none "
        f"-mca plm_rsh_args '-p {ACCEPTANCE_SSH_PORT} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null' "
        f"{forwarded} -x NCCL_DEBUG=INFO /bin/bash -c {shlex.quote(rank)} 2>&1 | tee {ACCEPTANCE_LOG}\n"
        f"{busbw_gate(ACCEPTANCE_LOG)}"
    )


def acceptance_group(plan: ClusterPlan) -> PlannedNodeGroup:
    """The node group the acceptance test runs on: the largest."""
    kube = _kube(plan)
    if not kube.node_groups:
        raise ValueError(f"cluster {plan.name} has no node groups to test")
    return max(kube.node_groups, key=lambda g: g.nodes)


def acceptance_groups(plan: ClusterPlan) -> list[PlannedNodeGroup]:
    """The node groups the acceptance test runs on, one replicated job each: the largest group; for a rack-scale
    pool, every NVLink domain of the largest group's pool, each domain's ranks on its own nodes (one test per rack:
    a rack left out would go untested)."""
    group = acceptance_group(plan)
    if group.nvlink_domain is None:
        return [group]
    return [g for g in _kube(plan).node_groups if g.pool == group.pool and g.nvlink_domain is not None]


def _job_name(group: PlannedNodeGroup) -> str:
    """The replicated job of an NVLink domain: the domain's suffix within its pool (nvl0, nvl1, ...)."""
    assert group.nvlink_domain is not None
    return group.nvlink_domain.removeprefix(f"{group.pool}-")


def acceptance_compute_domains(plan: ClusterPlan) -> list[dict[str, Any]]:
    """The ComputeDomains of the acceptance test, one per NVLink domain it tests (empty off rack-scale pools): each
    domain's ranks are one workload, and each workload has its own ComputeDomain."""
    kube = _kube(plan)
    return [
        compute_domain(f"{ACCEPTANCE_NAME}-{_job_name(g)}", kube.namespace, {NVLINK_LABEL: str(g.nvlink_domain)})
        for g in acceptance_groups(plan)
        if g.nvlink_domain is not None
    ]


def _required_level(kube: PlannedKubernetes, group: PlannedNodeGroup) -> tuple[str, str]:
    """The TAS annotation that keeps the test in one fabric domain: a node group is one domain (an AKS scale set,
    a GKE placement group, an EKS placement group's pool, an NVLink domain), so require its level where the topology
    has one (an NVLink domain's: the plan's nvlink_level), else prefer the widest network level (EKS and GKE topology
    labels come from the cloud's network)."""
    if group.nvlink_domain is not None and kube.nvlink_level is not None:
        return ("kueue.x-k8s.io/podset-required-topology", kube.nvlink_level)
    levels = next((t.levels for t in kube.topologies if t.name == group.topology), ())
    if "kubernetes.azure.com/agentpool" in levels:
        return ("kueue.x-k8s.io/podset-required-topology", "kubernetes.azure.com/agentpool")
    return ("kueue.x-k8s.io/podset-preferred-topology", levels[0] if levels else "kubernetes.io/hostname")


def acceptance_ssh_secret(plan: ClusterPlan, private_key: str, public_key: str) -> dict[str, Any]:
    """The Secret the acceptance pods mount at /root/.ssh: the key pair mpirun reaches the other pods with, and the
    public key as their authorized_keys. The caller generates the keys (one fresh pair per run); they never enter the
    plan."""
    kube = _kube(plan)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(ACCEPTANCE_SSH_SECRET, kube.namespace),
        "type": "Opaque",
        "stringData": {"id_ed25519": private_key, "id_ed25519.pub": public_key, "authorized_keys": public_key},
    }


def acceptance_jobset(plan: ClusterPlan, catalog: Catalog | None = None) -> dict[str, Any]:
    """NCCL all_reduce_perf over every node of the largest node group: one pod per node (exclusive placement on
    the hostname), each asking for the group's whole per-node offer, admitted by Kueue through the LocalQueue and
    placed in one fabric domain, with the image and environment that use the group's fabric (`nccl_transport`).
    Pod 0 launches MPI over the JobSet's headless service once every pod resolves (SSH with the key pair of the Secret
    `nccl-allreduce-ssh`, `acceptance_ssh_secret`), then fails the JobSet when the bus bandwidth at the largest message
    size is below ACCEPTANCE_MIN_FRACTION of the catalog's figure for the instance type (annotation
    `aicluster.io/expected-busbw-gb-s`; no figure, no minimum: the log still has the table).

    A rack-scale pool is tested domain by domain: one replicated job per NVLink domain (nvl0, nvl1, ...), its pods
    pinned to the domain's nodes and required in one NVLink domain by Kueue, each claiming the channel of the
    domain's own ComputeDomain (`acceptance_compute_domains`), with NCCL forced onto multi-node NVLink; the gate is the
    catalog's all_reduce figure for a whole NVLink domain."""
    kube = _kube(plan)
    catalog = catalog or load_catalog()
    groups = acceptance_groups(plan)
    name = ACCEPTANCE_NAME
    annotations = {"alpha.jobset.sigs.k8s.io/exclusive-topology": "kubernetes.io/hostname"}
    gate = acceptance_min_busbw(plan, groups[0], catalog)
    if gate is not None:
        annotations[EXPECTED_BUSBW_ANNOTATION] = f"{gate[0]:g}"
    jobs = [
        _replicated_job(plan, kube, g, "node" if g.nvlink_domain is None else _job_name(g), catalog) for g in groups
    ]
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": {
            **_meta(name, kube.namespace, **{"kueue.x-k8s.io/queue-name": kube.local_queue}),
            "annotations": annotations,
        },
        "spec": {
            "network": {"enableDNSHostnames": True, "subdomain": name, "publishNotReadyAddresses": True},
            "failurePolicy": {"maxRestarts": 0},
            "replicatedJobs": jobs,
        },
    }


def _replicated_job(
    plan: ClusterPlan, kube: PlannedKubernetes, group: PlannedNodeGroup, job: str, catalog: Catalog
) -> dict[str, Any]:
    """One replicated job of the acceptance JobSet: a pod per node of `group`, pod 0 launching MPI over them."""
    transport = nccl_transport(plan, group)
    gpus = int(group.resources.get("nvidia.com/gpu", "0"))
    name = ACCEPTANCE_NAME
    gate = acceptance_min_busbw(plan, group, catalog)
    env = [{"name": k, "value": v} for k, v in transport.env.items()]
    if gate is not None:
        env.append({"name": MIN_BUSBW_ENV, "value": f"{gate[1]:g}"})
    key, level = _required_level(kube, group)
    requests = dict(group.resources)
    container: dict[str, Any] = {
        "name": "nccl",
        "image": transport.image,
        "command": ["/bin/bash", "-c", _launcher_script(name, group.nodes, gpus, transport, job)],
        "resources": {"requests": requests, "limits": requests},
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        "volumeMounts": [
            {"name": "ssh", "mountPath": "/root/.ssh", "readOnly": True},
            {"name": "dshm", "mountPath": "/dev/shm"},
            *transport.mounts,
        ],
    }
    if env:
        container["env"] = env
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": dict(group.labels),
        "tolerations": tolerations(group),
        "containers": [container],
        "volumes": [
            {"name": "ssh", "secret": {"secretName": ACCEPTANCE_SSH_SECRET, "defaultMode": 0o600}},
            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
            *transport.volumes,
        ],
    }
    if group.nvlink_domain is not None:  # the channel of this domain's ComputeDomain (acceptance_compute_domains)
        pod_claim, container_claim = channel_claim(f"{name}-{job}")
        pod_spec["resourceClaims"] = [pod_claim]
        container["resources"]["claims"] = [container_claim]
    if transport.sidecars:
        pod_spec["initContainers"] = list(transport.sidecars)
    return {
        "name": job,
        "replicas": 1,
        "template": {
            "spec": {
                "parallelism": group.nodes,
                "completions": group.nodes,
                "completionMode": "Indexed",
                "backoffLimit": 0,
                "template": {
                    "metadata": {
                        "labels": {"aicluster.io/test": name},
                        "annotations": {key: level, **transport.annotations},
                    },
                    "spec": pod_spec,
                },
            }
        },
    }
