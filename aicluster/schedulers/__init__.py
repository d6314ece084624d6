"""One folder per scheduler (slurm, kubernetes): each plugs into the planner and the components the same way.

`aicluster.plan.registry.SCHEDULERS` lists their planners, keyed by the stack's `scheduler.kind`;
`components.SCHEDULER_BUILDERS` their components. Each folder holds the scheduler's planner (`plan.py`: its control
plane, and what it tells the provider planners and the node commands) and what it renders from a plan (`render.py`).
Planner modules import submodules of the plan (`aicluster.plan.context`, `aicluster.plan.models`), never the
`aicluster.plan` package, so that the registry can be imported while the package initialises. This file stays empty
of imports.
"""
