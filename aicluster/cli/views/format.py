"""Cells shared by the views: money, price basis, places, ratios, what accelerators are called."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.markup import escape

from aicluster.catalog.pricing import cents
from aicluster.catalog.pricing import money as money_text

if TYPE_CHECKING:
    from aicluster.plan import PlannedPool


def money(x: float | None, unpriced: Sequence[str] = ()) -> str:
    """A cost cell: never $0.00 for what has no price ("unpriced"; "$X + unpriced items" for a partial sum)."""
    return escape(money_text(x, bool(unpriced)))


def basis(p: PlannedPool) -> str:
    return p.price.basis if p.price is not None else "none (not in the cost)"


def hourly(x: float | None, hours: float) -> float | None:
    return cents(x / hours) if x is not None else None


def accelerators(pools: Sequence[PlannedPool]) -> str:
    """What a count of accelerators is called: GPUs, TPU chips, Trainium chips, or accelerators when mixed."""
    kinds = {p.accelerator_kind for p in pools if p.accelerator_kind}
    return {"gpu": "GPUs", "tpu": "TPU chips", "trainium": "Trainium chips"}.get(
        next(iter(kinds)) if len(kinds) == 1 else "", "accelerators"
    )


def where(region: str, zone: str | None) -> str:
    """AWS zones name their region (us-east-1a); Azure's are bare numbers, so say eastus/1."""
    if zone is None:
        return region
    return zone if zone.startswith(region) else f"{region}/{zone}"


def ratio(x: float) -> str:
    return f"{x:g}:1"


def window_text(days: Sequence[str], start: str, hours: int) -> str:
    """A weekly UTC maintenance window as the plan prints it (e.g. `sat, sun 22:00 UTC for 8 h`)."""
    return f"{', '.join(days)} {start} UTC for {hours} h"
