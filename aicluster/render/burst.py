"""The bursting configuration (`aicluster-burst.json` beside slurm.conf) that aicluster-resume, aicluster-suspend and
aicluster-burst-sync read: which Slurm cloud nodes live in which cloud group. Schema: `aicluster.burst.config`.

A pure function of the plan, the stack's outputs and its config. The plan names the nodes (the same hostlists as
slurm.conf); the group names are the ones the components really create, which Pulumi names with a random suffix,
so they come from the stack outputs: `pools.<pool>.asg_name` (AWS Auto Scaling group), `pools.<pool>.group_names.
<placement group>` (GCP managed instance group, one per compact placement group, in the pool's zone) and
`pools.<pool>.scale_sets.<scale set>` with the network's `resource_group` (Azure scale set). The GCP project and the
Azure subscription come from the stack config (`gcp:project`, `azure-native:subscriptionId`). When any of these is
not known yet (an offline preview, a stack not deployed) nothing is rendered and `BurstConfigUnknown` says what is
missing: a file with a placeholder group would have the resume program resize nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from aicluster.burst.config import PATTERN_HELP, AwsNodeSet, AzureNodeSet, BurstConfig, GcpNodeSet
from aicluster.catalog import Catalog, load_catalog
from aicluster.plan import ClusterPlan, PlannedPool
from aicluster.plan.models import hostlist
from aicluster.schedulers.slurm.render import DEFAULT_SETTINGS, SlurmSettings, cloud_times

CONFIG_FILE = "aicluster-burst.json"
UNKNOWN = frozenset({"<computed>", "[secret]", ""})
# aicluster-resume gives up on instances the cloud has not started this long before ResumeTimeout, so it can mark
# the nodes down with the cloud's reason before slurmctld does so without one
LAUNCH_WAIT_MARGIN_S = 60
LAUNCH_WAIT_MAX_S = 300  # the programs' own default


class BurstConfigUnknown(ValueError):
    """The stack does not say yet what the configuration needs (group names, project, subscription)."""


def _known(value: Any, what: str) -> str:
    if not isinstance(value, str) or value in UNKNOWN:
        raise BurstConfigUnknown(f"{what} is not known yet (deploy the stack with `pulumi up`, then run this again)")
    return value


def _config(stack_config: Mapping[str, Any], key: str, why: str) -> str:
    value = stack_config.get(key)
    if not isinstance(value, str) or not value:
        raise BurstConfigUnknown(f"{why} needs {key} in the stack's config (pulumi config set {key} <value>)")
    return value


def _market(pool: PlannedPool) -> str:
    return "spot" if pool.market == "spot" else "on-demand"


def _node_sets(
    pool: PlannedPool, outputs: Mapping[str, Any], stack_config: Mapping[str, Any]
) -> list[AwsNodeSet | GcpNodeSet | AzureNodeSet]:
    names = pool.node_names()
    handles = outputs.get("pools", {}).get(pool.name, {})
    common = {"region": pool.region, "instance_type": pool.instance_type, "market": _market(pool)}
    if pool.aws is not None:
        group = _known(handles.get("asg_name"), f"pool {pool.name}: the Auto Scaling group's name")
        return [AwsNodeSet(nodes=hostlist(names), group=group, **common)]
    if pool.gcp is not None:
        project = _config(stack_config, "gcp:project", f"pool {pool.name} (GCP)")
        assert pool.zone is not None
        migs = handles.get("group_names", {})
        return [
            GcpNodeSet(
                provider="gcp",
                nodes=hostlist(names[g.first_node : g.first_node + g.nodes]),
                group=_known(migs.get(g.name), f"pool {pool.name}: the managed instance group of {g.name}"),
                project=project,
                zone=pool.zone,
                **common,
            )
            for g in pool.gcp.groups
        ]
    if pool.azure is not None:
        subscription = _config(stack_config, "azure-native:subscriptionId", f"pool {pool.name} (Azure)")
        group_of = outputs.get("networks", {}).get(pool.network, {}).get("resource_group")
        resource_group = pool.azure.resource_group or _known(group_of, f"network {pool.network}: the resource group")
        scale_sets = handles.get("scale_sets", {})
        return [
            AzureNodeSet(
                provider="azure",
                nodes=hostlist(names[s.first_node : s.first_node + s.nodes]),
                group=_known(scale_sets.get(s.name), f"pool {pool.name}: the scale set {s.name}"),
                subscription_id=subscription,
                resource_group=resource_group,
                **common,
            )
            for s in pool.azure.scale_sets
        ]
    raise BurstConfigUnknown(f"pool {pool.name}: {pool.provider} pools cannot burst (no cloud group to resize)")


def fixed_node_sets(
    plan: ClusterPlan, outputs: Mapping[str, Any], stack_config: Mapping[str, Any]
) -> list[AwsNodeSet | GcpNodeSet | AzureNodeSet]:
    """The groups of the cloud pools Pulumi keeps at their size (every cloud pool that does not burst), in the
    bursting configuration's form, for aicluster-repair's replacements; a pool whose group is not known yet (not
    deployed, offline) or that has none (TPU slices) is left out: its nodes' replacements are held."""
    out: list[AwsNodeSet | GcpNodeSet | AzureNodeSet] = []
    for pool in plan.pools:
        if pool.burst or pool.onprem is not None:
            continue
        try:
            out += _node_sets(pool, outputs, stack_config)
        except (BurstConfigUnknown, ValidationError):
            continue
    return out


def burst_pools(plan: ClusterPlan) -> list[PlannedPool]:
    """The cloud pools Slurm powers up and down (a stack with a site: the plan marks them `burst`)."""
    return [p for p in plan.pools if p.burst]


def burst_config(
    plan: ClusterPlan,
    outputs: Mapping[str, Any],
    stack_config: Mapping[str, Any],
    settings: SlurmSettings = DEFAULT_SETTINGS,
    catalog: Catalog | None = None,
) -> BurstConfig | None:
    """The configuration for the plan's burst pools; None when it has none. BurstConfigUnknown when the stack does
    not say yet what it needs."""
    pools = burst_pools(plan)
    if not pools:
        return None
    catalog = catalog or load_catalog()
    resume_timeout = min(cloud_times(p, catalog).resume_timeout_s for p in pools)
    try:
        return BurstConfig(
            cluster=plan.name,
            log_file=f"{settings.log_dir}/aicluster-burst.log",
            state_dir=f"{settings.state_save_location}/aicluster-burst",
            scontrol=settings.scontrol,
            launch_wait_s=float(max(1, min(LAUNCH_WAIT_MAX_S, resume_timeout - LAUNCH_WAIT_MARGIN_S))),
            node_sets=[s for p in pools for s in _node_sets(p, outputs, stack_config)],
        )
    except ValidationError as exc:  # a stack config value (gcp:project, subscription id) or an output of the wrong form
        raise BurstConfigUnknown("; ".join(_problem(err) for err in exc.errors())) from None


def _problem(err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"])
    message = PATTERN_HELP.get(str(err.get("ctx", {}).get("pattern")), err["msg"])
    value = repr(err["input"])[:120]
    return f"bursting configuration {where}: got {value}; {message} (check the stack's config and outputs)"


def burst_json(
    plan: ClusterPlan,
    outputs: Mapping[str, Any],
    stack_config: Mapping[str, Any],
    settings: SlurmSettings = DEFAULT_SETTINGS,
    catalog: Catalog | None = None,
) -> str | None:
    """`aicluster-burst.json` as text, or None when the plan has no burst pool."""
    config = burst_config(plan, outputs, stack_config, settings, catalog)
    if config is None:
        return None
    return json.dumps(config.model_dump(mode="json"), indent=2) + "\n"
