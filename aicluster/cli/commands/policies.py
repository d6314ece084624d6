"""`aicluster policies`: the policy pack's policies, with their enforcement under a policy config."""

from __future__ import annotations

import argparse

from .. import options
from ..console import out
from ..exits import EXIT_OK
from ..inputs import policy_config
from ..views.policy import policies_table

NAME = "policies"
HELP = "list the policy pack's policies"
STACK = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_policy_config(p, "show enforcement levels under this policy config")


def run(args: argparse.Namespace) -> int:
    from aicluster.preview.policy import describe, resolve_config
    from policies import POLICIES

    levels, _ = resolve_config(policy_config(args))
    out.print(policies_table([describe(p, levels[p.name]) for p in POLICIES]))
    return EXIT_OK
