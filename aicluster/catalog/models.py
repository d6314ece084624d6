"""Typed records of the catalog.

Every figure in the catalog carries a source. A record names its default source in ``source``;
a figure that comes from somewhere else names its own in ``field_sources`` (field name -> source id).
Sources are listed once, with a URL and the date they were read, in ``data/sources.yaml``.

This module imports nothing of the project (layering rule: spec and catalog are leaves).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

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
    model_config = ConfigDict(extra="forbid", frozen=True)


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


class NetworkInterfaceLimits(_Record):
    """What the instance type allows on its network cards (AWS DescribeInstanceTypes NetworkInfo)."""

    network_cards: Annotated[int, Field(ge=1, description="MaximumNetworkCards.")]
    efa_interfaces: Annotated[int, Field(ge=0, description="EfaInfo.MaximumEfaInterfaces.")]
    max_interfaces: Annotated[int, Field(ge=1, description="MaximumNetworkInterfaces (all cards).")]


class Network(_Record):
    fabric: Fabric
    bandwidth_gbps: Annotated[float, Field(gt=0, description="Total GPU-to-GPU network bandwidth, Gb/s.")]
    ip_bandwidth_gbps: Annotated[
        float | None, Field(gt=0, description="Share of the total usable for IP traffic, Gb/s.")
    ] = None
    aws: NetworkInterfaceLimits | None = None
    gpu_nics: Annotated[int, Field(ge=0, description="NICs dedicated to GPU traffic (GCP extra VPCs, IB HCAs).")] = 0


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


class InstanceType(Sourced):
    provider: Provider
    name: Annotated[str, Field(description="Provider's name (e.g. `p5.48xlarge`).")]
    family: Annotated[str, Field(description="Family label for humans (e.g. `P5`).")]
    accelerator: Annotated[str | None, Field(description="Accelerator id; null for CPU-only types.")] = None
    accelerator_count: Annotated[int, Field(ge=0)] = 0
    vcpus: Annotated[int, Field(ge=1)]
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
    root_disk_service: Annotated[
        str | None,
        Field(description="Boot disk service (in services/) when the type needs another than its provider's default."),
    ] = None
    offerings: tuple[Offering, ...] = ()

    def offering(self, region: str) -> Offering | None:
        return next((o for o in self.offerings if o.region == region), None)


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
    offerings: tuple[Offering, ...] = Field(default=(), description="Prices are per chip-hour.")

    def offering(self, region: str) -> Offering | None:
        return next((o for o in self.offerings if o.region == region), None)


class Region(Sourced):
    provider: Provider
    name: Annotated[str, Field(description="Provider region name (e.g. `us-east-1`).")]
    location: Annotated[str, Field(description="City/area (e.g. `N. Virginia`).")]
    country: Annotated[str, Field(min_length=2, max_length=2, description="ISO 3166-1 alpha-2.")]
    jurisdiction: Annotated[str, Field(description="Data-protection jurisdiction (e.g. `US`, `EU`, `UK`).")]
    zones: tuple[str, ...]
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
    controller_image: Annotated[str, Field(description="Image id for the scheduler controller.")]
    controller_instance_type: Annotated[str, Field(description="Instance type for the controller.")]
    root_disk_service: Annotated[
        str, Field(description="Service (in services/) that prices node root/OS disks, e.g. `ebs-gp3`.")
    ]


class Constants(_Record):
    hours_per_month: Annotated[float, Field(description="Billing hours per month (730).")]
    defaults: Annotated[dict[str, ProviderDefaults], Field(description="Per-provider defaults.")] = {}
    network_slots: Annotated[
        dict[str, dict[str, int]],
        Field(description="provider -> region -> fixed index of the region's network block in a supernet."),
    ] = {}
    sources: dict[str, str]
