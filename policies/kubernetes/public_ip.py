"""No public node addresses: Kubernetes nodes get no public IP addresses (EKS launch templates and subnets, GKE
private nodes, AKS enableNodePublicIP); each cloud's node-group reader says why a group's nodes would get one."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res
from ..facts.kubernetes import NODE_GROUP_TYPES
from ..facts.stack import Stack
from ..rule import Ctx, Meta, StackRule

MANDATORY = EnforcementLevel.MANDATORY


def _public_nodes(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    for g in stack.node_groups:
        if g.public:
            yield (
                g.res,
                f"{g.name} gives its nodes public IP addresses ({g.public}); {g.fix_public}: nodes egress "
                "through NAT and are reached through the cluster's API",
            )


POLICY = StackRule(
    Meta(
        name="aicluster-kubernetes-nodegroup-disallow-public-ip",
        display_name="No public node addresses",
        description="Kubernetes nodes get no public IP addresses (EKS launch templates and subnets, GKE private "
        "nodes, AKS enableNodePublicIP).",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Keep nodes private: no associatePublicIpAddress, GKE private nodes, AKS enableNodePublicIP false.",
        frameworks=("cis-aws", "soc2"),
        controls=("CIS Amazon EKS Benchmark 5.4.3", "CIS GKE Benchmark 5.6.5", "SOC 2 CC6.1"),
    ),
    _public_nodes,
    types=NODE_GROUP_TYPES,
)
