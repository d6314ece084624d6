"""Cross-site networks: builds the plan's VPN links once every provider's builder has made its networks.

A link needs both ends' public addresses: AWS's exist per VPN connection (so AWS's end is built first, from the
peer gateway's addresses), GCP's and Azure's per gateway (built before any link), a site's come from the plan.
Each provider module (components/<cloud>/vpn.py) offers `gateway(...)`, `link(...)` and `IPS_FROM_LINK`; this
module iterates over the registry below and never branches on a provider's name.

Pre-shared keys are `pulumi_random.RandomPassword`s: 40 letters (AWS refuses keys that start with a zero and
accepts only letters, digits, periods and underscores; GCP and Azure accept letters), secret from the start, passed
only into the tunnels' secret inputs and never into an output.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import pulumi
import pulumi_random as random

from aicluster.plan import ClusterPlan
from aicluster.plan.models import PlannedVpn, VpnSide

__all__ = ["PSK_LENGTH", "VPN_PROVIDERS", "build_vpns", "vpn_module"]

# Each cloud's VPN module (gateway, link, IPS_FROM_LINK), imported when a link has an end there: importing one
# imports its provider's components and SDK.
VPN_PROVIDERS: dict[str, str] = {
    "aws": "components.aws.vpn",
    "azure": "components.azure.vpn",
    "gcp": "components.gcp.vpn",
}


def vpn_module(provider: str) -> ModuleType:
    return importlib.import_module(VPN_PROVIDERS[provider])


PSK_LENGTH = 40

Ips = Sequence[pulumi.Input[str]]


def _keys(name: str, vpn: PlannedVpn, opts: pulumi.ResourceOptions) -> list[pulumi.Output[str]]:
    return [
        random.RandomPassword(
            f"{name}-{vpn.name}-psk-{k}",
            length=PSK_LENGTH,
            special=False,
            numeric=False,  # letters only: never a leading zero, which AWS refuses
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["result"])),
        ).result
        for k in vpn.key_indexes()
    ]


def build_vpns(plan: ClusterPlan, parent: pulumi.ComponentResource, handles: dict[str, Any]) -> dict[str, Any]:
    """Create every VPN link of `plan` under `parent`; `handles` maps a network key to the network component its
    provider's builder made. Returns the stack outputs the links contribute (no key material)."""
    if not plan.vpns:
        return {}
    opts = pulumi.ResourceOptions(parent=parent)
    gateways: dict[str, Any] = {}
    for n in plan.networks:
        links = [v for v in plan.vpns if n.key in (v.a.key, v.b.key)]
        if links:
            module = vpn_module(n.provider)
            gateways[n.key] = module.gateway(f"{plan.name}-{n.region}-vpn", n, links, handles[n.key], opts)

    def fixed_ips(side: VpnSide) -> Ips | None:
        """A side's public addresses when they exist before its link does."""
        if side.kind == "site":
            assert side.public_ip is not None
            return [side.public_ip]
        if vpn_module(side.provider).IPS_FROM_LINK:
            return None
        gateway_ips: Ips = gateways[side.key].public_ips
        return gateway_ips

    outputs: dict[str, Any] = {}
    for vpn in plan.vpns:
        keys = _keys(plan.name, vpn, opts)
        name = f"{plan.name}-{vpn.name}"
        sides = {"a": vpn.a, "b": vpn.b}
        ips: dict[str, Ips | None] = {s: fixed_ips(side) for s, side in sides.items()}
        # Build first the end whose addresses only its link creates; the other end then has the peer's addresses.
        order = sorted(sides, key=lambda s: ips[s] is not None)
        for s in order:
            side = sides[s]
            if side.kind == "site":
                continue
            other = "b" if s == "a" else "a"
            peer_ips = ips[other]
            assert peer_ips is not None, f"{vpn.name}: both ends' addresses come from their links"
            build: Callable[..., list[pulumi.Output[str]]] = vpn_module(side.provider).link
            ips[s] = build(f"{name}-{side.provider}", vpn, s, gateways[side.key], peer_ips, keys, opts)
        outputs[vpn.name] = {
            "a": vpn.a.key,
            "b": vpn.b.key,
            "tunnels": len(vpn.tunnels),
            "public_ips": {sides[s].key: ips[s] for s in sides},
        }
    return outputs
