"""`aicluster plan STACK [--json FILE]`: the resolved plan (instance facts, CIDRs, cost, power, racks)."""

from __future__ import annotations

import argparse
import json
import sys

from .. import options
from ..console import escape, out, print_warnings
from ..exits import EXIT_OK
from ..inputs import json_target, read_stack
from ..views.plan import pools_table, print_plan_details

NAME = "plan"
HELP = "show the resolved plan: instance facts, CIDRs, cost, power, racks"
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_json(p, "also write the plan as JSON ('-' for stdout only)")


def run(args: argparse.Namespace) -> int:
    from aicluster.files import write_atomic
    from aicluster.preview import plan_stack

    target = json_target(args.json, args.parents)
    _, stack = read_stack(args)
    plan = plan_stack(stack)
    data = json.dumps(plan.model_dump(mode="json"), indent=2, sort_keys=False) + "\n"
    if args.json == "-":
        sys.stdout.write(data)
        return EXIT_OK
    print_warnings(plan)
    out.print(pools_table(plan, title=f"Plan for {escape(stack.stack)} ({escape(plan.name)})"))
    print_plan_details(plan)
    if target is not None:
        write_atomic(target, data, flag="--json", parents=args.parents)
        out.print(f"wrote {escape(str(target))}")
    return EXIT_OK
