"""The seam every scheduler plugs into: one planner object per `scheduler.kind`, listed in aicluster.plan.registry.

A scheduler is the second axis of a stack, beside the providers its pools run on. Its planner adds the control plane
to the plan (a Slurm controller, a managed Kubernetes control plane), tells the provider planners what they must know
of it while they place pools, and says what the commands that work on the nodes themselves (inventory, discover,
tune) do with its stacks. Shared code asks the registry and never tests which scheduler a stack has.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from aicluster.catalog.pricing import Price
from aicluster.plan.context import PlanCtx
from aicluster.plan.models import (
    ClusterPlan,
    PlannedController,
    PlannedKubernetes,
    PlannedNetwork,
    PlannedNvlinkDomain,
    PlannedPool,
)
from aicluster.providers.base import ProviderPlanner
from aicluster.spec import ClusterSpec
from aicluster.spec import Path as SpecPath


class Suggest(Protocol):
    """The command line of `aicluster COMMAND STACK WORDS...` as the user would type it where they ran the command
    (the stack as they gave it, -C): the CLI binds aicluster.cli.suggest.command to the arguments given."""

    def __call__(self, command: str, *words: str) -> str: ...


def placeholder(command: str, *words: str) -> str:
    """A Suggest with STACK standing for the stack, where no arguments are at hand."""
    return shlex.join(["aicluster", command, "STACK", *words])


@dataclass(frozen=True)
class ControlPlane:
    """What a scheduler adds to the plan, in the ClusterPlan field of its kind (the others stay None)."""

    controller: PlannedController | None = None  # Slurm: slurmctld's VM or site host
    kubernetes: PlannedKubernetes | None = None  # Kubernetes: the managed control plane and its node groups

    def prices(self) -> list[Price]:
        """The rates its own machines are billed at (so that an override it uses is not reported as unused)."""
        return [self.controller.price] if self.controller is not None and self.controller.price else []

    def power_kw_it(self) -> float:
        """What its own machines draw at most (the controller; the system node group)."""
        return self._sum(
            self.controller.node_power_kw if self.controller else None,
            self.kubernetes.system_power_kw_it if self.kubernetes else None,
        )

    def power_kw_facility(self) -> float:
        return self._sum(
            self.controller.power_kw_facility if self.controller else None,
            self.kubernetes.system_power_kw_facility if self.kubernetes else None,
        )

    def co2e_t_per_month(self) -> float:
        return self._sum(
            self.controller.co2e_t_per_month if self.controller else None,
            self.kubernetes.system_co2e_t_per_month if self.kubernetes else None,
        )

    @staticmethod
    def _sum(*parts: float | None) -> float:
        return sum((p for p in parts if p is not None), 0.0)


class SchedulerPlanner(Protocol):
    # the stack's `scheduler.kind` = ClusterPlan.scheduler = the components.SCHEDULER_BUILDERS key
    kind: ClassVar[str]
    title: ClassVar[str]  # how messages name it: "Slurm", "Kubernetes"
    # whether pools boot the image the stack names (or the catalog's default): False where the control plane's node
    # groups boot the service's own node image (the spec refuses a pool image there, and a pinned image means nothing)
    pool_images: ClassVar[bool]
    # whether TPU slices become node pools of the control plane, which need a slice topology the catalog documents
    tpu_node_pools: ClassVar[bool]

    def regions(self, spec: ClusterSpec) -> list[tuple[SpecPath, str | None]]:
        """Where the stack itself places the control plane's own resources (None: next to the pools)."""
        ...

    def control_plane(
        self, ctx: PlanCtx, pools: Sequence[PlannedPool], planners: Mapping[str, ProviderPlanner]
    ) -> ControlPlane:
        """The control plane, planned after the pools and file systems; it registers the addresses it needs."""
        ...

    def with_networks(
        self,
        ctx: PlanCtx,
        plane: ControlPlane,
        networks: Sequence[PlannedNetwork],
        planners: Mapping[str, ProviderPlanner],
    ) -> ControlPlane:
        """The control plane once the networks are carved: what it takes from the address space around them."""
        ...

    def why_no_inventory(self, plan: ClusterPlan, stack: str, suggest: Suggest = placeholder) -> str | None:
        """Why the stack's nodes get no Ansible inventory (`inventory`, `tune`), or None when they get one; the
        commands it names are `suggest`'s."""
        ...

    def why_no_discovery(self, plan: ClusterPlan, suggest: Suggest = placeholder) -> str | None:
        """Why `--discover` finds no VMs for Ansible in the clouds, or None when it does."""
        ...

    def nvlink_scheduling(self, plan: ClusterPlan, domain: PlannedNvlinkDomain) -> tuple[str | None, str | None]:
        """How the scheduler keeps a job inside a multi-node NVLink domain (its block) and how IMEX runs there, as
        the AiCluster component declares them for the policy pack (None: it does not)."""
        ...

    def tune_notes(self, plan: ClusterPlan, stack: str, suggest: Suggest = placeholder) -> list[str]:
        """What `tune` says instead of running the playbook, and what does its work; empty: it runs the playbook. The
        commands it names are `suggest`'s."""
        ...
