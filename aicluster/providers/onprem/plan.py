"""On-prem's planner: owned nodes at a site. No cloud network to carve (the site declares its CIDRs), no
image (the site's own provisioning tool installs the OS), no list price: the site's hardware cost (an
amortised purchase or a node-hour rate) plus the energy the nodes draw at the site's PUE and $/kWh."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from aicluster.catalog.pricing import Price, cents
from aicluster.plan.context import UNPRICED_NOTE, PlanCtx, facts_of, instance_type_of, pool_record
from aicluster.plan.models import OnpremHost, OnpremPoolDetails, PlannedController, PlannedPool, PlannedSite
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
