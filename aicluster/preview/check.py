"""Every problem of a stack at once, for `validate`, `plan` and `preview` alike.

The spec is checked with its wrong parts left out (spec.check_cluster), so a mistake in one field never
hides the rules of another; the waivers and the catalog (the planner) are checked on what is left. `validate`
adds what the pack's mandatory data-residency and required-tag policies would fail in preview, found from the
stack alone, with the stack file's line; `preview` leaves those to the pack, which reports them as findings.

These checks need the pack's policy names (policies.names), never the pack itself: `validate` and `plan` do not
load the policy engine or the Pulumi SDK.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Sequence

from aicluster.catalog import REQUIRED_TAGS, load_catalog
from aicluster.catalog.pricing import money
from aicluster.changes import CHANGE_SAFETY
from aicluster.plan import ClusterPlan, plan
from aicluster.plan.registry import SCHEDULERS
from aicluster.spec import ClusterSpec, Problem, SpecError, Waiver, check_cluster, did_you_mean, gcp_label
from aicluster.spec import Path as SpecPath
from aicluster.stackfile import StackConfig, cluster_data
from aicluster.timings import phase
from policies import names


def check_stack(stack: StackConfig, *, policy_checks: bool = False) -> ClusterPlan:
    """The stack's plan, or SpecError listing every problem of every layer (file, line, field, fix)."""
    with phase("catalog"):
        load_catalog()
    with phase("plan"):
        return _check_stack(stack, policy_checks=policy_checks)


def _check_stack(stack: StackConfig, *, policy_checks: bool) -> ClusterPlan:
    checked = check_cluster(cluster_data(stack))
    problems = list(checked.problems)
    spec = checked.spec
    cluster_plan = None
    if spec is not None:
        later = list(waiver_problems(spec.compliance.waivers))
        if policy_checks:
            later += policy_problems(spec)
        # the planner reads pools and file systems together (defaults come from the first pool): plan the
        # rest only when no pool or file system was left out, else its problems could be the leaving out's
        if not checked.items_left_out:
            try:
                cluster_plan = plan(spec, load_catalog())
            except SpecError as exc:
                later.extend(exc.problems)
            if policy_checks and cluster_plan is not None:
                later += plan_policy_problems(spec, cluster_plan)
        # a section left out (back to its default) is not judged again: its own problems are already listed
        wrong = {p.path[0] for p in checked.problems if p.path}
        later = [dataclasses.replace(p, path=checked.original(p.path)) for p in later]
        problems.extend(p for p in later if not (p.path and p.path[0] in wrong and p.path[0] not in checked.kept))
    clear = stack.clear_secret_problems(_named_secrets(spec)) if spec is not None else []
    if problems or clear or cluster_plan is None:
        lines = {**{p.path: stack.config_lines[str(p.path[0])] for p in clear}, **stack.lines}
        raise SpecError(stack.source, [*problems, *clear], lines)
    return cluster_plan


def _named_secrets(spec: ClusterSpec) -> dict[str, str]:
    """The config keys the spec names as secrets, and what each holds (the first host's, for a shared key)."""
    named: dict[str, str] = {}
    for pool in spec.pools:
        for host in getattr(pool, "hosts", None) or ():
            if host.bmc_secret is not None:
                named.setdefault(host.bmc_secret, f"the BMC password of host {host.name}")
    alerts = spec.monitoring.alerts
    for receiver in alerts.receivers if alerts is not None else ():
        for field in ("password_secret", "webhook_secret", "routing_key_secret", "token_secret"):
            key = getattr(receiver, field, None)
            if key is not None:
                named.setdefault(key, f"the secret of alert receiver {receiver.name}")
    return named


def waiver_problems(
    waivers: Sequence[Waiver], policies: Sequence[str] = (*names.NAMES, CHANGE_SAFETY)
) -> list[Problem]:
    """Waivers naming no policy of the pack nor the change-safety rule of `preview --base` (a typo would silently
    waive nothing)."""
    out = []
    for i, w in enumerate(waivers):
        if w.policy not in policies:
            out.append(
                Problem(
                    ("compliance", "waivers", i, "policy"),
                    "no such policy in the pack; `aicluster policies` lists them",
                    w.policy,
                    True,
                    did_you_mean(w.policy, list(policies)),
                )
            )
    return out


def waiver_warnings(
    waivers: Sequence[Waiver],
    resources: Iterable[tuple[str, str]] | None = None,
    cluster: str | None = None,
    today: datetime.date | None = None,
) -> list[str]:
    """Waivers that waive nothing: expired ones (the pack and the change-safety gate ignore them), and those naming
    no resource: none of the preview's (name, URN) pairs where given, else no name of this cluster's (every
    resource aicluster declares is named `<cluster>-...`)."""
    today = today or datetime.date.today()
    names = {x for pair in resources for x in pair} if resources is not None else None
    out = []
    for i, w in enumerate(waivers):
        where = f"compliance.waivers[{i}]: waiver for {w.resource} ({w.policy})"
        if datetime.date.fromisoformat(w.expires) < today:
            out.append(
                f"{where} expired on {w.expires}: renew it (a later `expires`) or remove it; until then it waives "
                "nothing"
            )
        elif names is not None and w.resource not in names:
            out.append(f"{where} matches no resource of this preview: give a resource's name or URN, or remove it")
        elif names is None and cluster and not w.resource.startswith((f"{cluster}-", "urn:pulumi:")):
            out.append(
                f"{where} matches no resource of cluster {cluster} (their names begin with {cluster}-): give a "
                "resource's name or URN, or remove it"
            )
    return out


def _as_written(x: float) -> float | int:
    """A whole number as the stack wrote it (`1000`, not `1000.0`)."""
    return int(x) if x.is_integer() else x


def plan_policy_problems(spec: ClusterSpec, cluster_plan: ClusterPlan) -> list[Problem]:
    """What the pack's mandatory budget, power and spot-checkpoint policies would fail in preview, from the
    plan's figures: the pack and the plan share one cost and one power model, so they agree. (The planner
    itself refuses a node above budgets.rack_kw.)"""
    waived = {w.policy for w in spec.compliance.waivers}
    problems: list[Problem] = []
    totals, budgets = cluster_plan.totals, spec.budgets
    if (
        budgets.monthly_usd is not None
        and names.MONTHLY_BUDGET not in waived
        and totals.cost_usd_per_month > budgets.monthly_usd
    ):
        over = totals.cost_usd_per_month - budgets.monthly_usd
        problems.append(
            Problem(
                ("budgets", "monthly_usd"),
                f"the plan costs {money(totals.cost_usd_per_month, bool(totals.unpriced))}/month, "
                f"{money(over)} over this budget (policy {names.MONTHLY_BUDGET} fails in preview); "
                "shrink a pool, use spot or reserved capacity, or raise budgets.monthly_usd",
                _as_written(budgets.monthly_usd),
                True,
            )
        )
    if (
        budgets.power_kw is not None
        and names.POWER_BUDGET not in waived
        and totals.power_kw_facility > budgets.power_kw
    ):
        problems.append(
            Problem(
                ("budgets", "power_kw"),
                f"the plan draws {totals.power_kw_facility:,.1f} kW at the facility (IT kW x PUE), "
                f"{totals.power_kw_facility - budgets.power_kw:,.1f} kW over this budget (policy "
                f"{names.POWER_BUDGET} fails in preview); shrink a pool or raise budgets.power_kw",
                _as_written(budgets.power_kw),
                True,
            )
        )
    if not spec.storage and names.SPOT_CHECKPOINTS not in waived:
        for i, p in enumerate(cluster_plan.pools):
            if p.market == "spot" and p.gpus:
                problems.append(
                    Problem(
                        ("pools", i, "market"),
                        f"a spot pool with no shared file system in the stack to checkpoint to (policy "
                        f"{names.SPOT_CHECKPOINTS} fails in preview); add storage (kind: lustre) or use "
                        "on-demand",
                        p.market,
                        True,
                    )
                )
    return problems


def policy_problems(spec: ClusterSpec) -> list[Problem]:
    """What the policy pack's mandatory data-residency and required-tag policies would fail in preview, found
    from the stack alone (their default settings; a waiver naming the policy turns the check off here)."""

    waived = {w.policy for w in spec.compliance.waivers}
    problems: list[Problem] = []
    allowed = list(spec.compliance.allowed_regions)
    residency = names.ALLOWED_REGIONS
    if allowed and residency not in waived:
        # cloud regions only: an owned site is the operator's own premises, not a cloud region
        placed: list[tuple[SpecPath, str | None]] = [
            (("pools", i, "region"), p.region) for i, p in enumerate(spec.pools) if p.provider != "onprem"
        ]
        placed += [(("storage", i, "region"), s.region) for i, s in enumerate(spec.storage)]
        placed += SCHEDULERS[spec.scheduler.kind].regions(spec)
        for path, region in placed:
            if region is not None and region not in allowed:
                problems.append(
                    Problem(
                        path,
                        f"outside compliance.allowed_regions [{', '.join(allowed)}] (policy {residency} fails "
                        "in preview); use an allowed region or add this one to compliance.allowed_regions",
                        region,
                        True,
                    )
                )
    rules = {"aws": names.AWS_REQUIRED_TAGS, "azure": names.AZURE_REQUIRED_TAGS, "gcp": names.GCP_REQUIRED_LABELS}
    for provider in sorted({p.provider for p in spec.pools}):
        rule = rules.get(provider)
        if rule is None or rule in waived:
            continue
        if provider == "gcp":
            have = {gcp_label(k, key=True) for k in spec.tags}
            missing = [t for t in REQUIRED_TAGS if gcp_label(t, key=True) not in have]
        else:
            missing = [t for t in REQUIRED_TAGS if t not in spec.tags]
        if missing:
            problems.append(
                Problem(
                    ("tags",),
                    f"missing the required tag(s) {', '.join(missing)} (policy {rule} fails every "
                    f"{provider} resource in preview); add them, e.g. `{missing[0]}: ml-platform`",
                )
            )
    return problems
