"""What the `aicluster` command prints, captured in this process for the terminal goldens.

The goldens pin the text a user reads (tables, notes, warnings, `--help`) so that a change meant to move code
(the CLI split, issue 26) can show it changed nothing: tests/golden/terminal/{plan,preview,help}/. The text is
taken as a log would get it: no terminal, 160 columns (the CLI's width when stdout is not a terminal), argparse's
help at 100 columns; what differs from run to run (the preview's own seconds, a scratch path) is masked.

When a change is MEANT to change what the CLI prints, regenerate and review the diff in the same commit:

    AICLUSTER_UPDATE_GOLDENS=1 .venv/bin/pytest tests/test_preview_golden.py tests/cli/test_terminal_golden.py
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.conftest import ROOT

TERMINAL = ROOT / "tests" / "golden" / "terminal"
UPDATE = os.environ.get("AICLUSTER_UPDATE_GOLDENS") == "1"
WIDTH = 160  # the CLI's width when its output is a log, not a terminal
HELP_COLUMNS = "100"  # argparse wraps --help to $COLUMNS

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PREVIEW_SECONDS = re.compile(r"offline preview: \d+\.\d+ s")


@contextlib.contextmanager
def _consoles_at(width: int) -> Iterator[None]:
    """The CLI's two consoles at `width` columns for the duration."""
    from aicluster.cli.console import err, out

    saved = out.width, err.width
    out.width = err.width = width
    try:
        yield
    finally:
        out.width, err.width = saved


def run(argv: Sequence[str], *, masks: Sequence[tuple[str, str]] = ()) -> tuple[int, str]:
    """Run `aicluster ARGV` in this process; its exit code and what it printed (stdout, then stderr under a
    `--- stderr` line when there is any), masked: each (text, label) of `masks` and the preview's own seconds."""
    from aicluster.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        with _consoles_at(WIDTH), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # --help
                code = int(exc.code or 0)
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    text = stdout.getvalue() + (f"--- stderr\n{stderr.getvalue()}" if stderr.getvalue() else "")
    text = _PREVIEW_SECONDS.sub("offline preview: <seconds> s", _ANSI.sub("", text))
    for value, label in masks:
        text = text.replace(value, label)
    return code, text


def check(kind: str, name: str, text: str) -> None:
    """Compare `text` with tests/golden/terminal/KIND/NAME.txt (or write it, under AICLUSTER_UPDATE_GOLDENS=1)."""
    golden = TERMINAL / kind / f"{name}.txt"
    if UPDATE:
        write(kind, name, text)
        return
    assert golden.exists(), f"no golden {golden.relative_to(ROOT)}; regenerate with AICLUSTER_UPDATE_GOLDENS=1"
    want = golden.read_text(encoding="utf-8")
    if text != want:
        got_lines, want_lines = text.splitlines(), want.splitlines()
        line = next(
            (i for i, (a, b) in enumerate(zip(got_lines, want_lines, strict=False)) if a != b),
            min(len(got_lines), len(want_lines)),
        )
        pytest.fail(
            f"`aicluster {kind} {name}` printed text that differs from {golden.relative_to(ROOT)} at line {line + 1}:\n"
            f"  golden:  {want_lines[line] if line < len(want_lines) else '<end of text>'}\n"
            f"  printed: {got_lines[line] if line < len(got_lines) else '<end of text>'}\n"
            "if the change is intended, regenerate with AICLUSTER_UPDATE_GOLDENS=1 and review the diff"
        )


def write(kind: str, name: str, text: str) -> Path:
    golden = TERMINAL / kind / f"{name}.txt"
    golden.parent.mkdir(parents=True, exist_ok=True)
    golden.write_text(text, encoding="utf-8")
    return golden
