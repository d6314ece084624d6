"""The plan: every derived number the components, playbooks and reports need, computed once.

Pure data (frozen pydantic models), JSON-able with `ClusterPlan.model_dump(mode="json")`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from aicluster.catalog import CpuTopology
from aicluster.catalog.pricing import Price
from aicluster.sizing.models import WorkloadEstimate
from aicluster.spec import Access, Alerts, Budgets, Compliance, Market, Pricing

from .fabric import PlannedFabric
from .racks import PlannedRack


class _Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


SubnetRole = Literal["compute", "public", "lustre", "netapp", "gvnic", "gpu", "rdma", "services", "gateway"]


class Subnet(_Plan):
    zone: str | None  # None: a regional subnet (Azure and GCP subnets span the region's zones)
    cidr: str
    # compute: the nodes' (first) NIC; public: AWS NAT; lustre/netapp: Azure's dedicated subnets;
    # gvnic: GCP's second gVNIC (A3 Ultra, A4); gpu: a GCP GPU NIC's VPC (TCPX/TCPXO); rdma: one of the
    # RoCE VPC's subnets; services: the range GCP's private services access allocates file systems from;
    # gateway: Azure's GatewaySubnet, where the VPN gateway's instances live
    role: SubnetRole
    index: int = 0  # which GPU NIC (gpu, rdma)
    addresses_needed: int
    addresses_available: int
    # an AWS Local Zone's compute subnet: the region zone whose NAT gateway its traffic leaves through (Local Zones
    # take no NAT gateway of their own); None: its own zone's
    nat_zone: str | None = None


class GcpVpc(_Plan):
    """An extra GCP VPC for GPU NICs: one per TCPX/TCPXO GPU NIC, a second gVNIC VPC, or the RoCE VPC."""

    name: str  # suffix of the VPC name, e.g. "gpu-3", "gvnic-1", "rdma"
    role: Literal["gpu", "gvnic", "rdma"]
    mtu: int
    subnets: tuple[int, ...]  # indexes of this role's subnets (the RoCE VPC has one per RDMA NIC)
    # RoCE VPCs are created with the zonal network profile "<zone>-vpc-roce" and accept no firewall rules
    network_profile_zone: str | None = None
    firewall_internal: bool = True
    # the profile's suffix: "vpc-roce-metal" for bare-metal A4X Max, whose profile makes the VPC's one IPv6 subnet
    # itself (default-subnet-1-<network>): the plan then gives it no subnets and every MRDMA NIC shares that one
    network_profile: Literal["vpc-roce", "vpc-roce-metal"] = "vpc-roce"


class PlannedNetwork(_Plan):
    key: str  # "aws-us-east-1": one cloud network per provider and region
    provider: str
    region: str
    cidr: str
    subnets: tuple[Subnet, ...]
    nat_gateways: int
    nat_usd_per_month: float | None  # the gateways; None: not priced
    ipv4_usd_per_month: float | None  # their public IPv4 addresses; None: not priced
    # NAT gateways and their public IPv4 addresses (traffic not modelled); None: neither is priced
    cost_usd_per_month: float | None
    unpriced: tuple[str, ...] = ()  # what is left out of cost_usd_per_month for want of a price
    # Azure: the existing resource group the stack names for this region; None: the cluster creates one
    resource_group: str | None = None

    # GCP: the MTU pinned on the host VPC, and the extra VPCs GPU NICs need
    mtu: int | None = None
    vpcs: tuple[GcpVpc, ...] = ()

    def subnet(self, zone: str | None, role: str = "compute") -> Subnet:
        return next(s for s in self.subnets if s.zone == zone and s.role == role)

    def role(self, role: str, index: int = 0) -> Subnet | None:
        """The network's subnet of `role` (Azure's and GCP's regional compute subnets, dedicated ones)."""
        return next((s for s in self.subnets if s.role == role and s.index == index), None)


class Nic(_Plan):
    """One network interface of an AWS launch template."""

    network_card_index: int
    device_index: int
    interface_type: Literal["interface", "efa", "efa-only"]
    # which of the cluster's security groups the interface carries
    security_groups: tuple[Literal["efa", "node"], ...]


class AwsGroup(_Plan):
    """One Auto Scaling group of an UltraServer pool: one UltraServer (an NVLink domain), bought as its own Capacity
    Block, launched from its own launch template that targets that block."""

    name: str  # the NVLink domain's name, <pool>-nvl<k>
    index: int
    nodes: int
    first_node: int  # pool-wide index of its first node
    capacity_reservation_id: str  # the UltraServer's Capacity Block (cr-...)
    ultraserver_type: str | None  # e.g. u-p6e-gb200x72; None: the catalog names none


class AwsPoolDetails(_Plan):
    nics: tuple[Nic, ...]
    efa_devices: int  # EFA interfaces per node (0: no EFA)
    placement_group: Literal["create", "existing", "none"]
    placement_group_name: str | None
    placement_group_reason: str
    capacity_reservation_id: str | None
    capacity_reservation_preference: Literal["open", "none"] | None
    market_type: Literal["spot", "capacity-block"] | None
    image: str
    image_pinned: bool  # False: a `resolve:ssm:` parameter without a version resolves anew at every launch
    root_volume_gib: int
    imds_hop_limit: int
    capacity_rebalance: bool  # spot: replace instances at risk of interruption before they are reclaimed
    # an UltraServer pool (p6e-gb200): one group per UltraServer, each targeting its own Capacity Block; empty: one
    # Auto Scaling group for the whole pool
    groups: tuple[AwsGroup, ...] = ()


class ScaleSet(_Plan):
    """One Azure VM scale set: one placement group, so one InfiniBand domain."""

    name: str  # resource name suffix, e.g. "h100-ib0"
    index: int
    nodes: int
    first_node: int  # pool-wide index of its first node: nodes first_node .. first_node + nodes - 1
    computer_name_prefix: str  # hostnames are this plus the VM's instance id


class AzurePoolDetails(_Plan):
    scale_sets: tuple[ScaleSet, ...]
    max_vms_per_scale_set: int  # VMs one placement group holds (100 unless raised by Azure support)
    infiniband: bool
    # ND GB200/GB300 v6: InfiniBand reaches across the pool's scale sets (one per NVL72 rack); False: each scale set
    # is its own InfiniBand domain (ND v4/v5)
    infiniband_across_scale_sets: bool = False
    single_placement_group: bool
    platform_fault_domain_count: int
    overprovision: bool
    orchestration_mode: Literal["Uniform"]
    accelerated_networking: bool
    image: str  # "publisher:offer:sku:version"
    image_pinned: bool  # False: version "latest" resolves anew at every scale-out
    root_volume_gib: int
    os_disk_type: str  # managed disk SKU, e.g. Premium_LRS (encrypted at rest by the platform)
    priority: Literal["Regular", "Spot"]
    eviction_policy: Literal["Delete", "Deallocate"] | None
    max_price: float | None  # spot: -1 = pay up to the on-demand price, never evicted for price
    resource_group: str | None  # existing resource group, None: the cluster's own


class GcpNic(_Plan):
    """One NIC of a GCP instance template, in declaration order (nic0 first)."""

    index: int
    subnet_role: Literal["compute", "gvnic", "gpu", "rdma"]
    subnet_index: int
    vpc: str  # "" for the host VPC, else GcpVpc.name
    nic_type: Literal["GVNIC", "IDPF", "MRDMA"]  # IDPF: a bare-metal instance's host NICs (A4X Max)
    stack_type: Literal["IPV4_ONLY", "IPV6_ONLY"] | None = None  # None: GCP's default (IPv4)


class PlacementGroup(_Plan):
    """VMs of a GCP pool that share one compact placement policy (and one MIG and instance template)."""

    name: str  # e.g. "h100-p0"
    index: int
    nodes: int
    first_node: int
    hostname_prefix: str  # the MIG's base instance name
    max_distance: int | None  # the compact policy's max distance; None: no max distance (or no policy)
    # the compact policy's gpuTopology for a rack-scale type ("1x72": the 18 VMs of one NVL72 sub-block); None: none
    gpu_topology: str | None = None


class GcpPoolDetails(_Plan):
    nics: tuple[GcpNic, ...]
    groups: tuple[PlacementGroup, ...]
    placement: Literal["compact", "reservation", "none"]
    placement_reason: str
    max_vms_per_policy: int
    reservation_affinity: Literal["ANY_RESERVATION", "SPECIFIC_RESERVATION", "NO_RESERVATION"]
    reservation: str | None
    # RESERVATION_BOUND: a type sold only from reservations (A4X, A4X Max), whose MIGs GCP accepts with no other model
    provisioning_model: Literal["STANDARD", "SPOT", "FLEX_START", "RESERVATION_BOUND"]
    max_run_duration_s: int | None
    on_host_maintenance: Literal["TERMINATE", "MIGRATE"]
    image: str
    image_pinned: bool  # False: an image family resolves to its newest image at every VM creation
    boot_disk_type: str  # e.g. pd-balanced, hyperdisk-balanced
    root_volume_gib: int
    shielded_vm: bool
    os_login: bool


class TpuSlice(_Plan):
    name: str  # TPU node id, e.g. "v5p-s0"
    index: int
    hosts: int
    first_node: int


class TpuDetails(_Plan):
    generation: str  # catalog TPU type, e.g. "v5p"
    accelerator_type: str  # e.g. "v5p-256"
    chips_per_slice: int
    hosts_per_slice: int
    chips_per_host: int
    slices: tuple[TpuSlice, ...]
    runtime_version: str
    api: Literal["queued-resource", "tpu-vm"]
    api_reason: str
    spot: bool
    reserved: bool
    # what a GKE TPU node pool takes (catalog tpu_types); None where the catalog has no documented topology for
    # this slice size (refused when the scheduler is kubernetes; the TPU API takes only accelerator_type)
    gke_machine_type: str | None = None  # e.g. "ct5p-hightpu-4t"
    topology: str | None = None  # e.g. "4x4x8"


class OnpremHost(_Plan):
    """An owned node as the stack lists it. The BMC credential stays a Pulumi secret: only its name is here."""

    name: str
    address: str
    bmc: str | None = None
    bmc_username: str | None = None
    bmc_secret: str | None = None  # the name of the Pulumi secret, never its value
    rack: str | None = None
    u: int | None = None


class OnpremPoolDetails(_Plan):
    site: str
    hosts: tuple[OnpremHost, ...]  # empty: the stack gives only a count (nodes are named <pool>-NNN)
    fabric: str  # the PlannedFabric (of the site) that joins the pool's nodes
    hardware_basis: str | None  # how the node-hour rate was derived; None: the site gives no hardware cost
    usd_per_kwh: float
    # a rack-scale pool: the rack each NVLink domain is (the hosts' own rack name, else <pool>-rNN), domain by domain
    domain_racks: tuple[str, ...] = ()


class NvlinkSlice(_Plan):
    """One NVLink domain of a pool, by node index: what the pool's provider places as one unit."""

    name: str  # <pool>-nvl<k>: Slurm's block, the IMEX domain and the Kubernetes ComputeDomain take this name
    index: int
    first_node: int
    nodes: int
    whole: bool  # False: a partial domain the vendor sells as such (AWS u-p6e-gb200x36: 9 of an UltraServer's 18)


class PoolNvlink(_Plan):
    """A pool of a rack-scale type (GB200/GB300 NVL72): its nodes in whole multi-node NVLink domains."""

    unit: Literal["ultraserver", "subblock", "rack"]  # what the vendor sells a domain as
    nodes_per_domain: int  # a whole domain's nodes (18)
    gpus_per_domain: int  # a whole domain's GPUs (72)
    domains: tuple[NvlinkSlice, ...]
    rack_kw: float | None = None  # the rack's maximum draw (on-prem racks); None: the provider's rack
    cooling: Literal["liquid", "air"] | None = None
    # domains per DGX SuperPOD scalable unit (GB200/GB300: 8 racks), the block an owned fabric is designed in; None:
    # none on record (cloud types: the provider builds the fabric)
    scalable_unit: int | None = None

    @property
    def scalable_units(self) -> float | None:
        """The pool's whole domains in scalable units (1.25: one SU and a quarter); None without an SU."""
        if self.scalable_unit is None:
            return None
        return sum(1 for d in self.domains if d.whole) / self.scalable_unit


class PlannedNvlinkDomain(_Plan):
    """One multi-node NVLink domain of the cluster: the nodes (instances, VMs or compute trays) that share one NVLink
    fabric, e.g. one GB200 NVL72 rack of 18 nodes x 4 GPUs. Planned once; Slurm's block topology, IMEX, Kubernetes
    ComputeDomains, placement, sizing and the policies read it from the plan. An 8-GPU server's NVLink ends at the
    node: such pools have none."""

    id: str  # <pool>-nvl<k>, unique in the plan
    pool: str
    provider: str
    unit: Literal["ultraserver", "subblock", "rack"]
    nodes: tuple[str, ...]  # the scheduler's and the inventory's node names
    gpus: int
    whole: bool  # False: a partial domain the vendor sells (say so wherever it is used)
    rack: str | None = None  # the owned rack it is (on-prem); None: the provider places it


def node_name(pool: str, index: int, nodes: int) -> str:
    """The name of a pool's node `index` of `nodes`: `<pool>-<index>`, zero-padded to at least 3 digits."""
    width = max(3, len(str(nodes - 1)))
    return f"{pool}-{index:0{width}d}"


def hostlist(names: Iterable[str]) -> str:
    """Slurm hostlist expression for node names: `h100-000 .. h100-015` -> `h100-[000-015]`. Names group by
    prefix and digit count (zero padding), groups keep the order of their first name, runs are merged."""
    groups: dict[tuple[str, int], set[int]] = {}
    plain: dict[str, None] = {}
    for name in names:
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if m is None:
            plain[name] = None
            continue
        groups.setdefault((m.group(1), len(m.group(2))), set()).add(int(m.group(2)))
    parts = list(plain)
    for (prefix, width), numbers in groups.items():
        ranges: list[str] = []
        ordered = sorted(numbers)
        start = prev = ordered[0]
        for n in [*ordered[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        single = len(ordered) == 1
        parts.append(f"{prefix}{ranges[0]}" if single else f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)


class PlannedRollout(_Plan):
    """The pool's stack `rollout`, resolved: how many nodes a change that recreates or removes them may take at once
    (`max_unavailable` of the pool's nodes), drained first, and the weekly UTC window (strategy `window`)."""

    strategy: Literal["drain-first", "window"] = "drain-first"
    max_unavailable: Annotated[int, Field(ge=1)] = 1
    window_days: tuple[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"], ...] = ()
    window_start: Annotated[str | None, Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")] = None  # HH:MM, UTC
    window_hours: Annotated[int | None, Field(ge=1, le=24)] = None


class PlannedPool(_Plan):
    name: str
    provider: str
    region: str
    zone: str | None
    network: str  # PlannedNetwork.key
    instance_type: str
    family: str
    accelerator: str | None  # catalog id
    accelerator_name: str | None
    accelerator_kind: Literal["gpu", "trainium", "tpu"] | None  # None: no accelerator
    accelerators_per_node: int
    nodes: int
    gpus: int  # accelerators in the pool (GPUs or Trainium/TPU chips)
    vcpus_per_node: int
    cpu_topology: CpuTopology  # the catalog's guest CPU layout; a figure no source publishes is null
    memory_gib_per_node: float
    fabric: str
    network_bandwidth_gbps: float
    market: Market | Literal["owned"]  # owned: on-prem hardware
    price: Price | None  # per node-hour (chip-hour of a TPU pool), instance only; None: no price
    instances_usd_per_month: float | None  # None: not priced (named in `unpriced`), never 0
    volumes_usd_per_month: float | None  # root volumes; None: not priced (named in `unpriced`)
    cost_usd_per_hour: float | None  # the priced parts; None: nothing of the pool is priced
    cost_usd_per_month: float | None
    unpriced: tuple[str, ...] = ()  # what is left out of cost_usd_per_month for want of a price
    node_power_kw: float
    power_basis: str
    power_kw_it: float
    pue: float
    power_kw_facility: float
    carbon_g_per_kwh: float
    co2e_t_per_month: float
    nodes_per_rack: int | None
    racks: int | None
    bf16_pflops: float
    tags: dict[str, str]
    aws: AwsPoolDetails | None = None
    azure: AzurePoolDetails | None = None
    gcp: GcpPoolDetails | None = None
    tpu: TpuDetails | None = None
    onprem: OnpremPoolDetails | None = None
    # owned nodes: the energy they draw at the site's price (IT kW x PUE x $/kWh); a cloud's price includes it
    energy_usd_per_month: float | None = None
    # a cloud pool of a stack with a site: burst capacity that Slurm powers up and down (its group starts empty and
    # the resume/suspend programs resize it); its cost is what it costs while every node runs
    burst: bool = False
    cpu_arch: Literal["x86_64", "arm64"] = "x86_64"  # the hosts' architecture (Grace: arm64): images and packages
    nvlink: PoolNvlink | None = None  # rack-scale types: the pool's multi-node NVLink domains
    rollout: PlannedRollout = PlannedRollout()

    def ib_domains(self) -> list[tuple[str, range]]:
        """(domain, pool node indexes) for each set of nodes that share one InfiniBand fabric: each scale set, or the
        whole pool where the type's InfiniBand reaches across them (ND GB200/GB300 v6)."""
        if self.azure is None:
            return []
        if self.azure.infiniband_across_scale_sets:
            return [(self.name, range(self.nodes))]
        return self._scale_sets()

    def _scale_sets(self) -> list[tuple[str, range]]:
        assert self.azure is not None
        return [(s.name, range(s.first_node, s.first_node + s.nodes)) for s in self.azure.scale_sets]

    def node_names(self) -> list[str]:
        """The pool's nodes as the scheduler and the inventory name them: `<pool>-<index>`, the index zero-padded
        to at least 3 digits so names sort in node order (h100-000 .. h100-383)."""
        if self.onprem is not None and self.onprem.hosts:
            return [h.name for h in self.onprem.hosts]
        return [node_name(self.name, i, self.nodes) for i in range(self.nodes)]

    def fabric_domains(self) -> list[tuple[str, range]]:
        """(domain, pool node indexes) for each set of nodes the plan keeps close together: an Azure scale
        set (one InfiniBand fabric), a GCP placement group or a TPU slice (one ICI domain), an AWS UltraServer
        (one Capacity Block). Empty: one domain, the pool (an AWS cluster placement group)."""
        if self.gcp is not None:
            return [(g.name, range(g.first_node, g.first_node + g.nodes)) for g in self.gcp.groups]
        if self.aws is not None and self.aws.groups:
            return [(g.name, range(g.first_node, g.first_node + g.nodes)) for g in self.aws.groups]
        if self.tpu is not None:
            return [(t.name, range(t.first_node, t.first_node + t.hosts)) for t in self.tpu.slices]
        return self._scale_sets() if self.azure is not None else []


class PlannedFilesystem(_Plan):
    name: str
    kind: Literal["lustre", "nfs"]
    provider: str
    region: str
    zone: str | None  # None: regional (an Azure region without zones)
    network: str
    service: str
    deployment: str
    mount: str
    requested_tib: float
    capacity_gib: int
    capacity_tib: float
    rounding: str | None  # human note when the request was rounded
    throughput_mb_s_per_tib: float
    throughput_mb_s: float
    price: Price | None  # None: the catalog has no list price and the stack gave none (not in the cost)
    cost_usd_per_month: float | None  # None: not priced, never 0
    cost_usd_per_hour: float | None
    tags: dict[str, str]
    client_zones: tuple[str, ...] = ()  # zones whose nodes mount it (an EFS mount target in each)


class PlannedController(_Plan):
    kind: Literal["slurm"]
    root_volume_gib: int
    root_disk_service: str  # the disk service of its root volume, e.g. ebs-gp3, pd-balanced
    imds_hop_limit: int | None  # AWS only
    provider: str
    region: str
    zone: str | None
    network: str
    instance_type: str
    image: str
    price: Price | None  # None: the catalog has no price and the stack gave none (not in the cost)
    instance_usd_per_month: float | None
    volume_usd_per_month: float | None  # the root volume
    cost_usd_per_hour: float | None  # instance + priced root volume; None: neither is priced
    cost_usd_per_month: float | None
    unpriced: tuple[str, ...] = ()  # what is left out of the cost for want of a price
    node_power_kw: float
    power_kw_facility: float
    co2e_t_per_month: float
    # on-prem: the site host the stack names, and its address (an existing host: its cost is the site's)
    host: str | None = None
    address: str | None = None


class Taint(_Plan):
    key: str
    value: str
    effect: Literal["NoSchedule", "NoExecute"]


class PlannedNodeGroup(_Plan):
    """One node group (EKS) / node pool (GKE) / agent pool (AKS): one fabric domain of a pool (an AWS pool; a
    GCP placement group or TPU slice; an Azure scale set, one InfiniBand network), wired as the Slurm path wires it."""

    name: str  # the cloud's name for it, within its length and character rules
    pool: str  # PlannedPool.name
    domain: str | None  # the pool's fabric domain (PlannedPool.fabric_domains()), None: the whole pool
    # which of the pool's fabric domains (GCP placement group, TPU slice, Azure scale set; 0 on AWS); a domain
    # larger than the service's node group limit is split into several groups of the same zone and placement
    index: int
    nodes: int
    first_node: int
    zone: str | None
    accelerator_kind: Literal["gpu", "tpu"]
    labels: dict[str, str]  # labels aicluster sets on its nodes (the Kueue flavor selects on them)
    taints: tuple[Taint, ...]
    # what one node offers pods, as a pod requests it: accelerators and fabric devices
    resources: dict[str, str]
    topology: str  # the KueueTopology its flavor names
    # a rack-scale pool's group is one multi-node NVLink domain (PlannedNvlinkDomain.id); None: an 8-GPU server pool
    nvlink_domain: str | None = None
    cpu_arch: Literal["x86_64", "arm64"] = "x86_64"  # the nodes' architecture: the node image they boot
    # taints the service itself puts on the nodes (GKE's on Arm nodes): aicluster does not set them, pods tolerate them
    service_taints: tuple[Taint, ...] = ()
    # nodes an update (a new image, template or version) takes at once: the pool's rollout.max_unavailable, within
    # the group's size and the service's own limit (EKS: 100)
    max_unavailable: int = 1

    def all_taints(self) -> tuple[Taint, ...]:
        """Every taint the group's nodes carry: what a pod meant for them tolerates."""
        return (*self.taints, *self.service_taints)


class KueueTopology(_Plan):
    name: str
    levels: tuple[str, ...]  # node labels from the widest network domain to the host


class PlannedAddon(_Plan):
    id: str  # catalog add-on id
    name: str
    kind: Literal["helm", "manifest"]
    chart: str
    repository: str
    version: str
    namespace: str
    source: str
    why: str  # what it does for this cluster


class RepairOverride(_Plan):
    """One XID's repair, as the service's managed node repair is told it (EKS nodeRepairConfigOverrides)."""

    xid: int
    condition: str  # the condition the service's agent sets (EKS: AcceleratedHardwareReady)
    reason: str  # the reason it gives this XID (EKS: NvidiaXID79Error)
    action: Literal["Replace", "Reboot", "NoAction"]
    wait_minutes: int


class PlannedNodeHealth(_Plan):
    """How the GPU nodes are watched and repaired: Node Problem Detector with the catalog's XID table (a permanent
    condition for the XIDs that drain a Slurm node, events for the others; a GPU count check per pool), and the
    service's own agent and managed repair."""

    xid_condition: str  # the NPD condition a draining XID sets (e.g. GpuXidCritical)
    count_condition: str  # the NPD condition a GPU count below the pool's sets
    drain_xids: tuple[int, ...]  # catalog XIDs that drain (health.yaml; Xid.drains)
    event_xids: tuple[int, ...]  # the other catalog XIDs: an event each
    gpus_per_pool: dict[str, int]  # GPU pool -> GPUs a node must show
    auto_repair: Literal["node-group", "node-pool", "always"]
    repair_triggers: str
    agent_addon: str | None = None  # the service's health agent aicluster turns on (EKS add-on)
    service_condition: str | None = None  # the condition the service itself sets on a GPU fault
    service_gpu_checks: bool = True  # False: the service's own GPU checks do not run on these pools (AKS driver none)
    repair_overrides: tuple[RepairOverride, ...] = ()
    # the quarantine controller's circuit breaker: the most of the GPU nodes tainted and cordoned at once (the
    # catalog's max_share_in_repair, aicluster-repair's); None: the catalog has no repair limits, no controller
    quarantine_max_share: float | None = None
    quarantine_taint: str | None = None  # the taint it puts on (e.g. aicluster.io/gpu-unhealthy), NoSchedule
    sources: tuple[str, ...] = ()


class PlannedMaintenanceWindow(_Plan):
    """The cluster's recurring maintenance window in the service's own terms (GKE's recurring window, AKS's planned
    maintenance): the one weekly UTC window the pools with `rollout.strategy: window` share. It times the service's
    automatic upgrades only; a change `pulumi up` makes reaches the nodes when you run it."""

    days: tuple[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"], ...]
    start: Annotated[str, Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")]  # HH:MM, UTC
    hours: Annotated[int, Field(ge=1, le=24)]
    pools: tuple[str, ...]  # the pools that asked for it
    source: str  # the catalog source of how the service holds it


class PlannedKubernetes(_Plan):
    """A managed control plane in the cloud of the stack's pools, the pools as node groups, the add-ons and Kueue."""

    service: Literal["eks", "gke", "aks"]
    service_name: str
    provider: str
    region: str
    network: str  # PlannedNetwork.key
    cluster_name: str
    version: str
    support: Literal["standard", "extended"]
    endpoint: Literal["private", "public"]
    authorized_networks: tuple[str, ...]
    secrets_encryption: Literal["kms"]  # EKS: a KMS key; GKE: Cloud KMS application-layer; AKS: Key Vault KMS
    audit_logs: bool  # the control plane's audit log goes to the cloud's log service
    namespace: str  # the LocalQueue's and the acceptance JobSet's
    pod_cidr: str | None  # overlay pod range (GKE, AKS); None: pods take VPC addresses (EKS VPC CNI)
    service_cidr: str
    node_image: str  # what the GPU node groups boot, in the service's terms (catalog)
    system_instance_type: str
    system_nodes: int  # spread evenly over system_zones
    system_zones: tuple[str, ...]
    system_root_gib: int
    system_root_disk_service: str  # catalog service of their root volumes (ebs-gp3, pd-balanced, ...)
    node_groups: tuple[PlannedNodeGroup, ...]
    topologies: tuple[KueueTopology, ...]
    addons: tuple[PlannedAddon, ...]
    cluster_queue: str
    local_queue: str
    control_plane_usd_per_month: float
    system_price: Price | None
    system_usd_per_month: float | None  # None: the system type has no price (named in `unpriced`)
    system_volumes_usd_per_month: float | None  # their root volumes; None: not priced
    cost_usd_per_month: float | None  # control plane + priced system nodes
    system_power_kw_it: float
    system_power_kw_facility: float
    system_co2e_t_per_month: float
    unpriced: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    node_image_arm64: str | None = None  # what Arm (Grace) GPU node groups boot; None: the cluster has none
    # the Kueue topology level (node label) whose value names one NVLink domain; None: no rack-scale node groups
    nvlink_level: str | None = None
    # GPU node health and repair; None: no GPU node groups
    health: PlannedNodeHealth | None = None
    # the cloud-side window of the pools with rollout strategy `window`; None: none asked, or the service has none
    maintenance_window: PlannedMaintenanceWindow | None = None

    def node_image_of(self, group: PlannedNodeGroup) -> str:
        """The image the group's nodes boot: the service's Arm image on Grace nodes (the planner refuses an Arm group
        where the catalog has none)."""
        if group.cpu_arch == "arm64":
            assert self.node_image_arm64 is not None, f"node group {group.name} is Arm and the plan has no Arm image"
            return self.node_image_arm64
        return self.node_image


class PlannedMonitoring(_Plan):
    """Where the cluster's Prometheus runs. `self-hosted`: Debian's Prometheus on the Slurm controller; on a
    Kubernetes stack, the kube-prometheus-stack add-on in the cluster (Prometheus by its operator, Alertmanager,
    Grafana), given the alert rules, routing and dashboards `aicluster monitoring` writes. `managed`: the service of
    the cloud the controller or control plane runs in, reached by `collector`."""

    prometheus: Literal["self-hosted", "managed"]
    # the exporters every node runs and how often they are scraped (catalog monitoring.exporters)
    node_exporter_port: int
    dcgm_exporter_port: int
    scrape_interval_s: int
    # how the Slurm controller gets its Slurm exporter (none: not installed, so neither scraped nor alerted on)
    slurm_exporter: Literal["none", "binary", "url", "container"] = "none"
    provider: str | None = None  # managed: the cloud of the controller or control plane
    region: str | None = None
    service: str | None = None  # managed: catalog id, e.g. amazon-managed-prometheus
    service_name: str | None = None
    collector: Literal["remote-write", "amp-scraper", "gke-managed-collection", "aks-metrics-addon"] | None = None
    write_permission: str | None = None  # remote-write: the permission the writing identity needs (aps:RemoteWrite)
    write_auth: Literal["sigv4"] | None = None  # remote-write: how Prometheus signs its requests
    source: str | None = None  # the catalog source of how the collector works
    # managed: an alert's severity label -> the number the service's rules take (Azure), from the catalog
    rule_severities: dict[str, int] = {}
    # the rule groups the stack alerts on (rules/<group>.yml): gpu where it has GPU pools, fabric always, filesystem
    # where it has shared file systems or is Kubernetes, slurm where the Slurm exporter is installed
    alert_groups: tuple[Literal["gpu", "fabric", "filesystem", "slurm"], ...] = ()
    # where the alerts go (monitoring.alerts, checked against the Prometheus that sends them); None: nowhere
    alerts: Alerts | None = None
    alertmanager_port: int | None = None  # Slurm, self-hosted, with alerts: the controller's Alertmanager (catalog)
    # managed: what the service bills for the samples the stack's nodes send it (catalog series per node x nodes x
    # scrapes a month, at the service's ingestion tiers); None: self-hosted, or (usd) no verified price there
    series: int | None = None
    ingest_interval_s: int | None = None  # how often the managed collector scrapes (AMP's scraper: at least 30 s)
    samples_per_month: int | None = None
    ingestion_usd_per_month: float | None = None
    ingestion_source: str | None = None


class PlannedSite(_Plan):
    """An owned data centre: what its pools draw and cost, against what the site can deliver."""

    name: str
    cidrs: tuple[str, ...]
    vpn_endpoint: str
    bgp_asn: int
    pue: float
    usd_per_kwh: float
    rack_kw: float
    max_kw: float
    carbon_g_per_kwh: float
    pools: tuple[str, ...]
    nodes: int
    gpus: int
    power_kw_it: float  # the pools' nodes at their maximum draw
    power_kw_facility: float  # x PUE
    hardware_usd_per_month: float | None  # None: the site gives no hardware cost
    energy_usd_per_month: float
    cost_usd_per_month: float  # the priced part
    co2e_t_per_month: float
    controller_host: str | None = None
    fabrics: tuple[PlannedFabric, ...] = ()
    racks: tuple[PlannedRack, ...] = ()
    # kW a liquid-cooled rack position delivers and cools (NVL72 racks need one each); None: the site has none
    liquid_rack_kw: float | None = None


class Totals(_Plan):
    nodes: int
    gpus: int  # accelerators: GPUs, Trainium and TPU chips
    cost_usd_per_hour: float  # the priced part; see `unpriced`
    cost_usd_per_month: float
    power_kw_it: float
    power_kw_facility: float
    co2e_t_per_month: float
    racks: int | None
    bf16_pflops: float
    storage_tib: float
    storage_throughput_gb_s: float
    # items (and parts of items) with no price: the costs above leave them out, so they are a lower bound
    unpriced: tuple[str, ...] = ()


class ClusterPlan(_Plan):
    name: str
    tags: dict[str, str]  # spec tags plus aicluster:cluster
    scheduler: Literal["slurm", "kubernetes"]
    pools: tuple[PlannedPool, ...]
    networks: tuple[PlannedNetwork, ...]
    filesystems: tuple[PlannedFilesystem, ...]
    controller: PlannedController | None
    totals: Totals
    budgets: Budgets
    compliance: Compliance
    pricing: Pricing  # negotiated rates, declared on the AiCluster component for the policy pack
    access: Access  # admin account and SSH public keys (Azure VMs need one at creation)
    # providers that get a cluster audit log (AWS: a multi-region CloudTrail), because a control
    # framework that requires audit logging is declared
    audit_logging: tuple[str, ...]
    hours_per_month: float
    warnings: tuple[str, ...]
    sites: tuple[PlannedSite, ...] = ()
    # IPsec site-to-site links: every cloud network to every site, and between clouds (plan/vpn.py)
    vpns: tuple[PlannedVpn, ...] = ()
    # scheduler kind kubernetes: the managed control plane (the controller is then None)
    kubernetes: PlannedKubernetes | None = None
    # the stack's workloads sized on their pools (aicluster/sizing), in stack order
    workloads: tuple[WorkloadEstimate, ...] = ()
    # every multi-node NVLink domain, pool by pool in stack order (rack-scale pools only; 8-GPU servers have none)
    nvlink_domains: tuple[PlannedNvlinkDomain, ...] = ()
    monitoring: PlannedMonitoring
    # resource types whose replace or delete loses data (the catalog's change rules): the components protect them
    stateful_types: tuple[str, ...] = ()

    def network(self, key: str) -> PlannedNetwork:
        return next(n for n in self.networks if n.key == key)

    def controller_host(self) -> str:
        """The scheduler controller's host name, as Slurm and the inventory name it."""
        if self.controller is not None and self.controller.host is not None:
            return self.controller.host
        return f"{self.name}-slurmctld"

    def ib_domain_max_vms(self) -> int:
        """The largest InfiniBand domain (VMs per Azure scale set) the stack plans: 100 unless raised."""
        return max([100, *(p.azure.max_vms_per_scale_set for p in self.pools if p.azure is not None)])

    def providers(self) -> list[str]:
        """The providers whose builders make the cluster: each cloud network's, and on-prem when there are sites."""
        return sorted({n.provider for n in self.networks} | ({"onprem"} if self.sites else set()))


# -- Cross-site networks: IPsec VPN links (planned by aicluster/plan/vpn.py) -------------------------------------
# Here rather than in plan/vpn.py because ClusterPlan carries them and plan/vpn.py imports this module.


class VpnSide(_Plan):
    """One end of a VPN link: a cloud network of the stack or a site (an owned data centre)."""

    kind: Literal["network", "site"]
    key: str  # PlannedNetwork.key, or the site's name
    provider: str  # aws, azure, gcp; "site" for a site
    region: str | None  # None: a site
    cidrs: tuple[str, ...]  # what this side announces over the link
    asn: int  # this side's BGP speaker (AWS virtual private gateway, GCP Cloud Router, Azure VPN gateway, site)
    # public endpoints this side offers the link: AWS the outside addresses of its VPN connections (2 each), GCP
    # the 2 HA VPN interfaces, Azure the 2 active-active gateway instances, a site its one VPN device
    endpoints: int
    public_ip: str | None = None  # a site's VPN endpoint; a cloud's addresses exist only after `up`
    learns: tuple[str, ...] = ()  # routes this side learns over the link: the other side's CIDRs


class VpnTunnel(_Plan):
    """One IPsec tunnel with its BGP session; `a_endpoint`/`b_endpoint` index each side's public endpoints."""

    index: int
    inside_cidr: str  # a /30 of 169.254.0.0/16, unique in the whole stack
    a_endpoint: int
    b_endpoint: int
    a_ip: str  # side a's BGP address: the /30's first host (AWS takes the first host of its tunnels)
    # side b's BGP address: the second host. Azure to a site: Azure's one local network gateway for the site holds
    # one BGP address, tunnel 0's; the site's device speaks BGP from it to both Azure instances
    b_ip: str
    key: int  # which pre-shared key of the link (tunnels of one Azure connection share its key)


class IkePhase(_Plan):
    """Algorithms one IKE phase allows: exactly one per role, as every cloud's guide recommends."""

    encryption: Literal["AES-256-CBC", "AES-256-GCM-16"]
    integrity: Literal["SHA2-256", "SHA2-384"] | None  # None: an AEAD cipher (GCM) carries its own integrity
    dh_group: Literal[20, 21, 24]  # phase 1: the DH group; phase 2: the PFS group
    lifetime_s: int


class VpnCharge(_Plan):
    item: str  # what is charged, e.g. "aws vpn-connection x2"
    provider: str
    region: str  # where it is billed (the charging side's region)
    service: str  # catalog service id
    quantity: int  # units billed per hour (connections, tunnels, gateways, addresses)
    usd_per_month: float | None  # None: the catalog has no price for this region (named in `unpriced`)
    source: str | None  # catalog source id of the price
    basis: str | None = None  # where the rate came from: the catalog, or pricing.overrides[i]


class PlannedVpn(_Plan):
    name: str  # "<a key>--<b key>", e.g. "aws-us-east-1--dc1"
    a: VpnSide  # always a cloud network
    b: VpnSide  # a site, or a cloud network of another provider
    tunnels: tuple[VpnTunnel, ...]
    ike_version: Literal[2]
    phase1: IkePhase
    phase2: IkePhase
    charges: tuple[VpnCharge, ...]
    cost_usd_per_month: float | None  # the priced charges; None: none is priced
    unpriced: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # catalog source ids of the ciphers, inside ranges and ASNs chosen

    def key_indexes(self) -> list[int]:
        """The link's pre-shared keys, by index."""
        return sorted({t.key for t in self.tunnels})


ClusterPlan.model_rebuild()  # ClusterPlan.vpns names PlannedVpn, defined after it
