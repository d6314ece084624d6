"""AWS specifics of a pool: EFA network interfaces, placement and capacity options."""

from __future__ import annotations

import re

from aicluster.catalog import InstanceType
from aicluster.plan.models import AwsGroup, AwsPoolDetails, Nic, PoolNvlink
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

    Card 0 carries the primary ENA interface (device 0; it cannot be EFA-only), plus an EFA-only interface (device
    1) where card 0 takes EFA; each further card of the type's EFA layout (catalog `efa_layout`: every EFA-capable
    card, or the cards the vendor configures, p6e-gb200's one per GPU) carries one EFA-only interface (device 0).
    Card 0 of p6-b300 and p6e-gb200 is ENA-only, so their EFA starts at card 1. EFA-only interfaces have no IP
    addresses, so IP traffic stays on the primary ENA interface while every EFA device carries RDMA. Each interface
    carries the EFA security group (launch templates with NetworkInterfaces cannot use instance-level security
    groups).
    """
    limits = it.network.aws
    cards = limits.efa_layout() if limits is not None else ()
    if not cards:
        return (Nic(network_card_index=0, device_index=0, interface_type="interface", security_groups=("node",)),)
    nics = [Nic(network_card_index=0, device_index=0, interface_type="interface", security_groups=("node", "efa"))]
    for card in cards:
        nics.append(
            Nic(
                network_card_index=card,
                device_index=1 if card == 0 else 0,
                interface_type="efa-only",
                security_groups=("efa",),
            )
        )
    return tuple(nics)


def ip_addresses_per_node(nics: tuple[Nic, ...]) -> int:
    return sum(1 for n in nics if n.interface_type in ("interface", "efa"))


def placement(pool: AwsPool, it: InstanceType) -> tuple[str, str | None, str]:
    """(placement_group mode, existing name, reason)."""
    if pool.placement_group:
        return "existing", pool.placement_group, "the stack names an existing cluster placement group"
    if it.nvlink_domain is not None and it.nvlink_domain.unit == "ultraserver":
        return (
            "none",
            None,
            "each UltraServer is its own Capacity Block, which AWS places as one NVLink domain; a placement group "
            "makes launches fail with insufficient capacity outside the block",
        )
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


def ultraserver_blocks(pool: AwsPool) -> tuple[str, ...]:
    """The Capacity Blocks an UltraServer pool names, one per UltraServer (a lone `reservation` is one)."""
    if pool.reservations:
        return tuple(pool.reservations)
    return (pool.reservation,) if pool.reservation else ()


def ultraserver_groups(it: InstanceType, nvlink: PoolNvlink, blocks: tuple[str, ...]) -> tuple[AwsGroup, ...]:
    """One Auto Scaling group per UltraServer, in the plan's domain order, each on its own Capacity Block."""
    dom = it.nvlink_domain
    assert dom is not None
    assert len(blocks) == len(nvlink.domains)
    return tuple(
        AwsGroup(
            name=d.name,
            index=d.index,
            nodes=d.nodes,
            first_node=d.first_node,
            capacity_reservation_id=block,
            ultraserver_type=dom.unit_type(d.nodes),
        )
        for d, block in zip(nvlink.domains, blocks, strict=True)
    )


def details(pool: AwsPool, it: InstanceType, image: str, groups: tuple[AwsGroup, ...] = ()) -> AwsPoolDetails:
    nics = efa_nics(it)
    mode, pg_name, reason = placement(pool, it)
    # an UltraServer pool targets each group's own block (the groups); other pools one reservation or block
    reservation_id = pool.reservation if pool.market in ("capacity-block", "reserved") and not groups else None
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
        groups=groups,
    )
