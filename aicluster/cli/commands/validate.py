"""`aicluster validate STACK`: every problem of the stack at once, or one line saying what it plans."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import options
from ..console import err, escape, out, print_warnings, warn
from ..exits import EXIT_FAILED, EXIT_OK, UsageError
from ..inputs import read_stack
from ..views.format import accelerators, money

NAME = "validate"
HELP = "check a stack file against the schema and the catalog"
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_base(
        p,
        "BASE_STACK",
        "the base branch's stack file (Pulumi.<stack>.yaml): name what each changed field does to the deployed "
        "cluster (applied live, new nodes only, removes nodes, rolls or replaces the nodes, replaces the data)",
    )


def run(args: argparse.Namespace) -> int:
    """Every problem of the stack at once: the spec's (all layers), the waivers', the catalog's (the planner)
    and what the mandatory data-residency and tag policies would fail in preview."""
    from aicluster.preview.check import check_stack

    project, stack = read_stack(args)
    base = _base_cluster(project, args.base) if args.base else None
    plan = check_stack(stack, policy_checks=True)
    print_warnings(plan)
    from aicluster.preview.check import waiver_warnings

    warn(waiver_warnings(plan.compliance.waivers, cluster=plan.name))
    out.print(
        f"[green]ok[/] {escape(str(stack.source))}: cluster {escape(plan.name)}, {len(plan.pools)} pool(s), "
        f"{plan.totals.nodes:,} nodes, {plan.totals.gpus:,} {accelerators(plan.pools)}, "
        f"{money(plan.totals.cost_usd_per_month, plan.totals.unpriced)}/month"
    )
    if base is not None:
        from aicluster.catalog import load_catalog
        from aicluster.changes.fields import field_changes

        from ..views.changes import field_table

        head = stack.config.get("aicluster:cluster") or {}
        changes = field_changes(base, head, load_catalog().update_policies)
        out.print(field_table(changes, args.base))
        refused = [c for c in changes if c.effect == "refused"]
        for c in refused:
            # as `preview --base` fails on an update the cloud's API refuses: `pulumi up` would fail on it
            why = c.note or "the platform refuses this change in place"
            err.print(f"[red]refused[/] {escape(c.path)}: {escape(why)}")
        if refused:
            return EXIT_FAILED
    return EXIT_OK


def _base_cluster(project: Any, path: str) -> dict[str, Any]:
    """The base stack file's `aicluster:cluster`, as written (the base need not be valid under this version)."""
    from aicluster.stackfile import read_stack, stack_file_name

    name = stack_file_name(Path(path))
    if name is None or not Path(path).is_file():
        raise UsageError(f"--base {path}: not a stack file; give the base branch's Pulumi.<stack>.yaml")
    base = read_stack(project, name, Path(path))  # a file that is no YAML mapping: SpecError, exit 2
    cluster = base.config.get("aicluster:cluster")
    if not isinstance(cluster, dict):
        raise UsageError(f"--base {path}: its aicluster:cluster is not a mapping; give the base branch's stack file")
    return cluster
