"""Workload within its target days: a workload's estimated training time stays within the days it targets."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aicluster import WORKLOAD
from ..facts.engine import Res
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule
from ._figures import TOLERANCE


def _target_days(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    judged = [(w, w.days, w.target_days) for w in stack.workloads if w.target_days is not None and w.days is not None]
    if not judged:
        raise NotApplicable("no sized workload sets targets.days")
    for w, days, target in judged:
        if days is None or target is None or days <= target * (1 + TOLERANCE):
            continue
        on = f" on {w.gpus:,} GPUs" if w.gpus is not None else ""
        need = w.gpus_for_target_days
        if need is None:
            fix = "add GPUs (pools[].nodes) or relax workloads[].targets.days"
        elif w.gpus_available is not None and need > w.gpus_available:
            fix = (
                f"it would need about {need:,} GPUs, more than the {w.gpus_available:,} its pools have: add nodes "
                "(pools[].nodes) or relax workloads[].targets.days"
            )
        else:
            fix = (
                f"it would need about {need:,} GPUs: raise workloads[].targets.gpus (or pools[].nodes), or relax "
                "workloads[].targets.days"
            )
        yield (
            w.res,
            f"workload {w.name} takes an estimated {days:,.1f} days{on}, over its target of {target:,.1f} days; {fix}",
        )


POLICY = StackRule(
    Meta(
        name="aicluster-workload-enforce-target-days",
        display_name="Workload within its target days",
        description="A workload's estimated training time stays within the days it targets.",
        concern="sizing",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.ADVISORY,
        remediation="Give the workload the GPUs the finding names (pools[].nodes, workloads[].targets.gpus), or "
        "relax workloads[].targets.days.",
    ),
    _target_days,
    [WORKLOAD],
)
