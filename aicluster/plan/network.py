"""Address planning that never moves: fixed slots, so growing a stack never replaces a subnet.

- Each (provider, region) network takes the block of its region's fixed slot in the supernet
  (catalog `network_slots`), unless the stack pins it (`network.cidrs`). Adding, removing or
  reordering pools never changes an existing network's CIDR.
- Inside a network of prefix P, each zone's compute subnet is the block of prefix P+3 at the zone's
  index in the region's zone list; the last such block is cut into /26 public subnets, again by
  zone index. A zone subnet never changes size, so more nodes never move it; a pool that outgrows
  it is an error, not a silent renumbering.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from typing import Literal

# AWS reserves the first four and the last address of every subnet.
RESERVED_PER_SUBNET = 5
# Room to grow a pool and for the ENIs of file systems, endpoints and controllers.
HEADROOM_FACTOR = 1.25
HEADROOM_FIXED = 64
ZONE_BITS = 3  # 8 blocks per network: 7 zones' compute subnets at most, then the public block
PUBLIC_PREFIX = 26


# Azure's InfiniBand RDMA network uses 172.16.0.0/16: a VNet must not overlap it (azure-vmss-infiniband).
AZURE_RESERVED = ("172.16.0.0/16",)
# Azure's dedicated subnets sit at fixed blocks of the network (like zones), so adding a file system
# never moves anything: block 6 holds Managed Lustre (a /19 in a /16, and never smaller than the /23
# Microsoft recommends for 200-400 TiB), block 7 the subnet delegated to Azure NetApp Files.
AZURE_ROLE_BLOCKS: dict[Literal["lustre", "netapp"], int] = {"lustre": 6, "netapp": 7}
# The VPN gateway's GatewaySubnet: a /27 (the size Microsoft recommends; /29 is the floor, and active-active
# gateways and ExpressRoute coexistence want /27) at the start of block 5, which no other role uses, so adding
# a VPN never moves a subnet. Only carved when the stack has a VPN link to the network (`roles` has "gateway").
AZURE_GATEWAY_BLOCK = 5
AZURE_GATEWAY_PREFIX = 27


class AddressError(ValueError):
    pass


# GCP networks, blocks of prefix P+3 like zones: 0 the host VPC's regional subnet, 1 the second gVNIC's VPC
# (A3 Ultra/A4), 2 the range private services access allocates file systems from; blocks 4-5 hold the 8 GPU
# NIC subnets (TCPX/TCPXO, one VPC each) and blocks 6-7 the RoCE VPC's 8 subnets, each of prefix P+5. Every
# VPC is separate, but a VM's NICs must sit in subnets that do not overlap, and the cluster's address plan
# stays one non-overlapping plan across providers.
GCP_ROLE_BLOCKS: dict[Literal["gvnic", "services"], int] = {"gvnic": 1, "services": 2}
GCP_NIC_QUARTERS: dict[Literal["gpu", "rdma"], int] = {
    "gpu": 2,
    "rdma": 3,
}  # quarters of the network (= blocks 4-5, 6-7)
GCP_NIC_SUBNETS = 8


@dataclass(frozen=True)
class Cut:
    zone: str | None
    role: Literal["compute", "public", "lustre", "netapp", "gvnic", "gpu", "rdma", "services", "gateway"]
    cidr: str
    need: int
    index: int = 0
    nat_zone: str | None = None  # an AWS Local Zone's compute subnet: the zone whose NAT gateway it routes through


def aws_subnets(
    network: str, region_zones: tuple[str, ...], zones: dict[str | None, int], local_zones: tuple[str, ...] = ()
) -> list[Cut]:
    """A compute and a public subnet per zone in use, at the zone's fixed index in the region. A Local Zone in use
    (after the region's zones in the index) gets a compute subnet only: it routes out through the NAT gateway of the
    region's first zone (Local Zones take no NAT gateway of their own), whose subnets are then cut too."""
    out = []
    local = sorted(z for z in zones if z in local_zones)
    regular = {z for z in zones if z is not None and z not in local_zones}
    if local:
        regular.add(region_zones[0])
    for zone in sorted(regular):
        compute, public = zone_subnets(network, region_zones.index(zone))
        out.append(Cut(zone, "compute", compute, addresses_needed(zones.get(zone, 0))))
        out.append(Cut(zone, "public", public, 1))
    for zone in local:
        compute, _ = zone_subnets(network, len(region_zones) + local_zones.index(zone))
        out.append(Cut(zone, "compute", compute, addresses_needed(zones[zone]), nat_zone=region_zones[0]))
    return out


def azure_subnets(network: str, zones: dict[str | None, int], roles: set[str]) -> list[Cut]:
    """One regional compute subnet (Azure subnets span zones) and the dedicated subnets asked for."""
    blocks = list(ipaddress.IPv4Network(network).subnets(prefixlen_diff=ZONE_BITS))
    out = [Cut(None, "compute", str(blocks[0]), addresses_needed(sum(zones.values())))]
    for role, index in AZURE_ROLE_BLOCKS.items():
        if role in roles:
            out.append(Cut(None, role, str(blocks[index]), 1))
    if "gateway" in roles:
        out.append(Cut(None, "gateway", azure_gateway_subnet(network), 1))
    return out


def azure_gateway_subnet(network: str) -> str:
    """The GatewaySubnet of an Azure network: the first /27 of its block 5."""
    block = list(ipaddress.IPv4Network(network).subnets(prefixlen_diff=ZONE_BITS))[AZURE_GATEWAY_BLOCK]
    if block.prefixlen > AZURE_GATEWAY_PREFIX:
        raise AddressError(f"the network {network} is too small for a /{AZURE_GATEWAY_PREFIX} GatewaySubnet")
    return str(next(block.subnets(new_prefix=AZURE_GATEWAY_PREFIX)))


def gcp_subnets(network: str, zones: dict[str | None, int], roles: dict[str, int]) -> list[Cut]:
    """The host VPC's regional subnet, and the GPU NIC subnets and service range asked for: `roles` maps
    "gvnic", "services", "gpu-<k>" and "rdma-<k>" to the addresses needed in them."""
    net = ipaddress.IPv4Network(network)
    blocks = list(net.subnets(prefixlen_diff=ZONE_BITS))
    quarters = list(net.subnets(prefixlen_diff=2))
    out = [Cut(None, "compute", str(blocks[0]), addresses_needed(sum(zones.values())))]
    for fixed, index in GCP_ROLE_BLOCKS.items():
        if fixed in roles:
            out.append(Cut(None, fixed, str(blocks[index]), addresses_needed(roles[fixed]) if roles[fixed] else 1))
    for nic, quarter in GCP_NIC_QUARTERS.items():
        cuts = list(quarters[quarter].subnets(prefixlen_diff=3))
        for k in range(GCP_NIC_SUBNETS):
            if f"{nic}-{k}" in roles:
                out.append(Cut(None, nic, str(cuts[k]), addresses_needed(roles[f"{nic}-{k}"]), k))
    return out


def addresses_needed(node_addresses: int) -> int:
    return math.ceil(node_addresses * HEADROOM_FACTOR) + HEADROOM_FIXED + RESERVED_PER_SUBNET


def network_block(supernet: str, prefix: int, slot: int) -> str:
    """The `slot`-th block of `prefix` inside `supernet`."""
    net = ipaddress.IPv4Network(supernet)
    if prefix < net.prefixlen:
        raise AddressError(f"network_prefix /{prefix} is larger than the supernet {supernet}")
    count = 2 ** (prefix - net.prefixlen)
    if slot >= count:
        raise AddressError(
            f"the supernet {supernet} holds {count} /{prefix} blocks; this region's fixed slot is {slot}"
        )
    return str(ipaddress.IPv4Network((int(net.network_address) + slot * 2 ** (32 - prefix), prefix)))


def overlaps(cidr: str, others: list[str]) -> str | None:
    net = ipaddress.IPv4Network(cidr)
    return next((o for o in others if net.overlaps(ipaddress.IPv4Network(o))), None)


def zone_subnets(network: str, zone_index: int) -> tuple[str, str]:
    """(compute, public) CIDRs of the zone at `zone_index` of the region."""
    net = ipaddress.IPv4Network(network)
    blocks = list(net.subnets(prefixlen_diff=ZONE_BITS))
    if zone_index >= len(blocks) - 1:
        raise AddressError(f"a network holds compute subnets for {len(blocks) - 1} zones; zone index {zone_index}")
    public_block = blocks[-1]
    public = ipaddress.IPv4Network(
        (int(public_block.network_address) + zone_index * 2 ** (32 - PUBLIC_PREFIX), PUBLIC_PREFIX)
    )
    return str(blocks[zone_index]), str(public)


def usable(cidr: str) -> int:
    return int(ipaddress.IPv4Network(cidr).num_addresses) - RESERVED_PER_SUBNET
