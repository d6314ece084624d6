"""`aicluster`: validate, plan and preview stacks offline; write reports, inventories and manifests; tune nodes.

Exit codes: 0 success; 1 the program or a check failed; 2 bad input (stack file, arguments).
Bad input never prints a traceback and never writes a file.

The package: app.py (the parser, main(), the exception -> exit-code table), a small framework the commands share
(exits.py, console.py, options.py, inputs.py, stack_outputs.py, planned_inventory.py), views/ (what is printed)
and commands/ (one module per command, listed in commands.COMMANDS). `main` and `entry` are app's, loaded on first
use, so that importing a command module never loads the app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import entry, main

__all__ = ["entry", "main"]


def __getattr__(name: str) -> Any:
    """`main` and `entry` (PEP 562): `from aicluster.cli import main` as before the package."""
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
