"""Power: facility kW within budget, nodes that fit the racks, and the carbon the cluster emits.

IT power is each node's maximum draw from the catalog (datasheet system maximum, e.g. 10.2 kW for a
DGX H100-class node); facility power multiplies it by the region's PUE; carbon multiplies facility
energy over a 730-hour month by the region's grid intensity.

Where nobody publishes a node's draw (Cloud TPU hosts: Google gives no figure) the fleet is not counted
as 0 kW silently: the budget and carbon findings say what they leave out, and
aicluster-cluster-missing-power-figures names those fleets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pulumi_policy import EnforcementLevel, Severity

from .facts import Fleet, Res, Site, Stack
from .rule import Ctx, Meta, NotApplicable, StackRule


@dataclass(frozen=True)
class Draw:
    fleet: Fleet
    it_kw: float
    facility_kw: float | None  # None: region not in the catalog
    co2e_t_per_month: float | None


def draws(stack: Stack) -> list[Draw]:
    """The draw of every fleet whose node power the catalog knows."""
    out = []
    hours = stack.catalog.hours_per_month
    for f in stack.fleets:
        node_kw = f.node_power_kw
        if node_kw is None:
            continue
        it_kw = node_kw * f.nodes
        reg = stack.region_record(f.res.provider, f.region)
        facility = it_kw * reg.pue if reg else None
        co2 = facility * hours * reg.carbon_g_per_kwh / 1e6 if reg and facility is not None else None
        out.append(Draw(f, it_kw, facility, co2))
    return out


def _sites_kw(stack: Stack) -> float:
    """Facility kW of the owned sites (their nodes' IT load x the site's PUE), as each site records it."""
    return sum(s.facility_kw for s in stack.sites)


def unmeasured(stack: Stack) -> list[Fleet]:
    """Fleets of a known kind whose node power nobody publishes (Cloud TPU hosts)."""
    return [f for f in stack.fleets if f.node_power_kw is None and (f.spec is not None or f.tpu is not None)]


def _unmeasured_names(fleets: list[Fleet]) -> str:
    return ", ".join(f"{f.res.name} ({f.nodes} x {f.instance_type} hosts)" for f in fleets)


def _power_budget(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    budget = ctx.setting("power_kw", ("budgets", "power_kw"))
    if budget is None:
        raise NotApplicable("no power budget: set budgets.power_kw in the stack or power_kw in policy config")
    ds = draws(stack)
    total = sum(d.facility_kw if d.facility_kw is not None else d.it_kw for d in ds) + _sites_kw(stack)
    if total > float(budget):
        shares = [
            (d.facility_kw or d.it_kw, f"{d.fleet.res.name} {d.fleet.nodes} x {d.fleet.instance_type}") for d in ds
        ] + [
            (s.facility_kw, f"{s.res.name} (site {s.name}, {sum(p.nodes for p in s.pools)} owned nodes)")
            for s in stack.sites
        ]
        parts = "; ".join(f"{what} {kw:,.2f} kW" for kw, what in sorted(shares, key=lambda x: -x[0])[:3])
        missing = unmeasured(stack)
        yield (
            None,
            f"facility power {total:,.1f} kW (IT kW x PUE) exceeds the budget {float(budget):,.1f} kW by "
            f"{total - float(budget):,.1f} kW; largest: {parts}. Shrink a pool or raise budgets.power_kw"
            + (f" (not counted, no published power figure: {_unmeasured_names(missing)})" if missing else ""),
        )
    # Within budget with unmeasured fleets: the known draw passes here; aicluster-cluster-missing-power-figures
    # (advisory) names what is not counted, as aicluster-cluster-missing-prices does for cost.


power_budget = StackRule(
    Meta(
        name="aicluster-cluster-enforce-power-budget",
        display_name="Facility power budget",
        description="Facility power (nodes' maximum IT draw x region or site PUE) stays within budgets.power_kw.",
        concern="power",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Shrink pools, pick a region with a lower PUE, or raise budgets.power_kw.",
        config={
            "power_kw": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Facility kW ceiling. Default: the AiCluster's budgets.power_kw.",
            }
        },
    ),
    _power_budget,
)


def _rack_density(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    rack_kw = ctx.setting("rack_kw", ("budgets", "rack_kw"))
    if rack_kw is None:
        raise NotApplicable("no rack power limit: set budgets.rack_kw in the stack or rack_kw in policy config")
    for f in stack.fleets:
        if f.spec is not None and f.tpu is None and f.spec.node_power_kw > float(rack_kw):
            yield (
                f.res,
                f"one {f.instance_type} node of {f.res.name} draws up to {f.spec.node_power_kw:g} kW, more than a "
                f"whole {float(rack_kw):g} kW rack; racks for this pool need at least {f.spec.node_power_kw:g} kW "
                "(liquid-cooled or high-density rows)",
            )


rack_density = StackRule(
    Meta(
        name="aicluster-node-enforce-rack-power",
        display_name="Rack power density",
        description="Every node fits the rack power limit (budgets.rack_kw).",
        concern="power",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Raise budgets.rack_kw to what the racks deliver, or pick a lower-power instance type.",
        config={
            "rack_kw": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "kW one rack delivers. Default: the AiCluster's budgets.rack_kw.",
            }
        },
    ),
    _rack_density,
)


def _carbon(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    ds = draws(stack)
    total = sum(d.co2e_t_per_month or 0.0 for d in ds) + sum(s.co2e_t_per_month for s in stack.sites)
    ceiling = ctx.setting("max_t_co2e_per_month")
    missing = unmeasured(stack)
    left_out = f" (not counted, no published power figure: {_unmeasured_names(missing)})" if missing else ""
    if ceiling is None:
        raise NotApplicable(
            f"{total:,.1f} t CO2e/month (location-based){left_out}; no ceiling set (max_t_co2e_per_month)"
        )
    if total > float(ceiling):
        sources = [(d.co2e_t_per_month or 0.0, _fleet_source(stack, d)) for d in ds]
        sources += [(s.co2e_t_per_month, f"{s.res.name} (site {s.name} grid {_grid(s)})") for s in stack.sites]
        worst = max(sources, key=lambda x: x[0])[1]
        yield (
            None,
            f"the cluster emits about {total:,.1f} t CO2e/month, over the ceiling of {float(ceiling):g}; most from "
            f"{worst}. A lower-carbon region cuts it{left_out}",
        )


def _fleet_source(stack: Stack, d: Draw) -> str:
    reg = stack.region_record(d.fleet.res.provider, d.fleet.region)
    return d.fleet.res.name + (f" ({reg.name} grid {reg.carbon_g_per_kwh:g} g CO2e/kWh)" if reg else "")


def _grid(site: Site) -> str:
    g = site.res.get("carbon_g_per_kwh")
    return f"{g:g} g CO2e/kWh" if isinstance(g, int | float) else "intensity not declared"


carbon = StackRule(
    Meta(
        name="aicluster-cluster-configure-carbon-ceiling",
        display_name="Carbon",
        description="Location-based emissions of the GPU fleets and owned sites (facility kWh x grid intensity), "
        "advisory.",
        concern="power",
        severity=Severity.LOW,
        enforcement=EnforcementLevel.ADVISORY,
        remediation="Pick a region with a cleaner grid (see docs/catalog.md), or accept and record the figure.",
        config={
            "max_t_co2e_per_month": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Tonnes CO2e per month; none by default (the figure is then only reported).",
            }
        },
    ),
    _carbon,
)


def _missing_power(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    missing = unmeasured(stack)
    if not missing:
        return
    known = sum(d.facility_kw if d.facility_kw is not None else d.it_kw for d in draws(stack)) + _sites_kw(stack)
    yield (
        None,
        f"no published power figure for {_unmeasured_names(missing)}: the facility power {known:,.1f} kW (and the "
        "power budget and carbon figures) leaves them out; meter the hosts, or budget their power outside this check",
    )


missing_power = StackRule(
    Meta(
        name="aicluster-cluster-missing-power-figures",
        display_name="Every fleet's power is known",
        description="Every fleet has a published node power figure, so power and carbon totals are complete.",
        concern="power",
        severity=Severity.LOW,
        enforcement=EnforcementLevel.ADVISORY,
        remediation="Meter the hosts and budget their power outside this check (Google publishes no TPU power).",
    ),
    _missing_power,
)

POLICIES: list[StackRule] = [power_budget, rack_density, carbon, missing_power]
