"""`aicluster preview STACK`: run the Pulumi program offline under mocks, show what it would create and run the
policy pack over it (exit 1 on a mandatory violation)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import options
from ..console import err, escape, out, print_warnings
from ..inputs import json_target, policy_config, read_stack
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


def run(args: argparse.Namespace) -> int:
    from aicluster.preview import preview_stack
    from aicluster.timings import phase

    target = json_target(args.json)
    config = policy_config(args)
    _, stack = read_stack(args)
    result = preview_stack(stack, config)
    with phase("output"):
        return _output(args, stack, result, target)


def _output(args: argparse.Namespace, stack: Any, result: Any, target: Path | None) -> int:
    from aicluster.files import write_atomic

    data = json.dumps(result.to_json(), indent=2) + "\n"
    code, line = verdict(result)
    if args.json == "-":
        sys.stdout.write(data)
        err.print(line)
        return code
    print_warnings(result.plan)
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
    na_line = not_applicable_line(result)
    if na_line is not None:
        out.print(f"[dim]{escape(na_line)}[/]")
    out.print(f"[{'red' if code else 'green'}]{escape(line)}[/]")
    if target is not None:
        write_atomic(target, data, flag="--json")
        out.print(f"wrote {escape(str(target))}")
    return code
