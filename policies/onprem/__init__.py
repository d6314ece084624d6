"""On-prem sites: the site's IT load within its ceiling, racks within their power and cooling (liquid-cooled NVL72
racks in liquid-cooled positions), fabrics as asked and buildable,
and site networks that do not overlap the cloud networks the VPNs join them to.

The rules read the `aicluster:onprem:Site` resource (one per owned site) as the engine hands it over; the CIDR
rule also reads the cloud networks (AWS VPCs, GCP subnetworks, Azure virtual networks) wherever they came from.
Switch port counts come from the catalog, the same records the planner used.

One rule a module; `_site` holds what they share.
"""

from __future__ import annotations

from ..rule import Rule
from . import design_limits, overlapping_cidrs, oversubscription, power_ceiling, rack_cooling, rack_power

POLICIES: list[Rule] = [
    power_ceiling.POLICY,
    rack_power.POLICY,
    rack_cooling.POLICY,
    oversubscription.POLICY,
    design_limits.POLICY,
    overlapping_cidrs.POLICY,
]
