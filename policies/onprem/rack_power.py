"""Site rack power: every rack of an on-prem site draws no more than its own limit (the one its position delivers, as
the site records it), else the site's power per rack; a liquid-cooled rack (GB200/GB300 NVL72) without a recorded
limit is judged against the site's liquid-cooled positions (liquid_rack_kw), never the air-cooled rack_kw."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import load_catalog

from ..facts.aicluster import ONPREM_SITE
from ..facts.engine import get, items, num
from ..facts.model import Site
from ..rule import Meta, StackRule
from ._site import TOLERANCE, per_site
from .rack_cooling import liquid_shapes


def _rack_power(site: Site) -> Iterator[str]:
    catalog = load_catalog()
    for rack in site.racks:
        kw = num(get(rack, "kw"))
        liquid = bool(liquid_shapes(site, rack, catalog))
        limit = num(get(rack, "limit_kw")) or (site.liquid_rack_kw if liquid else site.rack_kw)
        if kw is None or limit is None or kw <= limit + TOLERANCE:
            continue
        pools = ", ".join(str(p) for p in items(rack, "pools"))
        nodes = num(get(rack, "nodes")) or 0
        key = "liquid_rack_kw" if liquid else "rack_kw"
        yield (
            f"rack {get(rack, 'name')} of site {site.name} draws {kw:g} kW ({nodes:g} nodes of {pools}), over its "
            f"{limit:g} kW; move hosts to another rack (hosts[].rack) or raise sites[].power.{key} to what the "
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
