"""Price resolution: negotiated overrides from the stack first, then catalog list prices."""

from __future__ import annotations

from dataclasses import dataclass

from aicluster.catalog import InstanceType, StorageTier
from aicluster.spec import PriceOverride

from .models import Price

_MARKET_FIELD = {
    "on-demand": "on_demand_usd_per_hour",
    "spot": "spot_usd_per_hour",
    "capacity-block": "capacity_block_usd_per_hour",
    "reserved": "reserved_usd_per_hour",
}


@dataclass(frozen=True)
class Resolved:
    price: Price | None
    warning: str | None = None


def _override(
    overrides: list[PriceOverride], sku: str, region: str, market: str | None, field: str
) -> tuple[int, PriceOverride] | None:
    best: tuple[int, int, PriceOverride] | None = None
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


def compute_price(it: InstanceType, region: str, market: str, overrides: list[PriceOverride]) -> Resolved:
    found = _override(overrides, it.name, region, market, "usd_per_hour")
    if found is not None:
        i, o = found
        assert o.usd_per_hour is not None
        return Resolved(Price(usd=o.usd_per_hour, unit="node-hour", basis=f"pricing.overrides[{i}]", source=None))
    off = it.offering(region)
    if off is None:
        return Resolved(None)
    listed = getattr(off, _MARKET_FIELD[market])
    if listed is not None:
        return Resolved(
            Price(
                usd=listed,
                unit="node-hour",
                basis=f"catalog {market} {region}",
                source=off.source_of(_MARKET_FIELD[market]),
            )
        )
    if off.on_demand_usd_per_hour is None:
        return Resolved(None)
    return Resolved(
        Price(
            usd=off.on_demand_usd_per_hour,
            unit="node-hour",
            basis=f"catalog on-demand {region} (no {market} rate in the catalog)",
            source=off.source_of("on_demand_usd_per_hour"),
        ),
        warning=(
            f"no {market} price for {it.name} in {region} in the catalog; costed at the on-demand rate "
            f"(${off.on_demand_usd_per_hour:,.2f}/h). Add your rate under pricing.overrides "
            f"(sku: {it.name}, market: {market})."
        ),
    )


def storage_price(tier: StorageTier, region: str, overrides: list[PriceOverride]) -> Resolved:
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
