"""Offline preview: the stack's plan plus the resources its real program would register.

The engine (.engine: the Pulumi SDK) and the policy pack (.policy: pulumi_policy) load on first use, not on
import: `plan_stack` (validate, plan, and every command that only plans) needs neither, and loading them is
most of such a command's time. Their names below (COMPUTED, ProgramError, PolicyResult, ...) resolve on first
access (PEP 562).
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aicluster.plan import ClusterPlan
from aicluster.stackfile import CLUSTER_KEY, StackConfig
from aicluster.timings import phase

from .check import check_stack
from .locate import dotted, stack_field, stack_line

if TYPE_CHECKING:
    from .engine import COMPUTED, SECRET, UNKNOWN, Capture, ProgramError, Resource
    from .policy import PolicyConfigError, PolicyResult, Violation

# what this package re-exports from its heavy modules, loaded on first access
_LAZY = {
    **dict.fromkeys(("COMPUTED", "SECRET", "UNKNOWN", "Capture", "ProgramError", "Resource"), ".engine"),
    **dict.fromkeys(("PolicyConfigError", "PolicyResult", "Violation"), ".policy"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "COMPUTED",
    "SECRET",
    "UNKNOWN",
    "Capture",
    "PolicyConfigError",
    "PolicyResult",
    "Preview",
    "ProgramError",
    "Resource",
    "Violation",
    "offline_outputs",
    "plan_stack",
    "preview_stack",
]


def plan_stack(stack: StackConfig) -> ClusterPlan:
    """Spec + plan for a stack file; SpecError listing every problem (file, line, field) on bad input."""
    return check_stack(stack)


@dataclass(frozen=True)
class Preview:
    stack: StackConfig
    plan: ClusterPlan
    capture: Capture
    policy: PolicyResult

    def resource_counts(self) -> list[tuple[str, int]]:
        counts = Counter(r.type for r in self.capture.resources)
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def to_json(self) -> dict[str, Any]:
        p = self.plan
        return {
            "stack": self.stack.stack,
            "project": self.stack.project.name,
            "cluster": {
                "name": p.name,
                "scheduler": p.scheduler,
                "tags": dict(p.tags),
                "regions": sorted({f"{n.provider}/{n.region}" for n in p.networks}),
                "frameworks": list(p.compliance.frameworks),
                "allowed_regions": list(p.compliance.allowed_regions),
                "budgets": p.budgets.model_dump(mode="json", exclude_none=True),
            },
            "summary": {
                "nodes": p.totals.nodes,
                "gpus": p.totals.gpus,
                "cost_usd_per_hour": p.totals.cost_usd_per_hour,
                "cost_usd_per_month": p.totals.cost_usd_per_month,
                "power_kw_it": p.totals.power_kw_it,
                "power_kw_facility": p.totals.power_kw_facility,
                "carbon_t_per_month": p.totals.co2e_t_per_month,
                "resources": len(self.capture.resources),
                # what the costs leave out for want of a price: the costs are then a lower bound, never 0 for it
                "unpriced": list(p.totals.unpriced),
            },
            "pools": [
                {
                    "name": pool.name,
                    "provider": pool.provider,
                    "region": pool.region,
                    "zone": pool.zone,
                    "instance_type": pool.instance_type,
                    "market": pool.market,
                    "nodes": pool.nodes,
                    "gpus": pool.gpus,
                    "cost_usd_per_hour": pool.cost_usd_per_hour,
                    "cost_usd_per_month": pool.cost_usd_per_month,
                    "unpriced": list(pool.unpriced),
                    "power_kw_it": pool.power_kw_it,
                    "power_kw_facility": pool.power_kw_facility,
                    "ib_domains": [
                        {"name": name, "first_node": nodes.start, "nodes": len(nodes)}
                        for name, nodes in pool.ib_domains()
                    ],
                    # nodes kept close together: Azure scale sets, GCP placement groups, TPU slices
                    "fabric_domains": [
                        {"name": name, "first_node": nodes.start, "nodes": len(nodes)}
                        for name, nodes in pool.fabric_domains()
                    ],
                    # how a change that recreates or removes the pool's nodes reaches them (the stack's `rollout`)
                    "rollout": pool.rollout.model_dump(mode="json"),
                    # owned hosts the stack names (otherwise the nodes are <pool>-000 ...)
                    **({"hosts": [h.name for h in pool.onprem.hosts]} if pool.onprem and pool.onprem.hosts else {}),
                }
                for pool in p.pools
            ],
            # the file systems, as `plan` shows them: capacity, throughput and cost (null: no price, never 0)
            "filesystems": [
                {
                    "name": f.name,
                    "kind": f.kind,
                    "service": f.service,
                    "provider": f.provider,
                    "region": f.region,
                    "zone": f.zone,
                    "mount": f.mount,
                    "capacity_tib": f.capacity_tib,
                    "throughput_mb_s": f.throughput_mb_s,
                    "cost_usd_per_month": f.cost_usd_per_month,
                }
                for f in p.filesystems
            ],
            # every multi-node NVLink domain (a GB200/GB300 NVL72 rack: 18 nodes x 4 GPUs), pool by pool; [] when no
            # pool is rack-scale (an 8-GPU server's NVLink ends at the node)
            "nvlink_domains": [d.model_dump(mode="json") for d in p.nvlink_domains],
            # owned data centres: their power, cost and carbon, fat-tree fabrics and racks, as the plan has them
            "sites": [site.model_dump(mode="json") for site in p.sites],
            # a Kubernetes stack's control plane, node groups, add-ons and Kueue, as the plan has them; None: Slurm
            "kubernetes": p.kubernetes.model_dump(mode="json") if p.kubernetes is not None else None,
            # what each workload of the stack needs and gets (aicluster/sizing: WorkloadEstimate), in stack order
            "workloads": [w.model_dump(mode="json") for w in p.workloads],
            "resources": [r.to_json() for r in self.capture.resources],
            "outputs": _outputs_json(self.capture.outputs),
            "warnings": list(p.warnings),
            "policy": self._located(self.policy.to_json()),
            "stack_file": self.stack.source,
        }

    def _located(self, policy: dict[str, Any]) -> dict[str, Any]:
        """Each finding with the stack field it comes from and that field's line (SARIF points there)."""
        cluster = self.stack.config.get(CLUSTER_KEY)
        cluster = cluster if isinstance(cluster, Mapping) else {}
        for finding in (*policy["violations"], *policy["waived"]):
            found = stack_line(
                self.stack.lines, stack_field(cluster, finding["policy"], finding["resource"], finding["message"])
            )
            finding["stack_field"] = dotted(found[0]) if found else None
            finding["stack_line"] = found[1] if found else None
        return policy


def _outputs_json(value: Any) -> Any:
    from .engine import jsonable

    return jsonable(value)


def offline_outputs(stack: StackConfig) -> dict[str, Any]:
    """The stack outputs the program would export, from an offline run (no policy pack): values known only
    after `up` are the COMPUTED marker, secrets the SECRET marker."""
    capture = _run(stack)
    out = _outputs_json(capture.outputs)
    return out if isinstance(out, dict) else {}


def _run(stack: StackConfig) -> Any:
    """The stack's program, run offline: the project's `__main__.py`, or the installed program for a stack file
    outside any project; messages name the stack file given."""
    from .engine import run_program

    return run_program(
        stack.project.root,
        stack.project.name,
        stack.stack,
        stack.engine_config(),
        stack.secret_keys,
        program=None if stack.project.standalone else "__main__.py",
        stack_file=stack.source,
    )


def preview_stack(stack: StackConfig, policy_config: Mapping[str, Any] | None = None) -> Preview:
    """Plan, run the program offline, and run the policy pack over what it registered.
    `policy_config` is a CrossGuard policy config (`--policy-pack-config`), checked before anything runs."""
    from .policy import evaluate, resolve_config, stack_pack_config, with_stack_config

    cluster_plan = plan_stack(stack)
    resolve_config(policy_config)  # PolicyConfigError before the program runs
    # What `aicluster policy-config` hands the Pulumi CLI (resource policies cannot read the AiCluster there),
    # so the offline preview judges exactly as `pulumi preview --policy-pack-config` would.
    config = with_stack_config(stack_pack_config(cluster_plan), policy_config)
    with phase("program"):
        capture = _run(stack)
    with phase("policies"):
        policy = evaluate(capture, config)
    return Preview(stack, cluster_plan, capture, policy)
