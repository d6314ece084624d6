"""Location-based emissions of the fleets and owned sites (facility kWh x grid intensity), against an optional
ceiling; advisory."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res
from ..facts.model import Site
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule
from ._draws import Draw, draws, unmeasured, unmeasured_names


def _carbon(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    ds = draws(stack)
    total = sum(d.co2e_t_per_month or 0.0 for d in ds) + sum(s.co2e_t_per_month for s in stack.sites)
    ceiling = ctx.setting("max_t_co2e_per_month")
    missing = unmeasured(stack)
    left_out = f" (not counted, no published power figure: {unmeasured_names(missing)})" if missing else ""
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


POLICY = StackRule(
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
