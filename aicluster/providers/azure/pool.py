"""Azure specifics of a pool: scale sets that each keep one InfiniBand fabric whole.

Azure links the InfiniBand ports of ND VMs only between VMs of the same scale set, and only inside
one placement group (`singlePlacementGroup: true`), which holds at most 100 VMs unless Azure support
raises it (catalog source azure-vmss-infiniband). A "large" scale set (more than one placement group)
does not support InfiniBand at all (azure-vmss-placement-groups). So a pool of N VMs becomes
ceil(N / 100) scale sets, each its own InfiniBand domain.

Scale sets are filled, not balanced: 250 VMs become 100 + 100 + 50, so a 100-node job still fits in one
IB domain (balanced 84 + 83 + 83 would leave no domain that holds it).
"""

from __future__ import annotations

import re

from aicluster.catalog import InstanceType
from aicluster.plan.groups import bounded, fill
from aicluster.plan.models import AzurePoolDetails, PoolNvlink, ScaleSet
from aicluster.spec import AzurePool

IB_DOMAIN_MAX_VMS = 100  # without a raise from Azure support (up to 300: azure-vmss-infiniband)
COMPUTER_NAME_PREFIX_MAX = 15
OS_DISK_TYPE = "Premium_LRS"  # encrypted at rest with platform-managed keys, like every managed disk
CONTROLLER_ROOT_VOLUME_GIB = 128
# Spot max price -1: pay up to the pay-as-you-go price and never be evicted for price, only for capacity.
SPOT_MAX_PRICE = -1.0
# full-match semantics (not "$", which matches before a trailing newline), and no whitespace in a part
_URN = re.compile(r"[^:\s]+:[^:\s]+:[^:\s]+:[^:\s]+")


def is_image_urn(image: str) -> bool:
    return bool(_URN.fullmatch(image))


def image_pinned(urn: str) -> bool:
    return not urn.lower().endswith(":latest")


def computer_name_prefix(pool: str, index: int) -> str:
    """Uniform scale sets name VMs <prefix><6 base-36 characters of the instance id>; prefixes are 1 to 15
    characters (the SDK's computerNamePrefix). A pool name too long to fit is cut and given 4 characters of
    its hash, so two long pool names that share a beginning never share host names."""
    return bounded(pool, f"-ib{index}-", COMPUTER_NAME_PREFIX_MAX)


def scale_sets(pool: str, nodes: int, max_vms: int = IB_DOMAIN_MAX_VMS) -> tuple[ScaleSet, ...]:
    return tuple(
        ScaleSet(
            name=f"{pool}-ib{k}",
            index=k,
            nodes=size,
            first_node=first,
            computer_name_prefix=computer_name_prefix(pool, k),
        )
        for k, (first, size) in enumerate(fill(nodes, max_vms))
    )


def nvlink_scale_sets(pool: str, nvlink: PoolNvlink) -> tuple[ScaleSet, ...]:
    """One scale set per NVLink domain (a GB200/GB300 rack of 18 VMs): Azure maps a rack's VMs to one placement
    group, and no scale set spans two racks."""
    return tuple(
        ScaleSet(
            name=d.name,
            index=d.index,
            nodes=d.nodes,
            first_node=d.first_node,
            computer_name_prefix=computer_name_prefix(pool, d.index),
        )
        for d in nvlink.domains
    )


def details(pool: AzurePool, it: InstanceType, image: str, nvlink: PoolNvlink | None = None) -> AzurePoolDetails:
    ib = it.network.fabric == "infiniband"
    spot = pool.market == "spot"
    return AzurePoolDetails(
        # Non-IB sizes have no fabric to keep whole, but 100 VMs per placement group still holds.
        scale_sets=(
            nvlink_scale_sets(pool.name, nvlink)
            if nvlink is not None
            else scale_sets(pool.name, pool.nodes, pool.ib_domain_max_vms)
        ),
        max_vms_per_scale_set=pool.ib_domain_max_vms,
        infiniband=ib,
        infiniband_across_scale_sets=ib and it.network.infiniband_across_scale_sets,
        single_placement_group=True,
        platform_fault_domain_count=1,
        overprovision=False,
        orchestration_mode="Uniform",
        accelerated_networking=True,
        image=image,
        image_pinned=image_pinned(image),
        root_volume_gib=pool.root_volume_gib,
        os_disk_type=OS_DISK_TYPE,
        priority="Spot" if spot else "Regular",
        eviction_policy=("Deallocate" if pool.spot_eviction == "deallocate" else "Delete") if spot else None,
        max_price=SPOT_MAX_PRICE if spot else None,
        resource_group=pool.resource_group,
    )
