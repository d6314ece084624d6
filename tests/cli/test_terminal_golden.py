"""The text `aicluster plan` and every command's `--help` print, byte for byte against tests/golden/terminal/.

With the preview's printed text (tests/test_preview_golden.py, captured in the same run as its JSON), these pin
what a user reads, so that moving the CLI's code changes none of it. Regenerate when a change is meant to
change the text: `AICLUSTER_UPDATE_GOLDENS=1 .venv/bin/pytest tests/cli/test_terminal_golden.py`, and review
the diff in the same commit.
"""

from __future__ import annotations

import argparse

import pytest

from tests import terminal
from tests.conftest import ROOT, STACKS


def help_commands() -> list[str]:
    """Every command in `aicluster --help` order, each followed by its own subcommands (`estimate collective`)."""
    from aicluster.cli.app import build_parser

    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    names = []
    for name, parser in top.choices.items():
        names.append(name)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                names += [f"{name} {sub}" for sub in action.choices]
    return names


HELP = help_commands()


@pytest.mark.parametrize("stack", STACKS)
def test_plan_prints_the_golden_text(stack: str) -> None:
    code, text = terminal.run(["-C", str(ROOT), "plan", stack])
    assert code == 0, text
    terminal.check("plan", stack, text)


@pytest.mark.parametrize("command", ["", *HELP], ids=["aicluster", *HELP])
def test_help_prints_the_golden_text(command: str) -> None:
    code, text = terminal.run([*command.split(), "--help"])
    assert code == 0, text
    terminal.check("help", command.replace(" ", "-") or "aicluster", text)


def test_every_golden_has_its_test() -> None:
    """A golden no test compares (a stack or command removed) is dead weight that reads as coverage."""
    if terminal.UPDATE:
        pytest.skip("regenerating the goldens")
    assert sorted(p.stem for p in (terminal.TERMINAL / "plan").glob("*.txt")) == STACKS
    want = sorted(["aicluster", *(c.replace(" ", "-") for c in HELP)])
    assert sorted(p.stem for p in (terminal.TERMINAL / "help").glob("*.txt")) == want
