"""The CLI's commands, one module each, listed once in `aicluster --help` order.

Each module has NAME, HELP, STACK (whether it takes the stack argument), add_arguments(parser) and
run(args) -> exit code. It imports the framework (aicluster.cli.exits, console, options, inputs, views, ...) and
the core, never the CLI's app or package root; the core's heavier layers (preview, report, inventory, tune, the
Pulumi SDK) load inside run(). Adding a command is one module here plus one line in COMMANDS.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    acceptance,
    diff,
    estimate,
    inventory,
    kubeconfig,
    plan,
    policies,
    policy_config,
    preview,
    report,
    schema,
    size,
    stacks,
    tune,
    validate,
)

COMMANDS: tuple[ModuleType, ...] = (
    validate,
    plan,
    preview,
    report,
    diff,
    policies,
    policy_config,
    inventory,
    tune,
    kubeconfig,
    acceptance,
    estimate,
    size,
    schema,
    stacks,
)
