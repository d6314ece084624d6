"""EFA pools in one Availability Zone: EFA traffic does not cross zones, so an Auto Scaling group of EFA nodes
launches into one."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aws import ASG, LAUNCH_TEMPLATE, SUBNET, efa_interfaces
from ..facts.engine import Res, items
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY


def _efa_single_az(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    efa = [
        asg
        for asg in stack.of(ASG)
        if (lts := asg.linked("launchTemplate", LAUNCH_TEMPLATE)) and efa_interfaces(lts[0])
    ]
    if not efa:
        raise NotApplicable("no Auto Scaling group of EFA nodes in the stack")
    for asg in efa:
        zones = {str(z) for z in items(asg.props, "availabilityZones")}
        subnets = asg.linked("vpcZoneIdentifiers", SUBNET)
        zones |= {str(z) for s in subnets if isinstance(z := s.get("availabilityZone"), str)}
        named = items(asg.props, "vpcZoneIdentifiers")
        if len(zones) > 1 or (not zones and len(named) > 1):
            where = ", ".join(sorted(zones)) if zones else f"{len(named)} subnets"
            yield (
                asg,
                f"Auto Scaling group {asg.name} spreads EFA nodes over {where}; EFA traffic does not cross "
                "Availability Zones, so nodes in different zones cannot talk over the fabric. Give it one subnet",
            )


POLICY = StackRule(
    Meta(
        name="aws-autoscaling-group-enforce-efa-single-az",
        display_name="EFA pools in one AZ",
        description="Auto Scaling groups of EFA nodes launch into a single Availability Zone.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Use one subnet (one zone) per EFA pool; set the pool's zone in the stack.",
    ),
    _efa_single_az,
    types={ASG},
)
