"""The repair program's state: per node, when it was repaired (the repeat-offender window), the repair in flight,
and why it is held. One JSON file in the state directory, written atomically (a temporary file, fsync, rename)
under an exclusive lock that one run holds from its first read to its last write."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATE_FILE = "state.json"
LOCK_FILE = "lock"


class Busy(Exception):
    """Another run holds the lock."""


@dataclass
class OpenRepair:
    action: str
    since: float
    code: str  # the reason's code when the repair began
    reason: str  # the whole reason it replaced (restored if the repair cannot start)


@dataclass
class Held:
    since: float
    why: str


@dataclass
class NodeState:
    history: list[float] = field(default_factory=list)  # epoch seconds of each repair begun (or attempted)
    open: OpenRepair | None = None
    held: Held | None = None


@dataclass
class State:
    nodes: dict[str, NodeState] = field(default_factory=dict)

    def node(self, name: str) -> NodeState:
        return self.nodes.setdefault(name, NodeState())

    def to_json(self) -> str:
        kept = {n: asdict(s) for n, s in sorted(self.nodes.items()) if s.history or s.open or s.held}
        return json.dumps({"version": 1, "nodes": kept}, indent=1, sort_keys=True) + "\n"


def _node(raw: Any) -> NodeState:
    if not isinstance(raw, dict):
        return NodeState()
    history = [float(t) for t in raw.get("history") or [] if isinstance(t, int | float)]
    o, h = raw.get("open"), raw.get("held")
    opened = OpenRepair(str(o["action"]), float(o["since"]), str(o["code"]), str(o.get("reason", ""))) if isinstance(
        o, dict) and {"action", "since", "code"} <= set(o) else None  # fmt: skip
    held = Held(float(h["since"]), str(h["why"])) if isinstance(h, dict) and {"since", "why"} <= set(h) else None
    return NodeState(history, opened, held)


def read(state_dir: Path) -> tuple[State, str]:
    """The state, and a problem to log when the file was unreadable (then it starts empty: Slurm's view of the
    nodes in repair still counts for the circuit breaker)."""
    path = state_dir / STATE_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return State(), ""
    except (OSError, ValueError) as exc:
        return State(), f"{path}: unreadable ({exc}); starting from Slurm's view alone"
    nodes = raw.get("nodes") if isinstance(raw, dict) else None
    if not isinstance(nodes, dict):
        return State(), f"{path}: not a repair state file; starting from Slurm's view alone"
    return State({str(k): _node(v) for k, v in nodes.items()}), ""


def write_atomic(path: Path, text: str, mode: int = 0o600) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """The state directory's lock, taken without waiting (a run every minute: the next one retries)."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with (state_dir / LOCK_FILE).open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"{state_dir / LOCK_FILE} is held by another run") from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
