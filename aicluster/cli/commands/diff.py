"""`aicluster diff BASE HEAD [-o FILE]`: Markdown for a PR comment, from two preview JSONs."""

from __future__ import annotations

import argparse

from .. import options
from ..console import emit
from ..exits import UsageError
from ..inputs import read_json

NAME = "diff"
HELP = "Markdown for a PR comment: what changes between two preview JSONs"
STACK = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", help="preview JSON of the base branch")
    p.add_argument("head", help="preview JSON of the change")
    options.add_output(p, "write it to FILE (default: stdout)")


def run(args: argparse.Namespace) -> int:
    from aicluster.report import DiffInputError, diff_markdown

    base = read_json(args.base, "base")
    head = read_json(args.head, "head")
    try:
        text = diff_markdown(base, head)
    except DiffInputError as exc:
        path = args.base if exc.side == "base" else args.head
        raise UsageError(
            f"{exc.side} {path}: not a preview JSON ({exc.problem}); write one with "
            "`aicluster preview STACK --json FILE`"
        ) from None
    return emit(text, args.output)
