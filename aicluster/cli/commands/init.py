"""`aicluster init [DIR]`: write a new project, as `pulumi new` would, that uses the installed aicluster."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import suggest
from ..console import escape, out
from ..exits import EXIT_OK, UsageError

NAME = "init"
HELP = "write a new project that uses the installed aicluster, as `pulumi new` would"
STACK = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("directory", nargs="?", default=".", metavar="DIR", help="where to write it (default: here)")


def run(args: argparse.Namespace) -> int:
    from aicluster.files import WriteError, write_atomic
    from aicluster.scaffold import EXAMPLE_STACK, project_files, project_name

    root = Path(args.directory)
    if root.exists() and not root.is_dir():
        raise UsageError(f"{args.directory}: not a directory; give a new or empty directory")
    files = project_files(project_name(root))
    taken = [name for name in ("Pulumi.yaml", *files) if (root / name).exists() or (root / name).is_symlink()]
    if taken:
        raise UsageError(
            f"{args.directory}: already holds {', '.join(dict.fromkeys(taken))}; init writes a new project and "
            "overwrites nothing: give a new or empty directory"
        )
    made = [d for d in (root, *{(root / name).parent for name in files}) if not d.exists()]
    written: list[Path] = []
    try:
        for name, text in files.items():
            write_atomic(root / name, text)
            written.append(root / name)
    except WriteError:
        for path in written:  # nothing half-made: the files written so far, then the directories made for them
            path.unlink(missing_ok=True)
        for directory in sorted(made, key=lambda d: len(d.parts), reverse=True):
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()
        raise
    where = escape(args.directory)
    out.print(f"wrote a new project in {where}: {escape(', '.join(files))}")
    cd = "" if args.directory == "." else f"{suggest.line('cd', args.directory)} && "
    out.print(f"next: {escape(cd + suggest.line('aicluster', 'preview', EXAMPLE_STACK))}", highlight=False)
    return EXIT_OK
