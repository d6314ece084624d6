"""Site rack power: every rack of an on-prem site draws no more than its limit, or the site's power per rack."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aicluster import ONPREM_SITE
from ..facts.engine import get, items, num
from ..facts.model import Site
from ..rule import Meta, StackRule
from ._site import TOLERANCE, per_site


def _rack_power(site: Site) -> Iterator[str]:
    for rack in site.racks:
        kw = num(get(rack, "kw"))
        limit = num(get(rack, "limit_kw")) or site.rack_kw
        if kw is None or limit is None or kw <= limit + TOLERANCE:
            continue
        pools = ", ".join(str(p) for p in items(rack, "pools"))
        nodes = num(get(rack, "nodes")) or 0
        yield (
            f"rack {get(rack, 'name')} of site {site.name} draws {kw:g} kW ({nodes:g} nodes of {pools}), over its "
            f"{limit:g} kW; move hosts to another rack (hosts[].rack) or raise sites[].power.rack_kw to what the "
            "rack's power and cooling deliver"
        )


POLICY = StackRule(
    Meta(
        name="aicluster-site-enforce-rack-power",
        display_name="Site rack power",
        description="Every rack of an on-prem site draws no more than the site's power per rack (rack_kw).",
        concern="power",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Spread the rack's hosts over more racks, or raise sites[].power.rack_kw.",
    ),
    per_site(_rack_power),
    [ONPREM_SITE],
)
