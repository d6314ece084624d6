"""Every node fits the rack power limit (budgets.rack_kw). A rack-scale type's rack is its NVLink domain (a
liquid-cooled NVL72 rack the provider, or the site, powers and cools as one): it is not judged node by node against
the air-cooled budget (aicluster-site-enforce-rack-cooling judges owned ones)."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule


def _rack_density(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    rack_kw = ctx.setting("rack_kw", ("budgets", "rack_kw"))
    if rack_kw is None:
        raise NotApplicable("no rack power limit: set budgets.rack_kw in the stack or rack_kw in policy config")
    for f in stack.fleets:
        if f.spec is None or f.tpu is not None or f.spec.nvlink_domain is not None:
            continue
        if f.spec.node_power_kw > float(rack_kw):
            yield (
                f.res,
                f"one {f.instance_type} node of {f.res.name} draws up to {f.spec.node_power_kw:g} kW, more than a "
                f"whole {float(rack_kw):g} kW rack; racks for this pool need at least {f.spec.node_power_kw:g} kW "
                "(liquid-cooled or high-density rows)",
            )


POLICY = StackRule(
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
