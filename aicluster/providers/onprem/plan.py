"""On-prem's planner: owned nodes at a site. No cloud network to carve (the site declares its CIDRs), no
image (the site's own provisioning tool installs the OS), no list price: the site's hardware cost (an
amortised purchase or a node-hour rate) plus the energy the nodes draw at the site's PUE and $/kWh."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from aicluster.catalog.pricing import Price, cents
from aicluster.plan.context import UNPRICED_NOTE, PlanCtx, facts_of, instance_type_of, pool_record
from aicluster.plan.models import (
    OnpremHost,
    OnpremPoolDetails,
    PlannedController,
    PlannedPool,
    PlannedSite,
    PoolNvlink,
)
from aicluster.plan.nvlink import pool_nvlink
from aicluster.spec import OnpremPool, Site, pool_fabric

from .site import plan_sites

HOURS_PER_YEAR = 8760


@dataclass(frozen=True)
class SiteFacility:
    """A site, as a pool record reads where its power is drawn."""

    name: str
    pue: float
    carbon_g_per_kwh: float


def site_of(ctx: PlanCtx, name: str) -> Site:
    return next(s for s in ctx.spec.sites if s.name == name)


def hardware_price(site: Site) -> Price | None:
    cost = site.hardware_cost
    if cost is None:
        return None
    if cost.usd_per_node_hour is not None:
        return Price(
            usd=cost.usd_per_node_hour,
            unit="node-hour",
            basis=f"site {site.name} hardware_cost.usd_per_node_hour",
            source=None,
        )
    assert cost.purchase_usd_per_node is not None
    assert cost.amortization_years is not None
    return Price(
        usd=cost.purchase_usd_per_node / (cost.amortization_years * HOURS_PER_YEAR),
        unit="node-hour",
        basis=f"site {site.name}: ${cost.purchase_usd_per_node:,.0f} per node over {cost.amortization_years:g} years",
        source=None,
    )


def _racks_fit(ctx: PlanCtx, i: int, pool: OnpremPool, site: Site, nvlink: PoolNvlink, type_name: str) -> bool:
    """A rack-scale pool's racks at its site: liquid cooling where the racks need it, rack positions that deliver the
    rack's draw, and hosts that keep each NVLink domain in one rack of its own."""
    where = ("sites", ctx.spec.sites.index(site), "power")
    draw = f"up to {nvlink.rack_kw:g} kW" if nvlink.rack_kw else "its rack's draw"
    ok = True
    if nvlink.cooling == "liquid":
        if site.power.liquid_rack_kw is None:
            ctx.problem(
                (*where, "liquid_rack_kw"),
                f"pools[{i}] ({pool.name}) is {type_name} racks, which are liquid-cooled and draw {draw} each; site "
                f"{site.name} has no liquid cooling: give the power of its liquid-cooled rack positions "
                f"(liquid_rack_kw: {nvlink.rack_kw or 140:g} or more), or place the pool at a site that has them",
            )
            ok = False
        elif nvlink.rack_kw and site.power.liquid_rack_kw < nvlink.rack_kw:
            ctx.problem(
                (*where, "liquid_rack_kw"),
                f"a {type_name} rack draws {draw} (pools[{i}] {pool.name}), more than the "
                f"{site.power.liquid_rack_kw:g} kW site {site.name} can deliver and cool per liquid-cooled rack: raise "
                f"liquid_rack_kw to at least {nvlink.rack_kw:g}, or place the pool at a site that can",
                site.power.liquid_rack_kw,
            )
            ok = False
    elif nvlink.rack_kw and site.power.rack_kw < nvlink.rack_kw:
        ctx.problem(
            (*where, "rack_kw"),
            f"a {type_name} rack draws {draw} (pools[{i}] {pool.name}), more than site {site.name}'s "
            f"{site.power.rack_kw:g} kW per rack: raise rack_kw to at least {nvlink.rack_kw:g}",
            site.power.rack_kw,
        )
        ok = False
    if pool.hosts:
        for d in nvlink.domains:
            racks = {h.rack for h in pool.hosts[d.first_node : d.first_node + d.nodes]}
            if len(racks) != 1 or None in racks:
                ctx.problem(
                    ("pools", i, "hosts", d.first_node),
                    f"hosts {d.first_node}-{d.first_node + d.nodes - 1} are NVLink domain {d.name}, one {type_name} "
                    f"rack: give all {d.nodes} the same rack (they name {', '.join(sorted(map(str, racks)))})",
                )
                ok = False
        named = [h.rack for d in nvlink.domains for h in pool.hosts[d.first_node : d.first_node + 1]]
        for rack in {r for r in named if named.count(r) > 1}:
            ctx.problem(
                ("pools", i, "hosts"),
                f"rack {rack} holds more than one NVLink domain of pools[{i}] ({pool.name}); a {type_name} rack is "
                "one domain: give each domain's hosts a rack of their own",
            )
            ok = False
    return ok


def _scalable_units(ctx: PlanCtx, i: int, name: str, nvlink: PoolNvlink, type_name: str) -> None:
    """Advice, not a refusal: a DGX SuperPOD is built in scalable units (GB200/GB300: 8 racks, 576 GPUs), and
    NVIDIA's reference architecture allows fewer racks but then designs the fabric for the whole SU (its leaves and
    leaf-spine cables, the missing racks' ports left free). Say where a pool is not a whole number of SUs."""
    units = nvlink.scalable_units
    if units is None or units == int(units):
        return
    su = nvlink.scalable_unit
    assert su is not None
    racks = sum(1 for d in nvlink.domains if d.whole)
    whole = math.ceil(units)
    ctx.warnings.append(
        f"pools[{i}] ({name}): {racks} {type_name} racks are {units:g} DGX SuperPOD scalable units of {su} racks "
        f"({su * nvlink.gpus_per_domain:,} GPUs); the SuperPOD reference architecture builds a partial SU's fabric as "
        f"a whole one (leaf switches and leaf-spine cables, the missing racks' ports left free), while the fabric "
        f"planned here is sized for these {racks} racks: {whole * su - racks} more make {whole} whole SU"
        + ("s" if whole > 1 else "")
    )


def _domain_racks(pool: OnpremPool, nvlink: PoolNvlink) -> tuple[str, ...]:
    """The rack each NVLink domain is: its hosts' rack, else <pool>-rNN."""
    if pool.hosts:
        return tuple(str(pool.hosts[d.first_node].rack) for d in nvlink.domains)
    return tuple(f"{pool.name}-r{d.index + 1:02d}" for d in nvlink.domains)


class OnpremPlanner:
    name: ClassVar[str] = "onprem"
    image_forms: ClassVar[str] = "nothing: the site's own provisioning tool installs the operating system"
    storage_subnets: ClassVar[Mapping[str, str]] = {}

    def is_image_reference(self, text: str) -> bool:
        return False

    def plan_pool(self, ctx: PlanCtx, i: int, pool: OnpremPool) -> PlannedPool | None:
        base: tuple[str | int, ...] = ("pools", i)
        it = instance_type_of(ctx, (*base, "instance_type"), "onprem", pool.instance_type)
        if it is None:
            return None
        site = site_of(ctx, pool.site)
        nodes = pool.node_count
        nvlink = pool_nvlink(ctx, (*base, "nodes"), pool.name, nodes, it) if it.nvlink_domain else None
        if it.nvlink_domain is not None and (nvlink is None or not _racks_fit(ctx, i, pool, site, nvlink, it.name)):
            return None
        if nvlink is not None:
            _scalable_units(ctx, i, pool.name, nvlink, it.name)
        price = hardware_price(site)
        if price is None:
            ctx.warnings.append(
                f"pools[{i}] ({pool.name}): site {site.name} gives no hardware_cost, so the pool's nodes are left out "
                f"of the cost ({UNPRICED_NOTE}); give purchase_usd_per_node and amortization_years, or "
                "usd_per_node_hour, under the site's hardware_cost"
            )
        hours = ctx.catalog.hours_per_month
        energy = cents(it.node_power_kw * nodes * site.power.pue * site.power.usd_per_kwh * hours)
        fabric, _ = pool_fabric(pool, site)
        details = OnpremPoolDetails(
            site=site.name,
            hosts=tuple(OnpremHost(**h.model_dump()) for h in pool.hosts),
            fabric=fabric,
            hardware_basis=price.basis if price else None,
            usd_per_kwh=site.power.usd_per_kwh,
            domain_racks=_domain_racks(pool, nvlink) if nvlink is not None else (),
        )
        record = pool_record(
            ctx,
            i,
            pool.name,
            "onprem",
            SiteFacility(site.name, site.power.pue, site.carbon_g_per_kwh),
            None,
            f"onprem-{site.name}",
            facts_of(ctx, it),
            nodes,
            "owned",
            price,
            nodes,
            0.0,  # an owned node's disks come with its purchase
            rack=(("sites", ctx.spec.sites.index(site), "power", "rack_kw"), site.power.rack_kw),
            onprem=details,
            nvlink=nvlink,
            cpu_arch=it.cpu_arch,
        )
        if record is None:
            return None
        month = cents((record.cost_usd_per_month or 0.0) + energy)
        return record.model_copy(
            update={
                "energy_usd_per_month": energy,
                "cost_usd_per_month": month,
                "cost_usd_per_hour": cents(month / hours),
            }
        )

    def plan_sites(
        self, ctx: PlanCtx, pools: Sequence[PlannedPool], controller: PlannedController | None
    ) -> list[PlannedSite]:
        return plan_sites(ctx, pools, controller)


PLANNER = OnpremPlanner()
