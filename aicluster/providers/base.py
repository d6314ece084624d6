"""The seam every provider plugs into: one planner object per provider, listed in aicluster.plan.registry.

A cloud provider's planner derives from `aicluster.plan.pools.CloudPlanner`, which runs the checks every
cloud pool shares (catalog type, region, offering, zone, image, price, addresses, cost) and calls the
provider's `place()`. On-prem pools are owned hardware at a site: their planner implements `plan_pool`
itself and plans no cloud network (sites declare their CIDRs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from aicluster.catalog import Region
from aicluster.plan.context import PlanCtx
from aicluster.plan.models import PlannedController, PlannedPool, PlannedSite
from aicluster.plan.network import Cut


class ProviderPlanner(Protocol):
    name: ClassVar[str]
    # how the stack names an image of this provider, for messages ("an AMI id or resolve:ssm: path")
    image_forms: ClassVar[str]
    # the subnet role each managed file system service of the provider lives in (default: compute)
    storage_subnets: ClassVar[Mapping[str, str]]

    def is_image_reference(self, text: str) -> bool: ...

    def plan_pool(self, ctx: PlanCtx, i: int, pool: Any) -> PlannedPool | None: ...

    def plan_sites(
        self, ctx: PlanCtx, pools: Sequence[PlannedPool], controller: PlannedController | None
    ) -> list[PlannedSite]: ...


class ControllerDefaults(Protocol):
    """What a cloud's planner says about the Slurm controller VM it hosts."""

    controller_root_gib: ClassVar[int]
    controller_imds_hop_limit: ClassVar[int | None]
    # whether the controller VM is pinned to a zone (Azure VMs may be regional)
    controller_zonal: ClassVar[bool]


class PlansNetworks(Protocol):
    """A cloud carves its network block into subnets, NAT gateways and provider-specific extras."""

    reserved_ranges: ClassVar[tuple[tuple[str, str], ...]]

    def subnets(self, block: str, region: Region, zones: dict[str | None, int], roles: dict[str, int]) -> list[Cut]: ...

    def nat_gateways(self, zones: dict[str | None, int]) -> int: ...

    def network_fields(self, ctx: PlanCtx, key: str, roles: dict[str, int]) -> dict[str, object]: ...
