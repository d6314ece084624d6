"""Typed records of data/changes/*.yaml: for each resource type the preview emits, which input changes replace it
(delete + create) rather than update it in place, which updates recreate running nodes (a rollout), which inputs
count its nodes, and what replacing or deleting it costs (its risks).

Paths are Pulumi input paths as the preview JSON writes them (`nodeConfig.machineType`, `tags.owner`), with `[*]`
for any element of a list. A rule path R matches a changed path P when P is R or lies under R (`a.b` under `a`).
`replace_on_add_or_remove` holds Terraform's ForceNew on a nested block: it fires only when the block appears,
disappears or changes its number of elements, never on a change inside it.

This module imports nothing of the project (layering rule: the catalog is a leaf).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from .models import Sourced, _Record

Risk = Literal["data-loss", "job-kill", "audit-gap", "network-cut"]
RISKS: tuple[Risk, ...] = ("data-loss", "job-kill", "audit-gap", "network-cut")


class ConditionalReplace(_Record):
    """A replacement that depends on the values (Terraform's CustomizeDiff ForceNewIf, a conditional
    RequiresReplace): `when` says how the offline diff evaluates it; `unknown` is shown as "may replace"."""

    path: Annotated[str, Field(description="Input path whose change may replace the resource.")]
    when: Annotated[
        Literal["changed", "decrease", "shrink", "true_to_false", "removed", "unknown"],
        Field(
            description="changed: any change; decrease: a smaller number; shrink: a CIDR that does not contain the "
            "old one; true_to_false; removed: the value goes away; unknown: a condition the diff cannot evaluate."
        ),
    ]
    condition: Annotated[str, Field(description="The condition as the source states it.")]
    only_if: Annotated[
        dict[str, Any], Field(description="Other inputs that must hold these values (head side) for the rule to apply.")
    ] = Field(default_factory=dict)


class RolloutCase(_Record):
    """An input whose in-place update recreates or moves running nodes in its own way (not through the rule's
    `rollout` pace): an Auto Scaling group's subnets, a GKE node pool's zones. It rolls whatever `rollout_requires`
    says, and its pace is its own `note`, never the rule's `rollout_batch`."""

    path: Annotated[str, Field(description="Input path (e.g. `vpcZoneIdentifiers`).")]
    note: Annotated[str, Field(description="What the platform does with running nodes when this input changes.")]
    source: Annotated[str, Field(description="Source id of the note.")]


class Guard(_Record):
    """A replace or delete of this resource that the change-safety gate fails on (as on data loss), beyond the
    rule's `data-loss` risk: a cluster's control plane, a node pool with running GPU nodes, a VM that holds the
    scheduler's state. `under` narrows it to resources under one of these component types (the URN's type chain)."""

    loses: Annotated[str, Field(description="What is lost, in words (e.g. `Slurm state: job queue`).")]
    risk: Annotated[Risk, Field(description="The risk the loss is (data-loss, job-kill).")]
    under: Annotated[
        tuple[str, ...],
        Field(description="Component types the resource must be under (e.g. `aicluster:aws:SlurmController`)."),
    ] = ()
    gpu_nodes: Annotated[
        bool, Field(description="Only where the step removes or recreates running GPU nodes (a node pool).")
    ] = False
    source: Annotated[str, Field(description="Source id of the loss.")]


class ChangeRule(Sourced):
    """What a change to one resource type does. `file` is the path inside the source's repository."""

    type: Annotated[str, Field(description="Pulumi type token (e.g. `aws:fsx/lustreFileSystem:LustreFileSystem`).")]
    risks: Annotated[
        tuple[Risk, ...], Field(description="What a replace or delete of it costs: data, jobs, audit, network.")
    ] = ()
    replace: Annotated[tuple[str, ...], Field(description="Inputs whose change always replaces it.")] = ()
    replace_on_add_or_remove: Annotated[
        tuple[str, ...], Field(description="Nested blocks that replace it when they appear, go or change count.")
    ] = ()
    replace_if: Annotated[tuple[ConditionalReplace, ...], Field(description="Conditional replacements.")] = ()
    rejected_by_api: Annotated[
        tuple[str, ...],
        Field(description="Inputs the provider previews as an update but the cloud's API refuses to change."),
    ] = ()
    rollout: Annotated[
        tuple[str, ...],
        Field(description="Inputs whose in-place update recreates running nodes (`*`: any input)."),
    ] = ()
    rollout_requires: Annotated[
        str, Field(description="An input that must be set for the rollout to happen (an ASG's `instanceRefresh`).")
    ] = ""
    rollout_unless: Annotated[
        dict[str, Any],
        Field(description="Head inputs with which the update does not reach running nodes (a Manual upgrade policy)."),
    ] = Field(default_factory=dict)
    rollout_batch: Annotated[
        tuple[str, ...], Field(description="Inputs that bound how many nodes a rollout takes at once.")
    ] = ()
    rollout_note: Annotated[str, Field(description="How the update reaches running nodes.")] = ""
    rollout_cases: Annotated[
        tuple[RolloutCase, ...],
        Field(description="Inputs whose update rolls running nodes in a way of their own (zones, subnets)."),
    ] = ()
    rejected_fix: Annotated[
        str, Field(description="How to make a change the cloud's API refuses (e.g. a new pool beside the old one).")
    ] = ""
    unordered: Annotated[
        tuple[str, ...],
        Field(description="List inputs the provider compares as sets (Terraform's TypeSet): a new order is no change."),
    ] = ()
    version_aliases: Annotated[
        dict[str, tuple[str, ...]],
        Field(
            description="Inputs that name a version of the resource they come from by an alias (`$Default`, "
            "`$Latest`): an update of that resource moves what the alias names."
        ),
    ] = Field(default_factory=dict)
    capacity: Annotated[
        tuple[str, ...], Field(description="Inputs that count its nodes: lowering one removes nodes.")
    ] = ()
    dependents_see_on_update: Annotated[
        tuple[str, ...],
        Field(
            description="Outputs an in-place update changes (a launch template's `version`): a dependent's computed "
            "input ending in one of these names changes with it."
        ),
    ] = ()
    recreates_nodes_of_others: Annotated[
        bool, Field(description="Replacing it recreates the nodes of the groups that use it (a template, a placement).")
    ] = False
    guards: Annotated[
        tuple[Guard, ...],
        Field(description="Replaces or deletes of it that the change-safety gate fails on besides data loss."),
    ] = ()
    file: Annotated[str, Field(description="The source file the rules were read from.")] = ""
    note: Annotated[str, Field(description="Anything the rules above do not say.")] = ""


Effect = Literal[
    "refused", "replaces-data", "replaces-nodes", "rollout", "removes-nodes", "new-nodes-only", "live", "none"
]


class PlatformEffect(_Record):
    """What changing a stack field does on one platform, as the change rules classify it."""

    effect: Annotated[Effect, Field(description="The most costly outcome of the change's steps.")]
    sources: Annotated[tuple[str, ...], Field(description="Sources of the change rules that decide it.")] = ()
    note: Annotated[str, Field(description="For a refused change: what validate, or the cloud's API, refuses.")] = ""
    tried: Annotated[
        str,
        Field(
            description="How it was observed: the example stack and the fields changed there, with their values "
            "(`p5-small: pools[h100].market on-demand -> spot`)."
        ),
    ] = ""


class UpdatePolicy(_Record):
    """A stack field's change (`pools[].nodes`, fewer nodes) and its effect per platform (update_policies.yaml)."""

    field: Annotated[str, Field(description="The stack field, as the spec reference names it (`pools[].nodes`).")]
    change: Annotated[str, Field(description="The change tried (`fewer nodes`, `to p4d.24xlarge`).")]
    effects: Annotated[
        dict[str, PlatformEffect], Field(description="Per platform, `<provider>-<scheduler kind>` (`aws-slurm`).")
    ]
