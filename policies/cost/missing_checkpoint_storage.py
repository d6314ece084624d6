"""Spot GPU and TPU fleets have a shared file system in the stack to checkpoint to."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule


def _spot_checkpoints(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    spot = [f for f in stack.fleets if f.market == "spot" and f.accelerators]
    if not spot:
        raise NotApplicable("no spot GPU or TPU pool in the stack")
    if stack.filesystems:
        return
    for f in spot:
        what = f"{f.instance_type} TPU ({f.chips} chips)" if f.tpu is not None else f"{f.nodes} x {f.instance_type}"
        yield (
            f.res,
            f"{f.res.name} runs {what} on spot with no shared file system in the stack: "
            "an interruption loses all progress since the job started; add storage (kind: lustre) to "
            "checkpoint to",
        )


POLICY = StackRule(
    Meta(
        name="aicluster-spot-missing-checkpoint-storage",
        display_name="Spot fleets checkpoint",
        description="Spot GPU fleets have a shared file system in the stack to checkpoint to.",
        concern="cost",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Add a parallel file system (storage: kind: lustre) or move the pool to on-demand.",
    ),
    _spot_checkpoints,
)
