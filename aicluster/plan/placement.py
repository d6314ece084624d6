"""Where a thing the stack places next to its pools goes by default: a file system, a Slurm controller.

Imports only aicluster.catalog and aicluster.plan.context: scheduler planners (aicluster.schedulers.<kind>.plan)
import this module, and the plan package imports them through its registry.
"""

from __future__ import annotations

from aicluster.catalog import Region

from .context import PlanCtx, region_of, zone_of


def first_cloud(ctx: PlanCtx) -> str:
    """The provider of the first cloud pool: where the controller and file systems go by default (the spec
    refuses a stack whose file systems have no cloud to live in)."""
    return next((p.provider for p in ctx.spec.pools if p.provider != "onprem"), ctx.spec.pools[0].provider)


def near_pool(ctx: PlanCtx, provider: str, region: str | None) -> tuple[str, str | None] | None:
    """(region, zone) of the first pool of `provider` (in `region`, if given), from the spec itself,
    so that a pool's own error does not cascade into its neighbours'."""
    for p in ctx.spec.pools:
        if p.provider == provider and (region is None or p.region == region):
            return p.region, p.zone
    return None


def placement(
    ctx: PlanCtx,
    base: tuple[str | int, ...],
    provider: str,
    region: str | None,
    zone: str | None,
    what: str,
    *,
    zonal: bool = True,
) -> tuple[Region, str | None] | None:
    """Where a file system or controller goes: as given, else next to the first pool. A `zonal` thing
    always gets a zone where the region has zones; a regional one (an Azure VM or NetApp volume) takes
    its pool's zone, or none when the pool is regional."""
    near = near_pool(ctx, provider, region)
    if region is None:
        if near is None:
            ctx.problem((*base, "region"), f"no {provider} pool to place the {what} near; set region")
            return None
        reg = ctx.catalog.region(provider, near[0])
        if reg is None:
            return None  # the pool's region is wrong, and reported there
    else:
        reg = region_of(ctx, (*base, "region"), provider, region)
        if reg is None:
            return None
    if zone is not None:
        checked = zone_of(ctx, (*base, "zone"), reg, zone, (), f"the {what}")
        return (reg, checked) if checked else None
    if near is not None and near[0] == reg.name and near[1] in reg.zones:
        return reg, near[1]
    if not zonal or not reg.zones:
        return reg, None
    return reg, reg.zones[0]
