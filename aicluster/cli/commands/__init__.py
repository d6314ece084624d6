"""The CLI's commands, one module each, listed once in `aicluster --help` order.

Each module has NAME, HELP, STACK (whether it takes the stack argument), add_arguments(parser) and
run(args) -> exit code. It imports the framework (aicluster.cli.exits, console, options, inputs, views, ...) and
the core, never the CLI's app or package root; the core's heavier layers (preview, report, inventory, tune, the
Pulumi SDK) load inside run(). Adding a command is one module here plus its name in NAMES.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# The commands' module stems, once, in `aicluster --help` order: adding a command is its module plus one name here.
NAMES: tuple[str, ...] = (
    "init",
    "validate",
    "plan",
    "preview",
    "report",
    "diff",
    "policies",
    "policy_config",
    "inventory",
    "tune",
    "monitoring",
    "kubeconfig",
    "acceptance",
    "estimate",
    "size",
    "schema",
    "stacks",
)
COMMANDS: tuple[ModuleType, ...] = tuple(importlib.import_module(f"{__name__}.{name}") for name in NAMES)
