"""Cost: the monthly bill of the stack's fleets, file systems and network within the budget;
spot fleets have somewhere to checkpoint to."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pulumi_policy import EnforcementLevel, Severity

from .facts import EIP, NAT_GATEWAY, Res, Stack
from .rule import Ctx, Meta, NotApplicable, StackRule


@dataclass(frozen=True)
class Line:
    what: str
    usd_per_month: float | None  # None: not priced (named in the finding)


def bill(stack: Stack) -> list[Line]:
    """The stack's monthly cost, line by line, as the planner computes it (730-hour months)."""
    hours = stack.catalog.hours_per_month
    lines: list[Line] = []
    for f in stack.fleets:
        price = stack.fleet_price(f)
        lines.append(
            Line(
                f"{f.res.name}: {f.nodes} x {f.instance_type} {f.market}",
                price * f.nodes * hours if price is not None else None,
            )
        )
        if f.root_volume_gib:
            volumes = stack.service_month("aws", "ebs-gp3", f.region, f.root_volume_gib * f.nodes)
            lines.append(Line(f"{f.res.name}: {f.root_volume_gib * f.nodes:g} GiB root volumes", volumes))
    for fs in stack.filesystems:
        if fs.capacity_gib is None:
            continue  # billed per GiB stored (EFS): no size declared to price
        lines.append(Line(f"{fs.res.name}: {fs.capacity_gib:g} GiB {fs.service}", stack.filesystem_price(fs)))
    for nat in stack.of(NAT_GATEWAY):
        lines.append(Line(f"{nat.name}: NAT gateway", stack.service_month("aws", "nat-gateway", nat.region, 1)))
    for eip in stack.of(EIP):
        lines.append(Line(f"{eip.name}: public IPv4", stack.service_month("aws", "public-ipv4", eip.region, 1)))
    return lines


def monthly_total(stack: Stack) -> float:
    return sum(line.usd_per_month or 0.0 for line in bill(stack))


def _budget(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    budget = ctx.setting("monthly_usd", ("budgets", "monthly_usd"))
    if budget is None:
        raise NotApplicable("no monthly budget: set budgets.monthly_usd in the stack or monthly_usd in policy config")
    lines = bill(stack)
    total = sum(line.usd_per_month or 0.0 for line in lines)
    unpriced = [line.what for line in lines if line.usd_per_month is None]
    if total > float(budget):
        top = sorted((x for x in lines if x.usd_per_month), key=lambda x: -(x.usd_per_month or 0))[:3]
        biggest = "; ".join(f"{x.what} ${x.usd_per_month:,.0f}" for x in top)
        over = total - float(budget)
        yield (
            None,
            f"monthly cost ${total:,.0f} exceeds the budget ${float(budget):,.0f} by ${over:,.0f} "
            f"({over / float(budget):.1%}); largest: {biggest}. Shrink or remove a pool, move it to spot or "
            "reserved capacity, or raise budgets.monthly_usd",
        )
    elif unpriced:
        yield (
            None,
            f"monthly cost ${total:,.0f} is within the budget ${float(budget):,.0f} only as far as it is known: "
            f"no catalog price for {', '.join(unpriced)}; add the rates under pricing.overrides",
        )


monthly_budget = StackRule(
    Meta(
        name="aicluster-cluster-enforce-monthly-budget",
        display_name="Monthly budget",
        description="The monthly cost of GPU fleets, controllers, file systems and network stays within budget.",
        concern="cost",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Shrink pools, use spot or reserved capacity, or raise budgets.monthly_usd.",
        config={
            "monthly_usd": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Ceiling in USD per 730-hour month. Default: the AiCluster's budgets.monthly_usd.",
            }
        },
    ),
    _budget,
)


def _spot_checkpoints(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    if stack.filesystems:
        return
    for f in stack.fleets:
        if f.market == "spot" and f.spec is not None and f.spec.accelerator_count:
            yield (
                f.res,
                f"{f.res.name} runs {f.nodes} x {f.instance_type} on spot with no shared file system in the stack: "
                "an interruption loses all progress since the job started; add storage (kind: lustre) to "
                "checkpoint to",
            )


spot_checkpoints = StackRule(
    Meta(
        name="aicluster-spot-missing-checkpoint-storage",
        display_name="Spot fleets checkpoint",
        description="Spot GPU fleets have a shared file system in the stack to checkpoint to.",
        concern="cost",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Add a parallel file system (storage: kind: lustre) or move the pool to on-demand.",
    ),
    _spot_checkpoints,
)

POLICIES: list[StackRule] = [monthly_budget, spot_checkpoints]
