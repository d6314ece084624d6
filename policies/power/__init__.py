"""Power: facility kW within budget, nodes that fit the racks, and the carbon the cluster emits.

IT power is each node's maximum draw from the catalog (datasheet system maximum, e.g. 10.2 kW for a
DGX H100-class node); facility power multiplies it by the region's PUE; carbon multiplies facility
energy over a 730-hour month by the region's grid intensity.

Where nobody publishes a node's draw (Cloud TPU hosts: Google gives no figure) the fleet is not counted
as 0 kW silently: the budget and carbon findings say what they leave out, and
aicluster-cluster-missing-power-figures names those fleets.

One rule a module; the draws they read are `_draws`.
"""

from __future__ import annotations

from ..rule import Rule
from . import carbon_ceiling, missing_power_figures, power_budget, rack_power
from ._draws import draws

__all__ = ["POLICIES", "draws"]

POLICIES: list[Rule] = [power_budget.POLICY, rack_power.POLICY, carbon_ceiling.POLICY, missing_power_figures.POLICY]
