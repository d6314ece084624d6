"""Every fleet has a published node power figure, so the power and carbon totals are complete."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res
from ..facts.stack import Stack
from ..rule import Ctx, Meta, StackRule
from ._draws import draws, sites_kw, unmeasured, unmeasured_names


def _missing_power(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    missing = unmeasured(stack)
    if not missing:
        return
    known = sum(d.facility_kw if d.facility_kw is not None else d.it_kw for d in draws(stack)) + sites_kw(stack)
    yield (
        None,
        f"no published power figure for {unmeasured_names(missing)}: the facility power {known:,.1f} kW (and the "
        "power budget and carbon figures) leaves them out; meter the hosts, or budget their power outside this check",
    )


POLICY = StackRule(
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
