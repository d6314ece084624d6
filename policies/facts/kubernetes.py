"""Managed Kubernetes as the engine hands it: EKS, GKE and AKS control planes and node groups (EKS managed node
groups with their launch templates, GKE node pools, AKS agent pools and a cluster's agentPoolProfiles), and the
kubernetes provider's Helm releases and Kueue flavors. Each cloud spells taints, labels and node counts its own way;
a node group here is one `NodeGroup` whatever its cloud."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .aws import EFA_INTERFACE_TYPES, LAUNCH_TEMPLATE, SUBNET, root_volumes_gib, template_market
from .azure import azure_market, vm_size
from .engine import UNKNOWN, Res, count, get, items, num, truthy
from .gcp import machine_type
from .model import ControlPlane, Fleet, NodeGroup, Taint

if TYPE_CHECKING:
    from .stack import Stack

EKS_CLUSTER = "aws:eks/cluster:Cluster"

EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"

GKE_CLUSTER = "gcp:container/cluster:Cluster"

GKE_NODE_POOL = "gcp:container/nodePool:NodePool"

AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"

AKS_AGENT_POOL = "azure-native:containerservice:AgentPool"

KUBERNETES_CLUSTERS = (EKS_CLUSTER, GKE_CLUSTER, AKS_CLUSTER)

NODE_GROUP_TYPES = (EKS_NODE_GROUP, GKE_NODE_POOL, AKS_AGENT_POOL, AKS_CLUSTER)

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART = "kubernetes:helm.sh/v4:Chart"
RESOURCE_FLAVORS = (
    "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor",
    "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor",
)

_VERSION_PROP = {EKS_CLUSTER: "version", GKE_CLUSTER: "minMasterVersion", AKS_CLUSTER: "kubernetesVersion"}

_K8S_MINOR = re.compile(r"v?(\d+)\.(\d+)")

# EKS and GKE spell taint effects in upper snake case, Kubernetes (and AKS) in camel case
_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"  # Kubernetes sets it on every cloud node

GKE_DEFAULT_NODE_DISK = "pd-balanced"  # a GKE node's boot disk type when its nodeConfig names none


def _effect(value: Any) -> str:
    return _EFFECTS.get(value, value) if isinstance(value, str) else ""


def _taints(raw: list[Any]) -> tuple[Taint, ...]:
    out = []
    for t in raw:
        if isinstance(t, Mapping):
            key, value = get(t, "key"), get(t, "value", default="")
            if isinstance(key, str):
                out.append(Taint(key, value if isinstance(value, str) else "", _effect(get(t, "effect"))))
        elif isinstance(t, str) and ":" in t:  # AKS: "key=value:NoSchedule"
            kv, _, effect = t.rpartition(":")
            key, _, value = kv.partition("=")
            out.append(Taint(key, value, effect))
    return tuple(out)


def _labels(declared: Any, implied: Mapping[str, Any]) -> dict[str, Any]:
    own = {k: v for k, v in declared.items()} if isinstance(declared, Mapping) else {}
    return {**{k: v for k, v in implied.items() if isinstance(v, str)}, **own}


def _eks_node_group(stack: Stack, ng: Res) -> NodeGroup:
    lts = ng.linked("launchTemplate", LAUNCH_TEMPLATE)
    lt = lts[0] if lts else None
    listed = items(ng.props, "instanceTypes")
    it = listed[0] if listed and isinstance(listed[0], str) else lt.get("instanceType") if lt else None
    it = it if isinstance(it, str) else None
    spec = stack.catalog.instance_type("aws", it) if it else None
    nodes = count(ng.get("scalingConfig", "maxSize"))
    if nodes is None:
        nodes = count(ng.get("scalingConfig", "desiredSize"))
    capacity = ng.get("capacityType")
    market = {"SPOT": "spot", "CAPACITY_BLOCK": "capacity-block"}.get(capacity) or template_market(lt)
    root = root_volumes_gib(items(lt.props, "blockDeviceMappings")) if lt else 0.0
    if not root:
        root = num(ng.get("diskSize")) or 0.0
    region = ng.region or (lt.region if lt else None)
    fleet = Fleet(ng, it, nodes, market, region, root, spec, lt) if it and nodes is not None else None
    nics = [n for n in items(lt.props, "networkInterfaces") if isinstance(n, Mapping)] if lt else []
    subnets = ng.linked("subnetIds", SUBNET)
    public = None
    fix = "set associatePublicIpAddress = false in its launch template and put the nodes in private subnets"
    if lt is not None and any(truthy(get(n, "associatePublicIpAddress")) for n in nics):
        public = f"its launch template {lt.name} sets associatePublicIpAddress = true"
    elif not any(get(n, "associatePublicIpAddress") in (False, "false") for n in nics):
        mapped = [s.name for s in subnets if truthy(s.get("mapPublicIpOnLaunch"))]
        if mapped:
            public = f"its subnets {', '.join(mapped)} set mapPublicIpOnLaunch = true"
    zones = tuple(sorted({z for s in subnets if isinstance(z := s.get("availabilityZone"), str)}))
    name = ng.get("nodeGroupName")
    return NodeGroup(
        ng,
        f"EKS node group {ng.name}",
        it,
        spec,
        fleet,
        _labels(
            ng.get("labels"),
            {INSTANCE_TYPE_LABEL: it, "eks.amazonaws.com/nodegroup": name if isinstance(name, str) else None},
        ),
        _taints(items(ng.props, "taints")),
        spec.accelerator_count if spec else 0,
        lt,
        any(get(n, "interfaceType") in EFA_INTERFACE_TYPES for n in nics),
        public,
        zones,
        fix,
    )


def gke_market(node_config: Any) -> str:
    if get(node_config, "spot") is True or get(node_config, "preemptible") is True:
        return "spot"
    if get(node_config, "flexStart") is True:
        return "flex-start"
    if get(node_config, "reservationAffinity", "consumeReservationType") == "SPECIFIC_RESERVATION":
        return "reserved"
    return "on-demand"


def _gke_node_pool(stack: Stack, pool: Res) -> NodeGroup:
    config = pool.get("nodeConfig")
    machine = get(config, "machineType")
    machine = machine.rsplit("/", 1)[-1] if isinstance(machine, str) else None
    spec = machine_type(stack, machine) if machine else None
    locations = tuple(z for z in items(pool.props, "nodeLocations") if isinstance(z, str))
    per_zone = [count(pool.get("nodeCount")), count(pool.get("initialNodeCount"))]
    per_zone.append(count(pool.get("autoscaling", "maxNodeCount")))
    counts = [c * max(1, len(locations)) for c in per_zone if c is not None]
    total_max = count(pool.get("autoscaling", "totalMaxNodeCount"))
    counts += [total_max] if total_max is not None else []
    nodes = max(counts) if counts else None
    size = num(get(config, "diskSizeGb")) or 0.0
    kind = get(config, "diskType")
    disk_type = kind if isinstance(kind, str) else GKE_DEFAULT_NODE_DISK
    fleet = (
        Fleet(pool, machine, nodes, gke_market(config), pool.region, size, spec, None, disk_type)
        if machine and nodes is not None
        else None
    )
    if fleet is not None and machine and spec is None:  # a TPU VM (ct5p-hightpu-4t): billed per chip
        for tpu in stack.catalog.tpu_types.values():
            per_vm = tpu.gke_chips_per_vm(machine)
            if per_vm is not None:
                fleet = replace(fleet, tpu=tpu, chips=per_vm * fleet.nodes)
                break
    guest = sum(count(get(a, "count")) or 0 for a in items(config, "guestAccelerators"))
    private = pool.get("networkConfig", "enablePrivateNodes")
    clusters = pool.linked("cluster", GKE_CLUSTER)
    inherited = clusters[0].get("privateClusterConfig", "enablePrivateNodes") if clusters else UNKNOWN
    public = None
    if private is False:
        public = "networkConfig.enablePrivateNodes = false"
    elif private is None and inherited is not UNKNOWN and inherited is not True:
        public = f"neither it nor its cluster {clusters[0].name} enables private nodes"
    name = pool.get("name")
    return NodeGroup(
        pool,
        f"GKE node pool {pool.name}",
        machine,
        spec,
        fleet,
        _labels(
            get(config, "labels"),
            {INSTANCE_TYPE_LABEL: machine, "cloud.google.com/gke-nodepool": name if isinstance(name, str) else None},
        ),
        _taints(items(config, "taints")),
        spec.accelerator_count if spec and spec.accelerator_count else guest,
        public=public,
        zones=locations,
        fix_public="set networkConfig.enablePrivateNodes = true (or the cluster's privateClusterConfig."
        "enablePrivateNodes)",
    )


def _aks_agent_pool(
    stack: Stack, owner: Res, pool: Res | None, profile: Any, region: str | None, index: int | None = None
) -> NodeGroup:
    """An AKS agent pool: its own resource (`pool`), or entry `index` of the cluster's agentPoolProfiles."""
    if pool is not None:
        clusters = pool.linked("resourceName", AKS_CLUSTER) or (
            stack.of(AKS_CLUSTER) if len(stack.of(AKS_CLUSTER)) == 1 else []
        )
        region = region or (clusters[0].region if clusters else None)
    size = get(profile, "vmSize")
    size = size if isinstance(size, str) else None
    spec = vm_size(stack, size) if size else None
    nodes = count(get(profile, "count"))
    if get(profile, "enableAutoScaling") is True and count(get(profile, "maxCount")) is not None:
        nodes = max(nodes or 0, count(get(profile, "maxCount")) or 0)
    ephemeral = get(profile, "osDiskType") == "Ephemeral"  # on the VM's local disk: no managed disk billed
    root = 0.0 if ephemeral else num(get(profile, "osDiskSizeGB")) or 0.0
    market = azure_market(get(profile, "scaleSetPriority"))
    fleet = Fleet(owner, size, nodes, market, region, root, spec, None, None) if size and nodes is not None else None
    name = get(profile, "name") if pool is None else get(profile, "agentPoolName")
    name = name if isinstance(name, str) else None
    if pool is not None:
        shown = f"AKS agent pool {owner.name}"
    else:
        shown = f"AKS cluster {owner.name} agentPoolProfiles[{index}]" + (f" ({name})" if name else "")
    return NodeGroup(
        owner,
        shown,
        size,
        spec,
        fleet,
        _labels(get(profile, "nodeLabels"), {INSTANCE_TYPE_LABEL: size, "kubernetes.azure.com/agentpool": name}),
        _taints(items(profile, "nodeTaints")),
        spec.accelerator_count if spec else 0,
        public="enableNodePublicIP = true" if get(profile, "enableNodePublicIP") is True else None,
        zones=tuple(z for z in items(profile, "availabilityZones") if isinstance(z, str)),
        fix_public="set enableNodePublicIP = false",
    )


def node_groups(stack: Stack) -> list[NodeGroup]:
    """EKS managed node groups, GKE node pools, AKS agent pools (their own resources, then each cluster's
    agentPoolProfiles), in that order."""
    out = [_eks_node_group(stack, r) for r in stack.of(EKS_NODE_GROUP)]
    out += [_gke_node_pool(stack, r) for r in stack.of(GKE_NODE_POOL)]
    out += [_aks_agent_pool(stack, r, r, r.props, r.region) for r in stack.of(AKS_AGENT_POOL)]
    for c in stack.of(AKS_CLUSTER):
        for i, profile in enumerate(items(c.props, "agentPoolProfiles")):
            if isinstance(profile, Mapping):
                out.append(_aks_agent_pool(stack, c, None, profile, c.region, i))
    return out


def control_plane(stack: Stack, cluster: Res) -> ControlPlane | None:
    """A managed control plane's service record, minor version and support, as it is billed."""
    svc = stack.catalog.kubernetes.get(cluster.catalog_provider)
    if svc is None:
        return None
    version = cluster.get(_VERSION_PROP[cluster.type])
    minor = _K8S_MINOR.match(version) if isinstance(version, str) else None
    shown = f"{minor.group(1)}.{minor.group(2)}" if minor else None
    extended = shown in svc.extended_versions or (
        cluster.type == AKS_CLUSTER and cluster.get("supportPlan") == "AKSLongTermSupport"
    )
    free = cluster.type == AKS_CLUSTER and cluster.get("sku", "tier") == "Free"
    rate = 0.0 if free else svc.extended_usd_per_hour if extended else svc.usd_per_hour
    return ControlPlane(cluster, svc.name, shown, "extended" if extended else "standard", rate)


def efa_node_groups(stack: Stack) -> list[NodeGroup]:
    """The stack's EKS node groups with EFA interfaces."""
    return [g for g in stack.node_groups if g.res.type == EKS_NODE_GROUP and g.efa]


# The NVIDIA DRA driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu; `nvidia-dra-driver-gpu` is its older NGC
# chart): with resources.computeDomains.enabled (the chart's default: true) it runs the IMEX daemons of each
# ComputeDomain on the domain's nodes, which is how IMEX reaches multi-node NVLink pods.
DRA_DRIVER_CHARTS = frozenset({"dra-driver-nvidia-gpu", "nvidia-dra-driver-gpu"})


def compute_domain_drivers(stack: Stack) -> list[Res]:
    """The stack's Helm releases of the NVIDIA DRA driver that leave ComputeDomains on (values unknown during preview
    count as on: the pack cannot tell otherwise)."""
    out = []
    for r in stack.of(HELM_RELEASE, HELM_CHART):
        chart = r.get("chart")
        if not isinstance(chart, str) or chart.rstrip("/").rsplit("/", 1)[-1] not in DRA_DRIVER_CHARTS:
            continue
        enabled = r.get("values", "resources", "computeDomains", "enabled")
        if enabled is not False and str(enabled).strip().lower() != "false":
            out.append(r)
    return out
