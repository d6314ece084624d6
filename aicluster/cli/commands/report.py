"""`aicluster report STACK --format F -o FILE`: preview the stack and write a policy report."""

from __future__ import annotations

import argparse

from .. import options
from ..console import escape, out
from ..exits import EXIT_OK
from ..inputs import policy_config, read_stack
from ..views.policy import verdict

NAME = "report"
HELP = "preview the stack and write a policy report: md, html, sarif, junit or json"
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", required=True, choices=("md", "html", "sarif", "junit", "json"))
    options.add_output(p, "where to write the report", required=True)
    options.add_policy_config(p)


def run(args: argparse.Namespace) -> int:
    from aicluster.files import check_target, write_atomic
    from aicluster.preview import preview_stack
    from aicluster.report import render

    output = check_target(args.output, "-o")
    config = policy_config(args)
    _, stack = read_stack(args)
    result = preview_stack(stack, config)
    text = render(result.to_json(), args.format)
    write_atomic(output, text, flag="-o")
    _, line = verdict(result)
    out.print(f"wrote {escape(args.output)} ({args.format}); {escape(line)}")
    return EXIT_OK
