"""`plan(spec, catalog) -> ClusterPlan`: a pure, deterministic function.

Every derived number (instance facts, NIC layout, placement, CIDRs, cost, power, racks, file-system
sizes) is computed here, once. Rules that need the catalog are checked here and reported exactly like
spec errors: a SpecError listing every problem with its field path, value and fix.

Imports only aicluster.spec and aicluster.catalog.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from aicluster.catalog import Catalog, StorageTier
from aicluster.catalog.monitoring import ManagedPrometheus
from aicluster.catalog.pricing import (
    CostLine,
    Price,
    cents,
    service_price,
    storage_month,
    storage_override_hint,
    storage_price,
    total,
)
from aicluster.spec import (
    ClusterSpec,
    LustreStorage,
    NfsStorage,
    PriceOverride,
    SpecError,
    did_you_mean,
    format_path,
    gcp_labels,
    one_network_message,
)

from .context import UNPRICED_NOTE, PlanCtx, round2, service_cost
from .models import (
    AwsGroup,
    AwsPoolDetails,
    AzurePoolDetails,
    ClusterPlan,
    GcpNic,
    GcpPoolDetails,
    GcpVpc,
    KueueTopology,
    Nic,
    NvlinkSlice,
    OnpremHost,
    OnpremPoolDetails,
    PlacementGroup,
    PlannedAddon,
    PlannedController,
    PlannedFilesystem,
    PlannedKubernetes,
    PlannedMaintenanceWindow,
    PlannedMonitoring,
    PlannedNetwork,
    PlannedNodeGroup,
    PlannedNvlinkDomain,
    PlannedPool,
    PlannedRollout,
    PlannedSite,
    PlannedVpn,
    PoolNvlink,
    ScaleSet,
    Subnet,
    Taint,
    Totals,
    TpuDetails,
    TpuSlice,
)
from .network import (
    AddressError,
    network_block,
    overlaps,
    usable,
)
from .nvlink import cluster_domains
from .placement import first_cloud, placement
from .pools import CloudPlanner, cloud_of
from .vpn import VpnSite, check_sites, overlapping_cidrs, plan_vpns
from .workloads import plan_workloads

if TYPE_CHECKING:
    from aicluster.providers.base import ProviderPlanner
    from aicluster.schedulers.base import SchedulerPlanner

__all__ = [
    "AwsGroup",
    "AwsPoolDetails",
    "AzurePoolDetails",
    "ClusterPlan",
    "GcpNic",
    "GcpPoolDetails",
    "GcpVpc",
    "KueueTopology",
    "Nic",
    "NvlinkSlice",
    "OnpremHost",
    "OnpremPoolDetails",
    "PlacementGroup",
    "PlannedAddon",
    "PlannedController",
    "PlannedFilesystem",
    "PlannedKubernetes",
    "PlannedMaintenanceWindow",
    "PlannedMonitoring",
    "PlannedNetwork",
    "PlannedNodeGroup",
    "PlannedNvlinkDomain",
    "PlannedPool",
    "PlannedRollout",
    "PlannedSite",
    "PoolNvlink",
    "Price",
    "ScaleSet",
    "Subnet",
    "Taint",
    "Totals",
    "TpuDetails",
    "TpuSlice",
    "gcp_labels",
    "plan",
]


# ------------------------------------------------------------------------------------------------
# Storage
# ------------------------------------------------------------------------------------------------


def _planners() -> dict[str, ProviderPlanner]:
    """The registry, imported when first planning: provider modules import plan submodules, so importing
    them while this package initialises would be a cycle (tests/test_layering.py imports each one first)."""
    from .registry import PLANNERS

    return PLANNERS


def _scheduler(kind: str) -> SchedulerPlanner:
    """The stack's scheduler from the registry (imported when first planning, as the providers are)."""
    from .registry import SCHEDULERS

    return SCHEDULERS[kind]


def _cloud(provider: str) -> CloudPlanner:
    """The planner of a cloud: one that carves networks and hosts controllers and file systems."""
    return cloud_of(_planners(), provider)


def _joined(ctx: PlanCtx) -> bool:
    """Whether the stack's networks are joined by VPNs: it has a site, or networks of several clouds."""
    return bool(ctx.spec.sites) or len({key.split("-", 1)[0] for key in ctx.addresses}) > 1


def _vpn_gateway_subnets(ctx: PlanCtx) -> None:
    """An Azure network that a VPN joins needs its GatewaySubnet for the virtual network gateway."""
    if not _joined(ctx):
        return
    for key, user in list(ctx.network_users.items()):
        provider, region = key.split("-", 1)
        if provider == "azure":
            ctx.need(user, provider, region, None, 0, role="gateway")


def _plan_vpns(ctx: PlanCtx, networks: Sequence[PlannedNetwork]) -> tuple[PlannedVpn, ...]:
    """IPsec links from every cloud network to every site and between the clouds (plan/vpn.py), after the
    checks that only the whole stack can make: distinct BGP ASNs (the CIDR overlaps are checked with the
    network blocks)."""
    if ctx.problems or not _joined(ctx):
        return ()
    sites = [
        VpnSite(
            name=s.name, cidrs=tuple(s.network.cidrs), vpn_endpoint=s.network.vpn_endpoint, bgp_asn=s.network.bgp_asn
        )
        for s in ctx.spec.sites
    ]
    overlaps = set(overlapping_cidrs(networks, sites))
    for path, message in check_sites(networks, sites):
        if (path, message) in overlaps:
            continue  # reported by _plan_networks with the field to change
        i = int(path.split("[", 1)[1].split("]", 1)[0])
        ctx.problem(("sites", i, "network", "bgp_asn"), message, ctx.spec.sites[i].network.bgp_asn)
    if ctx.problems:
        return ()
    if len(sites) > 1:
        ctx.warnings.append(
            f"sites {', '.join(s.name for s in sites)} are not joined by aicluster: the WAN between owned sites (your "
            "data-centre interconnect) is yours to provide, and slurmctld reaches the other sites' nodes over it"
        )
    vpns = plan_vpns(networks, sites, ctx.catalog, ctx.spec.pricing.overrides)
    for v in vpns:
        for c in v.charges:
            resolved = service_price(ctx.catalog, c.provider, c.service, c.region, ctx.spec.pricing.overrides)
            if resolved.price is not None:
                ctx.service_prices.append(resolved.price)  # so an override it uses is not reported as unused
            else:
                ctx.warnings.append(
                    f"the catalog has no {c.provider} {c.service} price in {c.region}, so the cost leaves out the "
                    f"VPN {v.name}'s {c.item} ({UNPRICED_NOTE}); add your rate under pricing.overrides "
                    f"(sku: {c.service}, region: {c.region}, usd_per_hour: ...)"
                )
    return vpns


def _plan_storage(ctx: PlanCtx, i: int, st: LustreStorage | NfsStorage) -> PlannedFilesystem | None:
    base: tuple[str | int, ...] = ("storage", i)
    provider = st.provider or first_cloud(ctx)
    # Managed Lustre is zonal everywhere; Azure NetApp Files volumes are regional unless pinned.
    zonal = provider != "azure" or st.kind == "lustre"
    where = placement(ctx, base, provider, st.region, st.zone, "file system", zonal=zonal)
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
            f"{storage_override_hint(tier.sku, reg.name)}"
        )
    role = _planners()[provider].storage_subnets.get(tier.service, "compute")
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


def _with_clients(
    ctx: PlanCtx, fs: PlannedFilesystem, pools: list[PlannedPool], controller: PlannedController | None
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
        reg = ctx.catalog.region(fs.provider, fs.region)
        local = set(reg.local_zones) if reg is not None else set()
        far = sorted({name for name, zone in users if zone != fs.zone and zone not in local and name != "controller"})
        if far:
            ctx.warnings.append(
                f"{fs.name} ({fs.service}) is in {fs.zone}; pool(s) {', '.join(far)} reach it across zones "
                "(more latency, and inter-zone data charges); move those pools to its zone, or, for a new file "
                "system, set storage[].zone to where the busiest pool runs (moving an existing one replaces it: "
                "its data is lost)"
            )
        remote = sorted({(name, zone) for name, zone in users if zone in local})
        if remote:
            ctx.warnings.append(
                f"{fs.name} ({fs.service}) is in {fs.zone}; pool(s) "
                f"{', '.join(f'{name} ({zone})' for name, zone in remote)} reach it from a Local Zone over its link "
                "to the region (more latency, and data charges): the catalog places file systems in the region's "
                "own zones only"
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


# ------------------------------------------------------------------------------------------------
# Networks
# ------------------------------------------------------------------------------------------------


def _plan_networks(ctx: PlanCtx) -> list[PlannedNetwork]:
    net = ctx.spec.network
    by_provider: dict[str, str] = {}
    for key, user in ctx.network_users.items():
        provider, region = key.split("-", 1)
        if provider in by_provider and by_provider[provider] != key:
            first = ctx.network_users[by_provider[provider]]
            ctx.problem(
                user,
                one_network_message(provider, by_provider[provider].split("-", 1)[1], format_path(first)),
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
            *_cloud(provider).reserved_ranges,
            *((v, f"the {k.replace('-', '/', 1)} network {v}") for k, v in blocks.items() if k != key),
            *(
                (c, f"{c}, a network of site {site.name} (sites[{j}].network.cidrs)")
                for j, site in enumerate(ctx.spec.sites)
                for c in site.network.cidrs
            ),
        ]
        clash = overlaps(blocks[key], [c for c, _ in others])
        if clash is not None:
            what = next(label for c, label in others if c == clash)
            origin = "pinned under network.cidrs" if key in pinned else "its default block of network.supernet"
            clear = ", clear of network.exclude," if what.startswith("network.exclude") else ""
            site = next(
                ((j, k) for j, st in enumerate(ctx.spec.sites) for k, c in enumerate(st.network.cidrs) if c == clash),
                None,
            )
            if site is not None:  # the user wrote the site's range; the cloud block may be a default they never saw
                j, k = site
                ctx.problem(
                    ("sites", j, "network", "cidrs", k),
                    f"overlaps the {provider}/{region} network {blocks[key]} ({origin}); give the site a range no "
                    f"cloud network uses, or pin the cloud network elsewhere under network.cidrs "
                    f"({provider}/{region}: <cidr>)",
                    clash,
                )
                continue
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
        cloud = _cloud(provider)
        layout = cloud.subnets(blocks[key], reg, zones, roles)
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
                    nat_zone=cut.nat_zone,
                )
            )
        # AWS: one NAT gateway (and its public IPv4 address) per zone in use; Azure: one per network,
        # attached to its compute subnet (a NAT gateway serves every subnet of a VNet it is attached to);
        # GCP: one Cloud NAT on the host VPC's regional router.
        nats = cloud.nat_gateways(zones, layout)
        # priced one gateway (and address) at a time, as the policy pack sees them, so the figures agree
        gateway = service_cost(ctx, provider, "nat-gateway", region, 1, f"the {key} network's NAT gateways")
        address = service_cost(
            ctx, provider, "public-ipv4", region, 1, f"the {key} network's NAT public IPv4 addresses"
        )
        nat_m = cents(gateway * nats) if gateway is not None else None
        ipv4_m = cents(address * nats) if address is not None else None
        priced = [x for x in (nat_m, ipv4_m) if x is not None]
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
                **cloud.network_fields(ctx, key, roles),
            )
        )
    return out


# Subnets whose size the nodes decide (one address per node NIC): checked against what they hold.
_NODE_SUBNETS = frozenset({"compute", "gvnic", "gpu", "rdma"})


def _check_overrides(ctx: PlanCtx) -> None:
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
        if o.offered and o.sku not in instance_providers:
            ctx.problem(
                (*base, "offered"),
                f"{o.sku} is not an instance type or TPU generation: only those are offered per region; drop offered",
                o.offered,
            )
        if o.region is not None and not any(cat.region(p, o.region) for p in providers):
            names = sorted({n for p in providers for n in cat.region_names(p)})
            ctx.problem(
                (*base, "region"),
                f"the catalog has no {' or '.join(providers)} region of that name",
                o.region,
                did_you_mean(o.region, names),
            )


def _check_service_override(
    ctx: PlanCtx, base: tuple[str | int, ...], o: PriceOverride, providers: list[str], used: set[str]
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


def _unused_overrides(ctx: PlanCtx, prices: list[Price]) -> None:
    used = {p.basis for p in [*prices, *ctx.service_prices]}
    for j, _ in enumerate(ctx.spec.pricing.overrides):
        if f"pricing.overrides[{j}]" not in used and j not in ctx.offered_overrides:
            ctx.warnings.append(
                f"pricing.overrides[{j}] matches no pool, file system, controller, disk or network charge of this "
                "cluster"
            )


def _plan_alerts(
    ctx: PlanCtx, base: PlannedMonitoring, kubernetes: bool, has_storage: bool, has_gpus: bool
) -> PlannedMonitoring:
    """The rule groups the stack alerts on, and `monitoring.alerts` checked against them: a route may only name a
    group the stack has (it would match nothing). A self-hosted Alertmanager takes every receiver but SNS (which
    only the AWS managed service's alert manager signs for); the managed services are checked by _managed_alerts."""
    groups: list[Literal["gpu", "fabric", "filesystem", "slurm"]] = ["gpu"] if has_gpus else []
    groups.append("fabric")
    if has_storage or kubernetes:
        groups.append("filesystem")
    if base.slurm_exporter != "none":
        groups.append("slurm")
    alerts = ctx.spec.monitoring.alerts
    mon = ctx.catalog.monitoring
    assert mon is not None, "the catalog has data/monitoring.yaml"
    update: dict[str, object] = {"alert_groups": tuple(groups), "alerts": alerts}
    if alerts is None:
        return base.model_copy(update=update)
    why = {
        "gpu": "it has no GPU pools",
        "filesystem": "it has no shared file systems",
        "slurm": "monitoring.slurm_exporter is none, so nothing scrapes Slurm",
    }
    for i, route in enumerate(alerts.routes):
        for j, group in enumerate(route.groups):
            if group not in groups:
                ctx.problem(
                    ("monitoring", "alerts", "routes", i, "groups", j),
                    f"the stack has no {group} alerts ({why.get(group, 'none are written')}); its rule groups: "
                    f"{', '.join(groups)}",
                    group,
                )
    if ctx.spec.monitoring.prometheus == "self-hosted":
        for i, receiver in enumerate(alerts.receivers):
            if receiver.kind == "sns":
                ctx.problem(
                    ("monitoring", "alerts", "receivers", i, "kind"),
                    "an SNS receiver is for the alert manager of Amazon Managed Service for Prometheus "
                    "(monitoring.prometheus: managed, on AWS); a self-hosted Alertmanager (on the controller, or in "
                    "the cluster) has no AWS identity to publish with: use email, slack, pagerduty or webhook",
                    receiver.kind,
                )
        if not kubernetes:  # the alertmanager role runs it beside the controller's Prometheus
            update["alertmanager_port"] = mon.alertmanager.port
    return base.model_copy(update=update)


def _managed_alerts(ctx: PlanCtx, base: PlannedMonitoring, offered: ManagedPrometheus) -> None:
    """`monitoring.alerts` with a managed Prometheus: the service's own alert manager routes them, and takes only
    the receivers it can deliver to (AMP: SNS); a service with none refuses the routing, saying why, rather than
    dropping it."""
    alerts = base.alerts
    if alerts is None:
        return
    path = ("monitoring", "alerts")
    if not offered.alert_receivers:
        ctx.problem(
            path,
            f"{offered.name} cannot take Alertmanager routing: {offered.alerts_refused or 'it has no alert manager'}; "
            "remove monitoring.alerts (the rules still fire in the service), or use self-hosted Prometheus",
        )
        return
    allowed = ", ".join(offered.alert_receivers)
    for i, receiver in enumerate(alerts.receivers):
        if receiver.kind not in offered.alert_receivers:
            ctx.problem(
                (*path, "receivers", i, "kind"),
                f"{offered.name}'s alert manager delivers only to {allowed}; send to a topic and subscribe the "
                "mail, chat or pager endpoint to it there, or use self-hosted Prometheus",
                receiver.kind,
            )


def _plan_monitoring(
    ctx: PlanCtx, controller: PlannedController | None, kubernetes: PlannedKubernetes | None, has_gpus: bool
) -> PlannedMonitoring:
    """`monitoring.prometheus`: self-hosted, or the managed service of the cloud the controller or control plane
    runs in (the catalog's managed_prometheus: which cloud has one, and how each scheduler's metrics reach it)."""
    wanted = ctx.spec.monitoring.prometheus
    mon = ctx.catalog.monitoring
    assert mon is not None, "the catalog has data/monitoring.yaml"
    ex = mon.exporters
    base = PlannedMonitoring(
        prometheus=wanted,
        node_exporter_port=ex.node_exporter_port,
        dcgm_exporter_port=ex.dcgm_exporter_port,
        scrape_interval_s=ex.scrape_interval_s,
        # Kubernetes stacks have no Slurm controller to install it on
        slurm_exporter=ctx.spec.monitoring.slurm_exporter if controller is not None else "none",
    )
    if kubernetes is not None and ctx.spec.monitoring.slurm_exporter != "none":
        ctx.problem(
            ("monitoring", "slurm_exporter"),
            "a Kubernetes stack has no Slurm controller to run a Slurm exporter on; remove the field (or set none)",
            ctx.spec.monitoring.slurm_exporter,
        )
    base = _plan_alerts(ctx, base, kubernetes is not None, bool(ctx.spec.storage), has_gpus)
    if wanted == "self-hosted":
        return base
    home = kubernetes if kubernetes is not None else controller
    if home is None:  # the control plane was refused already (its problem is reported)
        return base
    kind = ctx.spec.scheduler.kind
    where = "control plane" if kubernetes is not None else "Slurm controller"
    offered = mon.managed_prometheus.get(home.provider)
    path = ("monitoring", "prometheus")
    if offered is None:
        clouds = ", ".join(sorted(mon.managed_prometheus))
        ctx.problem(
            path,
            f"the {where} runs on {home.provider}, which has no managed Prometheus (clouds with one: {clouds}); "
            "use self-hosted (Prometheus on the controller)",
            wanted,
        )
        return base
    collector = offered.collectors.get(kind)
    if collector is None:
        ctx.problem(
            path,
            f"{offered.name} is not offered to a {kind} stack: {offered.refused.get(kind, 'no collector')}; use "
            "self-hosted (Prometheus on the controller)",
            wanted,
        )
        return base
    _managed_alerts(ctx, base, offered)
    return base.model_copy(
        update={
            "provider": home.provider,
            "region": home.region,
            "service": offered.service,
            "service_name": offered.name,
            "collector": collector,
            "write_permission": offered.remote_write_action if collector == "remote-write" else None,
            "write_auth": offered.remote_write_auth if collector == "remote-write" else None,
            "source": offered.source_of("collectors"),
            "rule_severities": dict(offered.rule_severities),
        }
    )


def _monitoring_cost(
    ctx: PlanCtx,
    base: PlannedMonitoring,
    pools: Sequence[PlannedPool],
    controller: PlannedController | None,
    kubernetes: PlannedKubernetes | None,
) -> PlannedMonitoring:
    """`monitoring.prometheus: managed`: what the service bills a month for the samples of every cloud node it
    scrapes (pools, the Slurm controller, the Kubernetes system nodes: node_exporter runs on each, dcgm-exporter on
    GPU nodes), with the catalog's one model, shared with the policy pack; no verified price there: unpriced."""
    if base.provider is None:
        return base
    fleets = [(p.provider, p.instance_type, p.nodes) for p in pools]
    if controller is not None:
        fleets.append((controller.provider, controller.instance_type, 1))
    if kubernetes is not None:
        fleets.append((kubernetes.provider, kubernetes.system_instance_type, kubernetes.system_nodes))
    nodes = [
        (it, n)
        for provider, name, n in fleets
        if provider != "onprem" and (it := ctx.catalog.instance_type(provider, name)) is not None
    ]
    cost = ctx.catalog.managed_prometheus_cost(base.provider, base.region, base.collector, nodes)
    if cost is None:
        return base
    return base.model_copy(
        update={
            "series": cost.series,
            "ingest_interval_s": cost.interval_s,
            "samples_per_month": cost.samples,
            "ingestion_usd_per_month": cost.usd_per_month,
            "ingestion_source": cost.source,
        }
    )


def monitoring_line(m: PlannedMonitoring) -> CostLine | None:
    """The bill's line for a managed Prometheus (None: self-hosted, its cost is the controller's)."""
    if m.samples_per_month is None:
        return None
    return CostLine(
        f"{m.service_name}: {m.samples_per_month / 1e6:,.0f}M samples ingested ({m.series:,} series every "
        f"{m.ingest_interval_s} s)",
        m.ingestion_usd_per_month,
    )


# ------------------------------------------------------------------------------------------------
# The plan
# ------------------------------------------------------------------------------------------------


def cost_lines(
    pools: Sequence[PlannedPool],
    filesystems: Sequence[PlannedFilesystem],
    controller: PlannedController | None,
    networks: Sequence[PlannedNetwork],
    vpns: Sequence[PlannedVpn] = (),
    kubernetes: PlannedKubernetes | None = None,
    monitoring: PlannedMonitoring | None = None,
) -> list[CostLine]:
    """The plan's monthly bill, item by item, as the policy pack's budget rule counts it (None: unpriced)."""
    lines = []
    for p in pools:
        lines.append(CostLine(f"pool {p.name}: {p.nodes} x {p.instance_type} {p.market}", p.instances_usd_per_month))
        if p.onprem is not None:
            lines.append(CostLine(f"pool {p.name}: energy at site {p.onprem.site}", p.energy_usd_per_month))
        else:
            lines.append(CostLine(f"pool {p.name}: root volumes", p.volumes_usd_per_month))
    lines += [CostLine(f"storage {f.name} ({f.service})", f.cost_usd_per_month) for f in filesystems]
    if controller is not None:
        lines.append(CostLine(f"controller {controller.instance_type}", controller.instance_usd_per_month))
        lines.append(CostLine("controller: root volume", controller.volume_usd_per_month))
    for n in networks:
        lines.append(CostLine(f"network {n.key}: {n.nat_gateways} x NAT gateway", n.nat_usd_per_month))
        lines.append(CostLine(f"network {n.key}: {n.nat_gateways} x NAT public IPv4", n.ipv4_usd_per_month))
    lines += [CostLine(f"vpn {v.name}: {c.item}", c.usd_per_month) for v in vpns for c in v.charges]
    if kubernetes is not None:
        k = kubernetes
        control = None if any("extended" in u for u in k.unpriced) else k.control_plane_usd_per_month
        lines.append(CostLine(f"{k.service_name} control plane ({k.support} support)", control))
        lines.append(
            CostLine(
                f"{k.service} system node group: {k.system_nodes} x {k.system_instance_type}", k.system_usd_per_month
            )
        )
        lines.append(CostLine(f"{k.service} system node group: root volumes", k.system_volumes_usd_per_month))
    if monitoring is not None and (line := monitoring_line(monitoring)) is not None:
        lines.append(line)
    return lines


def plan(spec: ClusterSpec, catalog: Catalog) -> ClusterPlan:
    """Resolve a validated spec against the catalog. Raises SpecError with every problem found."""
    scheduler = _scheduler(spec.scheduler.kind)
    ctx = PlanCtx(spec, catalog, scheduler)
    pools: list[PlannedPool] = []
    for i, pool in enumerate(spec.pools):
        planned = _planners()[pool.provider].plan_pool(ctx, i, pool)
        if planned is not None and spec.sites and planned.provider != "onprem":
            planned = planned.model_copy(update={"burst": True})
        if planned is not None:
            pools.append(planned)
    burst = [p.name for p in pools if p.burst]
    if burst:
        ctx.warnings.append(
            f"pool(s) {', '.join(burst)} are burst capacity: Slurm powers their nodes up when jobs need them and down "
            "after their partition's SuspendTime, so their cost here (and in the budget) is the ceiling, every node "
            "running all month"
        )
    _check_overrides(ctx)
    if any(p.provider == "azure" for p in spec.pools) and not spec.access.ssh_public_keys:
        ctx.problem(
            ("access", "ssh_public_keys"),
            "Azure creates every Linux VM with an admin account that needs an SSH public key (password login "
            "stays off): add yours, e.g. the line in ~/.ssh/id_ed25519.pub",
        )
    filesystems = [fs for i, st in enumerate(spec.storage) if (fs := _plan_storage(ctx, i, st)) is not None]
    plane = scheduler.control_plane(ctx, pools, _planners())
    _vpn_gateway_subnets(ctx)
    networks = _plan_networks(ctx)
    plane = scheduler.with_networks(ctx, plane, networks, _planners())
    controller = plane.controller
    vpns = _plan_vpns(ctx, networks)
    sites = [site for planner in _planners().values() for site in planner.plan_sites(ctx, pools, controller)]
    workloads = plan_workloads(ctx, pools, filesystems)
    monitoring = _plan_monitoring(ctx, controller, plane.kubernetes, any(p.accelerator_kind == "gpu" for p in pools))
    monitoring = _monitoring_cost(ctx, monitoring, pools, controller, plane.kubernetes)
    if ctx.problems:
        raise SpecError("", ctx.problems)
    filesystems = [_with_clients(ctx, fs, pools, controller) for fs in filesystems]
    _unused_overrides(
        ctx,
        [p.price for p in pools if p.price is not None]
        + [f.price for f in filesystems if f.price is not None]
        + plane.prices(),
    )

    hours = catalog.hours_per_month
    cost = total(cost_lines(pools, filesystems, controller, networks, vpns, plane.kubernetes, monitoring))
    it_kw = sum(p.power_kw_it for p in pools) + plane.power_kw_it()
    fac_kw = sum(p.power_kw_facility for p in pools) + plane.power_kw_facility()
    co2 = sum(p.co2e_t_per_month for p in pools) + plane.co2e_t_per_month()
    racked = [p.racks for p in pools if p.racks is not None]
    racks = sum(racked) if racked else None
    totals = Totals(
        nodes=sum(p.nodes for p in pools),
        gpus=sum(p.gpus for p in pools),
        cost_usd_per_hour=cents(cost.usd_per_month / hours),
        cost_usd_per_month=cost.usd_per_month,
        power_kw_it=round2(it_kw),
        power_kw_facility=round2(fac_kw),
        co2e_t_per_month=round2(co2),
        racks=racks,
        bf16_pflops=round2(sum(p.bf16_pflops for p in pools)),
        storage_tib=round(sum(f.capacity_tib for f in filesystems), 3),
        storage_throughput_gb_s=round(sum(f.throughput_mb_s for f in filesystems) / 1000, 2),
        unpriced=cost.unpriced,
    )
    return ClusterPlan(
        sites=tuple(sites),
        vpns=vpns,
        kubernetes=plane.kubernetes,
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
        workloads=workloads,
        nvlink_domains=cluster_domains(pools),
        monitoring=monitoring,
        stateful_types=tuple(sorted(t for t, r in ctx.catalog.change_rules.items() if "data-loss" in r.risks)),
    )
