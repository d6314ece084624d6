"""Azure's planner: scale sets that keep InfiniBand domains whole, Marketplace URNs, resource groups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from aicluster.catalog import InstanceType, Region
from aicluster.plan.context import Placed, PlanCtx
from aicluster.plan.models import PlannedPool, PoolNvlink
from aicluster.plan.network import AZURE_RESERVED, Cut, azure_subnets
from aicluster.plan.pools import CloudPlanner
from aicluster.spec import AzurePool

from . import pool as azure


class AzurePlanner(CloudPlanner):
    name: ClassVar[str] = "azure"
    image_forms: ClassVar[str] = "a Marketplace URN publisher:offer:sku:version"
    storage_subnets: ClassVar[Mapping[str, str]] = {
        "azure-managed-lustre": "lustre",  # its own subnet, never moved after creation
        "azure-netapp-files": "netapp",  # a subnet delegated to Microsoft.NetApp/volumes
    }
    reserved_ranges: ClassVar[tuple[tuple[str, str], ...]] = tuple(
        (c, f"{c}, which Azure reserves for its InfiniBand (RDMA) network") for c in AZURE_RESERVED
    )
    controller_root_gib: ClassVar[int] = azure.CONTROLLER_ROOT_VOLUME_GIB
    controller_zonal: ClassVar[bool] = False

    def is_image_reference(self, text: str) -> bool:
        return azure.is_image_urn(text)

    def kubernetes_resources(self, pool: PlannedPool) -> dict[str, str]:
        """Plus the InfiniBand HCAs through the Network Operator's RDMA shared device plugin (resource
        rdma/shared_ib, as Azure's aks-rdma-infiniband guide configures it): one request shares them all."""
        out = super().kubernetes_resources(pool)
        if pool.azure is not None and pool.azure.infiniband:
            out["rdma/shared_ib"] = "1"
        return out

    def place(
        self,
        ctx: PlanCtx,
        i: int,
        pool: AzurePool,
        it: InstanceType,
        reg: Region,
        zones: tuple[str, ...],
        image: str,
        nvlink: PoolNvlink | None,
    ) -> Placed | None:
        details = azure.details(pool, it, image, nvlink)
        if pool.ib_domain_max_vms > azure.IB_DOMAIN_MAX_VMS:
            ctx.warnings.append(
                f"pools[{i}] ({pool.name}): scale sets of up to {pool.ib_domain_max_vms} VMs need the "
                f"placement-group limit raised from {azure.IB_DOMAIN_MAX_VMS} by Azure support for this "
                "subscription; without it the larger scale sets fail to create"
            )
        if len(details.scale_sets) > 1 and nvlink is None:
            ctx.warnings.append(
                f"pools[{i}] ({pool.name}): {pool.nodes} VMs exceed one InfiniBand domain "
                f"({details.max_vms_per_scale_set} VMs per scale set): "
                + ", ".join(f"{s.name} = nodes {s.first_node}-{s.first_node + s.nodes - 1}" for s in details.scale_sets)
                + "; jobs that span domains talk over Ethernet between them"
                if details.infiniband
                else f"pools[{i}] ({pool.name}): split into {len(details.scale_sets)} scale sets"
            )
        if pool.resource_group:
            self._resource_group(ctx, i, f"azure-{pool.region}", pool.resource_group)
        # Uniform scale sets without overprovisioning: one NIC, one address per VM.
        return Placed(pool.zone, 1, {"azure": details})

    @staticmethod
    def _resource_group(ctx: PlanCtx, i: int, network: str, name: str) -> None:
        """Pools of one Azure region share its network, so they must agree on an existing resource group."""
        groups: dict[str, tuple[int, str]] = ctx.state("azure").setdefault("resource_groups", {})
        first = groups.setdefault(network, (i, name))
        if first[1].lower() != name.lower():  # Azure resource group names are case-insensitive
            ctx.problem(
                ("pools", i, "resource_group"),
                f"pools[{first[0]}] in the same region deploys into {first[1]}; the pools of one region share its "
                "network and resource group: name the same one, or drop resource_group from both",
                name,
            )

    def subnets(self, block: str, region: Region, zones: dict[str | None, int], roles: dict[str, int]) -> list[Cut]:
        return azure_subnets(block, zones, set(roles))

    def network_fields(self, ctx: PlanCtx, key: str, roles: dict[str, int]) -> dict[str, object]:
        groups: dict[str, tuple[int, str]] = ctx.state("azure").get("resource_groups", {})
        return {"resource_group": groups[key][1]} if key in groups else {}


PLANNER = AzurePlanner()
