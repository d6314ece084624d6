"""What the three programs share: argument parsing, logging, node -> group mapping and per-group locks."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aicluster.burst.cloud import CloudError, Group, open_group
from aicluster.burst.config import AwsNodeSet, AzureNodeSet, BurstConfig, ConfigError, GcpNodeSet, config_path, load
from aicluster.burst.slurm import Scontrol, Slurm, SlurmError

log = logging.getLogger("aicluster.burst")
# one log record at most this long: a list of 9,000 node names once made a 600 KB line
MAX_LOG_LINE = 4000

AnyNodeSet = AwsNodeSet | GcpNodeSet | AzureNodeSet
Opener = Callable[[AnyNodeSet, BurstConfig], Group]


@dataclass
class Plan:
    """Requested node names grouped by their node set (index into config.node_sets), the unknown ones, and the
    node sets whose hostlist scontrol refused (index -> why): their nodes count as unknown, the others go on."""

    by_set: dict[int, list[str]]
    unknown: list[str]
    broken: dict[int, str]


def group_nodes(config: BurstConfig, slurm: Slurm, names: Sequence[str]) -> Plan:
    """Map each node name to the one node set whose hostlist holds it, keeping the request's order."""
    owner: dict[str, int] = {}
    broken: dict[int, str] = {}
    for i, s in enumerate(config.node_sets):
        try:
            for n in slurm.hostnames(s.nodes):
                owner.setdefault(n, i)
        except SlurmError as exc:
            log.error("node_sets[%d] (group %s): %s", i, s.group, exc)
            broken[i] = str(exc)
    by_set: dict[int, list[str]] = {}
    unknown = []
    for n in dict.fromkeys(names):
        if n in owner:
            by_set.setdefault(owner[n], []).append(n)
        else:
            unknown.append(n)
    return Plan(by_set, unknown, broken)


def nodes_brief(nodes: Sequence[str], most: int = 20) -> str:
    """A node list for a log line: all of a short one, the first `most` and a count of a long one."""
    if len(nodes) <= most:
        return ",".join(nodes)
    return f"{','.join(nodes[:most])},... ({len(nodes)} nodes)"


class SafeFormatter(logging.Formatter):
    """Log lines a reader can trust: text from outside (the resume file's partition and features, a cloud's error,
    a node's reason) cannot forge a line with a newline or reach the terminal with ESC; each record is one line of
    at most MAX_LOG_LINE characters."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message += " | " + self.formatException(record.exc_info)
        message = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in message)
        if len(message) > MAX_LOG_LINE:
            message = message[:MAX_LOG_LINE] + f"... ({len(message) - MAX_LOG_LINE} characters cut)"
        return super().format(logging.makeLogRecord({**record.__dict__, "msg": message, "args": None,
                                                     "exc_info": None, "exc_text": None}))  # fmt: skip


class _Logged(Protocol):
    @property
    def log_file(self) -> str | None: ...


def setup_logging(
    config: _Logged | None, program: str, loggers: Sequence[str] = ("aicluster.burst",), *, echo: bool = False
) -> None:
    """Log to config.log_file; when it cannot be opened (its directory missing and not creatable, a directory, no
    permission) log to stderr and say why: a log file is no reason to leave nodes and jobs unhandled. `echo`: log to
    stderr as well as to the file (a person running the program by hand, e.g. `aicluster-repair --dry-run`)."""
    stderr = logging.StreamHandler(sys.stderr)
    handlers: list[logging.Handler] = [stderr]
    problem = ""
    if config is not None and config.log_file:
        try:
            Path(config.log_file).parent.mkdir(parents=True, exist_ok=True)
            handlers = [logging.FileHandler(config.log_file), *([stderr] if echo else [])]
        except OSError as exc:
            problem = f"log_file {config.log_file}: {exc.strerror or exc}; logging to stderr"
    for handler in handlers:
        handler.setFormatter(SafeFormatter(f"%(asctime)s {program}[{os.getpid()}] %(levelname)s %(message)s"))
    for name in loggers:
        lg = logging.getLogger(name)
        lg.handlers[:] = handlers
        lg.setLevel(logging.INFO)
        lg.propagate = False
    if problem:
        log.warning("%s", problem)


@contextlib.contextmanager
def group_lock(config: BurstConfig, key: str, timeout_s: float | None = None) -> Iterator[None]:
    """One resume/suspend/sync at a time per group (slurmctld may run several programs at once); waits at most
    config.lock_wait_s for it, then raises TimeoutError (an OSError: the state directory unusable)."""
    timeout_s = config.lock_wait_s if timeout_s is None else timeout_s
    d = Path(config.state_dir)
    d.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
    with (d / f"{safe}.lock").open("a") as f:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"lock {d / safe}.lock held for over {timeout_s:.0f} s") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def parser(prog: str, description: str, nodes: bool) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--config", help="the bursting configuration (default: aicluster-burst.json beside SLURM_CONF)")
    if nodes:
        p.add_argument("nodes", help="Slurm hostlist of the nodes (as slurmctld passes it)")
    return p


def load_config(args: argparse.Namespace) -> BurstConfig:
    return load(config_path(args.config))


def default_opener(node_set: AnyNodeSet, config: BurstConfig) -> Group:
    return open_group(node_set, config.cluster, config.api_timeout_s, config.launch_wait_s)


def group_key(node_set: AnyNodeSet) -> str:
    return f"{node_set.provider}-{node_set.region}-{node_set.group}"


def unexpected(exc: BaseException) -> bool:
    """An error no cloud, Slurm or file system explains: its traceback goes to the log (as one line)."""
    return not isinstance(exc, CloudError | SlurmError | OSError)


def failure(exc: BaseException) -> str:
    """An exception as a DOWN reason and log text: the cloud's own words for a CloudError, the type otherwise."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, CloudError | SlurmError | TimeoutError):
        return text
    return f"{type(exc).__name__}: {text}"


def scontrol_for(config: BurstConfig | None) -> Slurm:
    return Scontrol(config.scontrol if config else "scontrol")


__all__ = [
    "ConfigError",
    "Plan",
    "SlurmError",
    "default_opener",
    "failure",
    "group_key",
    "group_lock",
    "group_nodes",
    "load_config",
    "log",
    "nodes_brief",
    "parser",
    "scontrol_for",
    "setup_logging",
    "unexpected",
]
