"""Workload fits its pools: every workload has a parallel layout whose model states and activations fit its pools'
GPU memory."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aicluster import WORKLOAD
from ..facts.engine import Res
from ..facts.model import Workload
from ..facts.stack import Stack
from ..rule import Ctx, Meta, StackRule
from ._figures import gb


def _on(w: Workload) -> str:
    pools = ", ".join(w.pools) or "its pools"
    if w.gpus_available is not None and w.instance_type:
        return f"{pools} ({w.gpus_available:,} GPUs of {w.instance_type})"
    return pools


def _fit(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    for w in stack.workloads:
        if w.fits is not False:
            continue
        short = w.shortfall_bytes
        memory = "no layout's memory fits the GPUs"
        if short is not None and short > 0:
            need, have = gb(w.memory_total_bytes or 0.0), gb(w.memory_capacity_bytes or 0.0)
            memory = f"the closest layout needs {need} per GPU of {have} ({gb(short)} short)"
        if not w.reason:
            yield (
                w.res,
                f"workload {w.name} fits no layout on {_on(w)}: {memory}; the estimate gives no reason. Add GPUs "
                "(pools[].nodes) or a larger GPU "
                "(pools[].instance_type), or let workloads[].training use recompute or a higher zero_stage",
            )
            continue
        # the estimator's reason names the fixes that would change something (it knows what the workload set);
        # its shortfall, when it gives one, is not repeated
        reason = w.reason.rstrip(". ")
        said = reason.startswith("nothing fits:") or reason.startswith("no layout:")
        yield (w.res, f"workload {w.name} fits no layout on {_on(w)}: {reason if said else f'{memory}; {reason}'}")


POLICY = StackRule(
    Meta(
        name="aicluster-workload-enforce-fit",
        display_name="Workload fits its pools",
        description="Every workload has a parallel layout whose model states and activations fit its pools' GPU "
        "memory.",
        concern="sizing",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Give the workload more or larger GPUs (pools[].nodes, pools[].instance_type), or allow "
        "activation recomputation and a higher ZeRO stage (workloads[].training).",
    ),
    _fit,
    [WORKLOAD],
)
