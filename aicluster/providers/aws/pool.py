"""AWS specifics of a pool: EFA network interfaces, placement and capacity options."""

from __future__ import annotations

import re

from aicluster.catalog import InstanceType
from aicluster.plan.models import AwsPoolDetails, Nic
from aicluster.spec import AwsPool

# Containers on a GPU node (pyxis/enroot, Kubernetes pods) reach IMDS through one extra hop; the
# controller runs no containers and keeps the default of 1.
IMDS_HOP_LIMIT = 2
CONTROLLER_IMDS_HOP_LIMIT = 1
CONTROLLER_ROOT_VOLUME_GIB = 100
# full-match semantics: "$" would also match before a trailing newline
_PINNED_SSM = re.compile(r"resolve:ssm:\S+:[0-9]+")


def image_pinned(image: str) -> bool:
    """An AMI id or a versioned SSM parameter always launches the same image."""
    return not image.startswith("resolve:ssm:") or bool(_PINNED_SSM.fullmatch(image))


def efa_nics(it: InstanceType) -> tuple[Nic, ...]:
    """The network interfaces of a node, per current AWS guidance for multi-card EFA instances.

    Card 0 carries the primary ENA interface (device 0; it cannot be EFA-only) plus an EFA-only
    interface (device 1); every further EFA-capable card carries one EFA-only interface (device 0).
    EFA-only interfaces have no IP addresses, so IP traffic stays on the primary ENA interface while
    every EFA device carries RDMA. Each interface carries the EFA security group (launch templates
    with NetworkInterfaces cannot use instance-level security groups).
    """
    limits = it.network.aws
    if limits is None or limits.efa_interfaces == 0:
        return (Nic(network_card_index=0, device_index=0, interface_type="interface", security_groups=("node",)),)
    nics = [
        Nic(network_card_index=0, device_index=0, interface_type="interface", security_groups=("node", "efa")),
        Nic(network_card_index=0, device_index=1, interface_type="efa-only", security_groups=("efa",)),
    ]
    for card in range(1, min(limits.efa_interfaces, limits.network_cards)):
        nics.append(Nic(network_card_index=card, device_index=0, interface_type="efa-only", security_groups=("efa",)))
    return tuple(nics)


def ip_addresses_per_node(nics: tuple[Nic, ...]) -> int:
    return sum(1 for n in nics if n.interface_type in ("interface", "efa"))


def placement(pool: AwsPool, it: InstanceType) -> tuple[str, str | None, str]:
    """(placement_group mode, existing name, reason)."""
    if pool.placement_group:
        return "existing", pool.placement_group, "the stack names an existing cluster placement group"
    if pool.market == "capacity-block":
        return (
            "none",
            None,
            "capacity blocks are already co-located; a placement group makes launches fail with "
            "insufficient capacity outside the block",
        )
    if pool.market == "reserved" and pool.reservation:
        return (
            "none",
            None,
            "a targeted capacity reservation only matches instances in the reservation's own placement "
            "group; set placement_group to that group if the reservation was created in one",
        )
    if not it.placement_group:
        return "none", None, f"{it.name} does not support cluster placement groups"
    return "create", None, "cluster placement group for the lowest EFA latency between nodes"


def details(pool: AwsPool, it: InstanceType, image: str) -> AwsPoolDetails:
    nics = efa_nics(it)
    mode, pg_name, reason = placement(pool, it)
    reservation_id = pool.reservation if pool.market in ("capacity-block", "reserved") else None
    preference: str | None = None
    if pool.market == "reserved" and not pool.reservation:
        preference = "open"
    market_type = pool.market if pool.market in ("spot", "capacity-block") else None
    return AwsPoolDetails(
        nics=nics,
        efa_devices=sum(1 for n in nics if n.interface_type in ("efa", "efa-only")),
        placement_group=mode,
        placement_group_name=pg_name,
        placement_group_reason=reason,
        capacity_reservation_id=reservation_id,
        capacity_reservation_preference=preference,
        market_type=market_type,
        image=image,
        image_pinned=image_pinned(image),
        root_volume_gib=pool.root_volume_gib,
        imds_hop_limit=IMDS_HOP_LIMIT,
        capacity_rebalance=pool.market == "spot",
    )
