"""`CloudPlanner`: the checks every cloud pool shares, around its provider's own placement.

A provider overrides `place()` (NICs, placement groups, scale sets, zones) and, for networks, `subnets()`;
it never skips the type, region, offering, zone, image or price checks, which live here once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from aicluster.catalog import InstanceType, Region
from aicluster.catalog.pricing import compute_price, instance_override_hint

from .context import (
    UNPRICED_NOTE,
    Placed,
    PlanCtx,
    boot_disk,
    facts_of,
    image_of,
    instance_type_of,
    offered_zones,
    pool_record,
    region_of,
    service_cost,
)
from .models import PlannedController, PlannedPool, PlannedSite, PoolNvlink
from .network import Cut
from .nvlink import pool_nvlink


class CloudPlanner(ABC):
    name: ClassVar[str]
    image_forms: ClassVar[str]
    storage_subnets: ClassVar[Mapping[str, str]] = {}
    reserved_ranges: ClassVar[tuple[tuple[str, str], ...]] = ()
    controller_root_gib: ClassVar[int] = 100
    controller_imds_hop_limit: ClassVar[int | None] = None
    controller_zonal: ClassVar[bool] = True
    # the boot-disk service when neither the instance type nor the provider's defaults name one
    boot_disk_fallback: ClassVar[str] = ""
    # Kubernetes: whether pods take addresses from an overlay range (GKE's pod range, AKS's CNI overlay) rather
    # than from the network's subnets (EKS's VPC CNI)
    kubernetes_pod_overlay: ClassVar[bool] = True

    @abstractmethod
    def is_image_reference(self, text: str) -> bool:
        """Each cloud answers this itself."""

    @abstractmethod
    def place(
        self,
        ctx: PlanCtx,
        i: int,
        pool: Any,
        it: InstanceType,
        reg: Region,
        zones: tuple[str, ...],
        image: str,
        nvlink: PoolNvlink | None,
    ) -> Placed | None:
        """The provider's own placement of a pool that passed the shared checks (NICs, zones, groups); a rack-scale
        pool's NVLink domains (`nvlink`) are each placed as one unit."""

    @abstractmethod
    def subnets(self, block: str, region: Region, zones: dict[str | None, int], roles: dict[str, int]) -> list[Cut]:
        """Each cloud answers this itself."""

    def kubernetes_resources(self, pool: PlannedPool) -> dict[str, str]:
        """What a pod that takes a whole node of the pool requests: its accelerators, and the cloud's fabric
        devices where they are a resource of their own."""
        resource = {"gpu": "nvidia.com/gpu", "tpu": "google.com/tpu"}.get(pool.accelerator_kind or "")
        return {resource: str(pool.accelerators_per_node)} if resource else {}

    def nat_gateways(self, zones: dict[str | None, int], layout: Sequence[Cut]) -> int:
        """One NAT gateway per network unless the cloud needs more (AWS: one per public subnet)."""
        return 1

    def network_fields(self, ctx: PlanCtx, key: str, roles: dict[str, int]) -> dict[str, object]:
        return {}

    def plan_sites(
        self, ctx: PlanCtx, pools: Sequence[PlannedPool], controller: PlannedController | None
    ) -> list[PlannedSite]:
        """Clouds have no sites of their own."""
        return []

    def boot_disk(self, ctx: PlanCtx, it: InstanceType) -> str:
        return boot_disk(ctx, it, self.boot_disk_fallback)

    def image(
        self,
        ctx: PlanCtx,
        path: tuple[str | int, ...],
        given: str | None,
        default: str | None,
        arch: str = "x86_64",
    ) -> str:
        if not ctx.scheduler.pool_images:
            return ""  # node groups boot the service's own GPU image (plan.kubernetes.node_image; the spec refuses one)
        return image_of(ctx, path, self.name, self.image_forms, self.is_image_reference, given, default, arch)

    def plan_pool(self, ctx: PlanCtx, i: int, pool: Any) -> PlannedPool | None:
        """The checks every pool shares (catalog type, region, offering, zone, image, price, addresses, cost),
        around the provider's own placement."""
        base: tuple[str | int, ...] = ("pools", i)
        provider = self.name
        assert pool.instance_type is not None
        assert pool.nodes is not None
        it = instance_type_of(ctx, (*base, "instance_type"), provider, pool.instance_type)
        reg = region_of(ctx, (*base, "region"), provider, pool.region)
        if it is None or reg is None:
            return None
        off = it.offering(pool.region)
        resolved = compute_price(it, pool.region, pool.market, ctx.spec.pricing.overrides)
        zones = offered_zones(
            ctx,
            base,
            f"pools[{i}] ({pool.name})",
            it.name,
            it.name,
            reg,
            off is not None,
            off.zones if off else (),
            [o.region for o in it.offerings],
            pool.zone,
        )
        if zones is None:
            return None
        sold = not it.markets or pool.market in it.markets
        if not sold:
            ctx.problem(
                (*base, "market"),
                f"{it.name} is sold only as {' or '.join(it.markets)}; set market: {it.markets[0]}",
                pool.market,
            )
        nvlink = pool_nvlink(ctx, (*base, "nodes"), pool.name, pool.nodes, it) if it.nvlink_domain else None
        if not sold or (it.nvlink_domain is not None and nvlink is None):
            return None
        defaults = ctx.catalog.constants.defaults.get(provider)
        acc = ctx.catalog.accelerator_of(it)
        gpu_default = (defaults.gpu_image_arm64 if it.cpu_arch == "arm64" else defaults.gpu_image) if defaults else None
        default_image = gpu_default if acc is not None and acc.kind == "gpu" else None
        if pool.image is None and default_image is None and ctx.scheduler.pool_images:
            ctx.problem(
                (*base, "image"),
                f"the catalog has no default image for {it.name} "
                f"({acc.kind if acc else 'no accelerator'}{', arm64 host' if it.cpu_arch == 'arm64' else ''}); set "
                f"image to {self.image_forms}"
                + (
                    " built for arm64 (Grace hosts)"
                    if it.cpu_arch == "arm64"
                    else " (e.g. the Neuron DLAMI's SSM parameter for Trainium)"
                ),
            )
            return None
        image = self.image(ctx, (*base, "image"), pool.image, default_image, it.cpu_arch)
        placed = self.place(ctx, i, pool, it, reg, zones, image, nvlink)
        if placed is None:
            return None
        if resolved.price is None:
            ctx.warnings.append(
                f"pools[{i}] ({pool.name}): the catalog has no {pool.market} price for {it.name} in {pool.region}, "
                f"so the pool's instances are left out of the cost ({UNPRICED_NOTE}); add your rate under "
                f"pricing.overrides {instance_override_hint(it.name, pool.region, pool.market)}"
            )
        network = ctx.need(
            (*base, "region"), provider, pool.region, placed.zone, pool.nodes * placed.addresses_per_node
        )
        volumes_month = service_cost(
            ctx,
            provider,
            self.boot_disk(ctx, it),
            pool.region,
            pool.nodes * pool.root_volume_gib,
            f"the root volumes of pool {pool.name}",
        )
        return pool_record(
            ctx,
            i,
            pool.name,
            provider,
            reg,
            placed.zone,
            network,
            facts_of(ctx, it),
            pool.nodes,
            pool.market,
            resolved.price,
            pool.nodes,
            volumes_month,
            nvlink=nvlink,
            cpu_arch=it.cpu_arch,
            **placed.details,
        )


def cloud_of(planners: Mapping[str, object], provider: str) -> CloudPlanner:
    """The planner of a cloud in the registry: one that carves networks and hosts controllers and file systems."""
    planner = planners[provider]
    assert isinstance(planner, CloudPlanner), provider
    return planner
