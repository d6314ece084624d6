"""Every EFA card declared: a GPU launch template puts an EFA interface on every network card of its instance type's
EFA layout (catalog: every EFA-capable card, from card 1 where card 0 is ENA-only, or the cards the vendor configures,
p6e-gb200's one per GPU), or NCCL falls back to TCP or leaves NICs idle."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import load_catalog

from ..facts.aws import LAUNCH_TEMPLATE, efa_interfaces
from ..facts.engine import UNKNOWN, Res, get
from ..rule import Ctx, Meta, ResourceRule

MANDATORY = EnforcementLevel.MANDATORY


def _efa_cards(res: Res, ctx: Ctx) -> Iterator[str]:
    it_name = res.get("instanceType")
    if not isinstance(it_name, str):
        return
    it = load_catalog().instance_type("aws", it_name)
    limits = it.network.aws if it else None
    if it is None or limits is None or limits.efa_interfaces == 0 or not it.accelerator_count:
        return
    layout = limits.efa_layout()
    if not layout:
        return
    expected = len(layout)
    cards = {get(n, "networkCardIndex", default=0) for n in efa_interfaces(res)}
    if cards is UNKNOWN:
        return
    missing = [c for c in layout if c not in cards]
    if not cards:
        yield (
            f"launch template {res.name} declares no EFA interface for {it_name}: NCCL falls back to TCP sockets "
            f"at a fraction of the {it.network.bandwidth_gbps:g} Gb/s fabric; declare an EFA interface on each of "
            f"its {expected} network cards" + ("" if layout == tuple(range(expected)) else f" ({_cards(layout)})")
        )
    elif missing:
        yield (
            f"launch template {res.name} declares EFA on {len(cards)} of the {expected} network cards of "
            f"{it_name} (missing cards {_cards(missing)}): those NICs carry no RDMA traffic; declare one efa-only "
            "interface per card"
        )


def _cards(cards: Sequence[int]) -> str:
    return ", ".join(str(c) for c in cards[:8]) + (" ..." if len(cards) > 8 else "")


POLICY = ResourceRule(
    Meta(
        name="aws-ec2-launchtemplate-missing-efa-cards",
        display_name="Every EFA card declared",
        description="GPU launch templates declare an EFA interface on every EFA-capable network card.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Declare one efa-only interface per network card (card 0: ENA primary + efa-only on device 1); "
        "aicluster pools do this from the catalog.",
    ),
    {LAUNCH_TEMPLATE},
    _efa_cards,
)
