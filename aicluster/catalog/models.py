"""Typed records of the catalog.

Every figure in the catalog carries a source. A record names its default source in ``source``;
a figure that comes from somewhere else names its own in ``field_sources`` (field name -> source id).
Sources are listed once, with a URL and the date they were read, in ``data/sources.yaml``.

This module imports nothing of the project (layering rule: spec and catalog are leaves).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Provider = Literal["aws", "azure", "gcp", "onprem"]

Fabric = Literal[
    "efa",  # AWS Elastic Fabric Adapter (SRD)
    "infiniband",  # Azure ND / on-prem Quantum IB
    "gpudirect-tcpx",  # GCP A3 High
    "gpudirect-tcpxo",  # GCP A3 Mega
    "gpudirect-rdma",  # GCP A3 Ultra / A4 (RoCE, MRDMA NICs)
    "ici",  # TPU inter-chip interconnect
    "ethernet",  # plain TCP, no GPU fabric
]


class _Record(BaseModel):
    # defer_build: a record's validator is built on its first validation, not at import. A catalog read from
    # the on-disk cache (cache.py) validates nothing, so a warm process never builds the ~45 validators.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Source(_Record):
    id: Annotated[str, Field(description="Short id other records cite (e.g. `aws-p5-docs`).")]
    title: Annotated[str, Field(description="What the source is.")]
    url: Annotated[str, Field(description="Where it can be read.")]
    retrieved: Annotated[dt.date, Field(description="When the figures were read from it.")]
    note: Annotated[str | None, Field(description="How a figure was derived from it.")] = None


class Sourced(_Record):
    source: Annotated[str, Field(description="Source id for every figure of the record.")]
    field_sources: Annotated[
        dict[str, str],
        Field(description="Per-figure source ids where a figure comes from elsewhere."),
    ] = {}

    def source_of(self, field: str) -> str:
        return self.field_sources.get(field, self.source)


class Accelerator(Sourced):
    id: Annotated[str, Field(description="Catalog id (e.g. `h100-sxm-80gb`).")]
    vendor: Literal["nvidia", "aws", "google"]
    name: Annotated[str, Field(description="Marketing name (e.g. `NVIDIA H100 SXM5 80GB`).")]
    kind: Literal["gpu", "trainium", "tpu"]
    memory_gb: Annotated[float, Field(gt=0, description="Device memory in GB (10^9 bytes).")]
    tdp_w: Annotated[float | None, Field(gt=0, description="Board power limit, W; null if unpublished.")]
    bf16_tflops: Annotated[float, Field(gt=0, description="Dense BF16 TFLOP/s (no sparsity).")]
    interconnect_gb_s: Annotated[
        float | None,
        Field(gt=0, description="Scale-up link bandwidth per device, GB/s (NVLink, NeuronLink, ICI)."),
    ] = None
    fp8_tflops: Annotated[
        float | None, Field(gt=0, description="Dense FP8 TFLOP/s (no sparsity); null where not recorded.")
    ] = None


class NetworkInterfaceLimits(_Record):
    """What the instance type allows on its network cards (AWS DescribeInstanceTypes NetworkInfo), and which cards a
    node's EFA interfaces go on."""

    network_cards: Annotated[int, Field(ge=1, description="MaximumNetworkCards.")]
    efa_interfaces: Annotated[int, Field(ge=0, description="EfaInfo.MaximumEfaInterfaces.")]
    max_interfaces: Annotated[
        int | None, Field(ge=1, description="MaximumNetworkInterfaces (all cards); null: no stored copy gives it.")
    ]
    efa_cards: Annotated[
        tuple[int, ...],
        Field(
            description="The cards that carry the node's EFA interfaces where the vendor configures fewer than every "
            "EFA-capable card (p6e-gb200: one per GPU's group of cards, `[1, 5, 9, 13]`); empty: every EFA-capable "
            "card, one interface each."
        ),
    ] = ()

    @property
    def primary_card_efa(self) -> bool:
        """Whether card 0 takes an EFA interface beside the primary ENA one: AWS's types with fewer EFA interfaces
        than cards (p6-b300, p6e-gb200: 16 of 17) have an ENA-only card 0 (ParallelCluster infers it the same way
        from DescribeInstanceTypes)."""
        return self.efa_interfaces >= self.network_cards

    def efa_layout(self) -> tuple[int, ...]:
        """The network cards that carry one EFA interface each, in card order."""
        if self.efa_cards:
            return self.efa_cards
        if self.efa_interfaces == 0:
            return ()
        first = 0 if self.primary_card_efa else 1
        return tuple(range(first, min(first + self.efa_interfaces, self.network_cards)))

    @model_validator(mode="after")
    def _efa_cards(self) -> NetworkInterfaceLimits:
        cards = list(self.efa_cards)
        lowest = 0 if self.primary_card_efa else 1
        if cards and (cards != sorted(set(cards)) or cards[0] < lowest or cards[-1] >= self.network_cards):
            raise ValueError(
                f"efa_cards {cards}: ascending card indexes from {lowest} to {self.network_cards - 1} (card 0 "
                "takes EFA only where every card does)"
            )
        if len(cards) > self.efa_interfaces:
            raise ValueError(f"efa_cards: {len(cards)} cards, more than the {self.efa_interfaces} EFA interfaces")
        return self


class GcpNicLayout(_Record):
    """How a GCP machine type's NICs differ from the VM layout (gVNIC host NICs, RoCE VPCs on `<zone>-vpc-roce`):
    bare-metal A4X Max has IDPF host NICs and its MRDMA NICs sit on an IPv6-only RoCE VPC of its own profile."""

    host_nic_type: Annotated[
        Literal["GVNIC", "IDPF"], Field(description="NIC type of nic0 and the second host NIC (`IDPF` on bare metal).")
    ] = "GVNIC"
    rdma_network_profile: Annotated[
        Literal["vpc-roce", "vpc-roce-metal"],
        Field(description="Suffix of the zonal network profile the RoCE VPC is made with (`<zone>-<suffix>`)."),
    ] = "vpc-roce"
    rdma_stack_type: Annotated[
        Literal["IPV4_ONLY", "IPV6_ONLY"], Field(description="IP stack of the MRDMA NICs (`IPV6_ONLY` on A4X Max).")
    ] = "IPV4_ONLY"


class Network(_Record):
    fabric: Fabric
    bandwidth_gbps: Annotated[float, Field(gt=0, description="Total GPU-to-GPU network bandwidth, Gb/s.")]
    ip_bandwidth_gbps: Annotated[
        float | None, Field(gt=0, description="Share of the total usable for IP traffic, Gb/s.")
    ] = None
    aws: NetworkInterfaceLimits | None = None
    gcp: Annotated[
        GcpNicLayout | None, Field(description="A GCP type whose NICs differ from the VM layout; null: the VM one.")
    ] = None
    gpu_nics: Annotated[int, Field(ge=0, description="NICs dedicated to GPU traffic (GCP extra VPCs, IB HCAs).")] = 0
    ports_per_cage: Annotated[
        int | None,
        Field(
            ge=1,
            description="Compute NIC ports per OSFP cage on an owned node (DGX H100/B200: `2`, twin-port cages; "
            "DGX B300 and NVL72 trays: `1`); null: 2 on 8-rail nodes, else 1.",
        ),
    ] = None
    infiniband_across_scale_sets: Annotated[
        bool,
        Field(
            description="Azure: the VM's InfiniBand reaches VMs of other scale sets (ND GB200/GB300 v6: 'to up to "
            "100,000 GPUs through InfiniBand'); false: only the VMs of its own scale set and placement group "
            "(ND v4/v5)."
        ),
    ] = False


class Offering(Sourced):
    """Where an instance type can be launched, and what it costs there."""

    region: str
    zones: Annotated[tuple[str, ...], Field(description="Zones offering it; empty = any zone of the region.")] = ()
    on_demand_usd_per_hour: Annotated[float | None, Field(gt=0)] = None
    spot_usd_per_hour: Annotated[float | None, Field(gt=0)] = None
    capacity_block_usd_per_hour: Annotated[float | None, Field(gt=0)] = None
    reserved_usd_per_hour: Annotated[
        float | None, Field(gt=0, description="Effective hourly rate of the cheapest 1-year commitment.")
    ] = None
    flex_start_usd_per_hour: Annotated[
        float | None, Field(gt=0, description="GCP Dynamic Workload Scheduler flex-start rate.")
    ] = None


class CpuTopology(_Record):
    """The CPU layout the guest OS sees (lscpu / `slurmd -C`): Slurm's Sockets, CoresPerSocket, ThreadsPerCore.

    Every figure is given or explicitly null: null means no source publishes it, and the Slurm node line then
    gives only `CPUs=` for the type rather than an invented layout."""

    sockets: Annotated[int | None, Field(ge=1, description="Sockets (packages) the guest sees; null: unpublished.")]
    cores_per_socket: Annotated[
        int | None, Field(ge=1, description="Physical cores per socket the guest sees; null: unpublished.")
    ]
    threads_per_core: Annotated[
        int | None, Field(ge=1, description="Hardware threads per core (2: SMT on, 1: off); null: unpublished.")
    ]

    @property
    def complete(self) -> bool:
        return None not in (self.sockets, self.cores_per_socket, self.threads_per_core)

    @model_validator(mode="after")
    def _layout(self) -> CpuTopology:
        if (self.sockets is None) != (self.cores_per_socket is None):
            raise ValueError("give sockets and cores_per_socket together (both null when unpublished)")
        if self.sockets is not None and self.threads_per_core is None:
            raise ValueError("a socket layout needs threads_per_core too")
        return self


CpuArch = Literal["x86_64", "arm64"]
CatalogMarket = Literal["on-demand", "spot", "capacity-block", "reserved", "flex-start"]


class NvlinkDomain(_Record):
    """The multi-node NVLink domain a type is built and sold in: the nodes (instances, VMs or compute trays) that
    share one NVLink fabric, e.g. a GB200 NVL72 rack of 18 nodes x 4 GPUs = 72 GPUs. An 8-GPU server has none (its
    NVLink ends at the node)."""

    nodes: Annotated[int, Field(ge=2, description="Nodes in one whole domain (e.g. `18`).")]
    unit: Annotated[
        Literal["ultraserver", "subblock", "rack"],
        Field(description="What the vendor sells a domain as: an AWS UltraServer, a GCP sub-block, a rack."),
    ]
    sizes: Annotated[
        tuple[int, ...],
        Field(
            min_length=1,
            description="Node counts a domain is sold in, ascending, the whole domain last (AWS p6e-gb200: `[9, 18]`, "
            "the u-p6e-gb200x36 and x72 UltraServers); a smaller one is a partial domain the vendor sells.",
        ),
    ]
    unit_types: Annotated[
        tuple[str, ...],
        Field(
            description="The vendor's name of each size, in the order of `sizes` (AWS UltraServer types "
            "`u-p6e-gb200x36`, `u-p6e-gb200x72`: what a Capacity Block is bought as); empty: the vendor names none."
        ),
    ] = ()
    rack_kw: Annotated[
        float | None,
        Field(gt=0, description="The whole rack's maximum draw, kW (switch trays and power shelves included)."),
    ] = None
    cooling: Annotated[
        Literal["liquid", "air"] | None,
        Field(description="What the rack needs from its site: `liquid` for NVL72 racks (cold plates)."),
    ] = None
    switch_trays: Annotated[int | None, Field(ge=1, description="NVLink switch trays in the rack.")] = None
    scalable_unit: Annotated[
        int | None,
        Field(
            ge=1,
            description="Domains (racks) in one DGX SuperPOD scalable unit, the block its fabric is designed in "
            "(GB200/GB300 NVL72: `8` = 576 GPUs); null: none on record.",
        ),
    ] = None

    @model_validator(mode="after")
    def _sizes(self) -> NvlinkDomain:
        if list(self.sizes) != sorted(set(self.sizes)) or self.sizes[-1] != self.nodes or self.sizes[0] < 1:
            raise ValueError(f"sizes {list(self.sizes)}: ascending node counts ending with the whole domain")
        if self.unit_types and len(self.unit_types) != len(self.sizes):
            raise ValueError(f"unit_types {list(self.unit_types)}: one name per size {list(self.sizes)}")
        return self

    def unit_type(self, nodes: int) -> str | None:
        """The vendor's name of a domain of `nodes` nodes (None: unnamed)."""
        return dict(zip(self.sizes, self.unit_types, strict=False)).get(nodes)

    def split(self, nodes: int) -> tuple[int, ...] | None:
        """The domains `nodes` are bought in, largest first: whole domains, then at most one smaller unit the vendor
        sells; None when no such split exists (the count would split a domain). The planner and the policy pack
        judge a count by this one rule."""
        full, rest = divmod(nodes, self.nodes)
        if rest == 0:
            return (self.nodes,) * full
        if rest in self.sizes:
            return (self.nodes,) * full + (rest,)
        return None


class InstanceType(Sourced):
    provider: Provider
    name: Annotated[str, Field(description="Provider's name (e.g. `p5.48xlarge`).")]
    family: Annotated[str, Field(description="Family label for humans (e.g. `P5`).")]
    accelerator: Annotated[str | None, Field(description="Accelerator id; null for CPU-only types.")] = None
    accelerator_count: Annotated[int, Field(ge=0)] = 0
    vcpus: Annotated[int, Field(ge=1)]
    cpu_topology: Annotated[
        CpuTopology,
        Field(
            description="Sockets x cores per socket x threads per core; their product is `vcpus` when all are given."
        ),
    ]
    memory_gib: Annotated[float, Field(gt=0)]
    local_nvme_gb: Annotated[float, Field(ge=0)] = 0
    network: Network
    node_power_kw: Annotated[
        float, Field(gt=0, description="Maximum power draw of one node, kW (datasheet or estimate).")
    ]
    power_basis: Annotated[
        Literal["datasheet", "estimate"],
        Field(description="`datasheet`: a published system maximum; `estimate`: derived, see the source note."),
    ]
    placement_group: Annotated[bool, Field(description="Supports cluster placement.")] = True
    cpu_arch: Annotated[
        CpuArch, Field(description="The host CPU's architecture (`arm64` for Grace nodes); images must match it.")
    ] = "x86_64"
    nvlink_domain: Annotated[
        NvlinkDomain | None,
        Field(description="The multi-node NVLink domain it is sold in; null: NVLink ends at the node."),
    ] = None
    markets: Annotated[
        tuple[CatalogMarket, ...],
        Field(description="The only ways it is sold (p6e-gb200: `capacity-block`); empty: every market of its cloud."),
    ] = ()
    root_disk_service: Annotated[
        str | None,
        Field(description="Boot disk service (in services/) when the type needs another than its provider's default."),
    ] = None
    offerings: tuple[Offering, ...] = ()

    @model_validator(mode="after")
    def _cpus_add_up(self) -> InstanceType:
        t = self.cpu_topology
        if t.threads_per_core is not None and self.vcpus % t.threads_per_core:
            raise ValueError(
                f"{self.name}: {self.vcpus} vCPUs are not a whole number of {t.threads_per_core}-thread cores"
            )
        if t.sockets is not None and t.cores_per_socket is not None and t.threads_per_core is not None:
            product = t.sockets * t.cores_per_socket * t.threads_per_core
            if product != self.vcpus:
                raise ValueError(
                    f"{self.name}: cpu_topology gives {t.sockets} x {t.cores_per_socket} x {t.threads_per_core} = "
                    f"{product} CPUs, but vcpus is {self.vcpus}"
                )
        return self

    def offering(self, region: str) -> Offering | None:
        return next((o for o in self.offerings if o.region == region), None)


SwitchFabric = Literal["infiniband", "roce"]


class PortMode(_Record):
    """One port layout of a switch: how many ports it has at one speed, and how many ports one cage carries."""

    port_gbps: Annotated[int, Field(gt=0, description="Link speed of each port, Gb/s (e.g. `400`).")]
    radix: Annotated[int, Field(ge=2, description="Ports at this speed (the fat-tree k).")]
    ports_per_cage: Annotated[
        int,
        Field(ge=1, description="Ports one switch-side transceiver or cable end serves (twin-port OSFP on NDR: 2)."),
    ]


class Switch(Sourced):
    """A fabric switch for on-prem fat trees (data/switches.yaml)."""

    id: Annotated[str, Field(description="Catalog id (e.g. `qm9700`).")]
    vendor: Literal["nvidia"]
    name: Annotated[str, Field(description="Product name (e.g. `NVIDIA Quantum-2 QM9700 (NDR)`).")]
    fabric: SwitchFabric
    cages: Annotated[int, Field(ge=1, description="Front-panel transceiver cages (OSFP / QSFP56).")]
    modes: Annotated[
        tuple[PortMode, ...],
        Field(min_length=1, description="Port layouts, native speed first, then breakouts to lower speeds."),
    ]
    max_power_w: Annotated[
        float | None, Field(gt=0, description="Published system maximum power, W; null if unpublished.")
    ] = None

    @property
    def radix(self) -> int:
        """Ports at the native speed."""
        return self.modes[0].radix

    @property
    def port_gbps(self) -> int:
        """Native port speed, Gb/s."""
        return self.modes[0].port_gbps

    def mode(self, link_gbps: int) -> PortMode | None:
        """The port layout at a link speed; None: the switch has no ports at that speed."""
        return next((m for m in self.modes if m.port_gbps == link_gbps), None)

    @model_validator(mode="after")
    def _modes_fit_the_cages(self) -> Switch:
        speeds = [m.port_gbps for m in self.modes]
        if len(set(speeds)) != len(speeds):
            raise ValueError(f"{self.id}: one mode per port speed (got {speeds})")
        for m in self.modes:
            if m.radix != self.cages * m.ports_per_cage:
                raise ValueError(
                    f"{self.id}: {m.radix} ports at {m.port_gbps}G are not {self.cages} cages x {m.ports_per_cage}"
                )
        return self


class TpuType(Sourced):
    provider: Literal["gcp"] = "gcp"
    name: Annotated[str, Field(description="TPU generation (e.g. `v5p`).")]
    accelerator: str
    chips_per_host: Annotated[int, Field(ge=1, description="Chips on each VM of a multi-host slice.")]
    single_host_max_chips: Annotated[
        int, Field(ge=1, description="Slices up to this many chips run on one VM (which holds them all).")
    ]
    tensorcores_per_chip: Annotated[
        int, Field(ge=1, description="TensorCores per chip; v5p accelerator-type names count cores (v5p-8 = 4 chips).")
    ] = 1
    type_prefix: Annotated[str, Field(description="Accelerator-type name prefix (`v5litepod` for v5e: v5litepod-16).")]
    host_vcpus: Annotated[int | None, Field(ge=1, description="vCPUs of one TPU VM (multi-host shape).")] = None
    host_memory_gib: Annotated[float | None, Field(gt=0, description="Memory of one TPU VM, GiB.")] = None
    default_runtime_version: Annotated[str, Field(description="TPU software version used when the stack names none.")]
    max_chips: Annotated[int, Field(ge=1, description="Largest slice, chips.")]
    slice_sizes: Annotated[tuple[int, ...], Field(description="Allowed slice sizes (chips).")]
    slice_step_chips: Annotated[
        int | None, Field(ge=1, description="Above the listed sizes, slices may be any multiple of this (v5p cubes).")
    ] = None
    host_power_kw: Annotated[float | None, Field(gt=0)] = None
    gke_machine_type: Annotated[
        str,
        Field(description="GKE node machine type of a multi-host slice's VMs (e.g. `ct5p-hightpu-4t`)."),
    ]
    gke_single_host_machine_types: Annotated[
        dict[int, str],
        Field(description="GKE machine type of a single-host slice's VM, by chips (e.g. `8: ct6e-standard-8t`)."),
    ] = {}
    topologies: Annotated[
        dict[int, str],
        Field(
            description="Slice topology by slice size in chips, from the provider's tables only (e.g. `128: 4x4x8`); "
            "a size not listed has no documented topology."
        ),
    ] = {}
    offerings: tuple[Offering, ...] = Field(default=(), description="Prices are per chip-hour.")

    @model_validator(mode="after")
    def _shapes_add_up(self) -> TpuType:
        step = self.slice_step_chips
        for chips, topology in self.topologies.items():
            if chips not in self.slice_sizes and not (step and chips % step == 0 and chips <= self.max_chips):
                raise ValueError(f"TPU {self.name}: topology {topology} is given for {chips} chips, not a slice size")
            dims = topology.split("x")
            if not all(d.isdigit() and int(d) > 0 for d in dims) or len(dims) not in (2, 3):
                raise ValueError(f"TPU {self.name}: topology {topology!r} is not AxB or AxBxC")
            product = 1
            for d in dims:
                product *= int(d)
            if product != chips:
                raise ValueError(f"TPU {self.name}: topology {topology} holds {product} chips, not {chips}")
        for chips in self.gke_single_host_machine_types:
            if chips > self.single_host_max_chips:
                raise ValueError(
                    f"TPU {self.name}: a {chips}-chip slice is not single-host (at most {self.single_host_max_chips})"
                )
        return self

    def offering(self, region: str) -> Offering | None:
        return next((o for o in self.offerings if o.region == region), None)

    def gke_chips_per_vm(self, machine_type: str) -> int | None:
        """Chips of one GKE node of `machine_type`, or None when it is not one of this generation's TPU VMs."""
        if machine_type == self.gke_machine_type:
            return self.chips_per_host
        return next((c for c, m in self.gke_single_host_machine_types.items() if m == machine_type), None)

    def gke_shape(self, chips: int) -> tuple[str, str] | None:
        """GKE machine type and topology of a slice of `chips`, or None where the catalog knows no topology."""
        topology = self.topologies.get(chips)
        if topology is None:
            return None
        if chips <= self.single_host_max_chips:
            machine = self.gke_single_host_machine_types.get(chips)
            return None if machine is None else (machine, topology)
        return self.gke_machine_type, topology


class Region(Sourced):
    provider: Provider
    name: Annotated[str, Field(description="Provider region name (e.g. `us-east-1`).")]
    location: Annotated[str, Field(description="City/area (e.g. `N. Virginia`).")]
    country: Annotated[str, Field(min_length=2, max_length=2, description="ISO 3166-1 alpha-2.")]
    jurisdiction: Annotated[str, Field(description="Data-protection jurisdiction (e.g. `US`, `EU`, `UK`).")]
    zones: tuple[str, ...]
    local_zones: Annotated[
        tuple[str, ...],
        Field(
            description="AWS Local Zones of the region that an offering names (e.g. `us-east-1-dfw-2a`): extensions "
            "of the region's network in another city, opted into per account; only the types offered there launch "
            "there, and NAT gateways, file systems and controllers stay in the region's own zones."
        ),
    ] = ()
    carbon_g_per_kwh: Annotated[float, Field(ge=0, description="Grid carbon intensity, gCO2e/kWh.")]
    pue: Annotated[float, Field(ge=1.0, description="Typical facility power usage effectiveness.")]


class StorageTier(Sourced):
    """One deployable tier of a managed file system."""

    provider: Provider
    kind: Literal["lustre", "nfs"]
    service: Annotated[str, Field(description="Product (e.g. `fsx-lustre`).")]
    deployment: Annotated[str, Field(description="Deployment type/SKU (e.g. `PERSISTENT_2`).")]
    throughput_mb_s_per_tib: Annotated[float, Field(gt=0)]
    min_capacity_gib: Annotated[int, Field(ge=1)]
    capacity_step_gib: Annotated[int, Field(ge=1, description="Sizes above the minimum grow in these steps.")]
    allowed_first_sizes_gib: Annotated[
        tuple[int, ...], Field(description="Sizes allowed below the first step (e.g. FSx 1200).")
    ] = ()
    max_capacity_gib: Annotated[int | None, Field(ge=1)] = None
    request_above_gib: Annotated[
        int | None,
        Field(ge=1, description="Sizes above this need a support request or subscription feature first."),
    ] = None
    prices_usd_per_gib_month: Annotated[dict[str, float], Field(description="Region -> $/GiB-month.")]

    @property
    def sku(self) -> str:
        """Id users name in price overrides (e.g. `fsx-lustre/PERSISTENT_2/250`)."""
        return f"{self.service}/{self.deployment}/{self.throughput_mb_s_per_tib:g}"


class ServicePrice(Sourced):
    """A charge that comes with a cluster besides instances and file systems (volumes, NAT)."""

    provider: Provider
    service: Annotated[str, Field(description="What is charged (e.g. `ebs-gp3`, `nat-gateway`).")]
    unit: Literal["gib-month", "hour"]
    prices_usd: Annotated[dict[str, float], Field(description="Region -> USD per unit.")]


class Image(Sourced):
    provider: Provider
    id: Annotated[str, Field(description="Catalog id (e.g. `dlami-base-ubuntu22`).")]
    description: str
    reference: Annotated[str, Field(description="How the provider resolves it (e.g. `resolve:ssm:/aws/...`).")]
    architecture: Literal["x86_64", "arm64"] = "x86_64"


class ProviderDefaults(_Record):
    """Choices the planner makes when the stack does not (not facts: our defaults)."""

    gpu_image: Annotated[str, Field(description="Image id (in images/) for GPU nodes.")]
    gpu_image_arm64: Annotated[
        str | None, Field(description="Image id for GPU nodes with an arm64 (Grace) host; null: none chosen.")
    ] = None
    controller_image: Annotated[str, Field(description="Image id for the scheduler controller.")]
    controller_instance_type: Annotated[str, Field(description="Instance type for the controller.")]
    root_disk_service: Annotated[
        str, Field(description="Service (in services/) that prices node root/OS disks, e.g. `ebs-gp3`.")
    ]
    kubernetes_system_instance_type: Annotated[
        str | None, Field(description="CPU instance type of a Kubernetes cluster's system node group.")
    ] = None


class SlurmCloudTimes(Sourced):
    """Slurm power-saving times for a cloud's nodes bursting from a controller elsewhere: the defaults of that
    cloud's own Slurm integration (AWS ParallelCluster, Google's slurm-gcp, Azure CycleCloud)."""

    resume_timeout_s: Annotated[
        int, Field(gt=0, description="ResumeTimeout: seconds a resumed node has to boot and register (e.g. `1800`).")
    ]
    suspend_timeout_s: Annotated[
        int, Field(gt=0, description="SuspendTimeout: seconds a suspended node stays unusable (e.g. `120`).")
    ]
    suspend_time_s: Annotated[
        int, Field(gt=0, description="SuspendTime: idle seconds before a cloud node is powered down (e.g. `600`).")
    ]


class Constants(_Record):
    hours_per_month: Annotated[float, Field(description="Billing hours per month (730).")]
    defaults: Annotated[dict[str, ProviderDefaults], Field(description="Per-provider defaults.")] = {}
    network_slots: Annotated[
        dict[str, dict[str, int]],
        Field(description="provider -> region -> fixed index of the region's network block in a supernet."),
    ] = {}
    slurm_cloud: Annotated[
        dict[str, SlurmCloudTimes],
        Field(description="provider -> Slurm power-saving times of its nodes when they burst from another site."),
    ] = {}
    sources: dict[str, str]


# -- NCCL profiles (data/nccl.yaml) ---------------------------------------------------------------

NcclLibrary = Literal["nccl", "aws-ofi-nccl", "libfabric", "efa-installer", "nccl-gib", "gpudirect-tcpxo"]

# Variables NCCL plugins read from the environment themselves: never in /etc/nccl.conf, which NCCL core reads.
NCCL_PLUGIN_PREFIXES = ("NCCL_GPUDIRECTTCPX_", "NCCL_FASTRAK_", "NCCL_SHIMNET_", "OFI_NCCL_")


def _version_key(version: str) -> tuple[int, ...]:
    """`2.27.7-1`, `v1.16.3-aws`, `1.43.2` -> numeric components (release suffixes ignored)."""
    core = version.strip().removeprefix("v").split("-", 1)[0].split("+", 1)[0]
    parts = core.split(".")
    if not core or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(p) for p in parts)


_RANGE_OPS = (">=", "<=", "==", "!=", ">", "<")


def _clauses(spec: str) -> list[tuple[str, tuple[int, ...]]]:
    out: list[tuple[str, tuple[int, ...]]] = []
    for raw in spec.split(","):
        clause = raw.strip()
        op = next((o for o in _RANGE_OPS if clause.startswith(o)), None)
        if op is None:
            raise ValueError(f"version range clause {clause!r} needs one of {', '.join(_RANGE_OPS)}")
        out.append((op, _version_key(clause[len(op) :])))
    return out


def version_in_range(version: str, spec: str) -> bool:
    """Whether `version` satisfies `spec` (comma-separated clauses, all must hold: `>=1.6,<1.7`).

    Components are compared numerically after padding with zeros, so `1.7` == `1.7.0` and `1.10` > `1.9`."""
    have = _version_key(version)
    for op, want in _clauses(spec):
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        ok = {">=": a >= b, "<=": a <= b, "==": a == b, "!=": a != b, ">": a > b, "<": a < b}[op]
        if not ok:
            return False
    return True


def _check_ranges(ranges: dict[str, str]) -> dict[str, str]:
    for spec in ranges.values():
        _clauses(spec)
    return ranges


class NcclSetting(Sourced):
    """One variable of an NCCL profile: a literal value, or one the renderer derives from the plan's NICs.

    `file` says where it goes: `nccl.conf` (NCCL core variables NCCL reads from /etc/nccl.conf: literal values,
    no shell) or `profile` (/etc/profile.d/nccl.sh: libfabric/plugin variables, paths that expand `$VAR`)."""

    name: Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]*$", description="Variable (e.g. `FI_EFA_USE_HUGE_PAGE`).")]
    value: Annotated[str | None, Field(description="Literal value; null when `derive` computes it.")] = None
    derive: Annotated[
        Literal["gpu_nics", "host_nic", "host_nics", "gpu_nic_cpus"] | None,
        Field(
            description="Computed from the pool's NICs and the instance type's guest NIC names: `gpu_nics` (comma list "
            "of GPU NICs), `host_nic` (nic0), `host_nics` (the non-GPU NICs), `gpu_nic_cpus` (`nic:cpus;...` from "
            "`per_gpu_nic`)."
        ),
    ] = None
    per_gpu_nic: Annotated[
        tuple[str, ...], Field(description="`gpu_nic_cpus`: the value for each GPU NIC, in NIC order.")
    ] = ()
    file: Annotated[Literal["nccl.conf", "profile"], Field(description="Where the setting is written.")]
    before_script: Annotated[
        bool, Field(description="profile: export it before the vendor script is sourced (the script reads it).")
    ] = False
    when: Annotated[
        dict[NcclLibrary, str],
        Field(description="Only when every library's version is in its range (e.g. `{nccl: '>=2.19'}`)."),
    ] = {}
    note: Annotated[str | None, Field(description="Why it is set (written as a comment).")] = None

    @field_validator("when")
    @classmethod
    def _ranges(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_ranges(value)

    @model_validator(mode="after")
    def _one_value(self) -> NcclSetting:
        if (self.value is None) == (self.derive is None):
            raise ValueError(f"{self.name}: give exactly one of value or derive")
        if bool(self.per_gpu_nic) != (self.derive == "gpu_nic_cpus"):
            raise ValueError(f"{self.name}: per_gpu_nic goes with derive: gpu_nic_cpus, and only with it")
        if self.file == "nccl.conf":
            if not self.name.startswith("NCCL_") or self.name.startswith(NCCL_PLUGIN_PREFIXES):
                raise ValueError(f"{self.name}: only NCCL core variables go in nccl.conf (plugins read the env)")
            if self.before_script:
                raise ValueError(f"{self.name}: before_script is for profile settings")
            if self.value is not None and any(c in self.value for c in "$`\"' \t#"):
                raise ValueError(f"{self.name}: nccl.conf takes literal values (NCCL does no shell expansion)")
        return self


class NcclScript(Sourced):
    """A vendor script the profile sources (GCP ships its tuned variables this way and updates them)."""

    path: Annotated[str, Field(description="Path on the node (e.g. `/usr/local/gib/scripts/set_nccl_env.sh`).")]
    shell: Annotated[Literal["bash", "sh"], Field(description="`bash`: sourced only when the login shell is bash.")]


class NcclProfile(Sourced):
    """NCCL settings for one platform (provider + fabric, optionally some instance types) and library versions."""

    id: Annotated[str, Field(description="Profile id (e.g. `aws-efa-ofi-1.7`).")]
    description: str
    provider: Provider
    fabric: Fabric
    instance_types: Annotated[
        tuple[str, ...], Field(description="Instance types it covers; empty: every GPU type of provider + fabric.")
    ] = ()
    requires: Annotated[
        dict[NcclLibrary, str],
        Field(description="Library version ranges that select this profile (e.g. `{aws-ofi-nccl: '>=1.7'}`)."),
    ] = {}
    script: NcclScript | None = None
    settings: tuple[NcclSetting, ...] = ()

    @field_validator("requires")
    @classmethod
    def _ranges(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_ranges(value)

    def covers(self, provider: str, fabric: str, instance_type: str) -> bool:
        return (
            self.provider == provider
            and self.fabric == fabric
            and (not self.instance_types or instance_type in self.instance_types)
        )


class NcclVersions(Sourced):
    """The library versions a platform's nodes run when the stack names none (what our images install)."""

    provider: Provider
    fabric: Fabric
    versions: dict[NcclLibrary, str]


class GuestNicNames(Sourced):
    """Interface names the guest OS gives an instance type's NICs, in NIC order (nic0 first)."""

    provider: Provider
    instance_type: str
    names: Annotated[tuple[str, ...], Field(min_length=1, description="Name of nic0, nic1, ... (a prefix may do).")]


class NcclBusbw(Sourced):
    """The all_reduce bus bandwidth a source reports for an instance type, at the shape it was measured (nodes,
    message). Not the acceptance gate: a figure of another shape (a 2-node tree, one VM's NVLink) would hold a ring
    across a pair of nodes to more than the wire carries; the gate is the collective model at the test's shape."""

    provider: Provider
    instance_type: str
    profiles: Annotated[
        tuple[str, ...], Field(description="Profile ids the figure holds for; empty: any profile of the type.")
    ] = ()
    collective: Literal["all_reduce"] = "all_reduce"
    busbw_gb_s: Annotated[float | None, Field(gt=0, description="Bus bandwidth, GB/s; null: no source publishes one.")]
    nodes: Annotated[int | None, Field(ge=1, description="Nodes of the measurement (1: NVLink only, no network).")]
    message_bytes: Annotated[int | None, Field(ge=1, description="Message size of the figure, bytes.")]
    note: Annotated[str, Field(description="How the figure was measured, or why none is published.")]

    @model_validator(mode="after")
    def _complete(self) -> NcclBusbw:
        given = (self.busbw_gb_s is not None, self.nodes is not None, self.message_bytes is not None)
        if any(given) and not all(given):
            raise ValueError(f"{self.instance_type}: a figure needs busbw_gb_s, nodes and message_bytes together")
        return self


class NcclMnnvl(Sourced):
    """NCCL settings for a pool whose nodes share a multi-node NVLink domain (GB200/GB300 NVL72: the plan's
    PlannedPool.nvlink), added to its platform's profile. NCCL reaches the GPUs of the other nodes of a domain over
    NVLink only with cuMem allocations and IMEX-exported fabric handles; it refuses (a hard error) rather than falling
    back to the network when a fabric handle fails."""

    description: str
    settings: Annotated[tuple[NcclSetting, ...], Field(min_length=1)]


class NcclData(_Record):
    """Everything in data/nccl.yaml."""

    default_versions: tuple[NcclVersions, ...]
    guest_nic_names: tuple[GuestNicNames, ...]
    profiles: tuple[NcclProfile, ...]
    busbw: tuple[NcclBusbw, ...]
    mnnvl: NcclMnnvl | None = None


# -- Managed Kubernetes (data/kubernetes.yaml) ------------------------------------------------------


class NodeTaint(_Record):
    """A node taint as Kubernetes writes it (key=value:effect)."""

    key: Annotated[str, Field(description="Taint key (e.g. `kubernetes.io/arch`).")]
    value: Annotated[str, Field(description="Taint value (e.g. `arm64`).")]
    effect: Literal["NoSchedule", "NoExecute"]


# EKS's repair actions (NodeRepairConfigOverrides.repairAction: "Replace | Reboot | NoAction")
RepairAction = Literal["Replace", "Reboot", "NoAction"]


class NodeHealthService(Sourced):
    """What a managed Kubernetes service watches on GPU nodes itself and how it repairs them."""

    auto_repair: Annotated[
        Literal["node-group", "node-pool", "always"],
        Field(
            description="Where managed node repair is turned on: a node group setting (EKS nodeRepairConfig, off by "
            "default), a node pool setting (GKE management.auto_repair, on by default), or always on (AKS)."
        ),
    ]
    repair_triggers: Annotated[
        str,
        Field(description="What the managed repair acts on, as the service documents it (e.g. `NotReady ~10 min`)."),
    ]
    agent_addon: Annotated[
        str | None,
        Field(
            description="The service's node health agent, as an add-on aicluster turns on (e.g. "
            "`eks-node-monitoring-agent`); null: the service runs its own or none."
        ),
    ] = None
    gpu_condition: Annotated[
        str | None,
        Field(
            description="The node condition the service's own agent sets on a GPU fault (e.g. "
            "`AcceleratedHardwareReady`); null: none."
        ),
    ] = None
    xid_list: Annotated[
        str | None,
        Field(
            description="The health.yaml `listed_by` tag of the XIDs the service's agent treats as fatal (e.g. "
            "`eks-fatal`); null: not recorded."
        ),
    ] = None
    xid_reason: Annotated[
        str | None,
        Field(
            description="The condition reason its agent gives a fatal XID, `{xid}` standing for the number (e.g. "
            "`NvidiaXID{xid}Error`); null: the repair cannot be told per XID."
        ),
    ] = None
    repair_actions: Annotated[
        dict[str, RepairAction],
        Field(
            description="XID immediate-action bucket -> the repair the service is told to take (EKS "
            "nodeRepairConfigOverrides); buckets not listed keep the service's default."
        ),
    ] = {}
    repair_wait_minutes: Annotated[
        int | None, Field(ge=1, description="Minutes a node stays unhealthy before the repair (EKS: 10).")
    ] = None
    gpu_checks_skip_own_driver: Annotated[
        bool,
        Field(
            description="The service's GPU checks do not run on node pools whose GPU driver it does not install "
            "(AKS --gpu-driver none)."
        ),
    ] = False


class MaintenanceWindowRule(_Record):
    """The managed service's own recurring maintenance window: when its automatic upgrades (a new node image or
    patch version) may take nodes. It never holds back a change `pulumi up` makes: that runs when you run it."""

    scope: Annotated[
        Literal["cluster"],
        Field(description="`cluster`: one window per cluster, which every node pool and the control plane share."),
    ]
    resource: Annotated[
        str,
        Field(
            description="What holds the window, in the SDK's terms (e.g. `Cluster.maintenancePolicy.recurringWindow`)."
        ),
    ]
    weekdays: Annotated[
        Literal["any", "one-or-all"],
        Field(
            description="The weekday sets one window may recur on: `any` (an RRULE BYDAY list), `one-or-all` (a "
            "weekly schedule names one day; a daily one, all seven)."
        ),
    ]
    min_hours: Annotated[
        int | None,
        Field(ge=1, description="Least maintenance time the window must leave open in any `per_days` days."),
    ] = None
    per_days: Annotated[int | None, Field(ge=7, description="The rolling period `min_hours` is counted over.")] = None


class KubernetesService(Sourced):
    """A cloud's managed Kubernetes control plane: what it offers, costs, and labels its nodes with."""

    provider: Literal["aws", "azure", "gcp"]
    service: Literal["eks", "gke", "aks"]
    name: Annotated[str, Field(description="Product name (e.g. `Amazon EKS`).")]
    versions: Annotated[
        tuple[str, ...], Field(min_length=1, description="Minor versions in standard support, oldest first.")
    ]
    extended_versions: Annotated[
        tuple[str, ...], Field(description="Minor versions only in extended (or LTS) support, oldest first.")
    ] = ()
    usd_per_hour: Annotated[float, Field(ge=0, description="Control plane, standard support, per cluster-hour.")]
    extended_usd_per_hour: Annotated[
        float | None, Field(ge=0, description="Control plane in extended support, per cluster-hour.")
    ] = None
    tier: Annotated[str | None, Field(description="The pricing tier the price is for (AKS: Standard).")] = None
    accelerator_label: Annotated[
        str, Field(description="Node label the cloud sets to the GPU type or instance type (for flavors).")
    ]
    node_image: Annotated[
        str,
        Field(
            description="The image GPU node groups boot, in the service's own terms (EKS AMI type, GKE image type, "
            "AKS OS SKU)."
        ),
    ]
    topology: Annotated[
        dict[str, tuple[str, ...]],
        Field(
            description="accelerator kind (gpu, tpu) -> node labels from the widest network domain to the host, "
            "the levels of a Kueue Topology (the last is kubernetes.io/hostname)."
        ),
    ]
    max_nodes_per_group: Annotated[int, Field(ge=1, description="Nodes one node group / node pool may hold.")]
    pod_cidr_prefix: Annotated[
        int | None,
        Field(
            ge=8,
            le=24,
            description="Prefix length of the overlay pod range a cluster gets when the stack pins none "
            "(`network.pod_cidr`): fixed, since the range cannot change without replacing the cluster; null: pods "
            "take VPC addresses (EKS's VPC CNI).",
        ),
    ] = None
    pod_node_prefix: Annotated[
        int | None, Field(ge=8, le=28, description="Prefix length of the block of the pod range each node takes.")
    ] = None
    system_pool_per_zone: Annotated[
        bool,
        Field(
            description="The system node pool's count is per zone (a regional GKE node pool's node_count; AKS as "
            "aicluster builds it): the nodes round up to a multiple of its zones. EKS's node group count is the "
            "whole group's."
        ),
    ] = False
    max_unavailable_per_group: Annotated[
        int | None,
        Field(
            ge=1,
            description="Most nodes one node group's update may take at once (EKS NodegroupUpdateConfig: 100); null: "
            "no limit of the service's own, the group's size bounds it.",
        ),
    ] = None
    group_name_max: Annotated[int, Field(ge=1, description="Longest node group / node pool / agent pool name.")]
    group_name_hyphens: Annotated[bool, Field(description="Whether node group names may contain hyphens.")]
    max_taints_per_group: Annotated[int | None, Field(ge=1)] = None
    node_image_arm64: Annotated[
        str | None,
        Field(
            description="The image Arm (Grace) GPU node groups boot, in the service's own terms (e.g. "
            "`AL2023_ARM_64_NVIDIA`); null: none documented, so Arm pools are refused."
        ),
    ] = None
    arm64_taint: Annotated[
        NodeTaint | None,
        Field(description="The taint the service itself puts on Arm nodes (GKE); pods and flavors tolerate it."),
    ] = None
    dra_min_version: Annotated[
        str | None,
        Field(
            description="Oldest Kubernetes minor on which the service runs NVIDIA's DRA driver for ComputeDomains "
            "(rack-scale NVLink domains); null: not documented, so rack-scale pools are refused."
        ),
    ] = None
    nvlink_level: Annotated[
        str | None,
        Field(
            description="Node label whose value names one multi-node NVLink domain (a level of topology `nvlink`, "
            "e.g. `cloud.google.com/gce-topology-subblock`); null: no NVLink topology."
        ),
    ] = None
    node_health: Annotated[
        NodeHealthService | None,
        Field(description="What the service watches on GPU nodes and how it repairs them; null: not recorded."),
    ] = None
    maintenance_window: Annotated[
        MaintenanceWindowRule | None,
        Field(
            description="The service's recurring maintenance window for its automatic upgrades; null: it has none "
            "(EKS managed node groups update only when asked), so a pool's window holds only by when you deploy."
        ),
    ] = None


class KubernetesAddon(Sourced):
    """A cluster add-on installed from a pinned Helm chart (or a pinned manifest)."""

    id: Annotated[str, Field(description="Catalog id (e.g. `gpu-operator`).")]
    name: Annotated[str, Field(description="Product name (e.g. `NVIDIA GPU Operator`).")]
    kind: Literal["helm", "manifest"]
    chart: Annotated[str, Field(description="Chart name in its repository; for a manifest, the file name.")]
    repository: Annotated[str, Field(description="Chart repository (https or oci) or the manifest's source URL.")]
    version: Annotated[str, Field(min_length=1, description="Pinned chart (or manifest) version.")]
    app_version: Annotated[str | None, Field(description="The version of the software the chart installs.")] = None
    namespace: Annotated[str, Field(description="Namespace it is installed into.")]
    providers: Annotated[tuple[str, ...], Field(description="Clouds whose clusters get it: aws, azure, gcp.")] = (
        "aws",
        "azure",
        "gcp",
    )


class KubernetesData(_Record):
    services: tuple[KubernetesService, ...] = ()
    addons: tuple[KubernetesAddon, ...] = ()
