"""Kubernetes objects and Helm values for a cluster with a managed control plane (plan.kubernetes): plain dicts.

- `helm_values(plan, addon)`: the values of one Helm add-on release for this cluster's cloud.
- `kubernetes_objects(plan)`: what aicluster applies after the add-ons: the namespace, Kueue's Topology,
  ResourceFlavors (one per node group), ClusterQueue and LocalQueue, the Network Operator's NicClusterPolicy (Azure
  InfiniBand) and GKE's multi-network objects (GPU NIC VPCs).
- `acceptance_jobset(plan)`: a topology-aware JobSet that runs NCCL's all_reduce_perf over the fabric of every node
  of the largest node group and fails below the expected bus bandwidth; `acceptance_ssh_secret(plan, ...)`: the SSH
  key Secret its pods share (both written out by `aicluster acceptance`, never deployed by the program).
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
from aicluster.render.nccl import expected_busbw

KUEUE_API = "kueue.x-k8s.io/v1beta2"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
NIC_POLICY_API = "mellanox.com/v1alpha1"
GKE_NETWORK_API = "networking.gke.io/v1"
# API group -> catalog add-on whose chart installs the CRD (GKE's networking.gke.io is GKE's own)
CRD_ADDONS = {"kueue.x-k8s.io": "kueue", "jobset.x-k8s.io": "jobset", "mellanox.com": "network-operator"}

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
    "a4-highgpu-8g": "nvidia-b200",
    "a3-ultragpu-8g": "nvidia-h200-141gb",
    "a3-highgpu-8g": "nvidia-h100-80gb",
    "a3-megagpu-8g": "nvidia-h100-mega-80gb",
}

# Manifest add-ons (catalog kind: manifest): the fabric whose pools need each, and the image the catalog's version
# pins, as GoogleCloudPlatform/container-engine-accelerators' manifests name them (commits in the catalog sources).
MANIFEST_FABRICS = {
    "nccl-tcpxo-installer": "gpudirect-tcpxo",
    "nri-device-injector": "gpudirect-tcpxo",
    "nccl-rdma-installer": "gpudirect-rdma",
}
TCPXO_PLUGIN_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev"
GIB_PLUGIN_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib"
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
    """Tolerations that let a pod (or a flavor's pods) onto the group's nodes: exactly its taints."""
    return [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect} for t in group.taints]


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
            for t in g.taints:
                seen.setdefault((t.key, t.effect), {"key": t.key, "operator": "Exists", "effect": t.effect})
    return list(seen.values())


# ---------------------------------------------------------------------------------------------------- Helm values


def _gpu_operator(plan: ClusterPlan, kube: PlannedKubernetes) -> dict[str, Any]:
    infiniband = any(p.fabric == "infiniband" for p in plan.pools if p.provider == kube.provider)
    values: dict[str, Any] = {
        # the operands run on the GPU nodes: tolerate their taint (the chart's default list, kept explicit)
        "daemonsets": {"tolerations": _accelerator_tolerations(kube)},
        "dcgmExporter": {"enabled": True},
        "devicePlugin": {"enabled": True},
    }
    if kube.service == "eks":
        # AL2023_x86_64_NVIDIA ships the NVIDIA driver and container toolkit: the operator must not install either
        values["driver"] = {"enabled": False}
        values["toolkit"] = {"enabled": False}
    else:
        # AKS pools skip the AKS driver (--gpu-driver none); the operator owns the driver, with GPUDirect RDMA
        # (nvidia-peermem) where the nodes have InfiniBand (aks-rdma-infiniband)
        values["driver"] = {"enabled": True, "rdma": {"enabled": infiniband}}
    if any(a.id == "network-operator" for a in kube.addons):
        values["nfd"] = {"enabled": False}  # the Network Operator runs Node Feature Discovery
    return values


def _network_operator(kube: PlannedKubernetes) -> dict[str, Any]:
    return {
        # NFD labels the nodes with pci-15b3.present, which the NicClusterPolicy selects on
        "nfd": {"enabled": True, "deployNodeFeatureRules": kube.service != "aks"},
        "sriovNetworkOperator": {"enabled": False},
    }


def helm_values(plan: ClusterPlan, addon: PlannedAddon) -> dict[str, Any]:
    """The values of `addon`'s Helm release for this cluster; every key is one the chart's values.yaml defines.

    Kueue and JobSet keep their chart defaults: Topology-Aware Scheduling is beta and on by default since Kueue
    v0.14, and the JobSet integration is in Kueue's default integrations list."""
    kube = _kube(plan)
    if addon.id == "gpu-operator":
        return _gpu_operator(plan, kube)
    if addon.id == "network-operator":
        return _network_operator(kube)
    if addon.id == "efa-device-plugin":
        # the plugin's DaemonSet has no tolerations by default; the EFA nodes carry the GPU taint
        return {"tolerations": _accelerator_tolerations(kube)}
    if addon.id in ("kueue", "jobset"):
        return {}
    raise ValueError(f"add-on {addon.id!r} is not a Helm chart aicluster knows how to configure")


# ------------------------------------------------------------------------------------------------------- objects


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/managed-by": "aicluster", **labels}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def flavor_name(group: PlannedNodeGroup) -> str:
    return group.name.lower()


def queued_resources(group: PlannedNodeGroup) -> dict[str, str]:
    """The group's per-node resources Kueue queues on (everything but hugepages)."""
    return {k: v for k, v in group.resources.items() if not k.startswith(UNQUEUED_PREFIXES)}


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
    flavors = []
    for g in kube.node_groups:
        spec: dict[str, Any] = {"nodeLabels": dict(g.labels), "tolerations": tolerations(g)}
        if g.topology in topologies:
            spec["topologyName"] = g.topology
        objs.append(
            {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": _meta(flavor_name(g)), "spec": spec}
        )
        flavors.append(g)
    # One resource group per set of covered resources: a flavor in a group must offer every covered resource
    groups: dict[tuple[str, ...], list[PlannedNodeGroup]] = {}
    for g in flavors:
        groups.setdefault(tuple(sorted(queued_resources(g))), []).append(g)
    resource_groups = [
        {
            "coveredResources": list(covered),
            "flavors": [
                {
                    "name": flavor_name(g),
                    "resources": [
                        {"name": r, "nominalQuota": _quantity(queued_resources(g)[r], g.nodes)} for r in covered
                    ],
                }
                for g in members
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
    # the RDMA NICs' addresses are answered on other NICs by design; upstream keeps the kernel from logging them
    martians = "".join(f"sysctl -w net.ipv4.conf.gpu{i}rdma0.log_martians=0\n" for i in range(8))
    install = (
        "set -ex\n"
        "/scripts/container_entry.sh install --install-nccl\n"
        "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
        "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\n"
        'echo "installation finishes"\n'
    )
    return {
        "volumes": [
            {
                "name": "library-dir-host",
                "hostPath": {"path": "/home/kubernetes/bin/nvidia/lib64", "type": "DirectoryOrCreate"},
            },
            {"name": "gib", "hostPath": {"path": "/home/kubernetes/bin/gib"}},
        ],
        "initContainers": [
            {
                "name": "disable-log-martian",
                "image": SYSCTL_IMAGE,
                "securityContext": {"privileged": True},
                "command": ["/bin/sh"],
                "args": ["-c", martians],
            },
            {
                "name": "nccl-rdma-installer",
                "image": f"{GIB_PLUGIN_IMAGE}:{addon.version}",
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
}
# upstream's object names (the TCPXO workload guides refer to the DaemonSets by them)
MANIFEST_NAMES = {"nri-device-injector": "device-injector"}


def manifest_objects(plan: ClusterPlan, addon: PlannedAddon) -> list[dict[str, Any]]:
    """The objects of manifest add-on `addon`: one DaemonSet, as upstream's manifest has it (host network and PID,
    system-node-critical, the pinned images, upstream's host paths and commands), in the add-on's namespace, on the
    nodes whose GKE accelerator is one of the node groups that need it (pools of the add-on's fabric), tolerating
    their GPU taint."""
    kube = _kube(plan)
    if addon.kind != "manifest" or addon.id not in MANIFEST_PODS:
        raise ValueError(f"add-on {addon.id!r} is not a manifest aicluster knows how to render")
    fabric = MANIFEST_FABRICS[addon.id]
    groups = [g for g in kube.node_groups if _pool(plan, g).fabric == fabric]
    accelerators = sorted({gke_accelerator(_pool(plan, g)) for g in groups})
    if not accelerators:
        return []
    name = MANIFEST_NAMES.get(addon.id, addon.id)
    selector = {"k8s-app": name}
    tolerations = [
        {"key": t.key, "operator": "Exists", "effect": t.effect}
        for t in {(t.key, t.effect): t for g in groups for t in g.taints}.values()
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
    return objs


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


def nccl_transport(plan: ClusterPlan, group: PlannedNodeGroup) -> NcclTransport:
    """The image and environment that make all_reduce_perf use the node group's fabric: EFA through aws-ofi-nccl
    (EKS), GPUDirect-TCPXO through Google's plugin and RxDM (GKE A3 Mega), InfiniBand verbs (AKS). GKE's
    GPUDirect-TCPX (A3 High) and GPUDirect-RDMA (A3 Ultra / A4) were not sourced for a pod: those groups get the generic
    image, which measures the pod network (TCP sockets), not the GPU NICs."""
    fabric = _pool(plan, group).fabric
    if fabric == "efa":
        return NcclTransport(fabric, EFA_NCCL_TESTS_IMAGE, EFA_ALL_REDUCE_PERF, mpirun=EFA_MPIRUN, env=dict(EFA_ENV))
    if fabric == "gpudirect-tcpxo":
        return _tcpxo(plan)
    if fabric == "infiniband":
        return NcclTransport(fabric, GENERIC_NCCL_TESTS_IMAGE, GENERIC_ALL_REDUCE_PERF, env=dict(IB_ENV))
    return NcclTransport("sockets", GENERIC_NCCL_TESTS_IMAGE, GENERIC_ALL_REDUCE_PERF)


def acceptance_min_busbw(plan: ClusterPlan, group: PlannedNodeGroup, catalog: Catalog) -> tuple[float, float] | None:
    """(expected, threshold) all_reduce bus bandwidth in GB/s for the group's nodes: the catalog's figure for the
    instance type under its NCCL profile (the one the Slurm acceptance role gates on) and ACCEPTANCE_MIN_FRACTION of
    it. None where no source gives a multi-node figure: a single-VM figure (Azure's AzNHC, NVLink only) says nothing
    about the fabric the test crosses."""
    busbw = expected_busbw(_pool(plan, group), catalog)
    if busbw is None or busbw.busbw_gb_s is None or (busbw.nodes or 0) < 2:
        return None
    return busbw.busbw_gb_s, round(busbw.busbw_gb_s * ACCEPTANCE_MIN_FRACTION, 2)


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


def _launcher_script(name: str, nodes: int, gpus: int, transport: NcclTransport) -> str:
    hosts = ",".join(f"{name}-node-0-{i}.{name}:{gpus}" for i in range(nodes))
    rank = f"exec {transport.all_reduce_perf} -b 8 -e 16G -f 2 -g 1 -c 1"
    if transport.rank_setup:
        rank = f"{transport.rank_setup} && {rank}"
    forwarded = " ".join(f"-x {k}" for k in dict.fromkeys(("PATH", "LD_LIBRARY_PATH", *transport.env)))
    return (
        "set -eu -o pipefail\n"
        "ssh-keygen -A >/dev/null\n"  # host keys, where the image has none
        f"mkdir -p /run/sshd && /usr/sbin/sshd -p {ACCEPTANCE_SSH_PORT}\n"
        # workers serve MPI until pod 0 (the launcher) finishes and leaves the headless service
        'if [ "$JOB_COMPLETION_INDEX" != 0 ]; then\n'
        f"  until getent hosts {name}-node-0-0.{name}; do sleep 2; done\n"
        f"  while getent hosts {name}-node-0-0.{name}; do sleep 10; done\n"
        "  exit 0\n"
        "fi\n"
        f"for i in $(seq 0 {nodes - 1}); do\n"
        f"  until getent hosts {name}-node-0-$i.{name}; do sleep 2; done\n"
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


def _required_level(kube: PlannedKubernetes, group: PlannedNodeGroup) -> tuple[str, str]:
    """The TAS annotation that keeps the test in one fabric domain: a node group is one domain (an AKS scale set,
    a GKE placement group, an EKS placement group's pool), so require its level where the topology has one, else
    prefer the widest network level (EKS and GKE topology labels come from the cloud's network)."""
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
    `aicluster.io/expected-busbw-gb-s`; no figure, no minimum: the log still has the table)."""
    kube = _kube(plan)
    group = acceptance_group(plan)
    transport = nccl_transport(plan, group)
    gpus = int(group.resources.get("nvidia.com/gpu", "0"))
    name = ACCEPTANCE_NAME
    gate = acceptance_min_busbw(plan, group, catalog or load_catalog())
    env = [{"name": k, "value": v} for k, v in transport.env.items()]
    annotations = {"alpha.jobset.sigs.k8s.io/exclusive-topology": "kubernetes.io/hostname"}
    if gate is not None:
        env.append({"name": MIN_BUSBW_ENV, "value": f"{gate[1]:g}"})
        annotations[EXPECTED_BUSBW_ANNOTATION] = f"{gate[0]:g}"
    key, level = _required_level(kube, group)
    requests = dict(group.resources)
    container: dict[str, Any] = {
        "name": "nccl",
        "image": transport.image,
        "command": ["/bin/bash", "-c", _launcher_script(name, group.nodes, gpus, transport)],
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
    if transport.sidecars:
        pod_spec["initContainers"] = list(transport.sidecars)
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
            "replicatedJobs": [
                {
                    "name": "node",
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
            ],
        },
    }
