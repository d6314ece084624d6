"""A Kubernetes stack: one managed control plane (EKS, GKE or AKS) in the cloud and region of its pools.

Each pool's fabric domain (the whole pool on AWS, a GCP placement group or TPU slice, an Azure scale set: one
InfiniBand network) becomes one node group, wired from the same planned pool the Slurm path builds from, so
every fabric check of the pool holds for its node groups. Kueue gets one ResourceFlavor per node group, on the
labels aicluster sets, tolerating the group's taint, under a Topology from the cloud's node labels.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from aicluster.catalog import InstanceType, KubernetesService, NodeTaint
from aicluster.catalog.models import version_in_range
from aicluster.catalog.pricing import cents, compute_price, hourly_month
from aicluster.plan.context import PlanCtx, instance_type_of, round2, service_cost
from aicluster.plan.models import (
    ClusterPlan,
    KueueTopology,
    PlannedAddon,
    PlannedKubernetes,
    PlannedMaintenanceWindow,
    PlannedNetwork,
    PlannedNodeGroup,
    PlannedNodeHealth,
    PlannedNvlinkDomain,
    PlannedPool,
    RepairOverride,
    Taint,
)
from aicluster.plan.nvlink import cluster_domains
from aicluster.plan.pools import cloud_of
from aicluster.providers.base import ProviderPlanner
from aicluster.schedulers.base import ControlPlane, Suggest, placeholder
from aicluster.spec import ClusterSpec, KubernetesScheduler
from aicluster.spec import Path as SpecPath

from . import describe

POOL_LABEL = "aicluster.io/pool"
DOMAIN_LABEL = "aicluster.io/fabric-domain"
# a rack-scale pool's node group is one multi-node NVLink domain (PlannedNvlinkDomain.id): the DRA driver's kubelet
# plugin runs where this label is, and the acceptance test pins each domain's ranks with it
NVLINK_LABEL = "aicluster.io/nvlink-domain"
NVLINK_TOPOLOGY = "nvlink"  # the catalog's topology key (and the Kueue Topology's name) of rack-scale node groups
DRA_ADDON = "dra-driver-gpu"
# Accelerator pools keep everything else off their nodes: the taint GKE and Cluster Toolkit put on GPU node pools,
# and the one GKE puts on TPU node pools. A pod that requests the accelerator gets the toleration (GKE's webhook,
# the GPU Operator's, Kueue's flavor).
ACCELERATOR_TAINTS = {
    "gpu": Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"),
    "tpu": Taint(key="google.com/tpu", value="present", effect="NoSchedule"),
}
ACCELERATOR_RESOURCES = {"gpu": "nvidia.com/gpu", "tpu": "google.com/tpu"}
# Address ranges the cluster's pods and services take, off every cloud network: services first from these blocks,
# pods (GKE and AKS overlay) from the shared address space, one /24 per node.
SERVICE_CIDRS = ("172.20.0.0/16", "192.168.0.0/16", "172.21.0.0/16")
POD_SPACE = "100.64.0.0/10"  # where an unpinned pod range is carved from (shared address space, RFC 6598)
POD_ALLOWED = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", POD_SPACE)  # where a pinned one may lie
POD_NODE_PREFIX = 24  # a /24 per node, where the catalog names none
POD_DEFAULT_PREFIX = 14  # where the catalog names no size
BASE: tuple[str | int, ...] = ("scheduler",)
# The system nodes' root volume: room for the images of kube-system, the operators and Kueue (our choice)
SYSTEM_ROOT_GIB = 100


# What the GPU Operator can install on the GPU nodes: its Helm values' key -> what it is. Its values enable each as
# gpu_operator_operands says (render.py), and its add-on's `why` names what they enable, so the two never disagree.
GPU_OPERATOR_OPERANDS = {
    "driver": "NVIDIA driver",
    "toolkit": "container toolkit",
    "devicePlugin": "device plugin",
    "dcgmExporter": "DCGM exporter",
}
# Services whose GPU node image ships the NVIDIA driver and container toolkit, so the operator must install neither
# (EKS's AL2023_x86_64_NVIDIA). AKS pools skip the AKS driver (--gpu-driver none): the operator installs it there.
IMAGE_SHIPS_DRIVER = frozenset({"eks"})


# The conditions Node Problem Detector sets on a GPU node (aicluster's names; render's node-problem-detector config)
XID_CONDITION = "GpuXidCritical"
COUNT_CONDITION = "GpuCountMismatch"
NPD_ADDON = "node-problem-detector"
# what acts on those conditions: taints and cordons the node (aicluster/repair/quarantine.py; quarantine.py here)
QUARANTINE_ADDON = "gpu-quarantine"
QUARANTINE_TAINT = "aicluster.io/gpu-unhealthy"

# node_exporter on every node (render's helm_values), for the Prometheus `node` job (aicluster.render.monitoring
# kubernetes_jobs): installed where that job is scraped, a Prometheus in the cluster (self-hosted: `aicluster
# monitoring` writes its jobs), the managed collectors that run those jobs, and GKE's managed collection, which
# scrapes the pods a ClusterPodMonitoring selects (the catalog's scrape_access pod_monitoring). Not on AKS: its
# metrics add-on brings the node-exporter its own default `node` target scrapes.
NODE_EXPORTER_ADDON = "node-exporter"
NODE_JOB_COLLECTORS = frozenset({"amp-scraper"})
# Prometheus (with its operator), Alertmanager and Grafana in the cluster where monitoring.prometheus is self-hosted:
# they scrape the node-exporter add-on above (the chart's own node-exporter stays off) and the GPU Operator's
# dcgm-exporter (prometheus.py)
PROMETHEUS_STACK_ADDON = "kube-prometheus-stack"


def gpu_operator_operands(service: str) -> dict[str, bool]:
    """The GPU Operator's operands on `service`'s GPU nodes: Helm values key -> enabled."""
    shipped = {"driver", "toolkit"} if service in IMAGE_SHIPS_DRIVER else set()
    return {key: key not in shipped for key in GPU_OPERATOR_OPERANDS}


def _gpu_operator_why(svc: KubernetesService) -> str:
    """What the GPU Operator does on `svc`'s GPU nodes, from gpu_operator_operands (what its values enable)."""

    def listed(names: list[str]) -> str:
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"

    enabled = gpu_operator_operands(svc.service)
    installs = [what for key, what in GPU_OPERATOR_OPERANDS.items() if enabled[key]]
    shipped = [what for key, what in GPU_OPERATOR_OPERANDS.items() if not enabled[key]]
    why = f"installs the {listed(installs)} on the GPU nodes"
    return why + (f"; the {listed(shipped)} come with the node image ({svc.node_image})" if shipped else "")


def _node_job_scraped(ctx: PlanCtx, provider: str) -> bool:
    """Whether something scrapes the `node` job on this cluster: a Prometheus in it (self-hosted), or the managed
    collector of the control plane's cloud where that collector runs aicluster's kubernetes_sd jobs."""
    if ctx.spec.monitoring.prometheus == "self-hosted":
        return True
    mon = ctx.catalog.monitoring
    offered = mon.managed_prometheus.get(provider) if mon is not None else None
    collector = offered.collectors.get("kubernetes") if offered is not None else None
    if collector is None or mon is None:
        return False
    access = mon.scrape_access.get(collector)
    # the AMP scraper runs aicluster's kubernetes_sd jobs; GKE's managed collection scrapes the node_exporter pods
    # a ClusterPodMonitoring named `node` selects (collector.py node_pod_monitoring)
    return collector in NODE_JOB_COLLECTORS or (access is not None and access.pod_monitoring is not None)


def _quarantine_share(ctx: PlanCtx) -> float | None:
    """The quarantine controller's circuit breaker (the catalog's repair limits); None: no limits, no controller."""
    data = ctx.catalog.health
    return data.repair.limits.max_share_in_repair if data is not None and data.repair is not None else None


def _percent(share: float | None) -> str:
    return f"{(share or 0) * 100:g} %"


def _group_name(svc: KubernetesService, name: str) -> str:
    return name if svc.group_name_hyphens else name.replace("-", "")


def _addons(
    ctx: PlanCtx,
    svc: KubernetesService,
    provider: str,
    groups: Sequence[PlannedNodeGroup],
    pools: Sequence[PlannedPool],
) -> list[PlannedAddon]:
    fabrics = {p.fabric for p in pools}
    gpu = any(g.accelerator_kind == "gpu" for g in groups)
    rdma_arch = {p.cpu_arch for p in pools if p.fabric == "gpudirect-rdma"}
    why = {
        "gpu-operator": (gpu and provider != "gcp", _gpu_operator_why(svc)),
        "network-operator": (
            "infiniband" in fabrics,
            "installs the DOCA driver and the RDMA shared device plugin so pods reach InfiniBand (rdma/shared_ib)",
        ),
        "efa-device-plugin": ("efa" in fabrics, "offers each node's EFA interfaces to pods (vpc.amazonaws.com/efa)"),
        "nccl-tcpxo-installer": (
            "gpudirect-tcpxo" in fabrics,
            "installs the GPUDirect-TCPXO NCCL plugin on the A3 Mega nodes",
        ),
        "nri-device-injector": (
            "gpudirect-tcpxo" in fabrics,
            "injects the GPU device files into the TCPXO receive-data-path manager sidecar, by pod annotation",
        ),
        "nccl-rdma-installer": (
            "x86_64" in rdma_arch,
            "installs the GPUDirect-RDMA NCCL plugin on the A3 Ultra / A4 nodes",
        ),
        "nccl-rdma-installer-arm64": (
            "arm64" in rdma_arch,
            "installs the Arm build of the GPUDirect-RDMA NCCL plugin (gIB) on the A4X nodes",
        ),
        DRA_ADDON: (
            any(g.nvlink_domain is not None for g in groups),
            "runs NVIDIA's ComputeDomain controller and kubelet plugin on the rack-scale nodes: a job's ComputeDomain "
            "gets an IMEX domain over the nodes its pods land on, and each pod an IMEX channel for multi-node NVLink",
        ),
        NPD_ADDON: (
            gpu,
            f"watches the GPU nodes' kernel log for the XIDs the catalog drains on (condition {XID_CONDITION}, an "
            f"event for the others) and checks each node's GPU count against its pool's ({COUNT_CONDITION})",
        ),
        QUARANTINE_ADDON: (
            gpu and _quarantine_share(ctx) is not None,
            f"taints ({QUARANTINE_TAINT}:NoSchedule) and cordons a GPU node whose {XID_CONDITION} or "
            f"{COUNT_CONDITION} is True, and gives it back when the condition clears, never more than "
            f"{_percent(_quarantine_share(ctx))} of the GPU nodes at once (the circuit breaker of aicluster-repair)",
        ),
        NODE_EXPORTER_ADDON: (
            _node_job_scraped(ctx, provider),
            "runs node_exporter on every node, on the host network at the port the Prometheus `node` job scrapes "
            "(file systems, InfiniBand port counters, node up)",
        ),
        PROMETHEUS_STACK_ADDON: (
            ctx.spec.monitoring.prometheus == "self-hosted",
            "runs Prometheus (by its operator), Alertmanager and Grafana in the cluster: the stack's alert rules, "
            "scrapes of node_exporter and dcgm-exporter, the routing of monitoring.alerts and aicluster's dashboards",
        ),
        "kueue": (True, "queues jobs and admits them by quota, placing them by network topology"),
        "jobset": (True, "runs multi-node training jobs (and the NCCL acceptance test) as one unit"),
    }
    out = []
    for addon in ctx.catalog.addons.values():
        wanted, reason = why.get(addon.id, (False, ""))
        if wanted and provider in addon.providers:
            out.append(
                PlannedAddon(
                    id=addon.id,
                    name=addon.name,
                    kind=addon.kind,
                    chart=addon.chart,
                    repository=addon.repository,
                    version=addon.version,
                    namespace=addon.namespace,
                    source=addon.source,
                    why=reason,
                )
            )
    return out


def _node_health(
    ctx: PlanCtx, svc: KubernetesService, groups: Sequence[PlannedNodeGroup], pools: Sequence[PlannedPool]
) -> PlannedNodeHealth | None:
    """The GPU nodes' health checks and repair: the catalog's XID table split into the XIDs that drain (a Slurm node
    is drained on them, so a Kubernetes node gets a condition) and the others (an event); each GPU pool's GPU count;
    the service's agent and managed repair, told per XID what the XID's bucket asks for where the service takes
    that (EKS). None: no GPU node groups, or the catalog records no health data for the service."""
    nh, data = svc.node_health, ctx.catalog.health
    gpu_pools = dict.fromkeys(g.pool for g in groups if g.accelerator_kind == "gpu")
    if not gpu_pools or nh is None or data is None:
        return None
    per_node = {p.name: p.accelerators_per_node for p in pools}
    overrides = []
    if nh.xid_list is not None and nh.xid_reason is not None and nh.repair_wait_minutes is not None:
        assert nh.gpu_condition is not None, f"{svc.name}: per-XID repair needs the agent's condition"
        for x in data.xids:
            action = nh.repair_actions.get(x.action or "")
            if nh.xid_list in x.listed_by and action is not None:
                overrides.append(
                    RepairOverride(
                        xid=x.xid,
                        condition=nh.gpu_condition,
                        reason=nh.xid_reason.format(xid=x.xid),
                        action=action,
                        wait_minutes=nh.repair_wait_minutes,
                    )
                )
    return PlannedNodeHealth(
        xid_condition=XID_CONDITION,
        count_condition=COUNT_CONDITION,
        drain_xids=tuple(x.xid for x in data.xids if x.drains),
        event_xids=tuple(x.xid for x in data.xids if not x.drains),
        gpus_per_pool={p: per_node[p] for p in gpu_pools},
        auto_repair=nh.auto_repair,
        repair_triggers=nh.repair_triggers,
        agent_addon=nh.agent_addon,
        service_condition=nh.gpu_condition,
        # the service's own GPU checks skip pools whose driver it does not install (AKS: the GPU Operator's there)
        service_gpu_checks=not (nh.gpu_checks_skip_own_driver and gpu_operator_operands(svc.service)["driver"]),
        repair_overrides=tuple(overrides),
        quarantine_max_share=_quarantine_share(ctx),
        quarantine_taint=QUARANTINE_TAINT if _quarantine_share(ctx) is not None else None,
        sources=tuple(dict.fromkeys((nh.source, *nh.field_sources.values()))),
    )


def _taint(t: NodeTaint) -> Taint:
    return Taint(key=t.key, value=t.value, effect=t.effect)


def _group_name_fits(
    ctx: PlanCtx, svc: KubernetesService, path: tuple[str | int, ...], pool: PlannedPool, name: str
) -> bool:
    """Whether the service takes `name` for a node group of `pool`; a problem at the pool's name when not."""
    if len(name) <= svc.group_name_max and (svc.group_name_hyphens or name[:1].isalpha()):
        return True
    ctx.problem(
        (*path, "name"),
        f"{svc.name} names this pool's node group {name!r}, longer than its {svc.group_name_max} "
        f"characters{'' if svc.group_name_hyphens else ' (lowercase letters and digits, a letter first)'}"
        ": give the pool a shorter name",
        pool.name,
    )
    return False


def _nvlink_groups(
    ctx: PlanCtx,
    svc: KubernetesService,
    path: tuple[str | int, ...],
    pool: PlannedPool,
    domains: Sequence[PlannedNvlinkDomain],
    resources: dict[str, str],
    service_taints: tuple[Taint, ...],
) -> list[PlannedNodeGroup]:
    """A rack-scale pool: one node group per NVLink domain of the plan (plan.nvlink_domains), never split, labelled
    with its domain. The provider placed each domain as one unit (a GCP sub-block's placement policy, an Azure scale
    set, an AWS UltraServer), and a node group that held parts of two would let Kubernetes mix racks that share no
    NVLink; so where the provider's fabric domains exist they must be the NVLink domains themselves."""
    nvlink = pool.nvlink
    assert nvlink is not None
    fabric = {name: nodes for name, nodes in pool.fabric_domains()}
    groups = []
    for d, cut in zip(domains, nvlink.domains, strict=True):
        assert d.id == cut.name, "plan.nvlink_domains follows each pool's NVLink slices"
        assert not fabric or fabric.get(d.id) == range(cut.first_node, cut.first_node + cut.nodes), (
            f"pool {pool.name}: its provider placed {d.id} apart from its NVLink domain"
        )
        name = _group_name(svc, d.id)
        if len(d.nodes) > svc.max_nodes_per_group:
            ctx.problem(
                (*path, "nodes"),
                f"an NVLink domain of {pool.name} has {len(d.nodes)} nodes, more than one {svc.name} node group holds "
                f"({svc.max_nodes_per_group}); a domain is never split over node groups: use scheduler kind slurm",
                pool.nodes,
            )
            continue
        if not _group_name_fits(ctx, svc, path, pool, name):
            continue
        groups.append(
            PlannedNodeGroup(
                name=name,
                pool=pool.name,
                domain=d.id,
                index=cut.index,
                nodes=len(d.nodes),
                first_node=cut.first_node,
                zone=pool.zone,
                accelerator_kind="gpu",
                labels={POOL_LABEL: pool.name, DOMAIN_LABEL: d.id, NVLINK_LABEL: d.id},
                taints=(ACCELERATOR_TAINTS["gpu"],),
                resources=resources,
                topology=NVLINK_TOPOLOGY,
                nvlink_domain=d.id,
                cpu_arch=pool.cpu_arch,
                service_taints=service_taints,
                max_unavailable=_max_unavailable(svc, pool, len(d.nodes)),
            )
        )
    return groups


def _node_groups(
    ctx: PlanCtx, svc: KubernetesService, pools: Sequence[PlannedPool], resources: dict[str, dict[str, str]]
) -> list[PlannedNodeGroup]:
    groups: list[PlannedNodeGroup] = []
    nvlink: dict[str, list[PlannedNvlinkDomain]] = {}
    for d in cluster_domains(pools):  # the plan's one list of NVLink domains (ClusterPlan.nvlink_domains)
        nvlink.setdefault(d.pool, []).append(d)
    for i, spec_pool in enumerate(ctx.spec.pools):
        pool = next((p for p in pools if p.name == spec_pool.name), None)
        if pool is None:
            continue
        path: tuple[str | int, ...] = ("pools", i)
        kind = pool.accelerator_kind
        if kind not in ("gpu", "tpu"):
            why = (
                "Trainium needs the Neuron device plugin, which aicluster does not install yet"
                if kind
                else "a pool without accelerators belongs in the system node group"
            )
            ctx.problem(
                (*path, "instance_type"),
                f"{svc.name} node groups here carry NVIDIA GPUs or TPUs (the device plugins aicluster installs); "
                f"{why}: use a GPU instance type, or scheduler kind slurm",
                pool.instance_type,
            )
            continue
        arm_taints = (_taint(svc.arm64_taint),) if pool.cpu_arch == "arm64" and svc.arm64_taint else ()
        if pool.cpu_arch == "arm64" and svc.node_image_arm64 is None:
            ctx.problem(
                (*path, "instance_type"),
                f"its hosts are Arm (Grace), and the catalog has no {svc.name} node image for Arm GPU nodes (none "
                "is sourced): use scheduler kind slurm, or an x86 instance type",
                pool.instance_type,
            )
            continue
        if pool.nvlink is not None:
            groups += _nvlink_groups(ctx, svc, path, pool, nvlink[pool.name], resources[pool.name], arm_taints)
            continue
        domains = pool.fabric_domains() or [(pool.name, range(pool.nodes))]
        whole = len(domains) == 1 and domains[0][0] == pool.name
        # A fabric domain larger than one node group may hold is split into node groups of the same zone and
        # placement (an AWS pool's cluster placement group holds them all): <domain>-0, <domain>-1, ...
        chunks = [
            (index, domain, nodes, part, len(nodes) > svc.max_nodes_per_group)
            for index, (domain, nodes) in enumerate(domains)
            for part in (nodes[k : k + svc.max_nodes_per_group] for k in range(0, len(nodes), svc.max_nodes_per_group))
        ]
        for index, domain, nodes, part, split in chunks:
            suffix = f"-{(part.start - nodes.start) // svc.max_nodes_per_group}" if split else ""
            name = _group_name(svc, domain + suffix)
            if not _group_name_fits(ctx, svc, path, pool, name):
                continue
            groups.append(
                PlannedNodeGroup(
                    name=name,
                    pool=pool.name,
                    domain=None if whole else domain,
                    index=index,
                    nodes=len(part),
                    first_node=part.start,
                    zone=pool.zone,
                    accelerator_kind=kind,
                    labels={POOL_LABEL: pool.name, DOMAIN_LABEL: domain},
                    taints=(ACCELERATOR_TAINTS[kind],),
                    resources=resources[pool.name],
                    topology=kind,
                    cpu_arch=pool.cpu_arch,
                    service_taints=arm_taints,
                    max_unavailable=_max_unavailable(svc, pool, len(part)),
                )
            )
    names = [g.name for g in groups]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        ctx.problem(
            ("pools",),
            f"two node groups would both be named {dup!r} ({svc.name} names must be unique"
            f"{'' if svc.group_name_hyphens else ', and it drops hyphens'}): rename one pool",
            dup,
        )
    return groups


def plan_kubernetes(
    ctx: PlanCtx,
    pools: Sequence[PlannedPool],
    resources: dict[str, dict[str, str]],
    boot_disk: Callable[[str, InstanceType], str],
) -> PlannedKubernetes | None:
    """The control plane, its node groups, add-ons and Kueue objects; `resources` is each pool's per-node offer to
    pods, from its provider's planner. Registers the system node group's addresses (two zones: EKS needs subnets in
    two zones, and the cluster's own services survive a zone's loss)."""
    sched = ctx.spec.scheduler
    assert isinstance(sched, KubernetesScheduler)
    if not ctx.spec.pools:
        return None
    first = ctx.spec.pools[0]
    provider, region = first.provider, first.region
    svc = ctx.catalog.kubernetes.get(provider)
    if svc is None:
        ctx.problem(("pools", 0, "provider"), "the catalog has no managed Kubernetes for this provider", provider)
        return None
    for i, p in enumerate(ctx.spec.pools):
        if p.provider == provider and p.region != region:
            ctx.problem(
                ("pools", i, "region"),
                f"an {svc.name} cluster lives in one region, {region} (the first pool's), and its node groups with it: "
                f"put this pool in {region}, or write one stack per region",
                p.region,
            )
    offered = (*svc.versions, *svc.extended_versions)
    if sched.version not in offered:
        ctx.problem(
            (*BASE, "version"),
            f"{svc.name} offers Kubernetes {', '.join(svc.versions)} in standard support"
            + (f" and {', '.join(svc.extended_versions)} in extended support" if svc.extended_versions else "")
            + f" (catalog, {ctx.catalog.sources[svc.source_of('versions')].retrieved}): pick one of them",
            sched.version,
        )
    extended = sched.version in svc.extended_versions
    rate = svc.extended_usd_per_hour if extended else svc.usd_per_hour
    if extended:
        ctx.warnings.append(
            f"Kubernetes {sched.version} is in {svc.name}'s extended support"
            + (f" (${rate:.2f} per cluster-hour instead of ${svc.usd_per_hour:.2f})" if rate is not None else "")
            + f": plan the upgrade to {svc.versions[-1]}"
        )
    groups = _node_groups(ctx, svc, pools, resources)
    _check_compute_domains(ctx, svc, sched.version, pools)
    maintenance = _maintenance_window(ctx, svc, {g.pool for g in groups})
    taken = {a.namespace: a.name for a in ctx.catalog.addons.values()}
    if sched.namespace == "default" or sched.namespace.startswith("kube-") or sched.namespace in taken:
        owner = taken.get(sched.namespace, "Kubernetes itself")
        ctx.problem(
            (*BASE, "namespace"),
            f"this namespace belongs to {owner}; aicluster creates the jobs' namespace and its LocalQueue, and "
            "training jobs do not belong among system pods: pick your own name (e.g. training)",
            sched.namespace,
        )
    if ctx.spec.storage:
        ctx.warnings.append(
            f"the file systems are built in the cluster's network, but pods reach them only through the cloud's CSI "
            f"driver for them (and a PersistentVolume), which aicluster does not install yet: add it to {svc.name}"
        )

    # the system node group: CPU nodes in two zones of the region
    defaults = ctx.catalog.constants.defaults[provider]
    type_name = sched.system_pool.instance_type or defaults.kubernetes_system_instance_type or ""
    it = instance_type_of(ctx, (*BASE, "system_pool", "instance_type"), provider, type_name)
    reg = ctx.catalog.region(provider, region)
    if it is None or reg is None:
        return None
    home = first.zone if first.zone in reg.zones else (reg.zones[0] if reg.zones else None)
    zones = tuple(dict.fromkeys(z for z in (home, *reg.zones) if z is not None))[:2]
    # spread evenly: GKE and AKS size a regional pool per zone, so the count rounds up to a multiple of the zones
    # (the service says so, catalog system_pool_per_zone); an EKS node group's count is the whole group's
    per_zone = math.ceil(sched.system_pool.nodes / max(1, len(zones)))
    system_nodes = per_zone * max(1, len(zones)) if svc.system_pool_per_zone else sched.system_pool.nodes
    if system_nodes != sched.system_pool.nodes:
        ctx.warnings.append(
            f"scheduler.system_pool.nodes: {sched.system_pool.nodes} becomes {system_nodes}: {svc.name} sizes the "
            f"system pool per zone ({len(zones)} zones: {per_zone} each); give a multiple of {len(zones)} to say so"
        )
    network = ""
    for z in zones or (None,):
        network = ctx.need((*BASE, "system_pool"), provider, region, z, per_zone)
    price = compute_price(it, region, "on-demand", ctx.spec.pricing.overrides).price
    system_month = hourly_month(price.usd, system_nodes, ctx.catalog.hours_per_month) if price is not None else None
    disk = boot_disk(provider, it)
    volumes_month = service_cost(
        ctx, provider, disk, region, SYSTEM_ROOT_GIB * system_nodes, "the system node group's root volumes"
    )
    unpriced = []
    if volumes_month is None:
        unpriced.append(f"system node group root volumes ({disk})")
    if system_month is None:
        unpriced.append(f"system node group ({system_nodes} x {it.name})")
        ctx.warnings.append(
            f"the system node group's type {it.name} has no on-demand price in {region} in the catalog, so it is "
            "left out of the cost: set scheduler.system_pool.instance_type to a priced type, or add your rate under "
            f"pricing.overrides (sku: {it.name}, region: {region}, usd_per_hour: ...)"
        )
    control_month = 0.0
    if rate is None:
        unpriced.append(f"{svc.name} extended support")
    else:
        control_month = hourly_month(rate, 1, ctx.catalog.hours_per_month)
    month = cents(control_month + (system_month or 0.0) + (volumes_month or 0.0))
    kw = it.node_power_kw * system_nodes
    topologies = tuple(
        KueueTopology(name=kind, levels=svc.topology[kind])
        for kind in dict.fromkeys(g.topology for g in groups)
        if kind in svc.topology
    )
    for g in groups:
        if g.topology not in svc.topology:
            what = "NVLink-domain" if g.topology == NVLINK_TOPOLOGY else g.accelerator_kind.upper()
            ctx.problem(("pools",), f"the catalog has no {what} node topology for {svc.name}", g.pool)
    rack_scale = any(g.nvlink_domain is not None for g in groups)
    name = ctx.spec.name
    return PlannedKubernetes(
        service=svc.service,
        service_name=svc.name,
        provider=provider,
        region=region,
        network=network,
        cluster_name=name,
        version=sched.version,
        support="extended" if extended else "standard",
        endpoint=sched.endpoint,
        authorized_networks=sched.authorized_networks,
        secrets_encryption="kms",
        audit_logs=True,
        namespace=sched.namespace,
        pod_cidr=None,
        service_cidr=SERVICE_CIDRS[0],
        node_image=svc.node_image,
        system_instance_type=it.name,
        system_nodes=system_nodes,
        system_root_gib=SYSTEM_ROOT_GIB,
        system_root_disk_service=disk,
        system_volumes_usd_per_month=volumes_month,
        system_zones=zones,
        node_groups=tuple(groups),
        topologies=topologies,
        addons=tuple(_addons(ctx, svc, provider, groups, pools)),
        cluster_queue=name,
        local_queue=name,
        control_plane_usd_per_month=cents(control_month),
        system_price=price,
        system_usd_per_month=system_month,
        cost_usd_per_month=month,
        system_power_kw_it=round2(kw),
        system_power_kw_facility=round2(kw * reg.pue),
        system_co2e_t_per_month=round2(kw * reg.pue * ctx.catalog.hours_per_month * reg.carbon_g_per_kwh / 1e6),
        unpriced=tuple(unpriced),
        sources=tuple(
            dict.fromkeys(
                (
                    svc.source,
                    svc.source_of("versions"),
                    svc.source_of("topology"),
                    *((svc.source_of("nvlink_level"), svc.source_of("dra_min_version")) if rack_scale else ()),
                    *((maintenance.source,) if maintenance else ()),
                )
            )
        ),
        node_image_arm64=svc.node_image_arm64 if any(g.cpu_arch == "arm64" for g in groups) else None,
        nvlink_level=svc.nvlink_level if rack_scale else None,
        health=_node_health(ctx, svc, groups, pools),
        maintenance_window=maintenance,
    )


WEEK = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _describe_window(days: Sequence[str], start: str, hours: int) -> str:
    return f"{', '.join(days)} {start} UTC for {hours} h"


def _maintenance_window(ctx: PlanCtx, svc: KubernetesService, grouped: set[str]) -> PlannedMaintenanceWindow | None:
    """The cluster's own maintenance window, from the pools whose rollout strategy is `window`: the catalog says how
    the service holds one (one per cluster, which weekday sets, the least time it must leave open). Pools that ask
    for different windows are refused: the service has one for the whole cluster, and picking one would roll the
    other pool outside its window. A service with none (EKS) gets a warning: the window then holds only by when
    `pulumi up` runs."""
    asked = [
        (i, p.name, p.rollout.window)
        for i, p in enumerate(ctx.spec.pools)
        if p.rollout.strategy == "window" and p.rollout.window is not None and p.name in grouped
    ]
    if not asked:
        return None
    rule = svc.maintenance_window
    first_i, first_pool, first = asked[0]
    days = tuple(d for d in WEEK if d in first.days)
    names = ", ".join(name for _, name, _ in asked)
    if rule is None:
        ctx.warnings.append(
            f"{svc.name} has no maintenance window of its own (its node groups change only when an update is asked "
            f"for): the window of pool(s) {names} ({_describe_window(days, first.start, first.hours)}) holds only if "
            "you run `pulumi up` for a change that recreates their nodes inside it; `aicluster diff` marks such "
            "changes as rollouts"
        )
        return None
    ok = True
    for i, _name, w in asked[1:]:
        other = tuple(d for d in WEEK if d in w.days)
        if (other, w.start, w.hours) != (days, first.start, first.hours):
            ok = False
            ctx.problem(
                ("pools", i, "rollout", "window"),
                f"{svc.name} has one maintenance window per cluster ({rule.resource}), and pool {first_pool} asks for "
                f"{_describe_window(days, first.start, first.hours)}: give every pool with strategy window the same "
                "window, or use strategy drain-first for this one",
                _describe_window(other, w.start, w.hours),
            )
    path = ("pools", first_i, "rollout", "window")
    if rule.weekdays == "one-or-all" and 1 < len(days) < len(WEEK):
        ok = False
        ctx.problem(
            (*path, "days"),
            f"got {len(days)} days, [{', '.join(days)}]; {svc.name}'s maintenance schedule ({rule.resource}) recurs "
            f"weekly on one day or daily on every day: set days to one day (e.g. [{days[-1]}]) or to all seven "
            f"([{', '.join(WEEK)}])",
            has_value=False,  # a list: shown in the message, as the stack file writes it
        )
    if rule.min_hours is not None and rule.per_days is not None:
        # a period of per_days days holds each weekday at least per_days // 7 times
        least = len(days) * first.hours * (rule.per_days // 7)
        if least < rule.min_hours:
            ok = False
            need = math.ceil(rule.min_hours / (rule.per_days // 7))
            ctx.problem(
                path,
                f"{svc.name} needs at least {rule.min_hours} hours of maintenance window in any {rule.per_days} days "
                f"({rule.resource}), and this one leaves {least}: make days x hours at least {need} (e.g. two days "
                f"of {max(4, math.ceil(need / 2))} hours)",
                _describe_window(days, first.start, first.hours),
            )
    others = [p.name for p in ctx.spec.pools if p.name in grouped and p.rollout.strategy != "window"]
    if ok and others:
        ctx.warnings.append(
            f"{svc.name}'s maintenance window is the whole cluster's ({rule.resource}): the automatic upgrades of "
            f"pool(s) {', '.join(others)} and of the control plane also wait for "
            f"{_describe_window(days, first.start, first.hours)}"
        )
    if not ok:
        return None
    return PlannedMaintenanceWindow(
        days=days,
        start=first.start,
        hours=first.hours,
        pools=tuple(name for _, name, _ in asked),
        source=svc.source_of("maintenance_window"),
    )


def _check_compute_domains(ctx: PlanCtx, svc: KubernetesService, version: str, pools: Sequence[PlannedPool]) -> None:
    """A rack-scale pool's NVLink domains reach pods only through NVIDIA's DRA driver (ComputeDomains: an IMEX domain
    per job, an IMEX channel per pod), which needs DRA on by default in the cluster's Kubernetes and a service that
    documents running it; refuse what the catalog does not show to work."""
    rack_pools = {q.name for q in pools if q.nvlink is not None}
    rack = [(i, p) for i, p in enumerate(ctx.spec.pools) if p.name in rack_pools]
    if not rack:
        return
    names = ", ".join(p.name for _, p in rack)
    if svc.dra_min_version is None or svc.nvlink_level is None:
        for i, p in rack:
            ctx.problem(
                ("pools", i, "instance_type"),
                "a rack-scale type: its NVLink domains reach pods only through NVIDIA's DRA driver (ComputeDomains), "
                f"and the catalog documents no {svc.name} cluster running it: use scheduler kind slurm",
                p.instance_type,
            )
        return
    addon = ctx.catalog.addons.get(DRA_ADDON)
    if addon is None or svc.provider not in addon.providers:
        ctx.problem(("pools", rack[0][0], "instance_type"), f"the catalog pins no NVIDIA DRA driver for {svc.name}")
    if not version_in_range(version, f">={svc.dra_min_version}"):
        newer = [v for v in (*svc.versions, *svc.extended_versions) if version_in_range(v, f">={svc.dra_min_version}")]
        source = ctx.catalog.sources[svc.source_of("dra_min_version")]
        ctx.problem(
            (*BASE, "version"),
            f"the NVLink domains of pool(s) {names} need NVIDIA's DRA driver (a ComputeDomain per job), which "
            f"{svc.name} runs from Kubernetes {svc.dra_min_version} (DRA on by default; {source.title}, "
            f"{source.retrieved}): pick {' or '.join(sorted(newer, key=_minor))}",
            version,
        )


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def with_address_ranges(
    ctx: PlanCtx, kube: PlannedKubernetes, networks: Sequence[PlannedNetwork], overlay: bool
) -> PlannedKubernetes:
    """Service (and, for an overlay, pod) ranges clear of every cloud network of the stack. The pod range is the
    stack's `network.pod_cidr`, else the catalog's fixed size for the service: never sized from the node count,
    since a new range replaces the cluster."""
    taken = [ipaddress.IPv4Network(c) for n in networks for c in (n.cidr, *(s.cidr for s in n.subnets))]
    taken += [ipaddress.IPv4Network(c) for c in ctx.spec.network.exclude]

    def free(candidates: Sequence[ipaddress.IPv4Network]) -> str | None:
        return next((str(c) for c in candidates if not any(c.overlaps(t) for t in taken)), None)

    pinned = ctx.spec.network.pod_cidr
    clear = [*taken, *([ipaddress.IPv4Network(pinned)] if pinned is not None and overlay else [])]
    service = next((c for c in SERVICE_CIDRS if not any(ipaddress.IPv4Network(c).overlaps(t) for t in clear)), None)
    if not overlay:
        if pinned is not None:
            ctx.problem(
                ("network", "pod_cidr"),
                f"{kube.service_name} gives pods VPC addresses: it has no pod range of its own; remove "
                "network.pod_cidr",
                pinned,
            )
        pods = None
    elif pinned is not None:
        pods = _pinned_pod_range(ctx, kube, pinned, taken)
    else:
        svc = ctx.catalog.kubernetes.get(kube.provider)
        prefix = (svc.pod_cidr_prefix if svc is not None else None) or POD_DEFAULT_PREFIX
        per_node = (svc.pod_node_prefix if svc is not None else None) or POD_NODE_PREFIX
        nodes = kube.system_nodes + sum(g.nodes for g in kube.node_groups)
        need = max(ipaddress.IPv4Network(POD_SPACE).prefixlen, per_node - math.ceil(math.log2(max(2, nodes))))
        if need < prefix:  # more nodes than the fixed range holds: a range for them, and the user told to pin one
            ctx.warnings.append(
                f"network.pod_cidr: the cluster plans {nodes} nodes, more than the default /{prefix} pod range holds "
                f"(a /{per_node} per node on {kube.service_name}), so it gets a /{need}; a later plan that needs a "
                "larger range would replace the cluster: pin network.pod_cidr with room to grow"
            )
            prefix = need
        pods = free(list(ipaddress.IPv4Network(POD_SPACE).subnets(new_prefix=prefix)))
        if pods is not None:
            _pod_range_holds(ctx, kube, pods, ("network", "pod_cidr"), None)
    if service is None or (overlay and pods is None and pinned is None):
        ctx.problem(
            ("network", "supernet"),
            f"the cloud networks leave no room for the cluster's {'service' if service is None else 'pod'} range "
            f"({', '.join(SERVICE_CIDRS) if service is None else POD_SPACE}): move the networks elsewhere"
            + ("" if service is None else ", or pin a free range in network.pod_cidr"),
        )
        return kube
    return kube.model_copy(update={"service_cidr": service, "pod_cidr": pods})


def _pod_range_holds(ctx: PlanCtx, kube: PlannedKubernetes, pods: str, path: SpecPath, value: str | None) -> bool:
    """Whether the pod range has a node block for every node the cluster plans (system nodes included)."""
    svc = ctx.catalog.kubernetes.get(kube.provider)
    per_node = (svc.pod_node_prefix if svc is not None else None) or POD_NODE_PREFIX
    net = ipaddress.IPv4Network(pods)
    nodes = kube.system_nodes + sum(g.nodes for g in kube.node_groups)
    blocks = 2 ** max(0, per_node - net.prefixlen) if net.prefixlen <= per_node else 0
    if nodes <= blocks:
        return True
    need = per_node - math.ceil(math.log2(max(2, nodes)))
    ctx.problem(
        path,
        f"the pod range {pods} holds {blocks} node(s) (a /{per_node} per node on {kube.service_name}), but the "
        f"cluster plans {nodes}; pin a /{need} or larger in network.pod_cidr (a cluster that exists keeps its "
        "range: a new one replaces the cluster)",
        value,
        has_value=value is not None,
    )
    return False


def _pinned_pod_range(
    ctx: PlanCtx,
    kube: PlannedKubernetes,
    pinned: str,
    taken: Sequence[ipaddress.IPv4Network],
) -> str | None:
    """The stack's pod range, if it is private, clear of the networks and the service range, and large enough."""
    path: SpecPath = ("network", "pod_cidr")
    net = ipaddress.IPv4Network(pinned)
    allowed = [ipaddress.IPv4Network(c) for c in POD_ALLOWED]
    if not any(net.subnet_of(a) for a in allowed):
        ctx.problem(path, f"a pod range must lie inside {', '.join(POD_ALLOWED)}; pick one there", pinned)
        return None
    clash = next((t for t in taken if net.overlaps(t)), None)
    if clash is not None:
        ctx.problem(
            path,
            f"overlaps {clash}, a network, subnet or excluded range of the stack; pick a range clear of it",
            pinned,
        )
        return None
    return pinned if _pod_range_holds(ctx, kube, pinned, path, pinned) else None


class KubernetesPlanner:
    kind: ClassVar[str] = "kubernetes"
    title: ClassVar[str] = "Kubernetes"
    pool_images: ClassVar[bool] = False
    tpu_node_pools: ClassVar[bool] = True

    def regions(self, spec: ClusterSpec) -> list[tuple[SpecPath, str | None]]:
        """The control plane lives in the region of the pools: nothing placed apart from them."""
        return []

    def control_plane(
        self, ctx: PlanCtx, pools: Sequence[PlannedPool], planners: Mapping[str, ProviderPlanner]
    ) -> ControlPlane:
        kube = plan_kubernetes(
            ctx,
            pools,
            {p.name: cloud_of(planners, p.provider).kubernetes_resources(p) for p in pools},
            lambda provider, it: cloud_of(planners, provider).boot_disk(ctx, it),
        )
        return ControlPlane(kubernetes=kube)

    def with_networks(
        self,
        ctx: PlanCtx,
        plane: ControlPlane,
        networks: Sequence[PlannedNetwork],
        planners: Mapping[str, ProviderPlanner],
    ) -> ControlPlane:
        kube = plane.kubernetes
        if kube is None:
            return plane
        overlay = cloud_of(planners, kube.provider).kubernetes_pod_overlay
        return ControlPlane(kubernetes=with_address_ranges(ctx, kube, networks, overlay))

    def why_no_inventory(self, plan: ClusterPlan, stack: str, suggest: Suggest = placeholder) -> str | None:
        return describe.no_inventory(plan, stack, suggest)

    def why_no_discovery(self, plan: ClusterPlan, suggest: Suggest = placeholder) -> str | None:
        return describe.no_discovery(plan, suggest)

    def nvlink_scheduling(self, plan: ClusterPlan, domain: PlannedNvlinkDomain) -> tuple[str | None, str | None]:
        """Each domain is its own node group, and Kueue's topology has the domain as a level; IMEX runs per job in
        the ComputeDomain NVIDIA's DRA driver makes (its Helm release is in the stack)."""
        k = plan.kubernetes
        level = k.nvlink_level if k is not None else None
        return (
            f"node group {domain.id}" + (f", Kueue topology level {level}" if level else ""),
            "compute-domain (NVIDIA DRA driver, one ComputeDomain per job)",
        )

    def tune_notes(self, plan: ClusterPlan, stack: str, suggest: Suggest = placeholder) -> list[str]:
        return describe.tune_notes(plan, stack, suggest)


PLANNER = KubernetesPlanner()


def _max_unavailable(svc: KubernetesService, pool: PlannedPool, nodes: int) -> int:
    """The pool's rollout.max_unavailable for one of its node groups: within the group and the service's limit."""
    return min(pool.rollout.max_unavailable, nodes, svc.max_unavailable_per_group or nodes)
