"""Fabric oversubscription as asked: each on-prem fabric reaches the leaf oversubscription it was asked for."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aicluster import ONPREM_SITE
from ..facts.engine import get, num
from ..facts.model import Site
from ..rule import Meta, StackRule
from ._site import as_counted, per_site


def _oversubscription(site: Site) -> Iterator[str]:
    for f in site.fabrics:
        wanted, achieved = num(get(f, "oversubscription_wanted")), num(get(f, "oversubscription_achieved"))
        if wanted is None or achieved is None or achieved <= wanted + 1e-4:
            continue
        down, up = as_counted(get(f, "leaf_down_ports")), as_counted(get(f, "leaf_up_ports"))
        yield (
            f"fabric {get(f, 'name')} of site {site.name} is {achieved:g}:1 oversubscribed at its leaves ({down} ports "
            f"down, {up} up), worse than the {wanted:g}:1 asked for: all-reduce traffic across leaves slows by that "
            "ratio; use a switch with more ports (fabric.switch_radix or fabric.switch) or accept the ratio in "
            "fabric.oversubscription"
        )


POLICY = StackRule(
    Meta(
        name="aicluster-fabric-enforce-oversubscription",
        display_name="Fabric oversubscription as asked",
        description="Each on-prem fabric achieves the leaf oversubscription it was asked for, or better.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Pick a switch with more ports, or set fabric.oversubscription to the ratio the design reaches.",
    ),
    per_site(_oversubscription),
    [ONPREM_SITE],
)
