"""`plan(spec, catalog) -> ClusterPlan`: a pure, deterministic function.

Every derived number (instance facts, NIC layout, placement, CIDRs, cost, power, racks, file-system
sizes) is computed here, once. Rules that need the catalog are checked here and reported exactly like
spec errors: a SpecError listing every problem with its field path, value and fix.

Imports only aicluster.spec and aicluster.catalog.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from aicluster.catalog import Catalog, CpuTopology, InstanceType, Region, StorageTier
from aicluster.catalog.pricing import (
    CostLine,
    Price,
    cents,
    compute_price,
    hourly_month,
    service_month,
    service_override_hint,
    service_price,
    storage_month,
    storage_price,
    total,
)
from aicluster.spec import (
    AwsPool,
    AzurePool,
    ClusterSpec,
    GcpPool,
    LustreStorage,
    NfsStorage,
    PriceOverride,
    Problem,
    SlurmScheduler,
    SpecError,
    did_you_mean,
    format_path,
    gcp_labels,
)

from . import aws as aws_plan
from . import azure as azure_plan
from . import gcp as gcp_plan
from .models import (
    AwsPoolDetails,
    AzurePoolDetails,
    ClusterPlan,
    GcpNic,
    GcpPoolDetails,
    GcpVpc,
    Nic,
    PlacementGroup,
    PlannedController,
    PlannedFilesystem,
    PlannedNetwork,
    PlannedPool,
    ScaleSet,
    Subnet,
    Totals,
    TpuDetails,
    TpuSlice,
)
from .network import (
    AZURE_RESERVED,
    AddressError,
    aws_subnets,
    azure_subnets,
    gcp_subnets,
    network_block,
    overlaps,
    usable,
)

__all__ = [
    "AwsPoolDetails",
    "AzurePoolDetails",
    "ClusterPlan",
    "GcpNic",
    "GcpPoolDetails",
    "GcpVpc",
    "Nic",
    "PlacementGroup",
    "PlannedController",
    "PlannedFilesystem",
    "PlannedNetwork",
    "PlannedPool",
    "Price",
    "ScaleSet",
    "Subnet",
    "Totals",
    "TpuDetails",
    "TpuSlice",
    "gcp_labels",
    "plan",
]


@dataclass
class _Ctx:
    spec: ClusterSpec
    catalog: Catalog
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # zone -> addresses needed, per network key; and the field that first asked for each network
    addresses: dict[str, dict[str | None, int]] = field(default_factory=dict)
    network_users: dict[str, tuple[str | int, ...]] = field(default_factory=dict)
    # network key -> subnet roles besides compute asked for (Azure's lustre and netapp subnets, GCP's GPU NIC
    # subnets "gpu-<k>"/"rdma-<k>", "gvnic" and "services") -> addresses needed in them
    subnet_roles: dict[str, dict[str, int]] = field(default_factory=dict)
    # network key -> GPU fabrics of its pools (GCP: which extra VPCs and MTUs the network needs)
    fabrics: dict[str, set[str]] = field(default_factory=dict)
    # network key -> (pool index, zone) of the first pool that uses the region's RoCE VPC (a zonal profile)
    rdma_zones: dict[str, tuple[int, str]] = field(default_factory=dict)
    # (network key, subnet role) -> the storage index that has the role's one dedicated subnet
    dedicated: dict[tuple[str, str], int] = field(default_factory=dict)
    # network key -> (pool index, existing resource group) of the first pool that names one
    resource_groups: dict[str, tuple[int, str]] = field(default_factory=dict)
    # the rates of the service charges priced so far (root disks, NAT gateways, addresses): which overrides apply
    service_prices: list[Price] = field(default_factory=list)

    def problem(
        self,
        path: tuple[str | int, ...],
        message: str,
        value: object = None,
        hint: str | None = None,
        *,
        has_value: bool = True,
    ) -> None:
        self.problems.append(Problem(path, message, value, has_value and value is not None, hint))

    def need(
        self,
        path: tuple[str | int, ...],
        provider: str,
        region: str,
        zone: str | None,
        addresses: int,
        *,
        role: str = "compute",
    ) -> str:
        key = f"{provider}-{region}"
        self.network_users.setdefault(key, path)
        zones = self.addresses.setdefault(key, {})
        if role == "compute":
            zones[zone] = zones.get(zone, 0) + addresses
        else:
            roles = self.subnet_roles.setdefault(key, {})
            roles[role] = roles.get(role, 0) + addresses
        return key

    def resource_group(self, i: int, network: str, name: str) -> None:
        """Pools of one Azure region share its network, so they must agree on an existing resource group."""
        first = self.resource_groups.setdefault(network, (i, name))
        if first[1].lower() != name.lower():  # Azure resource group names are case-insensitive
            self.problem(
                ("pools", i, "resource_group"),
                f"pools[{first[0]}] in the same region deploys into {first[1]}; the pools of one region share its "
                "network and resource group: name the same one, or drop resource_group from both",
                name,
            )


def _round2(x: float) -> float:
    return round(x, 2)


# ------------------------------------------------------------------------------------------------
# Pools
# ------------------------------------------------------------------------------------------------


def _region(ctx: _Ctx, path: tuple[str | int, ...], provider: str, name: str) -> Region | None:
    reg = ctx.catalog.region(provider, name)
    if reg is None:
        names = ctx.catalog.region_names(provider)
        ctx.problem(
            path,
            f"the catalog has no {provider} region of that name; known: {', '.join(names)}",
            name,
            did_you_mean(name, names),
        )
    return reg


def _zone(
    ctx: _Ctx, path: tuple[str | int, ...], reg: Region, zone: str | None, allowed: tuple[str, ...], what: str
) -> str | None:
    if zone is None:
        return None
    choices = list(allowed or reg.zones)
    if zone not in reg.zones:
        ctx.problem(
            path,
            f"not a zone of {reg.name}; zones: {', '.join(reg.zones)}",
            zone,
            did_you_mean(zone, list(reg.zones)),
        )
        return None
    if zone not in choices:
        ctx.problem(path, f"{what} is not offered in {zone} per the catalog; offered in: {', '.join(choices)}", zone)
        return None
    return zone


def _image_reference(provider: str, given: str) -> bool:
    """Whether `given` is the provider's own image reference rather than a catalog id."""
    if provider == "aws":
        return given.startswith("resolve:ssm:") or bool(re.fullmatch(r"ami-[0-9a-f]{8,17}", given))
    if provider == "azure":
        return azure_plan.is_image_urn(given)
    if provider == "gcp":
        return gcp_plan.is_image_path(given)
    return False


_IMAGE_FORMS = {
    "aws": "an AMI id or resolve:ssm: path",
    "azure": "a Marketplace URN publisher:offer:sku:version",
    "gcp": "an image path projects/<project>/global/images/[family/]<name>",
}


def _image(ctx: _Ctx, path: tuple[str | int, ...], provider: str, given: str | None, default: str | None) -> str:
    forms = _IMAGE_FORMS.get(provider, "an image reference")
    if given is not None:
        if _image_reference(provider, given):
            return given
        img = ctx.catalog.image(provider, given)
        if img is None:
            ids = sorted(i for (p, i) in ctx.catalog.images if p == provider)
            ctx.problem(
                path,
                f"not {forms} or a catalog image; catalog images: {', '.join(ids)}",
                given,
                did_you_mean(given, ids),
            )
            return given
        return img.reference
    img = ctx.catalog.image(provider, default) if default else None
    if img is None:
        ctx.problem(path, f"the catalog has no default {provider} image here; set one ({forms})")
        return ""
    return img.reference


def _instance_type(ctx: _Ctx, path: tuple[str | int, ...], provider: str, name: str) -> InstanceType | None:
    it = ctx.catalog.instance_type(provider, name)
    if it is None:
        names = ctx.catalog.instance_type_names(provider)
        ctx.problem(
            path,
            f"the catalog has no {provider} instance type of that name; known: {', '.join(names)}",
            name,
            did_you_mean(name, names),
        )
    return it


@dataclass(frozen=True)
class _Placed:
    """What a provider's pool planner adds to the checks every pool shares."""

    zone: str | None
    addresses_per_node: int
    details: dict[str, object]


def _place_aws(
    ctx: _Ctx, i: int, pool: AwsPool, it: InstanceType, reg: Region, zones: tuple[str, ...], image: str
) -> _Placed | None:
    details = aws_plan.details(pool, it, image)
    zone = pool.zone
    if zone is None:
        if details.efa_devices:
            ctx.problem(
                ("pools", i, "zone"),
                f"{it.name} uses EFA, which does not cross Availability Zones: set the zone the pool "
                f"runs in; zones of {pool.region}: {', '.join(zones)}",
            )
            return None
        zone = zones[0]
        ctx.warnings.append(f"pools[{i}] ({pool.name}) has no zone; placed in {zone}")
    return _Placed(zone, aws_plan.ip_addresses_per_node(details.nics), {"aws": details})


def _place_azure(
    ctx: _Ctx, i: int, pool: AzurePool, it: InstanceType, reg: Region, zones: tuple[str, ...], image: str
) -> _Placed | None:
    details = azure_plan.details(pool, it, image)
    if pool.ib_domain_max_vms > azure_plan.IB_DOMAIN_MAX_VMS:
        ctx.warnings.append(
            f"pools[{i}] ({pool.name}): scale sets of up to {pool.ib_domain_max_vms} VMs need the placement-group "
            f"limit raised from {azure_plan.IB_DOMAIN_MAX_VMS} by Azure support for this subscription; without it "
            "the larger scale sets fail to create"
        )
    if len(details.scale_sets) > 1:
        ctx.warnings.append(
            f"pools[{i}] ({pool.name}): {pool.nodes} VMs exceed one InfiniBand domain "
            f"({details.max_vms_per_scale_set} VMs per scale set): "
            + ", ".join(f"{s.name} = nodes {s.first_node}-{s.first_node + s.nodes - 1}" for s in details.scale_sets)
            + "; jobs that span domains talk over Ethernet between them"
            if details.infiniband
            else f"pools[{i}] ({pool.name}): split into {len(details.scale_sets)} scale sets"
        )
    # Uniform scale sets without overprovisioning: one NIC, one address per VM.
    return _Placed(pool.zone, 1, {"azure": details})


def _place_gcp(
    ctx: _Ctx, i: int, pool: GcpPool, it: InstanceType, reg: Region, zones: tuple[str, ...], image: str
) -> _Placed | None:
    zone = pool.zone
    if zone is None:
        zone = zones[0]
        ctx.warnings.append(
            f"pools[{i}] ({pool.name}) has no zone; placed in {zone} (a GPU pool is a zonal managed instance group)"
        )
    details = gcp_plan.details(pool, it, image, _boot_disk(ctx, it))
    path: tuple[str | int, ...] = ("pools", i, "region")
    key = f"gcp-{pool.region}"
    ctx.fabrics.setdefault(key, set()).add(it.network.fabric)
    nodes = pool.nodes or 0
    for nic in details.nics[1:]:
        role = "gvnic" if nic.subnet_role == "gvnic" else f"{nic.subnet_role}-{nic.subnet_index}"
        ctx.need(path, "gcp", pool.region, None, nodes, role=role)
    if it.network.fabric == gcp_plan.RDMA_FABRIC:
        first = ctx.rdma_zones.setdefault(key, (i, zone))
        if first[1] != zone:
            ctx.problem(
                ("pools", i, "zone"),
                f"pools[{first[0]}] already puts the {pool.region} RoCE network in {first[1]}; a RoCE VPC is created "
                f"with a zonal network profile ({first[1]}-vpc-roce), so every A3 Ultra/A4 pool of a region must "
                f"share its zone: set zone {first[1]}, or use another region",
                zone,
            )
            return None
    if len(details.groups) > 1:
        ctx.warnings.append(
            f"pools[{i}] ({pool.name}): {nodes} VMs exceed one compact placement policy "
            f"({details.max_vms_per_policy} VMs): "
            + ", ".join(f"{g.name} = nodes {g.first_node}-{g.first_node + g.nodes - 1}" for g in details.groups)
            + "; jobs that span groups cross a longer network path"
        )
    return _Placed(zone, 1, {"gcp": details})


def _boot_disk(ctx: _Ctx, it: InstanceType) -> str:
    defaults = ctx.catalog.constants.defaults.get(it.provider)
    return it.root_disk_service or (defaults.root_disk_service if defaults else gcp_plan.BOOT_DISK_DEFAULT)


def _plan_pool(ctx: _Ctx, i: int, pool: AwsPool | AzurePool | GcpPool) -> PlannedPool | None:
    """The checks every pool shares (catalog type, region, offering, zone, image, price, addresses, cost),
    around its provider's own placement."""
    if isinstance(pool, GcpPool) and pool.tpu is not None:
        return _plan_tpu_pool(ctx, i, pool)
    base: tuple[str | int, ...] = ("pools", i)
    provider = pool.provider
    assert pool.instance_type is not None
    assert pool.nodes is not None
    it = _instance_type(ctx, (*base, "instance_type"), provider, pool.instance_type)
    reg = _region(ctx, (*base, "region"), provider, pool.region)
    if it is None or reg is None:
        return None
    off = it.offering(pool.region)
    resolved = compute_price(it, pool.region, pool.market, ctx.spec.pricing.overrides)
    if off is None:
        offered = [o.region for o in it.offerings]
        if resolved.price is None:
            ctx.problem(
                (*base, "region"),
                f"{it.name} is not offered in {pool.region} per the catalog; offered in: "
                f"{', '.join(offered) or 'no region the catalog has a source for'}; if it is offered there to "
                f"you, add your rate under pricing.overrides (sku: {it.name}, region: {pool.region}, "
                "usd_per_hour: ...)",
                pool.region,
            )
            return None
        ctx.warnings.append(
            f"pools[{i}] ({pool.name}): the catalog does not list {it.name} in {pool.region}; planned with "
            f"your negotiated rate ({resolved.price.basis})"
        )
    zones = (off.zones if off else ()) or reg.zones
    if pool.zone is not None and _zone(ctx, (*base, "zone"), reg, pool.zone, zones, it.name) is None:
        return None
    defaults = ctx.catalog.constants.defaults.get(provider)
    acc = ctx.catalog.accelerator_of(it)
    default_image = defaults.gpu_image if defaults and acc is not None and acc.kind == "gpu" else None
    if pool.image is None and default_image is None:
        ctx.problem(
            (*base, "image"),
            f"the catalog has no default image for {it.name} "
            f"({acc.kind if acc else 'no accelerator'}); set image to {_IMAGE_FORMS.get(provider, 'an image')} "
            "(e.g. the Neuron DLAMI's SSM parameter for Trainium)",
        )
        return None
    image = _image(ctx, (*base, "image"), provider, pool.image, default_image)
    if isinstance(pool, AwsPool):
        placed = _place_aws(ctx, i, pool, it, reg, zones, image)
    elif isinstance(pool, AzurePool):
        placed = _place_azure(ctx, i, pool, it, reg, zones, image)
    else:
        placed = _place_gcp(ctx, i, pool, it, reg, zones, image)
    if placed is None:
        return None
    if resolved.warning:
        ctx.warnings.append(f"pools[{i}] ({pool.name}): {resolved.warning}")
    if resolved.price is None:
        ctx.warnings.append(
            f"pools[{i}] ({pool.name}): the catalog has no {pool.market} price for {it.name} in {pool.region}, so "
            f"the pool's instances are left out of the cost ({UNPRICED_NOTE}); add your rate under pricing.overrides "
            f"(sku: {it.name}, region: {pool.region}, usd_per_hour: ...)"
        )
    network = ctx.need((*base, "region"), provider, pool.region, placed.zone, pool.nodes * placed.addresses_per_node)
    if isinstance(pool, AzurePool) and pool.resource_group:
        ctx.resource_group(i, network, pool.resource_group)
    volumes_month = _service_month(
        ctx,
        provider,
        _boot_disk(ctx, it),
        pool.region,
        pool.nodes * pool.root_volume_gib,
        f"the root volumes of pool {pool.name}",
    )
    return _pool_record(
        ctx,
        i,
        pool.name,
        provider,
        reg,
        placed.zone,
        network,
        _facts(ctx, it),
        pool.nodes,
        pool.market,
        resolved.price,
        pool.nodes,
        volumes_month,
        **placed.details,
    )


def _plan_tpu_pool(ctx: _Ctx, i: int, pool: GcpPool) -> PlannedPool | None:
    """A pool of Cloud TPU slices: the slice shape from the catalog, priced per chip-hour."""
    base: tuple[str | int, ...] = ("pools", i)
    assert pool.tpu is not None
    reg = _region(ctx, (*base, "region"), "gcp", pool.region)
    tpu = gcp_plan.tpu_generation(ctx.catalog.tpu_types, pool.tpu)
    if tpu is None:
        known = ", ".join(f"{t.type_prefix}-N" for t in ctx.catalog.tpu_types.values())
        ctx.problem((*base, "tpu"), f"no TPU generation in the catalog has this name; known: {known}", pool.tpu)
        return None
    chips, why = gcp_plan.slice_chips(tpu, pool.tpu)
    if chips is None:
        ctx.problem((*base, "tpu"), why, pool.tpu)
        return None
    if reg is None:
        return None
    off = tpu.offering(pool.region)
    resolved = compute_price(tpu, pool.region, pool.market, ctx.spec.pricing.overrides)
    if off is None and resolved.price is None:
        ctx.problem(
            (*base, "region"),
            f"TPU {tpu.name} is not offered in {pool.region} per the catalog; offered in: "
            f"{', '.join(o.region for o in tpu.offerings)}",
            pool.region,
        )
        return None
    zones = (off.zones if off else ()) or reg.zones
    if pool.zone is not None and _zone(ctx, (*base, "zone"), reg, pool.zone, zones, f"TPU {tpu.name}") is None:
        return None
    zone = pool.zone or zones[0]
    if pool.zone is None:
        ctx.warnings.append(f"pools[{i}] ({pool.name}) has no zone; placed in {zone} (TPU slices are zonal)")
    if resolved.warning:
        ctx.warnings.append(f"pools[{i}] ({pool.name}): {resolved.warning}")
    if resolved.price is None:
        ctx.warnings.append(
            f"pools[{i}] ({pool.name}): the catalog has no {pool.market} price for TPU {tpu.name} in {pool.region}, "
            f"so the pool's chips are left out of the cost ({UNPRICED_NOTE}); add your rate per chip-hour under "
            f"pricing.overrides (sku: {tpu.accelerator}, region: {pool.region}, usd_per_hour: ...)"
        )
    details = gcp_plan.tpu_details(pool, tpu, chips)
    hosts = details.hosts_per_slice * len(details.slices)
    key = ctx.need((*base, "region"), "gcp", pool.region, zone, hosts)
    ctx.fabrics.setdefault(key, set()).add("ici")
    if tpu.host_power_kw is None:
        ctx.warnings.append(
            f"pools[{i}] ({pool.name}): Google publishes no power figure for TPU {tpu.name} hosts, so the pool's "
            "power and carbon are not in the totals"
        )
    acc = ctx.catalog.accelerators[tpu.accelerator]
    facts = _Facts(
        name=pool.tpu,
        family=f"TPU {tpu.name}",
        accelerator=acc.id,
        accelerator_name=acc.name,
        accelerator_kind=acc.kind,
        bf16_tflops=acc.bf16_tflops,
        per_node=details.chips_per_host,
        vcpus=tpu.host_vcpus or 0,
        cpu_topology=CpuTopology(sockets=None, cores_per_socket=None, threads_per_core=None),  # not in the catalog
        memory_gib=tpu.host_memory_gib or 0.0,
        fabric="ici",
        bandwidth_gbps=(acc.interconnect_gb_s or 0.0) * 8 * details.chips_per_host,
        node_power_kw=tpu.host_power_kw or 0.0,
        power_basis="datasheet" if tpu.host_power_kw else "unpublished",
    )
    return _pool_record(
        ctx,
        i,
        pool.name,
        "gcp",
        reg,
        zone,
        key,
        facts,
        hosts,
        pool.market,
        resolved.price,
        chips * len(details.slices),
        0.0,  # a TPU VM's boot disk comes with it
        tpu=details,
    )


@dataclass(frozen=True)
class _Facts:
    """What a pool record needs to know about one node, from an instance type or a TPU generation."""

    name: str
    family: str
    accelerator: str | None
    accelerator_name: str | None
    accelerator_kind: Literal["gpu", "trainium", "tpu"] | None
    bf16_tflops: float
    per_node: int
    vcpus: int
    cpu_topology: CpuTopology
    memory_gib: float
    fabric: str
    bandwidth_gbps: float
    node_power_kw: float
    power_basis: str


def _facts(ctx: _Ctx, it: InstanceType) -> _Facts:
    acc = ctx.catalog.accelerator_of(it)
    return _Facts(
        name=it.name,
        family=it.family,
        accelerator=acc.id if acc else None,
        accelerator_name=acc.name if acc else None,
        accelerator_kind=acc.kind if acc else None,
        bf16_tflops=acc.bf16_tflops if acc else 0.0,
        per_node=it.accelerator_count,
        vcpus=it.vcpus,
        cpu_topology=it.cpu_topology,
        memory_gib=it.memory_gib,
        fabric=it.network.fabric,
        bandwidth_gbps=it.network.bandwidth_gbps,
        node_power_kw=it.node_power_kw,
        power_basis=it.power_basis,
    )


# What every warning about an unpriced item says: one rule for every item (pool, root volumes, file system,
# controller, NAT gateway, public address); the advisory policy aicluster-cluster-missing-prices names them too.
UNPRICED_NOTE = "shown as unpriced; the totals are a lower bound"


def _service_month(ctx: _Ctx, provider: str, service: str, region: str, quantity: float, what: str) -> float | None:
    """Monthly cost of `quantity` units (GiB or items) of a catalog service, at the stack's override or the
    catalog's list price; None (never 0), with a warning that names the override to add, if neither has one."""
    resolved = service_price(ctx.catalog, provider, service, region, ctx.spec.pricing.overrides)
    if resolved.price is not None:
        ctx.service_prices.append(resolved.price)
    month = service_month(ctx.catalog, resolved, quantity)
    if month is None:
        known = ctx.catalog.service_unit(provider, service) is not None
        hint = service_override_hint(ctx.catalog, provider, service, region)
        ctx.warnings.append(
            f"the catalog has no {provider} {service} price in {region}, so the cost leaves out {what} "
            f"({UNPRICED_NOTE})" + (f"; add your rate under pricing.overrides {hint}" if known else "")
        )
    return month


def _pool_record(
    ctx: _Ctx,
    i: int,
    name: str,
    provider: str,
    reg: Region,
    zone: str | None,
    network: str,
    it: _Facts,
    nodes: int,
    market: str,
    price: Price | None,
    billed: int,
    volumes_usd_per_month: float | None,
    **details: object,
) -> PlannedPool | None:
    """`price` is per unit of `billed` (node-hours, or chip-hours of a TPU pool)."""
    per_node = it.per_node
    it_kw = it.node_power_kw * nodes
    facility_kw = it_kw * reg.pue
    hours = ctx.catalog.hours_per_month
    instances = hourly_month(price.usd, billed, hours) if price is not None else None
    priced = [x for x in (instances, volumes_usd_per_month) if x is not None]
    nodes_per_rack: int | None = None
    racks: int | None = None
    rack_kw = ctx.spec.budgets.rack_kw
    if rack_kw is not None and it.node_power_kw > 0:
        nodes_per_rack = math.floor(rack_kw / it.node_power_kw)
        if nodes_per_rack == 0:
            ctx.problem(
                ("budgets", "rack_kw"),
                f"one {it.name} node draws up to {it.node_power_kw:g} kW, more than a whole rack; raise "
                f"rack_kw to at least {it.node_power_kw:g}",
                rack_kw,
            )
            return None
        racks = math.ceil(nodes / nodes_per_rack)
    tags = {**ctx.spec.tags, "aicluster:cluster": ctx.spec.name, "aicluster:pool": name}
    return PlannedPool(
        name=name,
        provider=provider,
        region=reg.name,
        zone=zone,
        network=network,
        instance_type=it.name,
        family=it.family,
        accelerator=it.accelerator,
        accelerator_name=it.accelerator_name,
        accelerator_kind=it.accelerator_kind,
        accelerators_per_node=per_node,
        nodes=nodes,
        gpus=per_node * nodes,
        vcpus_per_node=it.vcpus,
        cpu_topology=it.cpu_topology,
        memory_gib_per_node=it.memory_gib,
        fabric=it.fabric,
        network_bandwidth_gbps=it.bandwidth_gbps,
        market=market,
        price=price,
        instances_usd_per_month=instances,
        volumes_usd_per_month=volumes_usd_per_month,
        # None when nothing of the pool is priced (a TPU pool's boot disks come with its chips)
        cost_usd_per_hour=cents(math.fsum(priced) / hours) if instances is not None or any(priced) else None,
        cost_usd_per_month=cents(math.fsum(priced)) if instances is not None or any(priced) else None,
        unpriced=tuple(
            what for what, m in (("instances", instances), ("root volumes", volumes_usd_per_month)) if m is None
        ),
        node_power_kw=it.node_power_kw,
        power_basis=it.power_basis,
        power_kw_it=_round2(it_kw),
        pue=reg.pue,
        power_kw_facility=_round2(facility_kw),
        carbon_g_per_kwh=reg.carbon_g_per_kwh,
        co2e_t_per_month=_round2(facility_kw * hours * reg.carbon_g_per_kwh / 1e6),
        nodes_per_rack=nodes_per_rack,
        racks=racks,
        bf16_pflops=_round2(it.bf16_tflops * per_node * nodes / 1000),
        tags=tags,
        **details,
    )


# ------------------------------------------------------------------------------------------------
# Storage and controller
# ------------------------------------------------------------------------------------------------


def _near(ctx: _Ctx, provider: str, region: str | None) -> tuple[str, str | None] | None:
    """(region, zone) of the first pool of `provider` (in `region`, if given), from the spec itself,
    so that a pool's own error does not cascade into its neighbours'."""
    for p in ctx.spec.pools:
        if p.provider == provider and (region is None or p.region == region):
            return p.region, p.zone
    return None


def _placement(
    ctx: _Ctx,
    base: tuple[str | int, ...],
    provider: str,
    region: str | None,
    zone: str | None,
    what: str,
    *,
    zonal: bool = True,
) -> tuple[Region, str | None] | None:
    """Where a file system or controller goes: as given, else next to the first pool. A `zonal` thing
    always gets a zone where the region has zones; a regional one (an Azure VM or NetApp volume) takes
    its pool's zone, or none when the pool is regional."""
    near = _near(ctx, provider, region)
    if region is None:
        if near is None:
            ctx.problem((*base, "region"), f"no {provider} pool to place the {what} near; set region")
            return None
        reg = ctx.catalog.region(provider, near[0])
        if reg is None:
            return None  # the pool's region is wrong, and reported there
    else:
        reg = _region(ctx, (*base, "region"), provider, region)
        if reg is None:
            return None
    if zone is not None:
        checked = _zone(ctx, (*base, "zone"), reg, zone, (), f"the {what}")
        return (reg, checked) if checked else None
    if near is not None and near[0] == reg.name and near[1] in reg.zones:
        return reg, near[1]
    if not zonal or not reg.zones:
        return reg, None
    return reg, reg.zones[0]


def _plan_storage(ctx: _Ctx, i: int, st: LustreStorage | NfsStorage) -> PlannedFilesystem | None:
    base: tuple[str | int, ...] = ("storage", i)
    provider = st.provider or ctx.spec.pools[0].provider
    # Managed Lustre is zonal everywhere; Azure NetApp Files volumes are regional unless pinned.
    zonal = provider != "azure" or st.kind == "lustre"
    where = _placement(ctx, base, provider, st.region, st.zone, "file system", zonal=zonal)
    if where is None:
        return None
    reg, zone = where
    tiers = ctx.catalog.storage_tiers_for(provider, st.kind)
    if not tiers:
        ctx.problem((*base, "kind"), f"no {st.kind} file system for {provider} in the catalog", st.kind)
        return None
    if isinstance(st, LustreStorage):
        # one service per provider answers `kind: lustre` (the catalog's first): GCP's Parallelstore record
        # is kept for reference, but only Managed Lustre is offered for the kind
        tiers = [t for t in tiers if t.service == tiers[0].service]
        tier = next((t for t in tiers if t.throughput_mb_s_per_tib == st.throughput_mb_s_per_tib), None)
        if tier is None:
            allowed = sorted({t.throughput_mb_s_per_tib for t in tiers})
            ctx.problem(
                (*base, "throughput_mb_s_per_tib"),
                f"not a {tiers[0].service} throughput tier; allowed: {', '.join(f'{a:g}' for a in allowed)}",
                st.throughput_mb_s_per_tib,
            )
            return None
    else:
        # NFS tiers of one service may cover capacity ranges that cannot be crossed later (Filestore Zonal
        # below and above 10 TiB): take the first whose range holds the request.
        wanted = math.ceil(st.capacity_tib * 1024)
        tier = next((t for t in tiers if t.max_capacity_gib is None or wanted <= t.max_capacity_gib), tiers[-1])
    requested_gib = math.ceil(st.capacity_tib * 1024)
    named = round(st.capacity_tib * 1000)
    as_named = (
        not _valid_size(requested_gib, tier) and abs(st.capacity_tib * 1000 - named) < 1e-6 and _valid_size(named, tier)
    )
    capacity = (
        named
        if as_named  # "1.2 TiB" / "2.4 TiB": the service's own name for 1,200 / 2,400 GiB
        else _round_capacity(requested_gib, tier.min_capacity_gib, tier.capacity_step_gib, tier.allowed_first_sizes_gib)
    )
    if tier.max_capacity_gib is not None and capacity > tier.max_capacity_gib:
        ctx.problem(
            (*base, "capacity_tib"),
            f"larger than the {tier.service} maximum of {tier.max_capacity_gib / 1024:g} TiB",
            st.capacity_tib,
        )
        return None
    if tier.request_above_gib is not None and capacity > tier.request_above_gib:
        ctx.warnings.append(
            f"storage[{i}] ({st.name}): {capacity / 1024:g} TiB is above the {tier.request_above_gib / 1024:g} TiB "
            f"that {tier.service} {tier.deployment} allows by default: open a support request for a larger "
            '("large cluster") file system before deploying, or creation fails'
        )
    rounding = None
    if as_named and capacity != requested_gib:
        rounding = (
            f"{st.capacity_tib:g} TiB taken as the {capacity} GiB size, which {tier.service} calls "
            f"{st.capacity_tib:g} TiB ({requested_gib - capacity} GiB less than {st.capacity_tib:g} x 1,024)"
        )
    elif capacity != requested_gib:
        rounding = (
            f"{st.capacity_tib:g} TiB ({requested_gib} GiB) rounded up to {capacity} GiB: "
            f"{tier.service} {tier.deployment} sizes are "
            + (
                f"{', '.join(map(str, tier.allowed_first_sizes_gib))} GiB or "
                if tier.allowed_first_sizes_gib
                else f"at least {tier.min_capacity_gib} GiB in "
            )
            + f"multiples of {tier.capacity_step_gib} GiB"
        )
    resolved = storage_price(tier, reg.name, ctx.spec.pricing.overrides)
    if resolved.price is None:
        # Not every list price is published where the catalog can cite it (Azure Managed Lustre): plan
        # without it, say so, and let the policy pack's budget rule report the unpriced item too.
        ctx.warnings.append(
            f"storage[{i}] ({st.name}): the catalog has no {tier.service} {tier.deployment} price in {reg.name}, so "
            f"the file system is left out of the cost ({UNPRICED_NOTE}); add your rate under pricing.overrides "
            f"(sku: {tier.sku}, region: {reg.name}, usd_per_gib_month: ...)"
        )
    role = _STORAGE_SUBNETS.get((provider, tier.service), "compute")
    first = ctx.dedicated.setdefault((f"{provider}-{reg.name}", role), i) if role == "lustre" else i
    if first != i:
        ctx.problem(
            (*base, "kind"),
            f"storage[{first}] is already the Managed Lustre file system of {provider}/{reg.name}, and each one "
            "needs a subnet of its own, which aicluster gives one per region: grow that file system instead, or put "
            "this one in another region",
            st.kind,
        )
        return None
    network = ctx.need((*base, "region"), provider, reg.name, zone, 0, role=role)
    month = storage_month(resolved, capacity)
    tib = capacity / 1024
    return PlannedFilesystem(
        name=st.name,
        kind=st.kind,
        provider=provider,
        region=reg.name,
        zone=zone,
        network=network,
        service=tier.service,
        deployment=tier.deployment,
        mount=st.mount,
        requested_tib=st.capacity_tib,
        capacity_gib=capacity,
        capacity_tib=round(tib, 3),
        rounding=rounding,
        throughput_mb_s_per_tib=tier.throughput_mb_s_per_tib,
        throughput_mb_s=round(tib * tier.throughput_mb_s_per_tib, 1),
        price=resolved.price,
        cost_usd_per_month=month,
        cost_usd_per_hour=cents(month / ctx.catalog.hours_per_month) if month is not None else None,
        tags={**ctx.spec.tags, "aicluster:cluster": ctx.spec.name, "aicluster:storage": st.name},
    )


# File systems that live in a dedicated subnet of their network rather than in the compute subnet.
_STORAGE_SUBNETS = {
    ("azure", "azure-managed-lustre"): "lustre",  # its own subnet, never moved after creation
    ("azure", "azure-netapp-files"): "netapp",  # a subnet delegated to Microsoft.NetApp/volumes
    # GCP's managed file systems take their addresses from the network's private services access range
    ("gcp", "gcp-managed-lustre"): "services",
    ("gcp", "filestore"): "services",
}


def _with_clients(
    ctx: _Ctx, fs: PlannedFilesystem, pools: list[PlannedPool], controller: PlannedController | None
) -> PlannedFilesystem:
    """The zones whose nodes mount `fs`; warn when Lustre traffic has to cross zones."""
    regional = [p.name for p in pools if p.network == fs.network and p.zone is None]
    if fs.kind == "lustre" and fs.zone is not None and regional:
        ctx.warnings.append(
            f"{fs.name} ({fs.service}) is in zone {fs.zone}; pool(s) {', '.join(regional)} have no zone and may land "
            f"in another one (more latency, inter-zone data charges); set their zone to {fs.zone}"
        )
    users = [(p.name, p.zone) for p in pools if p.network == fs.network and p.zone]
    if controller is not None and controller.network == fs.network and controller.zone:
        users.append(("controller", controller.zone))
    zones = tuple(sorted({*([fs.zone] if fs.zone else []), *(z for _, z in users if z)}))
    if fs.kind == "lustre":
        far = sorted({name for name, zone in users if zone != fs.zone and name != "controller"})
        if far:
            ctx.warnings.append(
                f"{fs.name} ({fs.service}) is in {fs.zone}; pool(s) {', '.join(far)} reach it across zones "
                "(more latency, and inter-zone data charges); set its zone to where the busiest pool runs"
            )
    return fs.model_copy(update={"client_zones": zones})


def _valid_size(size: int, tier: StorageTier) -> bool:
    return size in tier.allowed_first_sizes_gib or (
        size >= tier.min_capacity_gib and size % tier.capacity_step_gib == 0
    )


def _round_capacity(requested: int, minimum: int, step: int, first: tuple[int, ...]) -> int:
    for size in sorted(first):
        if requested <= size:
            return size
    if requested <= minimum:
        return minimum
    return math.ceil(requested / step) * step


def _plan_controller(ctx: _Ctx) -> PlannedController | None:
    sched = ctx.spec.scheduler
    if not isinstance(sched, SlurmScheduler):
        ctx.problem(
            ("scheduler", "kind"), "Kubernetes control planes (EKS/GKE/AKS) are not built yet; use slurm", sched.kind
        )
        return None
    base: tuple[str | int, ...] = ("scheduler", "controller")
    c = sched.controller
    provider = c.provider or ctx.spec.pools[0].provider
    defaults = ctx.catalog.constants.defaults.get(provider)
    where = _placement(ctx, base, provider, c.region, None, "controller", zonal=provider != "azure")
    type_name = c.instance_type or (defaults.controller_instance_type if defaults else None)
    if type_name is None:
        ctx.problem((*base, "instance_type"), f"the catalog has no default {provider} controller type; set one")
        return None
    if where is None:
        return None
    reg, zone = where
    it = _instance_type(ctx, (*base, "instance_type"), provider, type_name)
    if it is None:
        return None
    resolved = compute_price(it, reg.name, "on-demand", ctx.spec.pricing.overrides)
    if resolved.price is None:
        _unpriced_controller(ctx, it, reg.name, defaulted=c.instance_type is None)
    network = ctx.need((*base, "region"), provider, reg.name, zone, 1)
    image = _image(ctx, base, provider, None, defaults.controller_image if defaults else None)
    root_gib = {
        "azure": azure_plan.CONTROLLER_ROOT_VOLUME_GIB,
        "gcp": gcp_plan.CONTROLLER_ROOT_VOLUME_GIB,
    }.get(provider, aws_plan.CONTROLLER_ROOT_VOLUME_GIB)
    volume_month = _service_month(
        ctx,
        provider,
        _boot_disk(ctx, it),
        reg.name,
        root_gib,
        "the controller's root volume",
    )
    instance_month = hourly_month(resolved.price.usd, 1, ctx.catalog.hours_per_month) if resolved.price else None
    priced = [x for x in (instance_month, volume_month) if x is not None]
    month = cents(sum(priced)) if priced else None
    return PlannedController(
        kind="slurm",
        root_volume_gib=root_gib,
        root_disk_service=_boot_disk(ctx, it),
        imds_hop_limit=aws_plan.CONTROLLER_IMDS_HOP_LIMIT if provider == "aws" else None,
        provider=provider,
        region=reg.name,
        zone=zone,
        network=network,
        instance_type=it.name,
        image=image,
        price=resolved.price,
        instance_usd_per_month=instance_month,
        volume_usd_per_month=volume_month,
        cost_usd_per_hour=cents(month / ctx.catalog.hours_per_month) if month is not None else None,
        cost_usd_per_month=month,
        unpriced=tuple(
            what for what, m in ((f"instance {it.name}", instance_month), ("root volume", volume_month)) if m is None
        ),
        node_power_kw=it.node_power_kw,
        power_kw_facility=_round2(it.node_power_kw * reg.pue),
        co2e_t_per_month=_round2(it.node_power_kw * reg.pue * ctx.catalog.hours_per_month * reg.carbon_g_per_kwh / 1e6),
    )


def _unpriced_controller(ctx: _Ctx, it: InstanceType, region: str, defaulted: bool) -> None:
    """The one rule for an unpriced item, for the controller: a warning that says where its type came from and
    what to set; the controller is planned, and left out of the cost (the totals say so)."""
    priced = sorted(
        (
            (p.price.usd, t.name)
            for (provider, _), t in ctx.catalog.instance_types.items()
            if provider == it.provider
            and t.accelerator_count == 0
            and t.vcpus >= CONTROLLER_MIN_VCPUS
            and (p := compute_price(t, region, "on-demand", ctx.spec.pricing.overrides)).price is not None
        )
    )[:3]
    where = (
        f"scheduler.controller.instance_type is not set, and the catalog's default {it.provider} controller "
        f"type, {it.name},"
        if defaulted
        else f"scheduler.controller.instance_type {it.name}"
    )
    instead = (
        f"set scheduler.controller.instance_type to a type priced there ({', '.join(n for _, n in priced)}), or "
        if priced
        else ""
    )
    ctx.warnings.append(
        f"{where} has no on-demand price in {region} in the catalog, so the controller is left out of the cost "
        f"({UNPRICED_NOTE}): {instead}add your rate under pricing.overrides "
        f"(sku: {it.name}, region: {region}, usd_per_hour: ...)"
    )


# A Slurm controller runs slurmctld and slurmdbd: the smallest type suggested in place of an unpriced one.
CONTROLLER_MIN_VCPUS = 4


# ------------------------------------------------------------------------------------------------
# Networks
# ------------------------------------------------------------------------------------------------


def _plan_networks(ctx: _Ctx) -> list[PlannedNetwork]:
    net = ctx.spec.network
    by_provider: dict[str, str] = {}
    for key, user in ctx.network_users.items():
        provider, region = key.split("-", 1)
        if provider in by_provider and by_provider[provider] != key:
            first = ctx.network_users[by_provider[provider]]
            ctx.problem(
                user,
                f"the cluster already has its {provider} network in {by_provider[provider].split('-', 1)[1]} "
                f"({format_path(first)}); networks in several regions of one provider need peering, which "
                f"aicluster does not build yet: keep the {provider} pools, storage and controller in one region, "
                "or split the cluster into two stacks",
                region,
            )
        by_provider.setdefault(provider, key)
    pinned = {f"{k.split('/')[0]}-{k.split('/')[1]}": v for k, v in net.cidrs.items()}
    for key in pinned:
        if key not in ctx.addresses:
            ctx.problem(
                ("network", "cidrs", key.replace("-", "/", 1)),
                "no pool, file system or controller uses this network",
                key.replace("-", "/", 1),
            )
    blocks: dict[str, str] = {}
    for key in ctx.addresses:
        provider, region = key.split("-", 1)
        path: tuple[str | int, ...] = ("network", "cidrs", f"{provider}/{region}")
        if key in pinned:
            blocks[key] = pinned[key]
        else:
            try:
                slot = ctx.catalog.network_slot(provider, region)
                blocks[key] = network_block(net.supernet, net.network_prefix, slot)
            except (KeyError, AddressError) as exc:
                ctx.problem(
                    ("network", "supernet"),
                    f"no fixed block for {provider}/{region}: {exc}; pin it under "
                    f"network.cidrs ({provider}/{region}: <cidr>)",
                    net.supernet,
                )
                continue
            path = ("network", "supernet")
        # each range the block must stay clear of, with what it is
        others = [
            *((c, f"network.exclude[{i}] ({c}), a range you marked as in use") for i, c in enumerate(net.exclude)),
            *(
                (c, f"{c}, which Azure reserves for its InfiniBand (RDMA) network")
                for c in (AZURE_RESERVED if provider == "azure" else ())
            ),
            *((v, f"the {k.replace('-', '/', 1)} network {v}") for k, v in blocks.items() if k != key),
        ]
        clash = overlaps(blocks[key], [c for c, _ in others])
        if clash is not None:
            what = next(label for c, label in others if c == clash)
            origin = "pinned under network.cidrs" if key in pinned else "its default block of network.supernet"
            clear = ", clear of network.exclude," if what.startswith("network.exclude") else ""
            ctx.problem(
                path,
                f"the {provider}/{region} network {blocks[key]} ({origin}) overlaps {what}; pin another block{clear} "
                f"under network.cidrs ({provider}/{region}: <cidr>)",
                blocks[key],
            )
    out = []
    for key, zones in ctx.addresses.items():
        if key not in blocks:
            continue
        provider, region = key.split("-", 1)
        reg = ctx.catalog.region(provider, region)
        assert reg is not None
        roles = ctx.subnet_roles.get(key, {})
        if provider == "azure":
            layout = azure_subnets(blocks[key], zones, set(roles))
        elif provider == "gcp":
            layout = gcp_subnets(blocks[key], zones, roles)
        else:
            layout = aws_subnets(blocks[key], reg.zones, zones)
        subnets = []
        full: set[str] = set()
        for cut in layout:
            available = usable(cut.cidr)
            if cut.role in _NODE_SUBNETS and cut.need > available and cut.role not in full:
                full.add(cut.role)  # every GPU NIC subnet of a role is the same size: report the first
                where = (
                    f"zone {cut.zone}"
                    if cut.zone
                    else f"the {region} {cut.role} subnet" + (f" {cut.index}" if cut.role in ("gpu", "rdma") else "")
                )
                ctx.problem(
                    ctx.network_users[key],
                    f"{where} needs {cut.need:,} addresses (nodes, file systems and "
                    f"headroom) but its subnet {cut.cidr} holds {available:,}; "
                    + (
                        "spread the pools over more zones"
                        if cut.zone
                        else "split the cluster, or pin a larger block under network.cidrs "
                        f"({provider}/{region}: <cidr>)"
                        if provider == "gcp"
                        else "split the cluster"
                    )
                    + (
                        f" or lower network.network_prefix (now {net.network_prefix})"
                        if net.network_prefix > 16
                        else ""
                    ),
                    region,
                )
            subnets.append(
                Subnet(
                    zone=cut.zone,
                    cidr=cut.cidr,
                    role=cut.role,
                    index=cut.index,
                    addresses_needed=cut.need,
                    addresses_available=available,
                )
            )
        # AWS: one NAT gateway (and its public IPv4 address) per zone in use; Azure: one per network,
        # attached to its compute subnet (a NAT gateway serves every subnet of a VNet it is attached to);
        # GCP: one Cloud NAT on the host VPC's regional router.
        nats = len(zones) if provider == "aws" else 1
        # priced one gateway (and address) at a time, as the policy pack sees them, so the figures agree
        gateway = _service_month(ctx, provider, "nat-gateway", region, 1, f"the {key} network's NAT gateways")
        address = _service_month(
            ctx, provider, "public-ipv4", region, 1, f"the {key} network's NAT public IPv4 addresses"
        )
        nat_m = cents(gateway * nats) if gateway is not None else None
        ipv4_m = cents(address * nats) if address is not None else None
        priced = [x for x in (nat_m, ipv4_m) if x is not None]
        rg = ctx.resource_groups.get(key)
        out.append(
            PlannedNetwork(
                key=key,
                provider=provider,
                region=region,
                cidr=blocks[key],
                subnets=tuple(subnets),
                nat_gateways=nats,
                nat_usd_per_month=nat_m,
                ipv4_usd_per_month=ipv4_m,
                cost_usd_per_month=cents(sum(priced)) if priced else None,
                unpriced=tuple(
                    what for what, m in (("NAT gateways", nat_m), ("public IPv4 addresses", ipv4_m)) if m is None
                ),
                resource_group=rg[1] if rg else None,
                **(_gcp_vpcs(ctx, key, roles) if provider == "gcp" else {}),
            )
        )
    return out


# Subnets whose size the nodes decide (one address per node NIC): checked against what they hold.
_NODE_SUBNETS = frozenset({"compute", "gvnic", "gpu", "rdma"})


def _gcp_vpcs(ctx: _Ctx, key: str, roles: dict[str, int]) -> dict[str, object]:
    """The host VPC's MTU and the extra VPCs the network's GPU NICs need."""
    fabrics = ctx.fabrics.get(key, set())
    # 8244 for the GPUDirect-TCPX(O) layouts; 8896 (the VPC maximum) for RDMA and TPU networks
    # (Multislice traffic crosses the host VPC) and networks with no GPU fabric.
    jumbo = bool(fabrics & {gcp_plan.RDMA_FABRIC, "ici"}) or not fabrics & gcp_plan.TCPX_FABRICS
    vpcs = [
        GcpVpc(name=f"gpu-{k}", role="gpu", mtu=gcp_plan.MTU_TCPX, subnets=(k,))
        for k in range(8)
        if f"gpu-{k}" in roles
    ]
    if "gvnic" in roles:
        vpcs.append(GcpVpc(name="gvnic-1", role="gvnic", mtu=gcp_plan.MTU_JUMBO, subnets=(0,)))
    rdma = tuple(k for k in range(8) if f"rdma-{k}" in roles)
    if rdma:
        vpcs.append(
            GcpVpc(
                name="rdma",
                role="rdma",
                mtu=gcp_plan.MTU_JUMBO,
                subnets=rdma,
                network_profile_zone=ctx.rdma_zones[key][1],
                firewall_internal=False,  # a RoCE VPC accepts no firewall rules
            )
        )
    return {"mtu": gcp_plan.MTU_JUMBO if jumbo else gcp_plan.MTU_TCPX, "vpcs": tuple(vpcs)}


def _check_overrides(ctx: _Ctx) -> None:
    """Every negotiated rate must be able to apply: a known SKU (instance type, TPU generation, storage tier or
    catalog service), the SKU's unit, a known region, and no doubt about which provider's service it prices."""
    cat = ctx.catalog
    instance_providers = {n: p for (p, n) in cat.instance_types}
    instance_providers.update({t.accelerator: t.provider for t in cat.tpu_types.values()})
    storage = {t.sku: t.provider for t in cat.storage_tiers}
    services: dict[str, list[str]] = {}
    for p, name in sorted(cat.services):
        services.setdefault(name, []).append(p)
    used: set[str] = {pool.provider for pool in ctx.spec.pools}
    for j, o in enumerate(ctx.spec.pricing.overrides):
        base: tuple[str | int, ...] = ("pricing", "overrides", j)
        if o.sku in instance_providers:
            providers = [instance_providers[o.sku]]
            if o.usd_per_gib_month is not None:
                ctx.problem(
                    (*base, "usd_per_gib_month"), f"{o.sku} is an instance type: give usd_per_hour", o.usd_per_gib_month
                )
        elif o.sku in storage:
            providers = [storage[o.sku]]
            if o.usd_per_hour is not None:
                ctx.problem(
                    (*base, "usd_per_hour"), f"{o.sku} is a storage tier: give usd_per_gib_month", o.usd_per_hour
                )
            if o.market is not None:
                ctx.problem((*base, "market"), "storage has no market; drop it", o.market)
        elif o.sku in services:
            providers = services[o.sku]
            _check_service_override(ctx, base, o, providers, used)
        else:
            known = sorted({*instance_providers, *storage, *services})
            ctx.problem(
                (*base, "sku"),
                "not an instance type, storage tier or service (disk, NAT gateway, public address) in the catalog",
                o.sku,
                did_you_mean(o.sku, known),
            )
            continue
        if o.region is not None and not any(cat.region(p, o.region) for p in providers):
            names = sorted({n for p in providers for n in cat.region_names(p)})
            ctx.problem(
                (*base, "region"),
                f"the catalog has no {' or '.join(providers)} region of that name",
                o.region,
                did_you_mean(o.region, names),
            )


def _check_service_override(
    ctx: _Ctx, base: tuple[str | int, ...], o: PriceOverride, providers: list[str], used: set[str]
) -> None:
    """A service's rate is in the unit the catalog bills it in, has no market, and names its region where
    the service's name is shared by several providers of the stack (nat-gateway on AWS and Azure)."""
    units = {u for p in providers if (u := ctx.catalog.service_unit(p, o.sku)) is not None}
    for unit, wrong, right in (
        ("hour", "usd_per_gib_month", "usd_per_hour"),
        ("gib-month", "usd_per_hour", "usd_per_gib_month"),
    ):
        given = getattr(o, wrong)
        if unit in units and given is not None:
            per = "per hour" if unit == "hour" else "per GiB-month"
            ctx.problem((*base, wrong), f"{o.sku} is billed {per}: give {right}", given)
    if o.market is not None:
        ctx.problem((*base, "market"), f"{o.sku} is a service and has no market; drop it", o.market)
    sharing = [p for p in providers if p in used]
    if o.region is None and len(sharing) > 1:
        ctx.problem(
            (*base, "region"),
            f"{o.sku} is a service of {' and '.join(sharing)}, which this cluster both uses: give the region it "
            "prices (one override per region)",
            has_value=False,
        )


# Frameworks whose controls require an audit trail of API activity: SOC 2 CC7.2, HIPAA 164.312(b),
# PCI DSS requirement 10, ISO/IEC 27001:2022 A.8.15. GDPR alone does not.
AUDITED_FRAMEWORKS = frozenset({"soc2", "hipaa", "pci-dss", "iso27001"})


def _needs_audit_log(spec: ClusterSpec) -> bool:
    return bool(AUDITED_FRAMEWORKS.intersection(spec.compliance.frameworks))


def _unused_overrides(ctx: _Ctx, prices: list[Price]) -> None:
    used = {p.basis for p in [*prices, *ctx.service_prices]}
    for j, _ in enumerate(ctx.spec.pricing.overrides):
        if f"pricing.overrides[{j}]" not in used:
            ctx.warnings.append(
                f"pricing.overrides[{j}] matches no pool, file system, controller, disk or network charge of this "
                "cluster"
            )


# ------------------------------------------------------------------------------------------------
# The plan
# ------------------------------------------------------------------------------------------------


def cost_lines(
    pools: Sequence[PlannedPool],
    filesystems: Sequence[PlannedFilesystem],
    controller: PlannedController | None,
    networks: Sequence[PlannedNetwork],
) -> list[CostLine]:
    """The plan's monthly bill, item by item, as the policy pack's budget rule counts it (None: unpriced)."""
    lines = []
    for p in pools:
        lines.append(CostLine(f"pool {p.name}: {p.nodes} x {p.instance_type} {p.market}", p.instances_usd_per_month))
        lines.append(CostLine(f"pool {p.name}: root volumes", p.volumes_usd_per_month))
    lines += [CostLine(f"storage {f.name} ({f.service})", f.cost_usd_per_month) for f in filesystems]
    if controller is not None:
        lines.append(CostLine(f"controller {controller.instance_type}", controller.instance_usd_per_month))
        lines.append(CostLine("controller: root volume", controller.volume_usd_per_month))
    for n in networks:
        lines.append(CostLine(f"network {n.key}: {n.nat_gateways} x NAT gateway", n.nat_usd_per_month))
        lines.append(CostLine(f"network {n.key}: {n.nat_gateways} x NAT public IPv4", n.ipv4_usd_per_month))
    return lines


def plan(spec: ClusterSpec, catalog: Catalog) -> ClusterPlan:
    """Resolve a validated spec against the catalog. Raises SpecError with every problem found."""
    ctx = _Ctx(spec, catalog)
    pools: list[PlannedPool] = []
    for i, pool in enumerate(spec.pools):
        planned = _plan_pool(ctx, i, pool)
        if planned is not None:
            pools.append(planned)
    _check_overrides(ctx)
    if any(p.provider == "azure" for p in spec.pools) and not spec.access.ssh_public_keys:
        ctx.problem(
            ("access", "ssh_public_keys"),
            "Azure creates every Linux VM with an admin account that needs an SSH public key (password login "
            "stays off): add yours, e.g. the line in ~/.ssh/id_ed25519.pub",
        )
    filesystems = [fs for i, st in enumerate(spec.storage) if (fs := _plan_storage(ctx, i, st)) is not None]
    controller = _plan_controller(ctx)
    networks = _plan_networks(ctx)
    if ctx.problems:
        raise SpecError("", ctx.problems)
    filesystems = [_with_clients(ctx, fs, pools, controller) for fs in filesystems]
    _unused_overrides(
        ctx,
        [p.price for p in pools if p.price is not None]
        + [f.price for f in filesystems if f.price is not None]
        + ([controller.price] if controller and controller.price else []),
    )

    hours = catalog.hours_per_month
    cost = total(cost_lines(pools, filesystems, controller, networks))
    it_kw = sum(p.power_kw_it for p in pools)
    fac_kw = sum(p.power_kw_facility for p in pools)
    co2 = sum(p.co2e_t_per_month for p in pools)
    if controller is not None:
        co2 += controller.co2e_t_per_month
        it_kw += controller.node_power_kw
        fac_kw += controller.power_kw_facility
    racks = sum(p.racks for p in pools if p.racks is not None) if spec.budgets.rack_kw else None
    totals = Totals(
        nodes=sum(p.nodes for p in pools),
        gpus=sum(p.gpus for p in pools),
        cost_usd_per_hour=cents(cost.usd_per_month / hours),
        cost_usd_per_month=cost.usd_per_month,
        power_kw_it=_round2(it_kw),
        power_kw_facility=_round2(fac_kw),
        co2e_t_per_month=_round2(co2),
        racks=racks,
        bf16_pflops=_round2(sum(p.bf16_pflops for p in pools)),
        storage_tib=round(sum(f.capacity_tib for f in filesystems), 3),
        storage_throughput_gb_s=round(sum(f.throughput_mb_s for f in filesystems) / 1000, 2),
        unpriced=cost.unpriced,
    )
    return ClusterPlan(
        name=spec.name,
        tags={**spec.tags, "aicluster:cluster": spec.name},
        scheduler=spec.scheduler.kind,
        pools=tuple(pools),
        networks=tuple(networks),
        filesystems=tuple(filesystems),
        controller=controller,
        totals=totals,
        budgets=spec.budgets,
        compliance=spec.compliance,
        pricing=spec.pricing,
        access=spec.access,
        audit_logging=tuple(sorted({n.provider for n in networks})) if _needs_audit_log(spec) else (),
        hours_per_month=hours,
        warnings=tuple(ctx.warnings),
    )
