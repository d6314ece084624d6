"""Workloads: each sized workload fits its pools' GPUs, finishes within its target days, and keeps its goodput.

The rules read the `aicluster:sizing:Workload` resource (one per workload of the stack) as the engine hands it
over: the estimate the planner made of the job on its pools (layout, memory per GPU, days, checkpoints and
failures). A workload is an estimate, not a resource: nothing here is billed or draws power, and the cost and
power rules never count it.

One rule a module; `_figures` holds how they show figures.
"""

from __future__ import annotations

from ..rule import Rule
from . import enforce_fit, min_goodput, target_days
from .min_goodput import DEFAULT_MIN_GOODPUT

__all__ = ["DEFAULT_MIN_GOODPUT", "POLICIES"]

POLICIES: list[Rule] = [enforce_fit.POLICY, target_days.POLICY, min_goodput.POLICY]
