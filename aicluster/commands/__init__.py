"""CLI commands in their own modules (the target shape of the CLI split): each module has NAME, HELP, STACK
(whether it takes the stack argument), add_arguments(parser) and run(args) -> exit code. cli.build_parser adds
them in this order after its own commands; cli.main maps their exceptions to exit codes as for the others.

A command module may import from aicluster.cli (out, err, UsageError, _stack ...): cli imports this package
only inside build_parser, after it has loaded.
"""

from __future__ import annotations

from types import ModuleType

from . import estimate, size

COMMANDS: tuple[ModuleType, ...] = (estimate, size)
