"""Slurm's planner: the controller that runs slurmctld and slurmdbd, a VM of a cloud or a host of an owned site.

The pools are Slurm's partitions as they are planned (aicluster/schedulers/slurm/render.py writes slurm.conf from
them); the nodes are VMs that boot the image the stack names, and Ansible tunes them over the inventory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from aicluster.catalog import InstanceType
from aicluster.catalog.pricing import cents, compute_price, hourly_month
from aicluster.plan.context import UNPRICED_NOTE, PlanCtx, instance_type_of, round2, service_cost
from aicluster.plan.models import ClusterPlan, PlannedController, PlannedNetwork, PlannedNvlinkDomain, PlannedPool
from aicluster.plan.placement import first_cloud, placement
from aicluster.plan.pools import cloud_of
from aicluster.providers.base import ProviderPlanner
from aicluster.schedulers.base import ControlPlane, Suggest, placeholder
from aicluster.spec import ClusterSpec, SlurmScheduler
from aicluster.spec import Path as SpecPath


def _onprem_controller(ctx: PlanCtx) -> PlannedController:
    """slurmctld on a host of the site the stack names: an existing machine, so no image, disk or price of
    its own (its cost and power are the site's)."""
    sched = ctx.spec.scheduler
    assert isinstance(sched, SlurmScheduler)
    c = sched.controller
    site = c.site or ctx.spec.sites[0].name
    return PlannedController(
        kind="slurm",
        root_volume_gib=0,
        root_disk_service="",
        imds_hop_limit=None,
        provider="onprem",
        region=site,
        zone=None,
        network=f"onprem-{site}",
        instance_type="site host",
        image="",
        price=None,
        instance_usd_per_month=0.0,
        volume_usd_per_month=0.0,
        cost_usd_per_hour=0.0,
        cost_usd_per_month=0.0,
        node_power_kw=0.0,
        power_kw_facility=0.0,
        co2e_t_per_month=0.0,
        host=c.host,
        address=c.address,
    )


def plan_controller(ctx: PlanCtx, planners: Mapping[str, ProviderPlanner]) -> PlannedController | None:
    """slurmctld's VM in a cloud (next to the first pool unless the stack says where), or the site host the stack
    names when it has sites."""
    sched = ctx.spec.scheduler
    assert isinstance(sched, SlurmScheduler)
    base: tuple[str | int, ...] = ("scheduler", "controller")
    c = sched.controller
    if ctx.spec.sites:
        return _onprem_controller(ctx)
    provider = c.provider or first_cloud(ctx)
    cloud = cloud_of(planners, provider)
    defaults = ctx.catalog.constants.defaults.get(provider)
    where = placement(ctx, base, provider, c.region, None, "controller", zonal=cloud.controller_zonal)
    type_name = c.instance_type or (defaults.controller_instance_type if defaults else None)
    if type_name is None:
        ctx.problem((*base, "instance_type"), f"the catalog has no default {provider} controller type; set one")
        return None
    if where is None:
        return None
    reg, zone = where
    it = instance_type_of(ctx, (*base, "instance_type"), provider, type_name)
    if it is None:
        return None
    resolved = compute_price(it, reg.name, "on-demand", ctx.spec.pricing.overrides)
    if resolved.price is None:
        _unpriced_controller(ctx, it, reg.name, defaulted=c.instance_type is None)
    network = ctx.need((*base, "region"), provider, reg.name, zone, 1)
    image = cloud.image(ctx, base, None, defaults.controller_image if defaults else None)
    root_gib = cloud.controller_root_gib
    volume_month = service_cost(
        ctx,
        provider,
        cloud.boot_disk(ctx, it),
        reg.name,
        root_gib,
        "the controller's root volume",
    )
    instance_month = hourly_month(resolved.price.usd, 1, ctx.catalog.hours_per_month) if resolved.price else None
    priced = [x for x in (instance_month, volume_month) if x is not None]
    month = cents(sum(priced)) if priced else None
    return PlannedController(
        kind="slurm",
        root_volume_gib=root_gib,
        root_disk_service=cloud.boot_disk(ctx, it),
        imds_hop_limit=cloud.controller_imds_hop_limit,
        provider=provider,
        region=reg.name,
        zone=zone,
        network=network,
        instance_type=it.name,
        image=image,
        price=resolved.price,
        instance_usd_per_month=instance_month,
        volume_usd_per_month=volume_month,
        cost_usd_per_hour=cents(month / ctx.catalog.hours_per_month) if month is not None else None,
        cost_usd_per_month=month,
        unpriced=tuple(
            what for what, m in ((f"instance {it.name}", instance_month), ("root volume", volume_month)) if m is None
        ),
        node_power_kw=it.node_power_kw,
        power_kw_facility=round2(it.node_power_kw * reg.pue),
        co2e_t_per_month=round2(it.node_power_kw * reg.pue * ctx.catalog.hours_per_month * reg.carbon_g_per_kwh / 1e6),
    )


def _unpriced_controller(ctx: PlanCtx, it: InstanceType, region: str, defaulted: bool) -> None:
    """The one rule for an unpriced item, for the controller: a warning that says where its type came from and
    what to set; the controller is planned, and left out of the cost (the totals say so)."""
    priced = sorted(
        (
            (p.price.usd, t.name)
            for (provider, _), t in ctx.catalog.instance_types.items()
            if provider == it.provider
            and t.accelerator_count == 0
            and t.vcpus >= CONTROLLER_MIN_VCPUS
            and (p := compute_price(t, region, "on-demand", ctx.spec.pricing.overrides)).price is not None
        )
    )[:3]
    where = (
        f"scheduler.controller.instance_type is not set, and the catalog's default {it.provider} controller "
        f"type, {it.name},"
        if defaulted
        else f"scheduler.controller.instance_type {it.name}"
    )
    instead = (
        f"set scheduler.controller.instance_type to a type priced there ({', '.join(n for _, n in priced)}), or "
        if priced
        else ""
    )
    ctx.warnings.append(
        f"{where} has no on-demand price in {region} in the catalog, so the controller is left out of the cost "
        f"({UNPRICED_NOTE}): {instead}add your rate under pricing.overrides "
        f"(sku: {it.name}, region: {region}, usd_per_hour: ...)"
    )


# A Slurm controller runs slurmctld and slurmdbd: the smallest type suggested in place of an unpriced one.
CONTROLLER_MIN_VCPUS = 4


class SlurmPlanner:
    kind: ClassVar[str] = "slurm"
    title: ClassVar[str] = "Slurm"
    pool_images: ClassVar[bool] = True
    tpu_node_pools: ClassVar[bool] = False

    def regions(self, spec: ClusterSpec) -> list[tuple[SpecPath, str | None]]:
        """A cloud controller's region, where the stack gives one; a stack with sites runs slurmctld on-prem."""
        sched = spec.scheduler
        assert isinstance(sched, SlurmScheduler)
        return [] if spec.sites else [(("scheduler", "controller", "region"), sched.controller.region)]

    def control_plane(
        self, ctx: PlanCtx, pools: Sequence[PlannedPool], planners: Mapping[str, ProviderPlanner]
    ) -> ControlPlane:
        return ControlPlane(controller=plan_controller(ctx, planners))

    def with_networks(
        self,
        ctx: PlanCtx,
        plane: ControlPlane,
        networks: Sequence[PlannedNetwork],
        planners: Mapping[str, ProviderPlanner],
    ) -> ControlPlane:
        """The controller took its address with the pools' (plan_controller): nothing more."""
        return plane

    def why_no_inventory(self, plan: ClusterPlan, stack: str, suggest: Suggest = placeholder) -> str | None:
        return None  # the pools' VMs and the controller are Ansible's hosts

    def why_no_discovery(self, plan: ClusterPlan, suggest: Suggest = placeholder) -> str | None:
        return None

    def tune_notes(self, plan: ClusterPlan, stack: str, suggest: Suggest = placeholder) -> list[str]:
        return []  # tune runs the playbook

    def nvlink_scheduling(self, plan: ClusterPlan, domain: PlannedNvlinkDomain) -> tuple[str | None, str | None]:
        """Each domain is a topology/block block named after it (render.py); its nodes run one IMEX domain (the
        nvidia_imex role, from the inventory's nvlink_<domain> group) and each job gets its channel from
        switch/nvidia_imex (Slurm 24.05+) or the prolog (23.11)."""
        return (
            f"topology/block BlockName={domain.id}",
            "nvidia-imex per NVLink domain (nvidia_imex role); job channels from switch/nvidia_imex or the prolog",
        )


PLANNER = SlurmPlanner()
