"""Every fleet, disk, file system and network charge has a price: what has none is named, never counted as 0."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog.pricing import money, total

from ..facts.engine import Res
from ..facts.stack import Stack
from ..rule import Ctx, Meta, StackRule
from ._bill import ADVICE, bill


def _unpriced(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    lines = bill(stack)
    cost = total(lines)
    if cost.unpriced:
        missing = [x for x in lines if x.usd_per_month is None]
        fixes = list(dict.fromkeys(x.fix for x in missing if x.fix and x.fix not in ADVICE))
        advice = []
        if any(x.fix not in ADVICE for x in missing):
            advice.append("add your rates under pricing.overrides" + (f": {', '.join(fixes)}" if fixes else ""))
        advice += [a for a in ADVICE if any(x.fix == a for x in missing)]
        yield (
            None,
            f"no catalog price for {', '.join(cost.unpriced)}: the monthly cost "
            f"{money(cost.usd_per_month, True, 0)} (and the budget check) leaves them out; " + "; ".join(advice),
        )


POLICY = StackRule(
    Meta(
        name="aicluster-cluster-missing-prices",
        display_name="Every cost is priced",
        description="Every fleet, disk, file system and network charge has a catalog price or a declared rate.",
        concern="cost",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.ADVISORY,
        remediation=(
            "Add your rates under pricing.overrides (sku: the instance type, storage tier or service such as ebs-gp3 "
            "or nat-gateway; region; usd_per_hour or usd_per_gib_month, in the unit the catalog bills it in)."
        ),
    ),
    _unpriced,
)
