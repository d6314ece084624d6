"""Price resolution: negotiated overrides first, then catalog list prices.

Shared by the planner (overrides from the stack spec) and the policy pack (overrides as the
`AiCluster` component declares them), so both cost a fleet the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from .models import InstanceType, StorageTier, TpuType


class Override(Protocol):
    """A negotiated rate (the stack's `pricing.overrides[]` entries have this shape)."""

    @property
    def sku(self) -> str: ...
    @property
    def region(self) -> str | None: ...
    @property
    def market(self) -> str | None: ...
    @property
    def usd_per_hour(self) -> float | None: ...
    @property
    def usd_per_gib_month(self) -> float | None: ...


class Price(BaseModel):
    """A resolved price and where it came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    usd: float  # per node-hour (compute), per GiB-month (storage, disks) or per hour (gateways, addresses)
    unit: Literal["node-hour", "chip-hour", "gib-month", "hour"]
    basis: str  # e.g. "catalog on-demand us-east-1", "override pricing.overrides[0]"
    source: str | None  # catalog source id, None for overrides


_MARKET_FIELD = {
    "on-demand": "on_demand_usd_per_hour",
    "spot": "spot_usd_per_hour",
    "capacity-block": "capacity_block_usd_per_hour",
    "reserved": "reserved_usd_per_hour",
    "flex-start": "flex_start_usd_per_hour",
}


@dataclass(frozen=True)
class Resolved:
    price: Price | None


def _override(
    overrides: Sequence[Override], sku: str, region: str, market: str | None, field: str
) -> tuple[int, Override] | None:
    best: tuple[int, int, Override] | None = None
    for i, o in enumerate(overrides):
        if o.sku != sku or getattr(o, field) is None:
            continue
        if o.region is not None and o.region != region:
            continue
        if o.market is not None and o.market != market:
            continue
        score = (o.region is not None) + (o.market is not None)
        if best is None or score > best[0]:
            best = (score, i, o)
    return (best[1], best[2]) if best else None


def price_sku(it: InstanceType | TpuType) -> str:
    """The id a price override names: the instance type, or a TPU generation's accelerator (`tpu-v5p`)."""
    return it.accelerator if isinstance(it, TpuType) else it.name


def compute_price(it: InstanceType | TpuType, region: str, market: str, overrides: Sequence[Override]) -> Resolved:
    """Per node-hour for an instance type, per chip-hour for a TPU generation: a negotiated override, else the
    catalog's rate for that very market; a market with no rate of its own is unpriced, never costed at another."""
    sku = price_sku(it)
    unit: Literal["node-hour", "chip-hour"] = "chip-hour" if isinstance(it, TpuType) else "node-hour"
    found = _override(overrides, sku, region, market, "usd_per_hour")
    if found is not None:
        i, o = found
        assert o.usd_per_hour is not None
        return Resolved(Price(usd=o.usd_per_hour, unit=unit, basis=f"pricing.overrides[{i}]", source=None))
    off = it.offering(region)
    if off is None:
        return Resolved(None)
    listed = getattr(off, _MARKET_FIELD[market])
    if listed is None:
        # one rule for every market: no catalog rate of its own is unpriced (named, with the override line), never
        # costed at another market's rate (spot below on-demand, a capacity block or commitment at neither)
        return Resolved(None)
    return Resolved(
        Price(usd=listed, unit=unit, basis=f"catalog {market} {region}", source=off.source_of(_MARKET_FIELD[market]))
    )


def storage_price(tier: StorageTier, region: str, overrides: Sequence[Override]) -> Resolved:
    found = _override(overrides, tier.sku, region, None, "usd_per_gib_month")
    if found is not None:
        i, o = found
        assert o.usd_per_gib_month is not None
        return Resolved(Price(usd=o.usd_per_gib_month, unit="gib-month", basis=f"pricing.overrides[{i}]", source=None))
    listed = tier.prices_usd_per_gib_month.get(region)
    if listed is None:
        return Resolved(None)
    return Resolved(
        Price(
            usd=listed,
            unit="gib-month",
            basis=f"catalog {region}",
            source=tier.source_of("prices_usd_per_gib_month"),
        )
    )


# ------------------------------------------------------------------------------------------------
# The cost model: the one way a monthly figure is computed, rounded and summed. The planner (for the
# displayed totals, the reports and the diff) and the policy pack (for the budget) both cost with these,
# so the figures agree to the cent. An item with no price is None, never 0: it is named, not counted.
# ------------------------------------------------------------------------------------------------


class _Services(Protocol):
    """What the cost model needs of the catalog (aicluster.catalog.Catalog has it)."""

    @property
    def hours_per_month(self) -> float: ...
    def service_price(self, provider: str, service: str, region: str) -> float | None: ...
    def service_unit(self, provider: str, service: str) -> str | None: ...
    def service_source(self, provider: str, service: str) -> str | None: ...


# The override field that carries a service's rate, by the unit the catalog bills the service in.
SERVICE_FIELD = {"hour": "usd_per_hour", "gib-month": "usd_per_gib_month"}


def service_price(
    catalog: _Services, provider: str, service: str, region: str | None, overrides: Sequence[Override]
) -> Resolved:
    """The rate of a catalog service (root disks, NAT gateways, public addresses) in a region: a negotiated
    override (sku: the service's name, in the unit the catalog bills it in), else the catalog's list price."""
    unit = catalog.service_unit(provider, service)
    if unit is None or region is None:
        return Resolved(None)
    price_unit: Literal["hour", "gib-month"] = "hour" if unit == "hour" else "gib-month"
    found = _override(overrides, service, region, None, SERVICE_FIELD[price_unit])
    if found is not None:
        i, o = found
        usd = getattr(o, SERVICE_FIELD[price_unit])
        return Resolved(Price(usd=usd, unit=price_unit, basis=f"pricing.overrides[{i}]", source=None))
    listed = catalog.service_price(provider, service, region)
    if listed is None:
        return Resolved(None)
    return Resolved(
        Price(usd=listed, unit=price_unit, basis=f"catalog {region}", source=catalog.service_source(provider, service))
    )


def instance_override_hint(sku: str, region: str, market: str = "on-demand") -> str:
    """The override line that prices an instance type (or a TPU type, per chip-hour) in a region and market (an
    on-demand line names no market: it is the rate of every market the catalog has no rate for)."""
    named = "" if market == "on-demand" else f", market: {market}"
    return f"(sku: {sku}, region: {region}{named}, usd_per_hour: ...)"


def storage_override_hint(sku: str, region: str) -> str:
    """The override line that prices a storage tier (file systems) in a region."""
    return f"(sku: {sku}, region: {region}, usd_per_gib_month: ...)"


def service_override_hint(catalog: _Services, provider: str, service: str, region: str) -> str:
    """The override line that prices a service where the catalog has no rate for it."""
    field = SERVICE_FIELD.get(catalog.service_unit(provider, service) or "", "usd_per_hour")
    return f"(sku: {service}, region: {region}, {field}: ...)"


def cents(usd: float) -> float:
    """The one rounding of a cost figure: to the cent, once per item."""
    return round(usd, 2) + 0.0  # + 0.0: never -0.0


def hourly_month(usd_per_hour: float, units: float, hours_per_month: float) -> float:
    """USD per month of `units` billed by the hour (nodes, TPU chips, gateways)."""
    return cents(usd_per_hour * units * hours_per_month)


def service_month(catalog: _Services, resolved: Resolved, quantity: float) -> float | None:
    """USD per month of `quantity` units (GiB, gateways, addresses) of a catalog service at a resolved rate
    (`service_price`); None: not priced."""
    if resolved.price is None:
        return None
    return cents(quantity * resolved.price.usd * (catalog.hours_per_month if resolved.price.unit == "hour" else 1.0))


def storage_month(resolved: Resolved, capacity_gib: float | None) -> float | None:
    """USD per month of a file system of `capacity_gib` at a resolved per GiB-month price; None: not priced."""
    if resolved.price is None or capacity_gib is None:
        return None
    return cents(resolved.price.usd * capacity_gib)


@dataclass(frozen=True)
class CostLine:
    """One item of the monthly bill; `usd_per_month` None: no price (named, never counted as 0)."""

    what: str
    usd_per_month: float | None
    fix: str | None = None  # the pricing.overrides line that would price it, where one can be named


@dataclass(frozen=True)
class CostTotal:
    """The sum of the priced lines, and what could not be priced."""

    usd_per_month: float
    unpriced: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.unpriced


def total(lines: Sequence[CostLine]) -> CostTotal:
    """Exact (order-independent) sum of the priced lines, to the cent, and the unpriced ones by name."""
    return CostTotal(
        usd_per_month=cents(math.fsum(x.usd_per_month for x in lines if x.usd_per_month is not None)),
        unpriced=tuple(x.what for x in lines if x.usd_per_month is None),
    )


def money(usd: float | None, unpriced: bool = False, decimals: int = 2) -> str:
    """`$1,234.50`; `unpriced` for no price at all; `$1,234.50 + unpriced items` for a partial figure."""
    if usd is None:
        return "unpriced"
    shown = f"${usd:,.{decimals}f}"
    return f"{shown} + unpriced items" if unpriced else shown
