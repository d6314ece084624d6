"""The monthly cost of the stack's fleets, node groups, control planes, file systems, network and owned sites stays
within the budget."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog.pricing import CostLine, cents, money, total

from ..facts.engine import Res
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule
from ._bill import bill


def _largest(lines: list[CostLine], n: int = 3) -> list[tuple[str, float]]:
    """The `n` costliest resources, each line of one resource (a fleet's instances and its root disks) summed,
    so a fleet's figure is the pool's cost the plan shows: `name (its lines) $total`."""
    by_res: dict[str, tuple[list[str], list[float]]] = {}
    for x in lines:
        if x.usd_per_month is None:
            continue
        name, _, what = x.what.partition(": ")
        parts, costs = by_res.setdefault(name, ([], []))
        parts.append(what)
        costs.append(x.usd_per_month)
    summed = [(f"{name} ({', '.join(parts)})", cents(sum(costs))) for name, (parts, costs) in by_res.items()]
    return sorted(summed, key=lambda item: -item[1])[:n]


def _budget(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    budget = ctx.setting("monthly_usd", ("budgets", "monthly_usd"))
    if budget is None:
        raise NotApplicable("no monthly budget: set budgets.monthly_usd in the stack or monthly_usd in policy config")
    lines = bill(stack)
    cost = total(lines)
    limit = float(budget)
    if cost.usd_per_month > limit:
        over = cents(cost.usd_per_month - limit)
        # whole dollars, unless they would hide the difference (a total a few cents over the budget)
        d = 0 if over >= 1 else 2
        biggest = "; ".join(f"{what} {money(usd, decimals=d)}" for what, usd in _largest(lines))
        yield (
            None,
            f"monthly cost {money(cost.usd_per_month, bool(cost.unpriced), d)} exceeds the budget "
            f"{money(limit, decimals=d)} by {money(over, decimals=d)} ({over / limit:.1%}); largest: {biggest}. "
            "Shrink or remove a pool, move it to spot or "
            "reserved capacity, or raise budgets.monthly_usd"
            + (f" (not counted, no price: {', '.join(cost.unpriced)})" if cost.unpriced else ""),
        )


POLICY = StackRule(
    Meta(
        name="aicluster-cluster-enforce-monthly-budget",
        display_name="Monthly budget",
        description="The monthly cost of GPU fleets and Kubernetes node groups, controllers and control planes, file "
        "systems, network and owned sites (hardware and energy) stays within budget.",
        concern="cost",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Shrink pools, use spot or reserved capacity, or raise budgets.monthly_usd.",
        config={
            "monthly_usd": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Ceiling in USD per 730-hour month. Default: the AiCluster's budgets.monthly_usd.",
            }
        },
    ),
    _budget,
)
