"""`aicluster stacks`: the project's stacks, one name a line."""

from __future__ import annotations

import argparse

from ..console import escape, out
from ..exits import EXIT_OK
from ..inputs import read_project

NAME = "stacks"
HELP = "list the stacks of the project"
STACK = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No flags of its own."""


def run(args: argparse.Namespace) -> int:
    for name in read_project(args).stacks():
        out.print(escape(name))
    return EXIT_OK
