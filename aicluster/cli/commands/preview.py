"""`aicluster preview STACK`: run the Pulumi program offline under mocks, show what it would create and run the
policy pack over it (exit 1 on a mandatory violation)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import options
from ..console import err, escape, out, print_warnings, warn
from ..exits import EXIT_FAILED, UsageError
from ..inputs import json_target, policy_config, read_json, read_stack
from ..views.changes import blocked_lines, risky_table, summary_line
from ..views.plan import pools_table, print_plan_details
from ..views.policy import findings_table, not_applicable_line, resource_counts_table, resource_tree, verdict

NAME = "preview"
HELP = (
    "run the Pulumi program offline under mocks, show what it would create and run the policy pack "
    "(exit 1 on a mandatory violation)"
)
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_json(p, "also write the preview as JSON ('-' for stdout only)")
    options.add_policy_config(p)
    p.add_argument(
        "--tree", action="store_true", help="show the resources by name and type under their parent, as pulumi preview"
    )
    options.add_base(
        p,
        "BASE.json",
        "the base branch's preview JSON: say what this change creates, updates, replaces, deletes and rolls out, "
        "and fail (exit 1) where it replaces or deletes a stateful resource, or makes an update the cloud's API "
        "refuses, that no waiver names",
    )


def run(args: argparse.Namespace) -> int:
    from aicluster.preview import preview_stack
    from aicluster.timings import phase

    target = json_target(args.json, args.parents)
    config = policy_config(args)
    base = _base(args.base)
    _, stack = read_stack(args)
    result = preview_stack(stack, config)
    with phase("output"):
        return _output(args, stack, result, target, base)


def _base(path: str | None) -> Any:
    """The base preview JSON, checked before anything runs."""
    if path is None:
        return None
    from aicluster.report import preview_shape_problem

    doc = read_json(path, "--base")
    problem = preview_shape_problem(doc)
    if problem:
        raise UsageError(
            f"--base {path}: not a preview JSON ({problem}); write one on the base branch with "
            "`aicluster preview STACK --json FILE`"
        )
    return doc


def _changes(base: Any, head: dict[str, Any], result: Any) -> dict[str, Any]:
    """The steps from base to head, and those the change-safety rule blocks or a waiver accepts."""
    from aicluster.catalog import load_catalog
    from aicluster.changes import blocked_steps, classify

    changes = classify(base, head, load_catalog().change_rules)
    blocked, waived = blocked_steps(changes, result.plan.compliance.waivers)
    return {
        "base": str(base.get("stack", "")),
        **changes.to_json(),
        "blocked": [
            {"urn": b.step.urn, "name": b.step.name, "type": b.step.type, "op": b.step.op, "fix": b.fix}
            | ({"refused": b.step.rejected} if b.step.rejected else {})
            for b in blocked
        ],
        "waived": [
            {"urn": w.step.urn, "name": w.step.name, "op": w.step.op, "reason": w.reason, "expires": w.expires}
            for w in waived
        ],
    }


def _waiver_warnings(result: Any) -> list[str]:
    """Waivers of the stack that waive nothing here: expired, or naming no resource of this preview."""
    from aicluster.preview.check import waiver_warnings

    resources = [(r.name, r.urn) for r in result.capture.resources]
    return waiver_warnings(result.plan.compliance.waivers, resources)


def _blocked_words(blocked: list[dict[str, Any]]) -> str:
    """`1 stateful or guarded resource(s) replaced or deleted, 1 update the cloud's API refuses (aks-x:
    availabilityZones[0])`: guarded as the catalog's change rules say (a cluster, a GPU node pool, the Slurm
    controller)."""
    refused = [b for b in blocked if b.get("refused")]
    parts = []
    if len(refused) < len(blocked):
        parts.append(f"{len(blocked) - len(refused)} stateful or guarded resource(s) replaced or deleted")
    if refused:
        named = "; ".join(f"{b['name']}: {', '.join(b['refused'])}" for b in refused)
        parts.append(f"{len(refused)} update(s) the cloud's API refuses ({named})")
    return ", ".join(parts)


def _output(args: argparse.Namespace, stack: Any, result: Any, target: Path | None, base: Any = None) -> int:
    from aicluster.files import write_atomic

    doc = result.to_json()
    changes = _changes(base, doc, result) if base is not None else None
    if changes is not None:
        doc["changes"] = changes
    data = json.dumps(doc, indent=2) + "\n"
    code, line = verdict(result)
    if changes is not None and changes["blocked"]:
        code = EXIT_FAILED
        line += f"; change safety: {_blocked_words(changes['blocked'])} without a waiver"
    if changes is not None and changes["waived"]:
        n = len(changes["waived"])
        line += f"{'' if changes['blocked'] else '; change safety:'} {n} step{'s' if n != 1 else ''} waived"
    if args.json == "-":
        sys.stdout.write(data)
        err.print(line)
        return code
    print_warnings(result.plan)
    warn(_waiver_warnings(result))
    title = f"Resources ({len(result.capture.resources)}) in preview of {escape(stack.stack)}"
    if args.tree:
        out.print(f"{title}:")
        out.print(resource_tree(stack.stack, result.capture.resources))
    else:
        out.print(resource_counts_table(title, result.resource_counts()))
    out.print(pools_table(result.plan))
    print_plan_details(result.plan)
    out.print(f"[dim]offline preview: {result.capture.seconds:.2f} s, no cloud account used[/]")
    findings = findings_table(result)
    if findings is not None:
        out.print(findings)
    if changes is not None:
        out.print(escape(summary_line(changes)))
        table = risky_table(changes)
        if table is not None:
            out.print(table)
        for text in blocked_lines(changes):
            out.print(text)
    na_line = not_applicable_line(result)
    if na_line is not None:
        out.print(f"[dim]{escape(na_line)}[/]")
    out.print(f"[{'red' if code else 'green'}]{escape(line)}[/]")
    if target is not None:
        write_atomic(target, data, flag="--json", parents=args.parents)
        out.print(f"wrote {escape(str(target))}")
    return code
