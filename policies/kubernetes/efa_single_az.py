"""EFA node groups in one AZ: EKS node groups of EFA nodes launch into subnets of a single Availability Zone."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res, items
from ..facts.kubernetes import EKS_NODE_GROUP, efa_node_groups
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY


def _efa_single_az(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    groups = efa_node_groups(stack)
    if not groups:
        raise NotApplicable("no EKS node group of EFA nodes in the stack")
    for g in groups:
        named = items(g.res.props, "subnetIds")
        if len(g.zones) > 1 or (not g.zones and len(named) > 1):
            where = ", ".join(g.zones) if g.zones else f"{len(named)} subnets"
            yield (
                g.res,
                f"{g.name} spreads EFA nodes over {where}; EFA traffic does not cross Availability Zones, so its "
                "nodes cannot all reach each other over the fabric: give subnetIds one subnet (the pool's zone)",
            )


POLICY = StackRule(
    Meta(
        name="aws-eks-nodegroup-enforce-efa-single-az",
        display_name="EFA node groups in one AZ",
        description="EKS node groups of EFA nodes launch into subnets of a single Availability Zone.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Give the node group one subnet, in the zone of its pool (and of its capacity reservation).",
    ),
    _efa_single_az,
    types=(EKS_NODE_GROUP,),
)
