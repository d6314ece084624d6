"""`aicluster schema [-o FILE]`: the JSON schema of the stack format (aicluster:cluster)."""

from __future__ import annotations

import argparse
import json

from .. import options
from ..console import emit

NAME = "schema"
HELP = "print the JSON schema of aicluster:cluster"
STACK = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_output(p, "write it to FILE")


def run(args: argparse.Namespace) -> int:
    from aicluster.spec import json_schema

    return emit(json.dumps(json_schema(), indent=2) + "\n", args.output, args.parents)
