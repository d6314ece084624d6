"""The `aicluster` command: the global options, the parser built from commands.COMMANDS, main() and the one
table that maps exceptions to exit codes (0 success; 1 the program or a check failed; 2 bad input).

Bad input never prints a traceback and never writes a file.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from aicluster import __version__, timings
from aicluster.files import WriteError
from aicluster.spec import SpecError
from aicluster.stackfile import ProjectNotFound, StackNotFound

from . import options
from .commands import COMMANDS
from .console import err, escape, settings
from .exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, OperationFailed, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own exit code for usage errors is 2, as ours
        self.print_usage(sys.stderr)
        err.print(f"aicluster: error: {escape(message)}")
        raise SystemExit(EXIT_BAD_INPUT)


def _add_command(sub: Any, command: ModuleType) -> None:
    """One command's parser: its help, -q, the stack when it takes one, then its own arguments."""
    p = sub.add_parser(command.NAME, help=command.HELP, description=command.HELP)
    options.add_quiet(p, command=True)
    if command.STACK:
        options.add_stack(p)
    # command_parser: the flags the user gave can be read back for the commands the CLI suggests (suggest.py)
    p.set_defaults(func=command.run, command_parser=p)
    command.add_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="aicluster",
        description="Declarative GPU/TPU clusters: validate, plan and preview "
        "stacks offline (no cloud account, no Pulumi CLI).",
    )
    parser.add_argument("--version", action="version", version=f"aicluster {__version__}")
    parser.add_argument("-C", "--project-dir", help="the project directory (default: the nearest with Pulumi.yaml)")
    options.add_quiet(parser)
    parser.add_argument(
        "--timings",
        action="store_true",
        help="print on stderr where the command's time went (startup and imports, catalog, plan, program, "
        "policies, output)",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        _add_command(sub, command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    startup = timings.since_process_start()
    started = time.perf_counter()
    timings.reset()
    parser = build_parser()
    args = parser.parse_args(argv)
    settings.quiet = bool(args.quiet)
    if getattr(args, "collect_cycles", False):
        gc.enable()
    try:
        return _run(args)
    finally:
        if args.timings:
            _print_timings(startup, time.perf_counter() - started)


def _print_timings(startup: float | None, total: float) -> None:
    """One line: `timings: startup and imports 0.412 s, catalog 0.031 s, ..., main 0.802 s` (main: the
    command from start to end, phases and the rest; what follows it is the exit)."""
    parts = [] if startup is None else [f"startup and imports {startup:.3f} s"]
    parts += [f"{name} {seconds:.3f} s" for name, seconds in timings.phases().items()]
    parts.append(f"main {total:.3f} s")
    err.print(f"timings: {', '.join(parts)}", highlight=False)


def _run(args: argparse.Namespace) -> int:
    """The command, and the one table from what it raised to an exit code and a message."""
    try:
        return int(args.func(args))
    except SpecError as exc:
        for line in str(exc).splitlines():
            err.print(f"[red]error:[/] {escape(line)}")
        n = len(exc.problems)
        err.print(f"{n} problem{'s' if n != 1 else ''} found; nothing was written.")
        return EXIT_BAD_INPUT
    except (StackNotFound, ProjectNotFound, UsageError, WriteError, _policy_config_error()) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_BAD_INPUT
    except OSError as exc:  # a path the user gave cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"[red]error:[/] {escape(where + (exc.strerror or str(exc)))}; nothing was written.")
        return EXIT_BAD_INPUT
    except _program_error() as exc:
        err.print(f"[red]error:[/] the Pulumi program failed: {escape(str(exc))}")
        return EXIT_FAILED
    except OperationFailed as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_FAILED


def _policy_config_error() -> type[Exception]:
    """The preview's PolicyConfigError, loaded only once a command has raised (the preview loads the SDK)."""
    from aicluster.preview import PolicyConfigError

    return PolicyConfigError


def _program_error() -> type[Exception]:
    from aicluster.preview import ProgramError

    return ProgramError


def entry() -> None:
    """The `aicluster` console script: main(), then exit.

    A preview imports the provider SDKs: tens of thousands of classes, whose teardown at interpreter exit
    takes longer than some whole commands (about 0.6-0.9 s for a preview). When the command succeeded (exit 0),
    every output it wrote is complete: files are written atomically and closed before main returns, and the
    terminal streams are flushed here. Only then does the process leave without the teardown, after the
    atexit handlers (logging, temporary directories) have run. On any other exit code, on an error being
    reported, or when a stream cannot be flushed (a closed pipe), it exits normally."""
    code = main()
    if code == EXIT_OK and _flushed():
        _after_output()
        engine = sys.modules.get("aicluster.preview.engine")
        if engine is not None:
            engine.stop_call_thread()  # idle since the program ended: the thread its runs kept
        if threading.active_count() == 1:  # a normal exit would wait for other non-daemon threads
            import atexit

            atexit._run_exitfuncs()
            if _flushed():
                os._exit(EXIT_OK)
    sys.exit(code)


def _after_output() -> None:
    """Work that may wait until the command's output is complete: cache the provider SDK modules a preview
    loaded without a cached copy (aicluster/preview/sdkload.py), so that the next preview is faster."""
    sdkload = sys.modules.get("aicluster.preview.sdkload")
    if sdkload is not None:
        sdkload.fill()


def _flushed() -> bool:
    """Flush stdout and stderr; False when either cannot be (the reader went away)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True
