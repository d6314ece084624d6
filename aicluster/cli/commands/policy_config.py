"""`aicluster policy-config STACK`: the --policy-pack-config that carries the stack's waivers to the Pulumi CLI."""

from __future__ import annotations

import argparse
import json

from .. import options
from ..console import emit
from ..inputs import read_stack

NAME = "policy-config"
HELP = "write the --policy-pack-config that carries the stack's waivers to the Pulumi CLI"
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_output(p, "write it to FILE (default: stdout)")


def run(args: argparse.Namespace) -> int:
    from aicluster.preview import plan_stack
    from aicluster.preview.policy import stack_pack_config

    _, stack = read_stack(args)
    text = json.dumps(stack_pack_config(plan_stack(stack)), indent=2) + "\n"
    return emit(text, args.output, args.parents)
