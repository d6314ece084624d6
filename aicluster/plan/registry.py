"""The provider registry: one planner per place pools run, keyed by the stack's `provider:` tag.

A literal dict, like components.BUILDERS and policies.POLICIES: no import side effects. A test keeps
its keys equal to the spec's pool union and a superset of the component builders.
"""

from __future__ import annotations

from aicluster.providers.aws.plan import PLANNER as AWS
from aicluster.providers.azure.plan import PLANNER as AZURE
from aicluster.providers.base import ProviderPlanner
from aicluster.providers.gcp.plan import PLANNER as GCP
from aicluster.providers.onprem.plan import PLANNER as ONPREM

PLANNERS: dict[str, ProviderPlanner] = {p.name: p for p in (AWS, AZURE, GCP, ONPREM)}
