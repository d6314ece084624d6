"""What every provider's planner shares: the planning context and the checks and records common to all pools.

Imports only aicluster.spec, aicluster.catalog and aicluster.plan.models (and the scheduler protocol, for its type):
provider and scheduler planners (aicluster.providers.<p>.plan, aicluster.schedulers.<kind>.plan) import this module,
and the plan package imports them through its registry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from aicluster.catalog import Catalog, CpuTopology, InstanceType, Region
from aicluster.catalog.pricing import Price, cents, hourly_month, service_month, service_override_hint, service_price
from aicluster.spec import ClusterSpec, Problem, did_you_mean

from .models import PlannedPool, PlannedRollout, PoolNvlink

if TYPE_CHECKING:
    from aicluster.schedulers.base import SchedulerPlanner


@dataclass
class PlanCtx:
    spec: ClusterSpec
    catalog: Catalog
    # the stack's scheduler (SCHEDULERS[spec.scheduler.kind]): what provider planners ask of it
    scheduler: SchedulerPlanner
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # zone -> addresses needed, per network key; and the field that first asked for each network
    addresses: dict[str, dict[str | None, int]] = field(default_factory=dict)
    network_users: dict[str, tuple[str | int, ...]] = field(default_factory=dict)
    # network key -> subnet roles besides compute asked for (Azure's lustre and netapp subnets, GCP's GPU NIC
    # subnets "gpu-<k>"/"rdma-<k>", "gvnic" and "services") -> addresses needed in them
    subnet_roles: dict[str, dict[str, int]] = field(default_factory=dict)
    # (network key, subnet role) -> the storage index that has the role's one dedicated subnet
    dedicated: dict[tuple[str, str], int] = field(default_factory=dict)
    # the rates of the service charges priced so far (root disks, NAT gateways, addresses): which overrides apply
    service_prices: list[Price] = field(default_factory=list)
    # provider name -> that provider planner's own state for this run
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the pricing.overrides entries whose `offered: true` a pool was planned on (used, even without a rate)
    offered_overrides: set[int] = field(default_factory=set)

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

    def state(self, provider: str) -> dict[str, Any]:
        """A provider planner's own state for this run (GCP's RoCE zones, Azure's resource groups)."""
        return self.extra.setdefault(provider, {})


def round2(x: float) -> float:
    return round(x, 2)


def region_of(ctx: PlanCtx, path: tuple[str | int, ...], provider: str, name: str) -> Region | None:
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


def zone_of(
    ctx: PlanCtx, path: tuple[str | int, ...], reg: Region, zone: str | None, allowed: tuple[str, ...], what: str
) -> str | None:
    if zone is None:
        return None
    choices = list(allowed or reg.zones)
    if zone not in reg.zones and zone not in reg.local_zones:
        ctx.problem(
            path,
            f"not a zone of {reg.name}; zones: {', '.join(reg.zones)}"
            + (f"; Local Zones: {', '.join(reg.local_zones)}" if reg.local_zones else ""),
            zone,
            did_you_mean(zone, [*reg.zones, *reg.local_zones]),
        )
        return None
    if zone not in choices:
        ctx.problem(path, f"{what} is not offered in {zone} per the catalog; offered in: {', '.join(choices)}", zone)
        return None
    return zone


def offered_zones(
    ctx: PlanCtx,
    base: tuple[str | int, ...],
    label: str,
    what: str,
    sku: str,
    reg: Region,
    offered: bool,
    catalog_zones: tuple[str, ...],
    offered_in: list[str],
    zone: str | None,
) -> tuple[str, ...] | None:
    """The zones a pool of `what` (price sku `sku`) may use in `reg`: the catalog's offering, widened only by an
    explicit `offered: true` override (region, zones, reason), with a warning that the plan took the stack's word.
    A price override never makes a type offered. None: a problem was reported."""
    said = next(
        (
            (j, o)
            for j, o in enumerate(ctx.spec.pricing.overrides)
            if o.offered and o.sku == sku and o.region == reg.name
        ),
        None,
    )
    if not offered and said is None:
        ctx.problem(
            (*base, "region"),
            f"{what} is not offered in {reg.name} per the catalog; offered in: "
            f"{', '.join(offered_in) or 'no region the catalog has a source for'}; if it is offered there to you, "
            f"say so under pricing.overrides (sku: {sku}, region: {reg.name}, offered: true, reason: ..., "
            "usd_per_hour: ...)",
            reg.name,
        )
        return None
    zones = catalog_zones or reg.zones
    if said is None:
        return zones if zone is None or zone_of(ctx, (*base, "zone"), reg, zone, zones, what) else None
    j, o = said
    bad = [z for z in o.zones if z not in reg.zones and z not in reg.local_zones]
    if bad:
        ctx.problem(
            ("pricing", "overrides", j, "zones"),
            f"{', '.join(bad)}: not a zone of {reg.name} in the catalog; zones: {', '.join(reg.zones)}",
            bad[0],
        )
        return None
    widened = (*zones, *(z for z in o.zones if z not in zones))
    if zone is not None and zone_of(ctx, (*base, "zone"), reg, zone, widened, what) is None:
        return None
    where = reg.name if not offered else zone if zone is not None and zone not in zones else None
    if where is not None:
        ctx.offered_overrides.add(j)
        ctx.warnings.append(
            f"{label}: the catalog does not list {what} in {where}; planned as offered because pricing.overrides[{j}] "
            f"says offered: true ({o.reason})"
        )
    return widened


def instance_type_of(ctx: PlanCtx, path: tuple[str | int, ...], provider: str, name: str) -> InstanceType | None:
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


class Facility(Protocol):
    """Where a pool's power is drawn: a cloud region from the catalog, or an owned site from the stack."""

    @property
    def name(self) -> str: ...
    @property
    def pue(self) -> float: ...
    @property
    def carbon_g_per_kwh(self) -> float: ...


@dataclass(frozen=True)
class Placed:
    """What a provider's pool planner adds to the checks every pool shares."""

    zone: str | None
    addresses_per_node: int
    details: dict[str, object]


@dataclass(frozen=True)
class NodeFacts:
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


def facts_of(ctx: PlanCtx, it: InstanceType) -> NodeFacts:
    acc = ctx.catalog.accelerator_of(it)
    return NodeFacts(
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


def service_cost(ctx: PlanCtx, provider: str, service: str, region: str, quantity: float, what: str) -> float | None:
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


def pool_record(
    ctx: PlanCtx,
    i: int,
    name: str,
    provider: str,
    reg: Facility,
    zone: str | None,
    network: str,
    it: NodeFacts,
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
    # an owned site's racks (its power.rack_kw), else the stack's budget; a rack-scale pool's racks are its NVLink
    # domains (an NVL72 rack is the domain; its provider or site says whether it can be powered and cooled)
    rack = details.pop("rack", None)
    assert rack is None or isinstance(rack, tuple)
    rack_kw = ctx.spec.budgets.rack_kw if rack is None else rack[1]
    nvlink = details.get("nvlink")
    if isinstance(nvlink, PoolNvlink):
        nodes_per_rack = nvlink.nodes_per_domain
        racks = len(nvlink.domains)
    elif rack_kw is not None and it.node_power_kw > 0:
        nodes_per_rack = math.floor(rack_kw / it.node_power_kw)
        if nodes_per_rack == 0:
            ctx.problem(
                ("budgets", "rack_kw") if rack is None else rack[0],
                f"one {it.name} node draws up to {it.node_power_kw:g} kW, more than a whole rack; raise "
                f"rack_kw to at least {it.node_power_kw:g}",
                rack_kw,
            )
            return None
        racks = math.ceil(nodes / nodes_per_rack)
    tags = {**ctx.spec.tags, "aicluster:cluster": ctx.spec.name, "aicluster:pool": name}
    rollout = ctx.spec.pools[i].rollout
    window = rollout.window
    return PlannedPool(
        rollout=PlannedRollout(
            strategy=rollout.strategy,
            max_unavailable=rollout.batch(nodes),
            window_days=tuple(window.days) if window else (),
            window_start=window.start if window else None,
            window_hours=window.hours if window else None,
        ),
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
        power_kw_it=round2(it_kw),
        pue=reg.pue,
        power_kw_facility=round2(facility_kw),
        carbon_g_per_kwh=reg.carbon_g_per_kwh,
        co2e_t_per_month=round2(facility_kw * hours * reg.carbon_g_per_kwh / 1e6),
        nodes_per_rack=nodes_per_rack,
        racks=racks,
        bf16_pflops=round2(it.bf16_tflops * per_node * nodes / 1000),
        tags=tags,
        **details,
    )


def image_of(
    ctx: PlanCtx,
    path: tuple[str | int, ...],
    provider: str,
    forms: str,
    is_reference: Callable[[str], bool],
    given: str | None,
    default: str | None,
    arch: str = "x86_64",
) -> str:
    """The image a pool or controller boots: the provider's own reference as given, else a catalog image id, which
    must be built for the hosts' architecture (`arch`; a provider's own reference is the stack's to get right)."""
    if given is not None:
        if is_reference(given):
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
        if img.architecture != arch:
            ids = sorted(i for (p, i), im in ctx.catalog.images.items() if p == provider and im.architecture == arch)
            ctx.problem(
                path,
                f"catalog image {given} is built for {img.architecture}, and these hosts are {arch}; use "
                + (f"one of {', '.join(ids)}" if ids else f"{forms} built for {arch}"),
                given,
            )
            return given
        return img.reference
    img = ctx.catalog.image(provider, default) if default else None
    if img is None:
        ctx.problem(path, f"the catalog has no default {provider} image here; set one ({forms})")
        return ""
    return img.reference


def boot_disk(ctx: PlanCtx, it: InstanceType, fallback: str) -> str:
    """The service that prices a node's boot disk: the type's own, else its provider's default."""
    defaults = ctx.catalog.constants.defaults.get(it.provider)
    return it.root_disk_service or (defaults.root_disk_service if defaults else fallback)
