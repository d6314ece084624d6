"""The CLI's two consoles, its output settings and how warnings are printed.

Every console of the CLI is a SafeConsole: control characters in user-derived text (stack values, waiver
reasons) never reach the terminal. Only this module and views/ import rich; a command prints through `out` and
`err`, escaping user-derived text with `escape`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from aicluster.files import write_atomic
from aicluster.term import SafeConsole, strip_control

from .exits import EXIT_OK

if TYPE_CHECKING:
    from aicluster.plan import ClusterPlan

__all__ = ["emit", "err", "escape", "group_warnings", "out", "print_warnings", "settings", "warn"]

# Logs (CI) are not terminals: give tables room instead of rich's 80-column fallback.
_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
# SafeConsole: control characters in user-derived text (stack values, waiver reasons) never reach the terminal.
# emoji=False: ":fire:" in a waiver reason, or "namespace:key: value" in a message, is printed as written.
out = SafeConsole(highlight=False, soft_wrap=True, emoji=False, width=_WIDTH)
err = SafeConsole(stderr=True, highlight=False, soft_wrap=True, emoji=False, width=_WIDTH)


@dataclass
class _Settings:
    """Global flags that change how output looks; set by main() for each run."""

    quiet: bool = False  # --quiet: warnings are not printed (errors still are)


settings = _Settings()


# A warning about one item of the stack starts with its path: "pools[0] (h100): ..." or "pools[0] (h100) has ...".
_SUBJECT = re.compile(r"([a-z_.]+\[\d+\](?: \([^()]*\))?)(?::\s+|\s+(?=\S))(.+)", re.DOTALL)


def group_warnings(warnings: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Warnings grouped for reading, in their order: (subjects, messages), each stack item named once and the
    items with the same warnings (e.g. several pools without a zone) together. Subject "" : about no one item."""
    by_subject: dict[str, list[str]] = {}
    for w in warnings:
        m = _SUBJECT.fullmatch(w)
        subject, text = (m.group(1), m.group(2)) if m else ("", w)
        texts = by_subject.setdefault(subject, [])
        if text not in texts:
            texts.append(text)
    groups: list[tuple[list[str], list[str]]] = []  # (items, their warnings)
    items_with: dict[tuple[str, ...], list[str]] = {}  # warnings -> the items that have exactly these
    for subject, texts in by_subject.items():
        if not subject:
            groups.append(([], texts))
        elif tuple(texts) in items_with:
            items_with[tuple(texts)].append(subject)
        else:
            items_with[tuple(texts)] = [subject]
            groups.append((items_with[tuple(texts)], texts))
    return [(", ".join(subjects), texts) for subjects, texts in groups]


def print_warnings(plan: ClusterPlan) -> None:
    """The plan's warnings on stderr (see `warn`)."""
    warn(list(plan.warnings))


def warn(warnings: list[str]) -> None:
    """Warnings on stderr: one line for a single warning; else one header and the warnings grouped by the stack
    item they are about. `--quiet` hides them. Every warning the CLI prints goes through here."""
    if settings.quiet or not warnings:
        return
    if len(warnings) == 1:
        err.print(f"[yellow]warning:[/] {escape(warnings[0])}")
        return
    err.print(f"[yellow]warning:[/] {len(warnings)} warnings [dim](--quiet hides them)[/]")
    for subject, texts in group_warnings(warnings):
        if not subject:
            for text in texts:
                err.print(f"  - {escape(text)}")
        elif len(texts) == 1:
            err.print(f"  - {escape(subject)}: {escape(texts[0])}")
        else:
            err.print(f"  - {escape(subject)}:")
            for text in texts:
                err.print(f"      {escape(text)}")


def emit(text: str, output: str | None, parents: bool = False) -> int:
    """Write a command's text to `output` (atomically; its directory must exist unless `parents`, --parents) or to
    stdout (without control characters: the text carries user-derived values, and the stdout may be a terminal)."""
    if output:
        write_atomic(Path(output), text, flag="-o", parents=parents)
        out.print(f"wrote {escape(output)}")
    else:
        sys.stdout.write(strip_control(text))
    return EXIT_OK
