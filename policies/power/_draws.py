"""What the stack's fleets draw: IT power (each node's maximum, from the catalog, e.g. 10.2 kW for a DGX H100-class
node) x the region's PUE, and the carbon of that facility energy over a 730-hour month at the region's grid
intensity; and the fleets nobody publishes a figure for (Cloud TPU hosts: Google gives none), which the power rules
name rather than count as 0 kW."""

from __future__ import annotations

from dataclasses import dataclass

from ..facts.model import Fleet
from ..facts.stack import Stack


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


def sites_kw(stack: Stack) -> float:
    """Facility kW of the owned sites (their nodes' IT load x the site's PUE), as each site records it."""
    return sum(s.facility_kw for s in stack.sites)


def unmeasured(stack: Stack) -> list[Fleet]:
    """Fleets of a known kind whose node power nobody publishes (Cloud TPU hosts)."""
    return [f for f in stack.fleets if f.node_power_kw is None and (f.spec is not None or f.tpu is not None)]


def unmeasured_names(fleets: list[Fleet]) -> str:
    return ", ".join(f"{f.res.name} ({f.nodes} x {f.instance_type} hosts)" for f in fleets)
