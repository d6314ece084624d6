"""The facts rules judge, the same for every cloud: fleets, file systems, node groups, sites, workloads, and the
exposures, ingress rules and tags of single resources. The cloud readers (facts.aws, facts.azure, facts.gcp,
facts.kubernetes, facts.aicluster) make them from resources as the engine hands them.

Nothing here knows about our components: a fleet is an Auto Scaling group or an instance with an
instance type (on Azure a VM scale set or a VM with a size; on GCP a managed instance group of an instance
template, a VM, or a Cloud TPU slice), wherever it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aicluster.catalog import InstanceType, NvlinkDomain, StorageTier, TpuType

from .engine import Res, get, items, text

POOL_TAG = "aicluster:pool"  # the tag naming the stack's pool a fleet was made for (GCP label: aicluster_pool)
STORAGE_TAG = "aicluster:storage"  # the tag naming the stack's storage entry a file system was made for

# File system services striped over many servers (checkpoint targets), as opposed to NFS.
PARALLEL_SERVICES = frozenset({"fsx-lustre", "azure-managed-lustre", "gcp-managed-lustre", "parallelstore"})

HOLDING_EFFECTS = ("NoSchedule", "NoExecute")  # taints that keep pods without the toleration off


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
    liquid_rack_kw: float | None  # kW a liquid-cooled rack position delivers and cools; None: the site has none
    it_kw: float
    facility_kw: float
    co2e_t_per_month: float
    pools: tuple[SitePool, ...]
    racks: tuple[Mapping[str, Any], ...]
    fabrics: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class NvlinkGroup:
    """Nodes of a rack-scale type (the catalog sells it in a multi-node NVLink domain: GB200/GB300 NVL72) that one
    resource launches, with what its placement asks of the domain, read by its cloud's reader."""

    fleet: Fleet
    domain: NvlinkDomain
    size_key: str  # the property that sizes the resource, as a finding names it (targetSize, sku.capacity, maxSize)
    one_domain: bool = False  # the resource must hold exactly one domain (an Azure scale set is one rack)
    wants: str | None = None  # the domain topology its cloud needs the placement to ask for ("1x72"); None: none
    asks: str | None = None  # what its placement asks; None: nothing (UNKNOWN: a policy the pack cannot read)
    fix_topology: str = ""  # how the cloud's placement asks for the domain, for the finding
    noun: str = ""  # what a finding calls the resource; "": its kind ("instance group manager")

    @property
    def what(self) -> str:
        return self.noun or self.fleet.res.kind

    @property
    def gpus_per_domain(self) -> int:
        return self.domain.nodes * (self.fleet.spec.accelerator_count if self.fleet.spec else 0)


@dataclass(frozen=True)
class DeclaredDomain:
    """One multi-node NVLink domain as the AiCluster component declares it (`nvlink_domains`): what the raw resources
    cannot tell, i.e. which scheduler unit keeps a job inside it and how IMEX runs on it. A key the declaration
    leaves out is None with `says_*` False (an older program: nothing to judge); null is None with `says_*` True."""

    res: Res
    id: str
    pool: str
    instance_type: str | None
    provider: str | None
    nodes: int | None
    block: str | None
    imex: str | None
    says_block: bool
    says_imex: bool


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


def _tag(tags: Any, key: str) -> str | None:
    """A tag's value from a tags map, or from an Auto Scaling group's list of {key, value}."""
    if isinstance(tags, Mapping):
        return text(get(tags, key))
    if isinstance(tags, Sequence) and not isinstance(tags, str):
        for t in items(tags):
            if isinstance(t, Mapping) and get(t, "key") == key:
                return text(get(t, "value"))
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

    @property
    def holding(self) -> list[Taint]:
        """Its taints that keep pods without the toleration off its nodes (NoSchedule, NoExecute)."""
        return [t for t in self.taints if t.effect in HOLDING_EFFECTS]


@dataclass(frozen=True)
class Exposure:
    """A node address open to the internet, as its cloud declares it (a public IP on a launch template's network
    interface, a scale set's publicIPAddressConfiguration, a GCP accessConfig, a TPU's external IPs): what a finding
    says of it, and the fix in that cloud's terms. Each cloud words its own (findings keep their exact text)."""

    what: str  # "instance x gets a public IP (associatePublicIpAddress = true)"
    fix: str  # "set it false and reach the node through SSM or a bastion"


PortRange = tuple[float, float]  # first and last port, inclusive
INTERNET = frozenset({"0.0.0.0/0", "::/0"})  # the source ranges that are the whole internet


@dataclass(frozen=True)
class Ingress:
    """One inbound allow rule as its cloud evaluates it: a security group's ingress entry, an NSG rule, a firewall's
    allows entry. Its reader applied the cloud's reading: which sources are the internet (Azure's `*`/`Internet`
    tags), what no ports means (GCP: all), and which ports an earlier Deny already closes (Azure's priorities)."""

    where: str  # the finding's subject: "security group x ingress[1]", "firewall x allows[0]"
    open_to: tuple[str, ...]  # its internet sources, as written ("0.0.0.0/0", "::/0", "Internet", "*")
    ports: tuple[PortRange, ...] | None  # the ports it opens; None: all
    shown: str  # how the finding names the rule: "protocol tcp, ports 22"
    closed: tuple[PortRange, ...] = ()  # ports an earlier Deny closes to the same sources first

    def admits(self, port: int) -> bool:
        """Whether the internet reaches `port` through this rule."""
        opened = self.ports is None or any(lo <= port <= hi for lo, hi in self.ports)
        return opened and not any(lo <= port <= hi for lo, hi in self.closed)


@dataclass(frozen=True)
class TagSet:
    """The tag keys a taggable resource carries (its own and those its provider adds to every resource), as the
    rule for required tags reads them. `spell`: how the cloud writes a tag as a key (GCP labels), None: as is."""

    res: Res
    keys: frozenset[str]
    noun: str  # what a finding calls them: "tags", "tags that propagate at launch", "labels"
    spell: Callable[[str], str] | None = None

    def missing(self, required: Sequence[str]) -> list[str]:
        """The required tags it lacks, as a finding names them (a label by its key, and the tag it stands for)."""
        if self.spell is None:
            return [t for t in required if t not in self.keys]
        wanted = {self.spell(t): t for t in required}  # tags one label spells are one label
        return [k if k == t else f"{k} (tag {t})" for k, t in wanted.items() if k not in self.keys]
