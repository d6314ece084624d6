"""The flags more than one command takes, each declared once (pip's cmdoptions, cluster-toolkit's addXFlags).

A command composes them in its add_arguments; where two commands word a flag's help differently, the helper takes
the help. tests/cli/test_structure.py fails on a flag declared in two command modules.
"""

from __future__ import annotations

import argparse

QUIET_HELP = "do not print warnings (errors are still printed)"


def add_quiet(p: argparse.ArgumentParser, *, command: bool = False) -> None:
    """-q/--quiet: global, and accepted after the command too (`aicluster preview x -q`), where SUPPRESS keeps the
    global value unless it is given."""
    if command:
        p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=QUIET_HELP)
    else:
        p.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)


def add_stack(p: argparse.ArgumentParser) -> None:
    """The stack: a name, or the path of its stack file."""
    p.add_argument(
        "stack",
        help="stack name (p5-small reads stacks/Pulumi.p5-small.yaml) or the path of a stack file Pulumi.<stack>.yaml",
    )


def add_json(p: argparse.ArgumentParser, help: str) -> None:
    """--json FILE: the command's result as JSON ('-': stdout only); inputs.json_target checks it."""
    p.add_argument("--json", metavar="FILE", help=help)
    _add_parents(p)


def _add_parents(p: argparse.ArgumentParser) -> None:
    """--parents, once per command that writes a file the user names: a missing directory is an error without it."""
    if "--parents" not in p._option_string_actions:
        p.add_argument(
            "--parents", action="store_true", help="create the output file's missing directories (else an error)"
        )


def add_base(p: argparse.ArgumentParser, metavar: str, help: str) -> None:
    """--base FILE: the base branch's side of a change (a preview JSON for `preview`, a stack file for `validate`)."""
    p.add_argument("--base", metavar=metavar, help=help)


def add_output(p: argparse.ArgumentParser, help: str, *, required: bool = False, metavar: str = "FILE") -> None:
    """-o/--output FILE (or DIR): where the command writes what it makes; a FILE's missing directory is an error
    without --parents (a DIR is created, as an inventory's is)."""
    p.add_argument("-o", "--output", required=required, metavar=metavar, help=help)
    if metavar == "FILE":
        _add_parents(p)


def add_policy_config(
    p: argparse.ArgumentParser, help: str = "CrossGuard policy config JSON (as --policy-pack-config)"
) -> None:
    """--policy-config FILE: the pack's config; inputs.policy_config checks it against every policy's schema."""
    p.add_argument("--policy-config", metavar="FILE", help=help)


def add_inventory_out(p: argparse.ArgumentParser, help: str) -> None:
    """--out DIR: where the Ansible inventory goes."""
    p.add_argument("--out", metavar="DIR", help=help)


def add_node_sources(p: argparse.ArgumentParser) -> None:
    """Where an inventory's node addresses and Slurm files come from: --hosts, --slurm-version, --discover."""
    p.add_argument("--hosts", metavar="FILE", help="YAML mapping of node name -> address, for nodes without one")
    p.add_argument(
        "--slurm-version",
        metavar="YY.MM",
        help="the nodes' Slurm release, for the Slurm files (default 22.05, Debian 12's; 23.11 adds block topology)",
    )
    p.add_argument(
        "--discover",
        action="store_true",
        help="find the pools' VMs with the clouds' Ansible inventory plugins and name them after the plan's nodes",
    )


def add_force(p: argparse.ArgumentParser, help: str = "replace FILE even if aicluster did not write it") -> None:
    """--force: replace an output file aicluster did not write (files.check_secret_target)."""
    p.add_argument("--force", action="store_true", help=help)
