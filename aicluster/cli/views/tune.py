"""An Ansible run's hosts, as `tune` prints them while it runs and when it ends."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rich.live import Live
from rich.markup import escape
from rich.table import Table

from ..console import out


def score_table(hosts: Mapping[str, Any], title: str, *, running: bool = False) -> Table:
    t = Table(title=title, title_justify="left")
    for col, just in (
        ("host", "left"),
        ("ok", "right"),
        ("changed", "right"),
        ("failed", "right"),
        ("unreachable", "right"),
        ("skipped", "right"),
        ("task now" if running else "last failure", "left"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for host, s in hosts.items():
        style = "red" if s.bad else None
        t.add_row(
            host,
            str(s.ok),
            str(s.changed),
            str(s.failed),
            str(s.unreachable),
            str(s.skipped),
            escape(s.task if running else (s.message or "")),
            style=style,
        )
    return t


@contextlib.contextmanager
def scoreboard(stack: str) -> Iterator[Callable[[Any], None]]:
    """What to call with each change of an Ansible run's scoreboard (aicluster.tune.Scoreboard): on a terminal, a
    live table of the hosts; elsewhere (CI), a line per play and per host that drops out."""
    printed = 0

    def lines(board: Any) -> None:
        nonlocal printed
        for line in board.progress[printed:]:
            out.print(escape(line), soft_wrap=True)
        printed = len(board.progress)

    with Live(console=out, transient=True, auto_refresh=False) as live:

        def show(board: Any) -> None:
            if not out.is_terminal:
                lines(board)
                return
            title = f"tuning {escape(stack)}: {escape(board.task)}"
            live.update(score_table(board.hosts, title, running=True), refresh=True)

        yield show
