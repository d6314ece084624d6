"""Site rack cooling: a rack of liquid-cooled nodes (a GB200/GB300 NVL72 rack: the catalog's nvlink_domain says
`cooling: liquid` and the rack's draw, ~120 kW) stands in a liquid-cooled position of its site that delivers and
cools that draw (sites[].power.liquid_rack_kw), and holds nothing but its own NVLink domain."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import Catalog, InstanceType, load_catalog

from ..facts.aicluster import ONPREM_SITE
from ..facts.engine import get, items, num
from ..facts.model import Site
from ..rule import Meta, StackRule
from ._site import TOLERANCE, per_site


def liquid_shapes(site: Site, rack: Any, catalog: Catalog) -> list[tuple[str, InstanceType]]:
    """(pool, node shape) of each of the rack's pools whose shape the catalog says needs liquid cooling."""
    shapes = {p.name: p.node_shape for p in site.pools}
    out = []
    for pool in items(rack, "pools"):
        it = catalog.instance_type("onprem", shapes.get(str(pool), ""))
        if it is not None and it.nvlink_domain is not None and it.nvlink_domain.cooling == "liquid":
            out.append((str(pool), it))
    return out


def _rack_cooling(site: Site) -> Iterator[str]:
    catalog = load_catalog()
    for rack in site.racks:
        liquid = liquid_shapes(site, rack, catalog)
        if not liquid:
            continue
        pool, it = liquid[0]
        d = it.nvlink_domain
        assert d is not None
        name = get(rack, "name")
        draw = max(num(get(rack, "kw")) or 0.0, d.rack_kw or 0.0)
        what = f"rack {name} of site {site.name} is a {it.name} rack of pool {pool} (liquid-cooled, up to {draw:g} kW)"
        if site.liquid_rack_kw is None:
            yield (
                f"{what}; site {site.name} declares no liquid-cooled rack positions: give their power "
                f"(sites[].power.liquid_rack_kw: {draw:g} or more), or place the pool at a site that has them"
            )
        elif draw > site.liquid_rack_kw + TOLERANCE:
            yield (
                f"{what}, more than the {site.liquid_rack_kw:g} kW a liquid-cooled position of the site delivers and "
                f"cools: raise sites[].power.liquid_rack_kw to at least {draw:g} if the positions do, or place the "
                "pool at a site that can"
            )
        others = [str(p) for p in items(rack, "pools") if str(p) != pool]
        if others:
            yield (
                f"{what} and also holds nodes of {', '.join(others)}; an NVL72 rack is one NVLink domain: give the "
                "other hosts another rack (hosts[].rack)"
            )


POLICY = StackRule(
    Meta(
        name="aicluster-site-enforce-rack-cooling",
        display_name="Site rack cooling",
        description="Every liquid-cooled rack (GB200/GB300 NVL72) of a site stands in a liquid-cooled position that "
        "delivers its kW.",
        concern="power",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Give the site's liquid-cooled rack positions (sites[].power.liquid_rack_kw) at least the rack's "
        "draw, or place the pool at a site that has them.",
    ),
    per_site(_rack_cooling),
    [ONPREM_SITE],
)
