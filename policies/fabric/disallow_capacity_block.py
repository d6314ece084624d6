"""No placement group for capacity blocks: a capacity block comes co-located, and launches into it fail with a
placement group."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aws import ASG, LAUNCH_TEMPLATE, template_market
from ..facts.engine import Res
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY


def _capacity_block_placement(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    if not any(template_market(lt) == "capacity-block" for lt in stack.of(LAUNCH_TEMPLATE)):
        raise NotApplicable("no capacity-block launch template in the stack")
    for asg in stack.of(ASG):
        lts = asg.linked("launchTemplate", LAUNCH_TEMPLATE)
        if not lts or template_market(lts[0]) != "capacity-block":
            continue
        pg = asg.get("placementGroup")
        if pg is not None or asg.linked("placementGroup"):
            yield (
                asg,
                f"Auto Scaling group {asg.name} launches into a capacity block and also names a placement group; "
                "capacity blocks come co-located and launches into them fail with a placement group: remove it",
            )
    for lt in stack.of(LAUNCH_TEMPLATE):
        if template_market(lt) == "capacity-block" and lt.get("placement", "groupName") is not None:
            yield (
                lt,
                f"launch template {lt.name} targets a capacity block and sets placement.groupName; remove it",
            )


POLICY = StackRule(
    Meta(
        name="aws-ec2-placementgroup-disallow-capacity-block",
        display_name="No placement group for capacity blocks",
        description="Capacity-block launches name no placement group (the block is already co-located).",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Drop the placement group from pools with market: capacity-block (aicluster plans none).",
    ),
    _capacity_block_placement,
    types={ASG, LAUNCH_TEMPLATE},
)
