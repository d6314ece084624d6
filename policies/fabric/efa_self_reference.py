"""EFA security group: EFA interfaces sit in a security group that allows all traffic to and from itself (inline
rules or standalone ingress/egress rule resources)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aws import LAUNCH_TEMPLATE, SECURITY_GROUP, SG_EGRESS_RULE, SG_INGRESS_RULE, efa_interfaces
from ..facts.engine import Res, get, items
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY


def _all_traffic(rule: Any) -> bool:
    return str(get(rule, "protocol", default=get(rule, "ipProtocol"))) in ("-1", "all")


def _self_ingress_egress(sg: Res, stack: Stack) -> tuple[bool, bool]:
    ingress = any(_all_traffic(r) and get(r, "self") is True for r in items(sg.props, "ingress"))
    egress = any(_all_traffic(r) and get(r, "self") is True for r in items(sg.props, "egress"))
    for rule in stack.of(SG_INGRESS_RULE, SG_EGRESS_RULE):
        linked = sg in rule.linked("securityGroupId") and sg in rule.linked("referencedSecurityGroupId")
        if linked and _all_traffic(rule.props):
            ingress |= rule.type == SG_INGRESS_RULE
            egress |= rule.type == SG_EGRESS_RULE
    return ingress, egress


def _efa_security_group(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    efa = [lt for lt in stack.of(LAUNCH_TEMPLATE) if efa_interfaces(lt)]
    if not efa:
        raise NotApplicable("no launch template with EFA interfaces in the stack")
    judged = [(lt, groups) for lt in efa if (groups := lt.linked("networkInterfaces", SECURITY_GROUP))]
    if not judged:  # security groups given by id: not in this stack to judge
        raise NotApplicable("the EFA interfaces' security groups are given by id, not declared in the stack")
    for lt, groups in judged:
        checked = {sg.name: _self_ingress_egress(sg, stack) for sg in groups}
        if not any(i and e for i, e in checked.values()):
            detail = ", ".join(
                f"{n} ({'ingress' if i else 'no ingress'}/{'egress' if e else 'no egress'} from itself)"
                for n, (i, e) in sorted(checked.items())
            )
            yield (
                lt,
                f"launch template {lt.name} puts EFA interfaces in security groups none of which allows all traffic "
                f"to and from itself: {detail}; EFA needs an all-protocol self-referencing ingress and egress rule",
            )


POLICY = StackRule(
    Meta(
        name="aws-ec2-securitygroup-enforce-efa-self-reference",
        display_name="EFA security group",
        description="EFA interfaces sit in a security group allowing all traffic to and from itself.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Add ingress and egress rules with protocol -1 and self = true to the EFA security group.",
    ),
    _efa_security_group,
    types={LAUNCH_TEMPLATE},
)
