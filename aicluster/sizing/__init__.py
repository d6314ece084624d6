"""Workload-aware sizing: from a model and a token budget to layout, memory, step time, days, cost, goodput.

Engine-free like plan/: imports only aicluster.spec and aicluster.catalog. The planner calls it; the CLI's
`aicluster estimate collective` calls the collective model directly.
"""
