"""Resources as the engine hands them (type token, camelCase props) -> facts the rules judge.

Nothing here knows about our components: a fleet is an Auto Scaling group or an instance with an
instance type (on Azure a VM scale set or a VM with a size; on GCP a managed instance group of an instance
template, a VM, or a Cloud TPU slice), wherever it came from. Values unknown
during preview come back as `UNKNOWN`; ids are usually unknown, so links between resources follow
the engine's property dependencies (an ASG's `launchTemplate` -> the launch template resource), as
the engine reports them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, TypeVar, cast

from pulumi_policy.proxy import UnknownValueError

from aicluster.catalog import Catalog, InstanceType, Region, StorageTier, TpuType, load_catalog
from aicluster.catalog.pricing import (
    compute_price,
    hourly_month,
    service_month,
    service_price,
    storage_month,
    storage_price,
)

T = TypeVar("T")

AICLUSTER_TYPE = "aicluster:index:AiCluster"
ONPREM_SITE = "aicluster:onprem:Site"  # an owned site as aicluster records it (one resource per site)
WORKLOAD = "aicluster:sizing:Workload"  # a workload as aicluster sized it (an estimate, not a billed resource)
POOL_TAG = "aicluster:pool"  # the tag naming the stack's pool a fleet was made for (GCP label: aicluster_pool)
STORAGE_TAG = "aicluster:storage"  # the tag naming the stack's storage entry a file system was made for
ASG = "aws:autoscaling/group:Group"
INSTANCE = "aws:ec2/instance:Instance"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SUBNET = "aws:ec2/subnet:Subnet"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
EFS = "aws:efs/fileSystem:FileSystem"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
EIP = "aws:ec2/eip:Eip"
EBS_VOLUME = "aws:ebs/volume:Volume"
TRAIL = "aws:cloudtrail/trail:Trail"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"
AKS_AGENT_POOL = "azure-native:containerservice:AgentPool"
KUBERNETES_CLUSTERS = (EKS_CLUSTER, GKE_CLUSTER, AKS_CLUSTER)
NODE_GROUP_TYPES = (EKS_NODE_GROUP, GKE_NODE_POOL, AKS_AGENT_POOL, AKS_CLUSTER)

AZURE_VMSS = "azure-native:compute:VirtualMachineScaleSet"
AZURE_VM = "azure-native:compute:VirtualMachine"
AZURE_LUSTRE = "azure-native:storagecache:AmlFilesystem"
AZURE_NETAPP_POOL = "azure-native:netapp:CapacityPool"
AZURE_NAT_GATEWAY = "azure-native:network:NatGateway"
AZURE_PUBLIC_IP = "azure-native:network:PublicIPAddress"
AZURE_NIC = "azure-native:network:NetworkInterface"
AZURE_NSG = "azure-native:network:NetworkSecurityGroup"
AZURE_SECURITY_RULE = "azure-native:network:SecurityRule"
AZURE_SUBSCRIPTION_DIAGNOSTICS = "azure-native:monitor:SubscriptionDiagnosticSetting"

GCP_MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
GCP_REGION_MIG = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"
GCP_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
GCP_REGION_TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
GCP_TEMPLATES = (GCP_TEMPLATE, GCP_REGION_TEMPLATE)
GCP_INSTANCE = "gcp:compute/instance:Instance"
GCP_RESIZE_REQUEST = "gcp:compute/resizeRequest:ResizeRequest"
GCP_NETWORK = "gcp:compute/network:Network"
GCP_SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
GCP_FIREWALL = "gcp:compute/firewall:Firewall"
GCP_ROUTER_NAT = "gcp:compute/routerNat:RouterNat"
GCP_TPU_QUEUED = "gcp:tpu/v2QueuedResource:V2QueuedResource"
GCP_TPU_VM = "gcp:tpu/v2Vm:V2Vm"
GCP_LUSTRE = "gcp:lustre/instance:Instance"
GCP_PARALLELSTORE = "gcp:parallelstore/instance:Instance"
GCP_FILESTORE = "gcp:filestore/instance:Instance"
GCP_PROJECT_AUDIT = "gcp:projects/iAMAuditConfig:IAMAuditConfig"
GCP_AUDIT = (
    GCP_PROJECT_AUDIT,
    "gcp:organizations/iamAuditConfig:IamAuditConfig",
    "gcp:folder/iamAuditConfig:IamAuditConfig",
)
# GCP resources that are not regional say so with this location (log buckets, global addresses, ...).
GLOBAL_LOCATION = "global"
# A GCP zone is its region plus a one-letter suffix: us-central1-a is in us-central1.
_GCP_ZONE = re.compile(r"([a-z]+-[a-z]+[0-9]+)-[a-z]")  # full match: "$" lets "\n" through

# Pulumi package (the type token's first segment) -> the catalog's provider.
CATALOG_PROVIDER = {"aws": "aws", "gcp": "gcp", "azure-native": "azure"}
# File system services striped over many servers (checkpoint targets), as opposed to NFS.
PARALLEL_SERVICES = frozenset({"fsx-lustre", "azure-managed-lustre", "gcp-managed-lustre", "parallelstore"})

# The engine's sentinels for values not known until `up` (pulumi_policy.proxy).
_SENTINELS = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown during preview>"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()


# What a value is to `get` and `items`, by its type: worked out once per type, since the SDK's proxies are
# Mapping/Sequence by ABC, and an ABC isinstance is several times dearer than a dict lookup.
_STR, _MAP, _SEQ, _OTHER = 1, 2, 3, 0
_KINDS: dict[type, int] = {}


def _kind(t: type) -> int:
    kind = _KINDS.get(t)
    if kind is None:
        kind = _KINDS[t] = (
            _STR if issubclass(t, str) else _MAP if issubclass(t, Mapping) else _SEQ if issubclass(t, Sequence) else 0
        )
    return kind


def get(value: Any, *path: str | int, default: Any = None) -> Any:
    """`value[path[0]][path[1]]...`: `default` when a key is absent or null, `UNKNOWN` when a value on
    the way is not known during preview. Works on plain dicts and on the SDK's unknown-checking proxy."""
    cur = value
    try:
        for key in path:
            kind = _KINDS.get(type(cur)) or _kind(type(cur))
            if kind == _STR:  # no key or index reads into a string: unknown, or absent
                return UNKNOWN if cur in _SENTINELS else default
            if isinstance(key, int):
                if kind != _SEQ or not -len(cur) <= key < len(cur):
                    return default
                cur = cur[key]
            else:
                if kind != _MAP:
                    return default
                try:  # one read, not `key in cur` and then `cur[key]` (each a read through the SDK's proxy)
                    cur = cur[key]
                except KeyError:
                    return default
    except UnknownValueError:
        return UNKNOWN
    if isinstance(cur, str) and cur in _SENTINELS:
        return UNKNOWN
    return default if cur is None else cur


def items(value: Any, *path: str) -> list[Any]:
    """A list-valued prop as a list; empty when absent or unknown."""
    found = get(value, *path)
    if found is UNKNOWN or (_KINDS.get(type(found)) or _kind(type(found))) != _SEQ:
        return []
    out = []
    for i in range(len(found)):
        try:
            item = found[i]
        except UnknownValueError:
            item = UNKNOWN
        out.append(UNKNOWN if isinstance(item, str) and item in _SENTINELS else item)
    return out


def truthy(value: Any) -> bool:
    """AWS launch-template booleans are strings ("true"); unknown is not true."""
    if value is UNKNOWN or value is None:
        return False
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


@dataclass(eq=False)
class Res:
    """One resource: what a resource policy sees, plus (in a stack) its links."""

    type: str
    name: str
    urn: str
    props: Any  # Mapping (possibly the SDK's unknown-checking proxy)
    provider_props: Any = None
    parent: Res | None = None
    property_dependencies: dict[str, list[Res]] = field(default_factory=dict)
    provider: str = field(init=False, repr=False)  # the type token's package (aws, azure-native, gcp, ...)

    def get(self, *path: str | int, default: Any = None) -> Any:
        return get(self.props, *path, default=default)

    def linked(self, prop: str, type_: str | None = None) -> list[Res]:
        return [r for r in self.property_dependencies.get(prop, []) if type_ is None or r.type == type_]

    def __post_init__(self) -> None:
        self.provider = self.type.split(":", 1)[0]  # read by many rules for every resource: worked out once

    @property
    def catalog_provider(self) -> str:
        """The provider as the catalog names it (`azure` for `azure-native:` types)."""
        return CATALOG_PROVIDER.get(self.provider, self.provider)

    @property
    def region(self) -> str | None:
        """The resource's region: its own `region`/`location` input (GCP: also `zone`), else its provider's.
        Azure locations are normalised as Azure does ("East US" -> "eastus"); a GCP zone stands for its region
        (us-central1-a -> us-central1). Resources that are not regional say `global`."""
        keys = ("region", "zone", "location") if self.provider == "gcp" else ("region", "location")
        for key in keys:
            value = self.get(key)
            if isinstance(value, str) and value:
                if self.provider == "azure-native":
                    return azure_location(value)
                return gcp_region(value) if self.provider == "gcp" else value
        value = get(self.provider_props, "region")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Fleet:
    """Nodes of one instance type launched by one resource (ASG, scale set, managed instance group or VM), or
    the hosts of a Cloud TPU slice (`tpu` set: billed per chip, not per node)."""

    res: Res
    instance_type: str  # a TPU slice: its accelerator type (v5p-256)
    nodes: int  # a TPU slice: its hosts (TPU VMs)
    market: str  # on-demand | spot | capacity-block | reserved | flex-start
    region: str | None
    root_volume_gib: float
    spec: InstanceType | None  # the catalog's record, None when the catalog lacks the type (and for TPUs)
    template: Res | None  # the launch template / instance template, where one is used (None on Azure)
    root_disk_type: str | None = None  # Azure storageAccountType / GCP diskType as declared; AWS: None (gp3)
    tpu: TpuType | None = None  # the catalog's TPU generation of a TPU slice
    chips: int = 0  # TPU chips of the fleet (all its slices)

    @property
    def provider(self) -> str:
        """The catalog's provider (aws, azure, gcp)."""
        return self.res.catalog_provider

    @property
    def billed(self) -> int:
        """What the hourly price is per: nodes, or chips of a TPU fleet."""
        return self.chips if self.tpu is not None else self.nodes

    @property
    def accelerators(self) -> int:
        """GPUs (or Trainium devices, or TPU chips) of the whole fleet."""
        if self.tpu is not None:
            return self.chips
        return self.spec.accelerator_count * self.nodes if self.spec else 0

    @property
    def node_power_kw(self) -> float | None:
        """One node's maximum draw; None where nobody publishes it (Cloud TPU hosts)."""
        if self.tpu is not None:
            return self.tpu.host_power_kw
        return self.spec.node_power_kw if self.spec else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class SitePool:
    """An on-prem pool as its site records it: owned nodes, their amortised hardware cost and their energy."""

    name: str
    node_shape: str
    nodes: int
    hardware_usd_per_month: float | None  # None: the site gives no hardware cost (unpriced, never 0)
    energy_usd_per_month: float | None
    power_kw_it: float
    co2e_t_per_month: float


@dataclass(frozen=True)
class Site:
    """An owned site (an `aicluster:onprem:Site` resource): what it draws, costs and emits, against its limits."""

    res: Res
    name: str
    cidrs: tuple[str, ...]
    max_kw: float | None
    rack_kw: float | None
    it_kw: float
    facility_kw: float
    co2e_t_per_month: float
    pools: tuple[SitePool, ...]
    racks: tuple[Mapping[str, Any], ...]
    fabrics: tuple[Mapping[str, Any], ...]


def site_of(r: Res) -> Site:
    pools = tuple(
        SitePool(
            name=str(get(p, "name", default="")),
            node_shape=str(get(p, "node_shape", default="")),
            nodes=int(_num(get(p, "nodes")) or 0),
            hardware_usd_per_month=_num(get(p, "hardware_usd_per_month")),
            energy_usd_per_month=_num(get(p, "energy_usd_per_month")),
            power_kw_it=_num(get(p, "power_kw_it")) or 0.0,
            co2e_t_per_month=_num(get(p, "co2e_t_per_month")) or 0.0,
        )
        for p in items(r.props, "pools")
        if isinstance(p, Mapping)
    )
    return Site(
        res=r,
        name=str(r.get("site", default=r.name)),
        cidrs=tuple(c for c in items(r.props, "cidrs") if isinstance(c, str)),
        max_kw=_num(r.get("max_kw")),
        rack_kw=_num(r.get("rack_kw")),
        it_kw=_num(r.get("power", "it_kw")) or 0.0,
        facility_kw=_num(r.get("power", "facility_kw")) or 0.0,
        co2e_t_per_month=_num(r.get("co2e_t_per_month")) or 0.0,
        pools=pools,
        racks=tuple(x for x in items(r.props, "racks") if isinstance(x, Mapping)),
        fabrics=tuple(x for x in items(r.props, "fabrics") if isinstance(x, Mapping)),
    )


def _finite(value: Any) -> float | None:
    n = _num(value)
    return n if n is not None and math.isfinite(n) else None


def _whole(value: Any) -> int | None:
    n = _finite(value)
    return int(n) if n is not None and n.is_integer() else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Workload:
    """A workload as sized on its pools (an `aicluster:sizing:Workload` resource). Figures a hostile or older
    program leaves out, or gives as the wrong type, are None: a rule that needs them has nothing to judge."""

    res: Res
    name: str
    cluster: str | None  # the cluster's name: its resources are named `<cluster>-<pool>-...`
    pools: tuple[str, ...]  # the stack's pool names (each fleet's aicluster:pool tag)
    instance_type: str | None
    gpus_available: int | None
    fits: bool | None  # None: not said
    reason: str | None  # when nothing fits: why, and what would
    memory_total_bytes: float | None  # per GPU: the chosen layout's, else the closest layout's
    memory_capacity_bytes: float | None
    gpus: int | None  # the chosen layout's GPUs
    days: float | None
    target_days: float | None
    gpus_for_target_days: int | None
    checkpoint_bytes: float | None
    checkpoint_write_s: float | None
    checkpoint_interval_s: float | None
    write_gb_s: float | None
    mtbf_h: float | None
    restart_s: float | None
    goodput: float | None
    target_overhead: float | None
    required_write_gb_s: float | None
    filesystems: tuple[str, ...]

    def runs_on(self, fleet: Fleet) -> bool:
        """Whether the fleet is one of the workload's pools: by its pool tag, else (a fleet without one, such as a
        Cloud TPU queued resource) by its name, `<cluster>-<pool>-...`, the longest of the workload's pools."""
        tagged = pool_of(fleet)
        if tagged is not None:
            return tagged in self.pools
        if self.cluster is None:
            return False
        return any(fleet.res.name.startswith(f"{self.cluster}-{p}-") for p in self.pools)

    @property
    def shortfall_bytes(self) -> float | None:
        """Bytes per GPU over the GPU's memory (of the layout closest to fitting); None: not recorded."""
        if self.memory_total_bytes is None or self.memory_capacity_bytes is None:
            return None
        return self.memory_total_bytes - self.memory_capacity_bytes


def workload_of(r: Res) -> Workload:
    fits = r.get("fits")
    return Workload(
        res=r,
        name=_text(r.get("name")) or r.name,
        cluster=_text(r.get("cluster")),
        pools=tuple(p for p in items(r.props, "pools") if isinstance(p, str) and p),
        instance_type=_text(r.get("instanceType")),
        gpus_available=_whole(r.get("gpusAvailable")),
        fits=fits if isinstance(fits, bool) else None,
        reason=_text(r.get("reason")),
        memory_total_bytes=_finite(r.get("memory", "totalBytes")),
        memory_capacity_bytes=_finite(r.get("memory", "capacityBytes")),
        gpus=_whole(r.get("layout", "gpus")),
        days=_finite(r.get("days")),
        target_days=_finite(r.get("targetDays")),
        gpus_for_target_days=_whole(r.get("gpusForTargetDays")),
        checkpoint_bytes=_finite(r.get("checkpointBytes")),
        checkpoint_write_s=_finite(r.get("checkpointWriteSeconds")),
        checkpoint_interval_s=_finite(r.get("checkpointIntervalSeconds")),
        write_gb_s=_finite(r.get("writeGbS")),
        mtbf_h=_finite(r.get("mtbfHours")),
        restart_s=_finite(r.get("restartSeconds")),
        goodput=_finite(r.get("goodput")),
        target_overhead=_finite(r.get("targetOverhead")),
        required_write_gb_s=_finite(r.get("requiredWriteGbS")),
        filesystems=tuple(f for f in items(r.props, "filesystems") if isinstance(f, str) and f),
    )


def _tag(tags: Any, key: str) -> str | None:
    """A tag's value from a tags map, or from an Auto Scaling group's list of {key, value}."""
    if isinstance(tags, Mapping):
        return _text(get(tags, key))
    if isinstance(tags, Sequence) and not isinstance(tags, str):
        for t in items(tags):
            if isinstance(t, Mapping) and get(t, "key") == key:
                return _text(get(t, "value"))
    return None


def pool_of(fleet: Fleet) -> str | None:
    """The stack pool a fleet was made for: its `aicluster:pool` tag (GCP: the `aicluster_pool` label), on the
    fleet's resource, else on its launch or instance template; None for fleets no aicluster pool made."""
    gcp_key = POOL_TAG.replace(":", "_")
    for r in (fleet.res, fleet.template):
        if r is None:
            continue
        for found in (
            _tag(r.get("tags"), POOL_TAG),
            _tag(r.get("labels"), gcp_key),
            _tag(r.get("nodeConfig", "resourceLabels"), gcp_key),  # a GKE node pool
            _tag(r.get("tpu", "nodeSpecs", 0, "node", "labels"), gcp_key),  # a TPU queued resource
        ):
            if found is not None:
                return found
    return None


@dataclass(frozen=True)
class Filesystem:
    res: Res
    service: str  # fsx-lustre | efs | azure-managed-lustre | azure-netapp-files | gcp-managed-lustre | ...
    capacity_gib: float | None  # None: billed per GiB stored, size not declared (or unknown)
    throughput_mb_s: float | None
    tier: StorageTier | None
    region: str | None

    @property
    def provider(self) -> str:
        """The catalog's provider (aws, azure, gcp)."""
        return self.res.catalog_provider

    @property
    def parallel(self) -> bool:
        """A parallel file system (Lustre), fit to take checkpoints of a large job."""
        return self.service in PARALLEL_SERVICES


class Stack:
    """Every resource of a stack, with the cluster declaration (AiCluster inputs) when there is one."""

    def __init__(self, resources: Sequence[Res], catalog: Catalog | None = None) -> None:
        self.resources = list(resources)
        self.catalog = catalog or load_catalog()
        self.by_type: dict[str, list[Res]] = {}
        self._memo: dict[str, Any] = {}
        for r in self.resources:
            self.by_type.setdefault(r.type, []).append(r)

    def of(self, *types: str) -> list[Res]:
        return [r for t in types for r in self.by_type.get(t, [])]

    def memo(self, key: str, make: Callable[[Stack], T]) -> T:
        """A fact of the whole stack worked out once (e.g. the bill, which two cost rules read): a stack's
        resources do not change while the pack judges it."""
        if key not in self._memo:
            self._memo[key] = make(self)
        return cast(T, self._memo[key])

    @cached_property
    def cluster(self) -> Res | None:
        found = self.of(AICLUSTER_TYPE)
        return found[0] if found else None

    def declared(self, *path: str) -> Any:
        """A value the AiCluster component declares (budgets, compliance, pricing, tags)."""
        return get(self.cluster.props, *path) if self.cluster else None

    @cached_property
    def overrides(self) -> list[_Override]:
        return [_Override.of(o) for o in items(self.declared("pricing"), "overrides") if isinstance(o, Mapping)]

    @cached_property
    def fleets(self) -> list[Fleet]:
        out = [f for r in self.of(ASG) if (f := _asg_fleet(self, r))]
        out += [f for r in self.of(INSTANCE) if (f := _instance_fleet(self, r))]
        out += [f for r in self.of(AZURE_VMSS) if (f := _azure_vmss_fleet(self, r))]
        out += [f for r in self.of(AZURE_VM) if (f := _azure_vm_fleet(self, r))]
        out += [f for r in self.of(GCP_MIG, GCP_REGION_MIG) if (f := _gcp_mig_fleet(self, r))]
        out += [f for r in self.of(GCP_INSTANCE) if (f := _gcp_instance_fleet(self, r))]
        out += [f for r in self.of(GCP_TPU_QUEUED, GCP_TPU_VM) if (f := _gcp_tpu_fleet(self, r))]
        out += [g.fleet for g in self.node_groups if g.fleet is not None]
        return out

    @cached_property
    def node_groups(self) -> list[NodeGroup]:
        """Kubernetes node groups: EKS managed node groups, GKE node pools, AKS agent pools (their own resources
        and the cluster's agentPoolProfiles)."""
        out = [_eks_node_group(self, r) for r in self.of(EKS_NODE_GROUP)]
        out += [_gke_node_pool(self, r) for r in self.of(GKE_NODE_POOL)]
        out += [_aks_agent_pool(self, r, r, r.props, r.region) for r in self.of(AKS_AGENT_POOL)]
        for c in self.of(AKS_CLUSTER):
            for i, profile in enumerate(items(c.props, "agentPoolProfiles")):
                if isinstance(profile, Mapping):
                    out.append(_aks_agent_pool(self, c, None, profile, c.region, i))
        return out

    def control_plane(self, cluster: Res) -> ControlPlane | None:
        """A managed control plane's service record, minor version and support, as it is billed."""
        svc = self.catalog.kubernetes.get(cluster.catalog_provider)
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

    @cached_property
    def sites(self) -> list[Site]:
        return [site_of(r) for r in self.of(ONPREM_SITE)]

    @cached_property
    def workloads(self) -> list[Workload]:
        return [workload_of(r) for r in self.of(WORKLOAD)]

    @cached_property
    def filesystems(self) -> list[Filesystem]:
        return (
            [_lustre(self, r) for r in self.of(FSX_LUSTRE)]
            + [_efs(self, r) for r in self.of(EFS)]
            + [_amlfs(self, r) for r in self.of(AZURE_LUSTRE)]
            + [_netapp_pool(self, r) for r in self.of(AZURE_NETAPP_POOL)]
            + [_gcp_lustre(self, r) for r in self.of(GCP_LUSTRE)]
            + [_parallelstore(self, r) for r in self.of(GCP_PARALLELSTORE)]
            + [_filestore(self, r) for r in self.of(GCP_FILESTORE)]
        )

    def region_record(self, provider: str, region: str | None) -> Region | None:
        """The catalog's region; `provider` may be the catalog's or the Pulumi package (`azure-native`)."""
        return self.catalog.region(CATALOG_PROVIDER.get(provider, provider), region) if region else None

    def fleet_month(self, fleet: Fleet) -> float | None:
        """USD per month of a fleet's instances (or TPU chips); None: not priced."""
        price = self.fleet_price(fleet)
        return hourly_month(price, fleet.billed, self.catalog.hours_per_month) if price is not None else None

    def fleet_price(self, fleet: Fleet) -> float | None:
        """USD per node-hour (per chip-hour of a TPU fleet): a declared override, else the catalog's rate for the
        market."""
        priced = fleet.tpu or fleet.spec
        if priced is None or fleet.region is None:
            return None
        resolved = compute_price(priced, fleet.region, fleet.market, self.overrides)
        return resolved.price.usd if resolved.price else None

    def filesystem_price(self, fs: Filesystem) -> float | None:
        """USD per month."""
        if fs.tier is None or fs.region is None or fs.capacity_gib is None:
            return None
        return storage_month(storage_price(fs.tier, fs.region, self.overrides), fs.capacity_gib)

    def service_month(self, provider: str, service: str, region: str | None, quantity: float) -> float | None:
        """USD per month of `quantity` units of a catalog service at a declared override, else the catalog's
        list price (the planner's cost model); None: not priced."""
        return service_month(
            self.catalog, service_price(self.catalog, provider, service, region, self.overrides), quantity
        )


@dataclass(frozen=True)
class _Override:
    sku: str
    region: str | None
    market: str | None
    usd_per_hour: float | None
    usd_per_gib_month: float | None

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> _Override:
        def opt(key: str) -> Any:
            value = get(raw, key)
            return None if value is UNKNOWN else value

        return cls(str(opt("sku")), opt("region"), opt("market"), opt("usd_per_hour"), opt("usd_per_gib_month"))


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def template_market(lt: Res | None) -> str:
    if lt is None:
        return "on-demand"
    market = lt.get("instanceMarketOptions", "marketType")
    if market in ("spot", "capacity-block"):
        return str(market)
    target = lt.get("capacityReservationSpecification", "capacityReservationTarget")
    if isinstance(target, Mapping) and target:
        return "reserved"
    return "on-demand"


def _root_gib(mappings: list[Any]) -> float:
    total = 0.0
    for m in mappings:
        size = get(m, "ebs", "volumeSize")
        if isinstance(size, int | float):
            total += float(size)
    return total


def _asg_fleet(stack: Stack, asg: Res) -> Fleet | None:
    lts = asg.linked("launchTemplate", LAUNCH_TEMPLATE) or asg.linked("mixedInstancesPolicy", LAUNCH_TEMPLATE)
    lt = lts[0] if lts else None
    it = lt.get("instanceType") if lt else None
    nodes = _count(asg.get("maxSize"))
    if nodes is None:
        nodes = _count(asg.get("desiredCapacity"))
    if not isinstance(it, str) or nodes is None:
        return None
    assert lt is not None
    return Fleet(
        asg,
        it,
        nodes,
        template_market(lt),
        asg.region or lt.region,
        _root_gib(items(lt.props, "blockDeviceMappings")),
        stack.catalog.instance_type("aws", it),
        lt,
    )


def _instance_fleet(stack: Stack, inst: Res) -> Fleet | None:
    lts = inst.linked("launchTemplate", LAUNCH_TEMPLATE)
    lt = lts[0] if lts else None
    it = inst.get("instanceType")
    if not isinstance(it, str) and lt is not None:
        it = lt.get("instanceType")
    if not isinstance(it, str):
        return None
    root = inst.get("rootBlockDevice", "volumeSize")
    root_gib = (
        float(root)
        if isinstance(root, int | float)
        else _root_gib(items(lt.props, "blockDeviceMappings") if lt else [])
    )
    market = "spot" if inst.get("instanceMarketOptions", "marketType") == "spot" else template_market(lt)
    return Fleet(inst, it, 1, market, inst.region, root_gib, stack.catalog.instance_type("aws", it), lt)


def _lustre(stack: Stack, fs: Res) -> Filesystem:
    capacity = fs.get("storageCapacity")
    per_tib = fs.get("perUnitStorageThroughput")
    deployment = fs.get("deploymentType", default="SCRATCH_1")
    tier = next(
        (
            t
            for t in stack.catalog.storage_tiers_for("aws", "lustre")
            if t.deployment == deployment and isinstance(per_tib, int | float) and t.throughput_mb_s_per_tib == per_tib
        ),
        None,
    )
    capacity_gib = float(capacity) if isinstance(capacity, int | float) else None
    throughput = None
    if capacity_gib is not None:
        rate = float(per_tib) if isinstance(per_tib, int | float) else (tier.throughput_mb_s_per_tib if tier else None)
        throughput = capacity_gib / 1024 * rate if rate is not None else None
    return Filesystem(fs, "fsx-lustre", capacity_gib, throughput, tier, fs.region)


def _efs(stack: Stack, fs: Res) -> Filesystem:
    """EFS is billed per GiB stored, which the resource does not say: the size the cluster declares it was
    planned for (the AiCluster's `filesystems`, by the file system's aicluster:storage tag), else unknown."""
    tiers = stack.catalog.storage_tiers_for("aws", "nfs")
    name = fs.get("tags", STORAGE_TAG)
    size = stack.declared("filesystems", name, "capacity_gib") if isinstance(name, str) else None
    capacity_gib = float(size) if isinstance(size, int | float) and not isinstance(size, bool) else None
    return Filesystem(fs, "efs", capacity_gib, None, tiers[0] if tiers else None, fs.region)


def azure_location(location: str) -> str:
    """Azure takes display names too: "East US" and "eastus" are one region."""
    return location.replace(" ", "").lower()


def _azure_size(stack: Stack, size: str) -> InstanceType | None:
    """The catalog's record of an Azure VM size (Azure reads sizes case-insensitively)."""
    found = stack.catalog.instance_type("azure", size)
    if found is None:
        name = next((n for n in stack.catalog.instance_type_names("azure") if n.lower() == size.lower()), None)
        found = stack.catalog.instance_type("azure", name) if name else None
    return found


def _azure_market(priority: Any) -> str:
    # "Low" is the retired name of Spot priority; both are evicted when Azure needs the capacity
    return "spot" if isinstance(priority, str) and priority.lower() in ("spot", "low") else "on-demand"


def _azure_os_disk(os_disk: Any) -> tuple[float, str | None]:
    size = get(os_disk, "diskSizeGB")
    kind = get(os_disk, "managedDisk", "storageAccountType")
    return (float(size) if isinstance(size, int | float) else 0.0), (kind if isinstance(kind, str) else None)


def _burst_ceiling(stack: Stack, group: object) -> int:
    """The most nodes a burst group may reach, as the AiCluster component declares it (0: not a burst group).
    A burst group starts empty and Slurm grows it, so a budget judges it at its ceiling."""
    ceiling = stack.declared("burst_groups", group) if isinstance(group, str) else None
    return _count(ceiling) or 0


def _azure_vmss_fleet(stack: Stack, vmss: Res) -> Fleet | None:
    size = vmss.get("sku", "name")
    nodes = _count(vmss.get("sku", "capacity"))
    if not isinstance(size, str) or nodes is None:
        return None
    profile = vmss.get("virtualMachineProfile")
    nodes = max(nodes, _burst_ceiling(stack, get(profile, "osProfile", "computerNamePrefix")))
    root_gib, disk_type = _azure_os_disk(get(profile, "storageProfile", "osDisk"))
    market = _azure_market(get(profile, "priority"))
    return Fleet(vmss, size, nodes, market, vmss.region, root_gib, _azure_size(stack, size), None, disk_type)


def _azure_vm_fleet(stack: Stack, vm: Res) -> Fleet | None:
    size = vm.get("hardwareProfile", "vmSize")
    if not isinstance(size, str):
        return None
    root_gib, disk_type = _azure_os_disk(vm.get("storageProfile", "osDisk"))
    market = _azure_market(vm.get("priority"))
    return Fleet(vm, size, 1, market, vm.region, root_gib, _azure_size(stack, size), None, disk_type)


def _amlfs(stack: Stack, fs: Res) -> Filesystem:
    """Azure Managed Lustre: capacity in TiB, throughput per TiB set by the SKU (AMLFS-Durable-Premium-250)."""
    tib = fs.get("storageCapacityTiB")
    sku = fs.get("sku", "name")
    tier = next((t for t in stack.catalog.storage_tiers_for("azure", "lustre") if t.deployment == sku), None)
    rate = tier.throughput_mb_s_per_tib if tier else None
    if rate is None and isinstance(sku, str) and sku.rsplit("-", 1)[-1].isdigit():
        rate = float(sku.rsplit("-", 1)[-1])
    capacity_gib = float(tib) * 1024 if isinstance(tib, int | float) else None
    throughput = float(tib) * rate if isinstance(tib, int | float) and rate is not None else None
    return Filesystem(fs, "azure-managed-lustre", capacity_gib, throughput, tier, fs.region)


def _netapp_pool(stack: Stack, pool: Res) -> Filesystem:
    """Azure NetApp Files: the capacity pool is what is billed (size in bytes, per service level); its
    volumes draw on it."""
    size = pool.get("size")
    level = pool.get("serviceLevel")
    tier = next((t for t in stack.catalog.storage_tiers_for("azure", "nfs") if t.deployment == level), None)
    capacity_gib = float(size) / 2**30 if isinstance(size, int | float) else None
    throughput = capacity_gib / 1024 * tier.throughput_mb_s_per_tib if capacity_gib is not None and tier else None
    return Filesystem(pool, "azure-netapp-files", capacity_gib, throughput, tier, pool.region)


# --------------------------------------------------------------------------------------------------
# GCP


def gcp_region(location: str) -> str:
    """A GCP location as a region: a zone stands for its region (us-central1-a -> us-central1); regions,
    `global` and multi-regions (US, EU) are themselves."""
    found = _GCP_ZONE.fullmatch(location)
    return found.group(1) if found else location


def gcp_market(res: Res | None) -> str:
    """The market of an instance template or VM. A specific reservation is taken as reserved capacity (its rate
    is what the reservation or commitment costs). A VM that merely may consume a matching reservation
    (ANY_RESERVATION, GCP's default) is on-demand: a stack that says `market: reserved` without naming a
    reservation declares nothing a resource shows, so such a pool is costed here at the on-demand rate."""
    if res is None:
        return "on-demand"
    model = res.get("scheduling", "provisioningModel")
    if model == "SPOT" or res.get("scheduling", "preemptible") is True:
        return "spot"
    if model == "FLEX_START":
        return "flex-start"
    if res.get("reservationAffinity", "type") == "SPECIFIC_RESERVATION":
        return "reserved"
    return "on-demand"


def _gcp_machine(stack: Stack, machine: str) -> InstanceType | None:
    # a machine type may be given as a URL (zones/us-central1-a/machineTypes/a3-megagpu-8g)
    return stack.catalog.instance_type("gcp", machine.rsplit("/", 1)[-1])


def _gcp_boot_disk(template: Res) -> tuple[float, str | None]:
    """(size GiB, diskType) of a template's boot disk: the disk marked `boot`, else the first."""
    disks = [d for d in items(template.props, "disks") if isinstance(d, Mapping)]
    boot = next((d for d in disks if get(d, "boot") is True), disks[0] if disks else None)
    size = get(boot, "diskSizeGb")
    kind = get(boot, "diskType")
    return (float(size) if isinstance(size, int | float) else 0.0), (kind if isinstance(kind, str) else None)


def _resize_requests(stack: Stack, mig: Res) -> int:
    """VMs that flex-start resize requests add to a managed instance group (its target size stays 0)."""
    total = 0
    for rr in stack.of(GCP_RESIZE_REQUEST):
        name = rr.get("instanceGroupManager")
        linked = mig in rr.linked("instanceGroupManager")
        if linked or (isinstance(name, str) and name and name == mig.get("name")):
            total += _count(rr.get("resizeBy")) or 0
    return total


def _gcp_mig_fleet(stack: Stack, mig: Res) -> Fleet | None:
    templates = mig.linked("versions")
    template = next((t for t in templates if t.type in GCP_TEMPLATES), None)
    machine = template.get("machineType") if template else None
    size = mig.get("targetSize", default=0)
    target = _count(size)
    if not isinstance(machine, str) or target is None:
        return None
    target = max(target, _burst_ceiling(stack, mig.get("baseInstanceName")))
    assert template is not None
    root_gib, disk_type = _gcp_boot_disk(template)
    return Fleet(
        mig,
        machine,
        target + _resize_requests(stack, mig),
        gcp_market(template),
        mig.region or template.region,
        root_gib,
        _gcp_machine(stack, machine),
        template,
        disk_type,
    )


def _gcp_instance_fleet(stack: Stack, vm: Res) -> Fleet | None:
    templates = [t for t in vm.linked("sourceInstanceTemplate") if t.type in GCP_TEMPLATES]
    template = templates[0] if templates else None
    machine = vm.get("machineType")
    if not isinstance(machine, str) and template is not None:
        machine = template.get("machineType")
    if not isinstance(machine, str):
        return None
    size = vm.get("bootDisk", "initializeParams", "size")
    kind = vm.get("bootDisk", "initializeParams", "type")
    root_gib, disk_type = (
        (float(size) if isinstance(size, int | float) else 0.0),
        (kind if isinstance(kind, str) else None),
    )
    if template is not None and not root_gib:
        root_gib, disk_type = _gcp_boot_disk(template)
    market = gcp_market(vm) if vm.get("scheduling") or vm.get("reservationAffinity") else gcp_market(template)
    return Fleet(vm, machine, 1, market, vm.region, root_gib, _gcp_machine(stack, machine), template, disk_type)


def tpu_slice(catalog: Catalog, accelerator_type: str) -> tuple[TpuType, int, int] | None:
    """(generation, chips, hosts) of one slice of a TPU accelerator type: v5p-256 counts TensorCores (128 chips on
    32 hosts), v5litepod-16 and v6e-16 count chips. None for a type the catalog does not know."""
    prefix, _, size = accelerator_type.rpartition("-")
    tpu = next((t for t in catalog.tpu_types.values() if t.type_prefix == prefix), None)
    if tpu is None or not size.isdigit():
        return None
    chips = int(size) // tpu.tensorcores_per_chip
    hosts = 1 if chips <= tpu.single_host_max_chips else max(1, chips // tpu.chips_per_host)
    return tpu, chips, hosts


def _gcp_tpu_fleet(stack: Stack, res: Res) -> Fleet | None:
    """A queued resource (each node spec a slice, or `multisliceParams.nodeCount` of them; on-demand: the
    provider's queued resource asks for no spot or reserved capacity) or a TPU VM (one slice, its
    schedulingConfig says spot or reserved)."""
    if res.type == GCP_TPU_VM:
        specs = [(res.get("acceleratorType"), 1)]
        scheduling = res.get("schedulingConfig")
        spot = get(scheduling, "spot") is True or get(scheduling, "preemptible") is True
        market = "spot" if spot else "reserved" if get(scheduling, "reserved") is True else "on-demand"
    else:
        specs = [
            (get(spec, "node", "acceleratorType"), _count(get(spec, "multisliceParams", "nodeCount")) or 1)
            for spec in items(res.props, "tpu", "nodeSpecs")
        ]
        market = "on-demand"
    tpu: TpuType | None = None
    chips = hosts = 0
    names = []
    for accelerator_type, count in specs:
        found = tpu_slice(stack.catalog, accelerator_type) if isinstance(accelerator_type, str) else None
        if found is None or (tpu is not None and found[0] is not tpu):
            return None
        tpu = found[0]
        chips += found[1] * count
        hosts += found[2] * count
        names.append(accelerator_type if count == 1 else f"{count} x {accelerator_type}")
    if tpu is None:
        return None
    return Fleet(res, " + ".join(names), hosts, market, res.region, 0.0, None, None, None, tpu, chips)


def _gcp_capacity(value: Any) -> float | None:
    """GCP file-system sizes come as strings ("144000") in some APIs, numbers in others."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _gcp_lustre(stack: Stack, fs: Res) -> Filesystem:
    """Google Cloud Managed Lustre: capacity in GiB and throughput per TiB, both as strings."""
    capacity_gib = _gcp_capacity(fs.get("capacityGib"))
    per_tib = _gcp_capacity(fs.get("perUnitStorageThroughput"))
    tier = next(
        (
            t
            for t in stack.catalog.storage_tiers_for("gcp", "lustre")
            if t.service == "gcp-managed-lustre" and t.throughput_mb_s_per_tib == per_tib
        ),
        None,
    )
    throughput = capacity_gib / 1024 * per_tib if capacity_gib is not None and per_tib is not None else None
    return Filesystem(fs, "gcp-managed-lustre", capacity_gib, throughput, tier, fs.region)


def _parallelstore(stack: Stack, fs: Res) -> Filesystem:
    capacity_gib = _gcp_capacity(fs.get("capacityGib"))
    deployment = fs.get("deploymentType")
    if deployment in (None, "DEPLOYMENT_TYPE_UNSPECIFIED"):
        deployment = "SCRATCH"  # the API's default
    tier = next(
        (
            t
            for t in stack.catalog.storage_tiers_for("gcp", "lustre")
            if t.service == "parallelstore" and t.deployment == deployment
        ),
        None,
    )
    throughput = capacity_gib / 1024 * tier.throughput_mb_s_per_tib if capacity_gib is not None and tier else None
    return Filesystem(fs, "parallelstore", capacity_gib, throughput, tier, fs.region)


def _filestore(stack: Stack, fs: Res) -> Filesystem:
    """Filestore: the catalog splits a tier (ZONAL) by the capacity range it is sold in (ZONAL below 10 TiB,
    ZONAL-10-100TiB above); the share's size picks the range."""
    capacity_gib = _gcp_capacity(fs.get("fileShares", "capacityGb"))
    tier_name = fs.get("tier")
    tier = None
    if isinstance(tier_name, str) and capacity_gib is not None:
        tier = next(
            (
                t
                for t in stack.catalog.storage_tiers_for("gcp", "nfs")
                if t.service == "filestore"
                and t.deployment.split("-", 1)[0] == tier_name
                and t.min_capacity_gib <= capacity_gib <= (t.max_capacity_gib or capacity_gib)
            ),
            None,
        )
    throughput = capacity_gib / 1024 * tier.throughput_mb_s_per_tib if capacity_gib is not None and tier else None
    return Filesystem(fs, "filestore", capacity_gib, throughput, tier, fs.region)


# --------------------------------------------------------------------------------------------------
# Kubernetes node groups and control planes

_VERSION_PROP = {EKS_CLUSTER: "version", GKE_CLUSTER: "minMasterVersion", AKS_CLUSTER: "kubernetesVersion"}
_K8S_MINOR = re.compile(r"v?(\d+)\.(\d+)")
# EKS and GKE spell taint effects in upper snake case, Kubernetes (and AKS) in camel case
_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"  # Kubernetes sets it on every cloud node
EFA_INTERFACE_TYPES = ("efa", "efa-only")
GKE_DEFAULT_NODE_DISK = "pd-balanced"  # a GKE node's boot disk type when its nodeConfig names none


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule | NoExecute | PreferNoSchedule

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class ControlPlane:
    res: Res
    service: str  # Amazon EKS, ...
    version: str | None  # minor version, None: not set or unknown (the service's default)
    support: str  # standard | extended
    usd_per_hour: float | None  # None: the catalog has no rate for this support


@dataclass(frozen=True)
class NodeGroup:
    """One Kubernetes node group as the engine hands it: what its nodes are, carry, and where they live."""

    res: Res  # the node group resource (for an AKS cluster's agentPoolProfiles entry: the cluster)
    name: str  # how findings name it
    instance_type: str | None
    spec: InstanceType | None
    fleet: Fleet | None  # None: its type or node count is not known
    labels: Mapping[str, Any]  # declared labels plus those the cloud sets from what the resource says
    taints: tuple[Taint, ...]
    accelerators: int  # per node: the catalog's count for the type, or GKE guestAccelerators
    template: Res | None = None  # EKS: its launch template
    efa: bool = False
    public: str | None = None  # why its nodes get public addresses; None: they do not (or it cannot be told)
    zones: tuple[str, ...] = ()  # zones of its subnets (EKS) or node locations (GKE), where known
    fix_public: str = ""

    @property
    def provider(self) -> str:
        return self.res.catalog_provider


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
    nodes = _count(ng.get("scalingConfig", "maxSize"))
    if nodes is None:
        nodes = _count(ng.get("scalingConfig", "desiredSize"))
    capacity = ng.get("capacityType")
    market = {"SPOT": "spot", "CAPACITY_BLOCK": "capacity-block"}.get(capacity) or template_market(lt)
    root = _root_gib(items(lt.props, "blockDeviceMappings")) if lt else 0.0
    if not root:
        root = _num(ng.get("diskSize")) or 0.0
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
    spec = _gcp_machine(stack, machine) if machine else None
    locations = tuple(z for z in items(pool.props, "nodeLocations") if isinstance(z, str))
    per_zone = [_count(pool.get("nodeCount")), _count(pool.get("initialNodeCount"))]
    per_zone.append(_count(pool.get("autoscaling", "maxNodeCount")))
    counts = [c * max(1, len(locations)) for c in per_zone if c is not None]
    total_max = _count(pool.get("autoscaling", "totalMaxNodeCount"))
    counts += [total_max] if total_max is not None else []
    nodes = max(counts) if counts else None
    size = _num(get(config, "diskSizeGb")) or 0.0
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
    guest = sum(_count(get(a, "count")) or 0 for a in items(config, "guestAccelerators"))
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
    spec = _azure_size(stack, size) if size else None
    nodes = _count(get(profile, "count"))
    if get(profile, "enableAutoScaling") is True and _count(get(profile, "maxCount")) is not None:
        nodes = max(nodes or 0, _count(get(profile, "maxCount")) or 0)
    ephemeral = get(profile, "osDiskType") == "Ephemeral"  # on the VM's local disk: no managed disk billed
    root = 0.0 if ephemeral else _num(get(profile, "osDiskSizeGB")) or 0.0
    market = _azure_market(get(profile, "scaleSetPriority"))
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


def walk(resources: Sequence[Any]) -> Iterator[Res]:
    """`Res` for each of the SDK's PolicyResource objects, links resolved."""
    made: dict[int, Res] = {}

    def one(r: Any) -> Res:
        if id(r) not in made:
            provider = getattr(r, "provider", None)
            made[id(r)] = Res(r.resource_type, r.name, r.urn, r.props, provider.props if provider else None)
        return made[id(r)]

    for r in resources:
        res = one(r)
        if r.parent is not None:
            res.parent = one(r.parent)
        res.property_dependencies = {k: [one(d) for d in v] for k, v in (r.property_dependencies or {}).items()}
        yield res
