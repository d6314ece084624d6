"""Address planning: one network per (provider, region), carved from one supernet so that the
networks of a hybrid cluster never overlap and can be peered later."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Iterator, Sequence

# AWS reserves the first four and the last address of every subnet.
RESERVED_PER_SUBNET = 5
# Room to grow a pool and for the ENIs of file systems, endpoints and controllers.
HEADROOM_FACTOR = 1.25
HEADROOM_FIXED = 64
SMALLEST_SUBNET_PREFIX = 24
PUBLIC_SUBNET_PREFIX = 26


class AddressSpaceExhausted(ValueError):
    pass


def addresses_needed(node_addresses: int) -> int:
    return math.ceil(node_addresses * HEADROOM_FACTOR) + HEADROOM_FIXED + RESERVED_PER_SUBNET


def prefix_for(addresses: int) -> int:
    """Longest prefix whose subnet holds `addresses` addresses (but never longer than /24)."""
    bits = max(1, math.ceil(math.log2(addresses)))
    return min(32 - bits, SMALLEST_SUBNET_PREFIX)


def _free_blocks(
    supernet: ipaddress.IPv4Network, prefix: int, used: Sequence[ipaddress.IPv4Network]
) -> Iterator[ipaddress.IPv4Network]:
    for block in supernet.subnets(new_prefix=prefix):
        if not any(block.overlaps(u) for u in used):
            yield block


def allocate_networks(keys: Iterable[str], supernet: str, prefix: int, exclude: Iterable[str]) -> dict[str, str]:
    """One block of `prefix` per key, in order, avoiding `exclude`. Deterministic."""
    net = ipaddress.IPv4Network(supernet)
    if prefix < net.prefixlen:
        raise AddressSpaceExhausted(f"network_prefix /{prefix} is larger than the supernet {supernet}")
    used = [ipaddress.IPv4Network(e) for e in exclude]
    out: dict[str, str] = {}
    free = _free_blocks(net, prefix, used)
    for key in keys:
        block = next(free, None)
        if block is None:
            raise AddressSpaceExhausted(
                f"{supernet} has no free /{prefix} left for network {key} (after excluding {list(map(str, used))})"
            )
        out[key] = str(block)
    return out


def allocate_subnets(network: str, requests: Sequence[tuple[str, int]]) -> dict[str, str]:
    """Place subnets of the requested prefixes inside `network`, largest first, aligned.

    `requests` is (name, prefix); the result maps name -> CIDR. Deterministic for a given input.
    """
    net = ipaddress.IPv4Network(network)
    used: list[ipaddress.IPv4Network] = []
    out: dict[str, str] = {}
    for name, prefix in sorted(requests, key=lambda r: (r[1], r[0])):
        if prefix < net.prefixlen:
            raise AddressSpaceExhausted(f"subnet {name} needs a /{prefix}, larger than the network {network}")
        block = next(_free_blocks(net, prefix, used), None)
        if block is None:
            raise AddressSpaceExhausted(f"network {network} has no room left for a /{prefix} subnet ({name})")
        used.append(block)
        out[name] = str(block)
    return out
