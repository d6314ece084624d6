"""A site's plan: its fabrics (rail-optimised fat-trees), racks, power, cost and carbon."""

from __future__ import annotations

import math
from collections.abc import Sequence

from aicluster.catalog import Switch
from aicluster.catalog.pricing import cents
from aicluster.plan.context import PlanCtx, round2
from aicluster.plan.fabric import FabricRefused, PlannedFabric, plan_fabric
from aicluster.plan.models import PlannedController, PlannedPool, PlannedSite
from aicluster.plan.racks import RackSlot, plan_site_racks
from aicluster.spec import OnpremFabric, OnpremPool, Site, did_you_mean, pool_fabric


def _plan_site_fabrics(ctx: PlanCtx, site: Site, pools: Sequence[PlannedPool]) -> list[PlannedFabric]:
    """One fat-tree per fabric of the site: the site's (shared by the pools that give none) and each pool's own."""
    i = ctx.spec.sites.index(site)
    users: dict[str, list[tuple[int, OnpremPool]]] = {}
    for j, pool in enumerate(ctx.spec.pools):
        if isinstance(pool, OnpremPool) and pool.site == site.name:
            users.setdefault(pool_fabric(pool, site)[0], []).append((j, pool))
    planned = {p.name: p for p in pools}
    out = []
    for name, members in users.items():
        j, first = members[0]
        spec = first.fabric or site.fabric
        assert spec is not None
        path: tuple[str | int, ...] = ("pools", j, "fabric") if first.fabric else ("sites", i, "fabric")
        mine = [planned[p.name] for _, p in members if p.name in planned]
        if not mine:
            continue  # the pools' own errors are reported there
        switch = _fabric_switch(ctx, path, spec)
        rails = spec.rails or min(_rails(ctx, p) for p in mine)
        if not _links_fit_the_nics(ctx, path, spec, mine) or switch is None:
            continue
        try:
            out.append(
                plan_fabric(
                    name,
                    sum(p.nodes for p in mine),
                    rails,
                    switch,
                    spec.oversubscription,
                    spec.reserved_ports,
                    link_gbps=spec.link_gbps,
                    planes=spec.planes,
                    node_ports_per_cage=_ports_per_cage(ctx, mine, rails),
                    alternatives=ctx.catalog.switches.values(),
                )
            )
        except FabricRefused as exc:
            ctx.problem(path, exc.message, has_value=False)
    return out


def _ports_per_cage(ctx: PlanCtx, pools: Sequence[PlannedPool], rails: int) -> int:
    """Compute NIC ports one node-side transceiver carries: the catalog's, where the node shapes give it (DGX B300:
    8 single-port OSFP cages), else 2 on 8-rail nodes (DGX H100/B200: twin-port cages) and 1 below."""
    given = {
        it.network.ports_per_cage
        for p in pools
        if (it := ctx.catalog.instance_type("onprem", p.instance_type)) is not None and it.network.ports_per_cage
    }
    return min(given) if given else (2 if rails >= 8 else 1)


def _rails(ctx: PlanCtx, pool: PlannedPool) -> int:
    """Compute NICs per node of the pool's node shape (one per rail); 1 for a shape without GPU NICs."""
    it = ctx.catalog.instance_type("onprem", pool.instance_type)
    return max(1, it.network.gpu_nics) if it is not None else 1


def _links_fit_the_nics(
    ctx: PlanCtx, path: tuple[str | int, ...], spec: OnpremFabric, pools: Sequence[PlannedPool]
) -> bool:
    """A link runs at the slower end's speed: a fabric faster than its nodes' compute NICs is not what gets built."""
    fits = True
    for p in pools:
        it = ctx.catalog.instance_type("onprem", p.instance_type)
        if it is None or it.network.gpu_nics < 1:
            continue
        nic_gbps = it.network.bandwidth_gbps / it.network.gpu_nics
        if spec.link_gbps > nic_gbps + 1e-9:
            ctx.problem(
                (*path, "link_gbps"),
                f"faster than the compute NICs of {p.instance_type} (pool {p.name}): {it.network.gpu_nics} x "
                f"{nic_gbps:g} Gb/s per the catalog; set link_gbps to {nic_gbps:g} or less",
                spec.link_gbps,
            )
            fits = False
    return fits


def _fabric_switch(ctx: PlanCtx, path: tuple[str | int, ...], spec: OnpremFabric) -> Switch | None:
    """The catalog switch a fabric is built of: the one named, else the one of its kind, link speed and radix."""
    switches = list(ctx.catalog.switches.values())
    if spec.switch is not None:
        sw = ctx.catalog.switches.get(spec.switch)
        if sw is not None and sw.fabric != spec.kind:
            ctx.problem(
                (*path, "switch"),
                f"{sw.name} is a {sw.fabric} switch but the fabric's kind is {spec.kind}: name a {spec.kind} switch, "
                f"or set kind: {sw.fabric}",
                spec.switch,
            )
            return None
        if sw is None:
            ids = [s.id for s in switches]
            ctx.problem(
                (*path, "switch"),
                f"no switch of this id in the catalog; known: {', '.join(ids)}",
                spec.switch,
                did_you_mean(spec.switch, ids),
            )
        return sw
    fits = [
        s
        for s in switches
        if s.fabric == spec.kind and (m := s.mode(spec.link_gbps)) is not None and m.radix == spec.switch_radix
    ]
    if fits:
        return fits[0]
    offered = [
        f"{s.id} ({m.radix} x {m.port_gbps}G)"
        for s in switches
        if s.fabric == spec.kind
        for m in s.modes
        if m.port_gbps == spec.link_gbps
    ]
    ctx.problem(
        (*path, "switch_radix"),
        f"the catalog has no {spec.kind} switch with {spec.switch_radix} ports at {spec.link_gbps} Gb/s"
        + (f"; at that speed it has: {', '.join(offered)}" if offered else "")
        + "; set switch_radix to one of those, or name a catalog switch under switch",
        spec.switch_radix,
    )
    return None


def _rack_slots(p: PlannedPool, liquid_rack_kw: float | None) -> list[RackSlot]:
    """A pool's nodes as rack slots: an NVLink domain's nodes in its own rack (a liquid-cooled position), other
    nodes in the rack their host names, or packed."""
    assert p.onprem is not None
    if p.nvlink is not None:
        named = {h.rack for h in p.onprem.hosts if h.rack}
        return [
            RackSlot(p.name, rack, p.node_power_kw, liquid_rack_kw, rack in named)
            for d, rack in zip(p.nvlink.domains, p.onprem.domain_racks, strict=True)
            for _ in range(d.nodes)
        ]
    return [
        RackSlot(p.name, rack, p.node_power_kw)
        for rack in ([h.rack for h in p.onprem.hosts] if p.onprem.hosts else [None] * p.nodes)
    ]


def plan_sites(ctx: PlanCtx, pools: Sequence[PlannedPool], controller: PlannedController | None) -> list[PlannedSite]:
    out = []
    for site in ctx.spec.sites:
        mine = [p for p in pools if p.onprem is not None and p.onprem.site == site.name]
        hardware = [p.instances_usd_per_month for p in mine]
        energy = cents(math.fsum(p.energy_usd_per_month or 0.0 for p in mine))
        priced = [h for h in hardware if h is not None]
        it_kw = math.fsum(p.power_kw_it for p in mine)
        fabrics = _plan_site_fabrics(ctx, site, mine)
        slots = [slot for p in mine for slot in _rack_slots(p, site.power.liquid_rack_kw)]
        racks = plan_site_racks(slots, site.power.rack_kw) if slots else []
        out.append(
            PlannedSite(
                fabrics=tuple(fabrics),
                racks=tuple(racks),
                name=site.name,
                cidrs=tuple(site.network.cidrs),
                vpn_endpoint=site.network.vpn_endpoint,
                bgp_asn=site.network.bgp_asn,
                pue=site.power.pue,
                usd_per_kwh=site.power.usd_per_kwh,
                rack_kw=site.power.rack_kw,
                liquid_rack_kw=site.power.liquid_rack_kw,
                max_kw=site.power.max_kw,
                carbon_g_per_kwh=site.carbon_g_per_kwh,
                pools=tuple(p.name for p in mine),
                nodes=sum(p.nodes for p in mine),
                gpus=sum(p.gpus for p in mine),
                power_kw_it=round2(it_kw),
                power_kw_facility=round2(it_kw * site.power.pue),
                hardware_usd_per_month=cents(math.fsum(priced)) if mine and len(priced) == len(hardware) else None,
                energy_usd_per_month=energy,
                cost_usd_per_month=cents(math.fsum(priced) + energy),
                co2e_t_per_month=round2(math.fsum(p.co2e_t_per_month for p in mine)),
                controller_host=controller.host if controller and controller.region == site.name else None,
            )
        )
    return out
