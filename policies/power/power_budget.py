"""Facility power (nodes' maximum IT draw x region or site PUE) stays within budgets.power_kw; fleets with no
published power figure are said to be left out."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule
from ._draws import draws, sites_kw, unmeasured, unmeasured_names


def _power_budget(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    budget = ctx.setting("power_kw", ("budgets", "power_kw"))
    if budget is None:
        raise NotApplicable("no power budget: set budgets.power_kw in the stack or power_kw in policy config")
    ds = draws(stack)
    total = sum(d.facility_kw if d.facility_kw is not None else d.it_kw for d in ds) + sites_kw(stack)
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
            + (f" (not counted, no published power figure: {unmeasured_names(missing)})" if missing else ""),
        )


POLICY = StackRule(
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
