"""The commands the CLI suggests running next, built from what the user typed, so that pasting one runs it.

A suggestion names the stack as it was given (a path stays the path: the stack's name resolves only in its own
project), carries -C, and carries the command's flags that still apply, read back from the parser that parsed them.
Every word is quoted for a POSIX shell (shlex.quote). The scheduler notes take `command` bound to the arguments
(aicluster.schedulers.base.Suggest), so there is one way a suggestion is made.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Collection, Iterator

__all__ = ["command", "line", "repeat"]


def line(*words: str, env: dict[str, str] | None = None) -> str:
    """A command line of `words`, each quoted for a shell; `env` is set for it (NAME=value, the value quoted)."""
    assignments = [f"{name}={shlex.quote(value)}" for name, value in (env or {}).items()]
    return " ".join([*assignments, shlex.join(words)])


def _given(args: argparse.Namespace) -> Iterator[tuple[str, list[str]]]:
    """(flag, its words) for each option of the command that the user gave, in the parser's order."""
    parser = getattr(args, "command_parser", None)
    if not isinstance(parser, argparse.ArgumentParser):
        return
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "quiet", "command_parser", "func"):
            continue
        value = getattr(args, action.dest, None)
        if value is None or value is False or value == action.default:
            continue
        flag = next((s for s in action.option_strings if s.startswith("--")), action.option_strings[0])
        if action.nargs == 0:
            yield flag, [flag]
        elif isinstance(value, list):
            yield flag, [w for v in value for w in (flag, str(v))]
        else:
            yield flag, [flag, str(value)]


def _flags_of(words: Collection[str]) -> set[str]:
    return {w for w in words if w.startswith("-")}


def command(args: argparse.Namespace, name: str, *words: str, keep: Collection[str] = ()) -> str:
    """`aicluster [-C DIR] NAME STACK [the flags of `keep` the user gave] WORDS`, the stack as the user gave it."""
    head = ["aicluster"]
    if getattr(args, "project_dir", None):
        head += ["-C", args.project_dir]
    head.append(name)
    if getattr(args, "stack", None) is not None:
        head.append(args.stack)
    carried = [w for flag, ws in _given(args) if flag in keep and flag not in _flags_of(words) for w in ws]
    return line(*head, *carried, *words)


def repeat(args: argparse.Namespace, *words: str, drop: Collection[str] = ()) -> str:
    """The command the user ran again, with every flag they gave but those of `drop`, and WORDS (whose flags replace
    the given ones: `repeat(args, "--limit", "h1")`)."""
    keep = {flag for flag, _ in _given(args)} - set(drop)
    return command(args, args.command, *words, keep=keep)
