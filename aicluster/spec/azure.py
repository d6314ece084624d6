"""Azure pools in the stack file."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BeforeValidator,
    Field,
    model_validator,
)

from .base import (
    AzureMarket,
    Count,
    DnsLabel,
    InstanceType,
    LazyPattern,
    PoolRollout,
    Problem,
    Rollout,
    Strict,
    _pattern,
    _Problems,
    _zone_number,
)


class AzurePool(Strict):
    """A fleet of identical Azure ND nodes: one or more VM scale sets that each keep one InfiniBand fabric."""

    name: Annotated[DnsLabel, Field(description="Pool name, unique in the cluster (e.g. `h100`).")]
    provider: Annotated[Literal["azure"], Field(description="Cloud or site that runs the pool.")]
    region: Annotated[
        str,
        Field(
            pattern=_pattern(
                r"^[a-z][a-z0-9]+$",
                "must be an Azure location: lowercase letters and digits, without spaces or '-' (e.g. eastus, westus3)",
            ),
            description="Azure location, lowercase without spaces (e.g. `eastus`).",
        ),
    ]
    zone: Annotated[
        Literal["1", "2", "3"] | None,
        BeforeValidator(_zone_number),
        Field(
            description="Logical availability zone (`1`, `2` or `3`). Default: none (regional), which works in "
            "every region; pin it to the zone your quota or Managed Lustre is in."
        ),
    ] = None
    instance_type: Annotated[InstanceType, Field(description="VM size (e.g. `Standard_ND96isr_H100_v5`).")]
    nodes: Annotated[
        Count,
        Field(
            ge=1,
            le=100_000,
            description="Number of VMs (e.g. `64`). Above 100 the pool becomes several scale sets, each its own "
            "InfiniBand domain.",
        ),
    ]
    rollout: PoolRollout = Rollout()
    market: Annotated[
        AzureMarket,
        Field(
            description="How capacity is bought: `on-demand` (pay as you go), `spot` (evictable) or `reserved` "
            "(Azure Reserved VM Instances: a billing discount Azure applies to matching VMs by itself, so nothing "
            "changes in the deployment; give your reserved rate under pricing.overrides)."
        ),
    ] = "on-demand"
    spot_eviction: Annotated[
        Literal["delete", "deallocate"] | None,
        Field(
            description="What Azure does with an evicted spot VM: `delete` (default; nothing is billed after "
            "eviction) or `deallocate` (keeps its disks, which are billed). Spot pools only."
        ),
    ] = None
    resource_group: Annotated[
        Annotated[
            str,
            LazyPattern(
                _pattern(
                    r"^[-\w.()]{0,89}[-\w()]$",
                    (
                        "must be a resource group name: 1 to 90 letters, digits, '_', '-', '.', '(' and ')', not "
                        "ending in '.' (e.g. rg-ml-prod)"
                    ),
                )
            ),
        ]
        | None,
        Field(
            description="Existing resource group to deploy into (e.g. `rg-ml-prod`). Default: the cluster creates "
            "one per region.",
        ),
    ] = None
    image: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^([a-z0-9][a-z0-9-]*|[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+)$",
                (
                    "must be a catalog image id: lowercase letters, digits and '-' (e.g. ubuntu-hpc-2204), or a "
                    "Marketplace URN publisher:offer:sku:version (e.g. microsoft-dsvm:ubuntu-hpc:2204:latest)"
                ),
            ),
            description="Catalog image id (e.g. `ubuntu-hpc-2204`) or a Marketplace URN "
            "`publisher:offer:sku:version`. Default: the catalog's Ubuntu-HPC image.",
        ),
    ] = None
    root_volume_gib: Annotated[
        Count, Field(ge=64, le=4_095, description="Encrypted Premium SSD OS disk size, GiB (e.g. `512`).")
    ] = 512
    ib_domain_max_vms: Annotated[
        Count,
        Field(
            ge=1,
            le=300,
            description="VMs per scale set, i.e. per InfiniBand domain. 100 is what one placement group holds; "
            "Azure support can raise it to 300 for a subscription: set this only once they have.",
        ),
    ] = 100

    @model_validator(mode="after")
    def _market_rules(self) -> AzurePool:
        if self.spot_eviction is not None and self.market != "spot":
            raise _Problems(
                [
                    Problem(
                        ("spot_eviction",),
                        f"only spot VMs are evicted; drop spot_eviction or set market: spot (now {self.market})",
                        self.spot_eviction,
                        True,
                    )
                ]
            )
        return self
