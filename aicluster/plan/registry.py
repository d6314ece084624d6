"""The registries: one planner per place pools run, keyed by the stack's `provider:` tag, and one per scheduler,
keyed by its `scheduler.kind`.

Literal dicts, like components.BUILDERS and policies.POLICIES: no import side effects. Tests keep PLANNERS' keys
equal to the spec's pool union and a superset of the component builders, and SCHEDULERS' keys equal to the spec's
scheduler union and to the scheduler component builders.
"""

from __future__ import annotations

from aicluster.providers.aws.plan import PLANNER as AWS
from aicluster.providers.azure.plan import PLANNER as AZURE
from aicluster.providers.base import ProviderPlanner
from aicluster.providers.gcp.plan import PLANNER as GCP
from aicluster.providers.onprem.plan import PLANNER as ONPREM
from aicluster.schedulers.base import SchedulerPlanner
from aicluster.schedulers.kubernetes.plan import PLANNER as KUBERNETES
from aicluster.schedulers.slurm.plan import PLANNER as SLURM

PLANNERS: dict[str, ProviderPlanner] = {p.name: p for p in (AWS, AZURE, GCP, ONPREM)}
SCHEDULERS: dict[str, SchedulerPlanner] = {s.kind: s for s in (SLURM, KUBERNETES)}
