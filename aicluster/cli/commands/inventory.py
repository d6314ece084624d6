"""`aicluster inventory STACK`: the Ansible inventory and group_vars for the tuning step (files 0600, in a work
directory)."""

from __future__ import annotations

import argparse

from .. import options
from ..exits import EXIT_OK
from ..planned_inventory import plan_inventory

NAME = "inventory"
HELP = "write the Ansible inventory and group_vars for the tuning step (files 0600, in a work directory)"
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_inventory_out(p, "where to write it (default: .work/<stack>/inventory)")
    options.add_node_sources(p)


def run(args: argparse.Namespace) -> int:
    plan_inventory(args).write()
    return EXIT_OK
