"""How the workload rules show figures, and when two are equal."""

from __future__ import annotations

TOLERANCE = 1e-9  # figures round-trip through JSON: equal is within


def gb(n: float) -> str:
    return f"{n / 1e9:,.1f} GB"
