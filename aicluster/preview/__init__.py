"""Offline preview: the stack's plan plus the resources its real program would register."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from aicluster.catalog import load_catalog
from aicluster.plan import ClusterPlan, plan
from aicluster.spec import SpecError
from aicluster.stackfile import StackConfig, load_cluster

from .engine import COMPUTED, SECRET, UNKNOWN, Capture, ProgramError, Resource, jsonable, run_program

__all__ = [
    "COMPUTED",
    "SECRET",
    "UNKNOWN",
    "Capture",
    "Preview",
    "ProgramError",
    "Resource",
    "plan_stack",
    "preview_stack",
]


def plan_stack(stack: StackConfig) -> ClusterPlan:
    """Spec + plan for a stack file; SpecError (with file and line numbers) on bad input."""
    spec = load_cluster(stack)
    try:
        return plan(spec, load_catalog())
    except SpecError as err:
        raise SpecError(stack.source, err.problems, stack.lines) from None


@dataclass(frozen=True)
class Preview:
    stack: StackConfig
    plan: ClusterPlan
    capture: Capture

    def resource_counts(self) -> list[tuple[str, int]]:
        counts = Counter(r.type for r in self.capture.resources)
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def to_json(self) -> dict[str, Any]:
        p = self.plan
        return {
            "stack": self.stack.stack,
            "project": self.stack.project.name,
            "summary": {
                "nodes": p.totals.nodes,
                "gpus": p.totals.gpus,
                "cost_usd_per_hour": p.totals.cost_usd_per_hour,
                "cost_usd_per_month": p.totals.cost_usd_per_month,
                "power_kw_it": p.totals.power_kw_it,
                "power_kw_facility": p.totals.power_kw_facility,
                "resources": len(self.capture.resources),
            },
            "pools": [
                {
                    "name": pool.name,
                    "provider": pool.provider,
                    "instance_type": pool.instance_type,
                    "nodes": pool.nodes,
                    "gpus": pool.gpus,
                    "cost_usd_per_hour": pool.cost_usd_per_hour,
                    "power_kw_it": pool.power_kw_it,
                }
                for pool in p.pools
            ],
            "resources": [r.to_json() for r in self.capture.resources],
            "outputs": _outputs_json(self.capture.outputs),
            "warnings": list(p.warnings),
        }


def _outputs_json(value: Any) -> Any:
    return jsonable(value)


def preview_stack(stack: StackConfig) -> Preview:
    cluster_plan = plan_stack(stack)
    capture = run_program(stack.project.root, stack.project.name, stack.stack, stack.engine_config(), stack.secret_keys)
    return Preview(stack, cluster_plan, capture)
