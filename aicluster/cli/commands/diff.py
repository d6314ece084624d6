"""`aicluster diff BASE HEAD [-o FILE] [--json FILE]`: Markdown for a PR comment, from two preview JSONs, and the
steps (create, update, replace, delete) with their risks as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from .. import options
from ..console import emit, err, escape
from ..exits import UsageError
from ..inputs import json_target, read_json

NAME = "diff"
HELP = "Markdown for a PR comment: what changes between two preview JSONs, what it replaces and what it loses"
STACK = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", help="preview JSON of the base branch")
    p.add_argument("head", help="preview JSON of the change")
    options.add_output(p, "write it to FILE (default: stdout)")
    options.add_json(
        p,
        "also write the steps as JSON: per resource that is not the same, its op (create|update|replace|delete), "
        "replaceReasons, diffReasons, risks and rollout ('-' for stdout, then no Markdown)",
    )


def run(args: argparse.Namespace) -> int:
    from aicluster.catalog import load_catalog
    from aicluster.changes import classify
    from aicluster.files import write_atomic
    from aicluster.report import DiffInputError, diff_markdown, preview_shape_problem

    target = json_target(args.json, args.parents)
    docs = {}
    for side, path in (("base", args.base), ("head", args.head)):
        doc = read_json(path, side)
        problem = preview_shape_problem(doc)
        if problem:
            raise UsageError(
                f"{side} {path}: not a preview JSON ({problem}); write one with `aicluster preview STACK --json FILE`"
            )
        docs[side] = doc
    changes = classify(docs["base"], docs["head"], load_catalog().change_rules).to_json()
    data = json.dumps(changes, indent=2) + "\n"
    if args.json == "-":
        sys.stdout.write(data)
        return 0
    try:
        text = diff_markdown(docs["base"], docs["head"], changes)
    except DiffInputError as exc:
        path = args.base if exc.side == "base" else args.head
        raise UsageError(
            f"{exc.side} {path}: not a preview JSON ({exc.problem}); write one with "
            "`aicluster preview STACK --json FILE`"
        ) from None
    if target is not None:
        write_atomic(target, data, flag="--json", parents=args.parents)
        err.print(f"wrote {escape(str(target))}")  # stdout may carry the Markdown
    return emit(text, args.output, args.parents)
