"""Site power ceiling: an on-prem site's IT load (its nodes at their maximum draw) stays within its max_kw."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aicluster import ONPREM_SITE
from ..facts.model import Site
from ..rule import Meta, StackRule
from ._site import TOLERANCE, per_site


def _kw(value: float) -> str:
    return f"{value:,.1f} kW"


def _site_power(site: Site) -> Iterator[str]:
    if site.max_kw is None or site.it_kw <= site.max_kw + TOLERANCE:
        return
    top = sorted(site.pools, key=lambda p: -p.power_kw_it)[:3]
    parts = "; ".join(f"{p.name} {p.nodes} x {p.node_shape} {_kw(p.power_kw_it)}" for p in top)
    yield (
        f"site {site.name} draws {_kw(site.it_kw)} of IT load at its nodes' maximum, over its ceiling of "
        f"{_kw(site.max_kw)} by {_kw(site.it_kw - site.max_kw)}; largest: {parts}. Shrink or move a pool "
        "(pools[].nodes), or raise sites[].power.max_kw to what the site delivers"
    )


POLICY = StackRule(
    Meta(
        name="aicluster-site-enforce-power-ceiling",
        display_name="Site power ceiling",
        description="An on-prem site's IT load (its nodes at their maximum draw) stays within the site's max_kw.",
        concern="power",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Shrink or move a pool, or raise sites[].power.max_kw to what the site's feeds deliver.",
    ),
    per_site(_site_power),
    [ONPREM_SITE],
)
