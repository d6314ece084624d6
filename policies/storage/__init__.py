"""Storage: the parallel file system writes a checkpoint fast enough for the fleet's failure rate (one rule)."""

from __future__ import annotations

from ..rule import Rule
from . import checkpoint_throughput
from .checkpoint_throughput import fabric_reach, jobs

__all__ = ["POLICIES", "fabric_reach", "jobs"]

POLICIES: list[Rule] = [checkpoint_throughput.POLICY]
