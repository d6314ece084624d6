"""Wall time per phase of one command: `aicluster --timings ...` prints them, benchmarks/preview_scale.py reads them.

Phases are what a slow command's time is made of (catalog, plan, program, policies, output); `startup` is the
time from the process's start to main(): the interpreter and the imports. Recording costs two clock reads per
phase, so it is always on; the table is printed only with --timings.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

_phases: dict[str, float] = {}


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Add the wall time of the block to phase `name` (a phase entered twice adds up)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        _phases[name] = _phases.get(name, 0.0) + time.perf_counter() - start


def phases() -> dict[str, float]:
    """Seconds per phase, in the order the phases first ran."""
    return dict(_phases)


def reset() -> None:
    _phases.clear()


def since_process_start() -> float | None:
    """Seconds since this process started (Linux: /proc), or None where that cannot be read."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            # field 22 (starttime, clock ticks after boot) follows the command name, which may hold spaces
            started = int(fh.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, uptime - started)
