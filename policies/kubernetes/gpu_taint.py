"""Tainted accelerator node groups: a node group whose instance type carries GPUs (or TPUs) has a NoSchedule taint,
so only the jobs that need them land there."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res
from ..facts.kubernetes import NODE_GROUP_TYPES
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY


def _accelerator_taint(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    groups = [g for g in stack.node_groups if g.accelerators]
    if not groups:
        raise NotApplicable("no Kubernetes node group of accelerator nodes in the stack")
    for g in groups:
        if not g.holding:
            got = ", ".join(str(t) for t in g.taints) or "no taint"
            yield (
                g.res,
                f"{g.name} runs {g.instance_type} ({g.accelerators} accelerators per node) with {got}, so any pod "
                "can land on its nodes and hold them; add the taint nvidia.com/gpu=present:NoSchedule (TPU: "
                "google.com/tpu=present:NoSchedule) and let the jobs that request GPUs tolerate it",
            )


POLICY = StackRule(
    Meta(
        name="aicluster-kubernetes-nodegroup-enforce-gpu-taint",
        display_name="Tainted accelerator node groups",
        description="A node group whose instance type carries GPUs (or TPUs) has a NoSchedule taint, so only the "
        "jobs that need them land there.",
        concern="cost",
        severity=Severity.MEDIUM,
        enforcement=MANDATORY,
        remediation="Add nvidia.com/gpu=present:NoSchedule (google.com/tpu for TPUs) to the node group.",
    ),
    _accelerator_taint,
    types=NODE_GROUP_TYPES,
)
