"""`aicluster size STACK [--json F]`: the stack's workloads sized on their pools.

Plans the stack (no Pulumi program) and prints, per workload, the chosen layout, memory per GPU by part, step time
by part, the run (tokens, steps, days, GPU-hours, cost, energy), failures and checkpoints, and the runners-up with
why they lost. `--json -` prints one JSON object {"stack", "cluster", "workloads": [...]} and nothing else;
`--json FILE` writes it atomically (the path is checked before any work).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from .. import options
from ..console import escape, out, print_warnings
from ..exits import EXIT_OK
from ..inputs import json_target, read_stack
from ..views.size import print_workload

if TYPE_CHECKING:
    from aicluster.sizing.models import WorkloadEstimate

NAME = "size"
HELP = "size the stack's workloads on their pools: layout, memory, step time, days, cost, checkpoints"
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_json(p, 'write {"stack", "cluster", "workloads": [...]} to FILE ("-": print only that JSON on stdout)')


def document(stack: str, cluster: str, workloads: tuple[WorkloadEstimate, ...]) -> dict[str, Any]:
    """The JSON `--json` writes: the workloads as the preview JSON carries them."""
    return {"stack": stack, "cluster": cluster, "workloads": [w.model_dump(mode="json") for w in workloads]}


def run(args: argparse.Namespace) -> int:
    from aicluster.files import write_atomic
    from aicluster.preview import plan_stack

    target = json_target(args.json, args.parents)
    _, stack = read_stack(args)
    plan = plan_stack(stack)
    data = json.dumps(document(stack.stack, plan.name, plan.workloads), indent=2) + "\n"
    if args.json == "-":
        sys.stdout.write(data)
        return EXIT_OK
    print_warnings(plan)
    if not plan.workloads:
        pool = plan.pools[0].name if plan.pools else "POOL"
        example = (
            "  workloads:\n"
            "    - name: llama3-70b\n"
            f"      pools: [{pool}]\n"
            "      model: {parameters: 70B, sequence_length: 8192}\n"
            "      training: {tokens: 2T, global_batch_tokens: 16Mi}\n"
        )
        out.print(
            f"{escape(stack.source)}: no workloads. Add one under `workloads:` in the stack file, e.g.\n"
            + escape(example)
            + "(docs/sizing.md; the fields are in docs/spec-reference.md#workload)"
        )
    for w in plan.workloads:
        print_workload(w)
    if target is not None:
        write_atomic(target, data, flag="--json", parents=args.parents)
        out.print(f"wrote {escape(str(target))}")
    return EXIT_OK
