"""`aicluster report STACK|PREVIEW.json --format F -o FILE`: a policy report, from the stack (previewed here) or from
a preview JSON `preview --json` wrote (CI previews once and renders every format). Exit codes as `preview`'s: 0, or 1
when a mandatory policy is violated (the report is written either way); 2 for bad input (nothing written)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import options
from ..console import escape, out
from ..exits import EXIT_FAILED, EXIT_OK, UsageError
from ..inputs import policy_config, read_json, read_stack
from ..views.policy import verdict

NAME = "report"
HELP = (
    "write a policy report (md, html, sarif, junit or json) of the stack, or of a preview JSON `preview --json` "
    "wrote; exit 1 on a mandatory violation, as preview"
)
STACK = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "stack",
        metavar="STACK",
        help="stack name, the path of a stack file Pulumi.<stack>.yaml, or a preview JSON (`preview --json F`): the "
        "report is then rendered from it, without previewing again",
    )
    p.add_argument("--format", required=True, choices=("md", "html", "sarif", "junit", "json"))
    options.add_output(p, "where to write the report", required=True)
    options.add_policy_config(p)


def run(args: argparse.Namespace) -> int:
    from aicluster.files import check_target, write_atomic

    output = check_target(args.output, "-o", parents=args.parents)
    if args.stack.endswith(".json"):
        mandatory, text, line = _from_preview_json(args)
    else:
        mandatory, text, line = _from_stack(args)
    write_atomic(output, text, flag="-o", parents=args.parents)
    out.print(f"wrote {escape(args.output)} ({args.format}); {escape(line)}")
    return EXIT_FAILED if mandatory else EXIT_OK


def _from_stack(args: argparse.Namespace) -> tuple[int, str, str]:
    from aicluster.preview import preview_stack
    from aicluster.report import render

    config = policy_config(args)
    _, stack = read_stack(args)
    result = preview_stack(stack, config)
    text = render(result.to_json(), args.format)
    _, line = verdict(result)
    return len(result.policy.mandatory), text, line


def _from_preview_json(args: argparse.Namespace) -> tuple[int, str, str]:
    from aicluster.report import policy_counts, render

    if args.policy_config:
        raise UsageError(
            f"--policy-config {args.policy_config}: a preview JSON holds its findings already; give the stack to "
            "judge it with another config, or give --policy-config to `preview --json`"
        )
    if not Path(args.stack).is_file():
        raise UsageError(f"{args.stack}: no such file (a preview JSON that `aicluster preview STACK --json F` wrote)")
    doc: Any = read_json(args.stack, "preview JSON")
    try:
        text = render(doc, args.format)
        counts = policy_counts(doc)
    except ValueError as exc:
        raise UsageError(f"{args.stack}: {exc}") from None
    line = (
        f"policy pack {counts['pack']}: {counts['passed']} passed, {counts['mandatory']} mandatory and "
        f"{counts['advisory']} advisory violation(s), {counts['waived']} waived, {counts['not_applicable']} not "
        "applicable (from the preview JSON)"
    )
    return int(counts["mandatory"]), text, line
