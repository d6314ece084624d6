"""`aicluster validate STACK`: every problem of the stack at once, or one line saying what it plans."""

from __future__ import annotations

import argparse

from ..console import out, print_warnings
from ..exits import EXIT_OK
from ..inputs import read_stack
from ..views.format import accelerators, money

NAME = "validate"
HELP = "check a stack file against the schema and the catalog"
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No flags of its own."""


def run(args: argparse.Namespace) -> int:
    """Every problem of the stack at once: the spec's (all layers), the waivers', the catalog's (the planner)
    and what the mandatory data-residency and tag policies would fail in preview."""
    from aicluster.preview.check import check_stack

    _, stack = read_stack(args)
    plan = check_stack(stack, policy_checks=True)
    print_warnings(plan)
    out.print(
        f"[green]ok[/] {stack.source}: cluster {plan.name}, {len(plan.pools)} pool(s), "
        f"{plan.totals.nodes:,} nodes, {plan.totals.gpus:,} {accelerators(plan.pools)}, "
        f"{money(plan.totals.cost_usd_per_month, plan.totals.unpriced)}/month"
    )
    return EXIT_OK
