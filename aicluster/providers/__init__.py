"""One folder per place pools run (aws, azure, gcp, onprem): each plugs into the planner the same way.

`aicluster.plan.registry.PLANNERS` lists them. Provider modules import submodules of the plan
(`aicluster.plan.context`, `aicluster.plan.models`), never the `aicluster.plan` package, so that the
registry can be imported while the package initialises. This file stays empty of imports.
"""
