"""Workload goodput: a workload's expected goodput, after checkpoint writes, rework and restarts at its failure
rate, stays above a floor.

Goodput is the share of the run's wall-clock time spent on useful steps: 1 - write/interval - interval/(2 MTBF) -
restart/MTBF (Young 1974; Daly 2006). The default floor, 90%, is what Meta reports for Llama 3 405B pre-training on
16,384 H100s ("effective training time >90%", Grattafiori et al. 2024, arXiv:2407.21783 §3.3.4) with 419
unexpected interruptions in 54 days: a plan that expects less loses more than a published run of the largest
scale did. Meta's figure counts every loss (diagnosis, stragglers, restarts), the estimate only checkpoints and
failures, so the floor is lenient, not strict.
"""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aicluster import WORKLOAD
from ..facts.engine import Res
from ..facts.model import Workload
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule
from ._figures import TOLERANCE, gb

DEFAULT_MIN_GOODPUT = 0.9  # Llama 3 405B: "effective training time >90%" (arXiv:2407.21783 §3.3.4)


def _speed(gb_s: float) -> str:
    """GB/s to three significant figures at most, never "0.0" for a small need."""
    if gb_s >= 100:
        return f"{gb_s:,.0f} GB/s"
    return f"{gb_s:,.1f} GB/s" if gb_s >= 1 else f"{gb_s:.2g} GB/s"


def needed_write_gb_s(w: Workload, floor: float) -> float | None:
    """Write GB/s that keeps goodput at `floor` at Young's interval (where write/interval + interval/(2 MTBF) =
    sqrt(2 write / MTBF)): write <= (1 - floor - restart/MTBF)^2 MTBF / 2. None where no speed can (restarts
    alone lose more) or the figures are not recorded."""
    if w.checkpoint_bytes is None or w.mtbf_h is None or w.mtbf_h <= 0:
        return None
    mtbf_s = w.mtbf_h * 3600
    budget = 1 - floor - (w.restart_s or 0.0) / mtbf_s
    if budget <= 0:
        return None
    return w.checkpoint_bytes / 1e9 / (budget**2 * mtbf_s / 2)


def _goodput(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    judged = [w for w in stack.workloads if w.goodput is not None]
    if not judged:
        raise NotApplicable("no sized workload has a goodput estimate (none writes to a parallel file system)")
    floor = float(ctx.setting("min_goodput", default=DEFAULT_MIN_GOODPUT))
    for w in judged:
        goodput = w.goodput
        if goodput is None or goodput >= floor - TOLERANCE:
            continue
        where = ", ".join(w.filesystems) or "its file systems"
        parts = []
        if w.checkpoint_bytes is not None and w.checkpoint_write_s is not None:
            speed = f" at {_speed(w.write_gb_s)}" if w.write_gb_s is not None else ""
            took = f"{w.checkpoint_write_s:,.0f} s{speed}"
            parts.append(f"a {gb(w.checkpoint_bytes)} checkpoint takes {took} on {where}")
        if w.checkpoint_interval_s is not None:
            parts.append(f"written every {w.checkpoint_interval_s / 60:,.1f} min")
        if w.mtbf_h is not None:
            parts.append(f"with an interruption every {w.mtbf_h:,.1f} h")
        need = needed_write_gb_s(w, floor)
        restart = (w.restart_s or 0.0) / (w.mtbf_h * 3600) if w.mtbf_h else None
        if need is not None:
            fix = (
                f"about {_speed(need)} of checkpoint writes would meet it: raise the file system's capacity_tib or "
                "throughput_mb_s_per_tib"
            )
        elif restart is not None and w.checkpoint_bytes is not None:
            fix = (
                f"no write speed meets it: restarts alone lose {restart:.1%} of the time; run on fewer GPUs or lower "
                "min_goodput"
            )
        else:
            fix = "raise the file system's capacity_tib or throughput_mb_s_per_tib"
        detail = ", ".join(parts)
        yield (
            w.res,
            f"workload {w.name} expects {goodput:.1%} goodput, under the {floor:.0%} floor"
            + (f": {detail}" if detail else "")
            + f"; {fix}",
        )


POLICY = StackRule(
    Meta(
        name="aicluster-workload-enforce-min-goodput",
        display_name="Workload goodput",
        description="A workload's expected goodput, after checkpoint writes, rework and restarts at its failure "
        "rate, stays above a floor.",
        concern="sizing",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.ADVISORY,
        remediation="Write checkpoints faster (raise the parallel file system's capacity_tib or "
        "throughput_mb_s_per_tib) or checkpoint less state.",
        config={
            "min_goodput": {
                "type": "number",
                "exclusiveMinimum": 0,
                "exclusiveMaximum": 1,
                "description": "Lowest expected goodput (0.9: Llama 3 405B's >90% effective training time).",
            },
        },
    ),
    _goodput,
    [WORKLOAD],
)
