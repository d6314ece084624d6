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

from aicluster.burst.cloud import Group, open_group
from aicluster.burst.config import AwsNodeSet, AzureNodeSet, BurstConfig, ConfigError, GcpNodeSet, config_path, load
from aicluster.burst.slurm import Scontrol, Slurm, SlurmError

log = logging.getLogger("aicluster.burst")
LOCK_TIMEOUT_S = 120.0

AnyNodeSet = AwsNodeSet | GcpNodeSet | AzureNodeSet
Opener = Callable[[AnyNodeSet, str], Group]


@dataclass
class Plan:
    """Requested node names grouped by their node set (index into config.node_sets), and the unknown ones."""

    by_set: dict[int, list[str]]
    unknown: list[str]


def group_nodes(config: BurstConfig, slurm: Slurm, names: Sequence[str]) -> Plan:
    """Map each node name to the one node set whose hostlist holds it, keeping the request's order."""
    owner: dict[str, int] = {}
    for i, s in enumerate(config.node_sets):
        for n in slurm.hostnames(s.nodes):
            owner.setdefault(n, i)
    by_set: dict[int, list[str]] = {}
    unknown = []
    for n in dict.fromkeys(names):
        if n in owner:
            by_set.setdefault(owner[n], []).append(n)
        else:
            unknown.append(n)
    return Plan(by_set, unknown)


def setup_logging(config: BurstConfig | None, program: str) -> None:
    handler: logging.Handler
    if config is not None and config.log_file:
        Path(config.log_file).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(config.log_file)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"%(asctime)s {program}[{os.getpid()}] %(levelname)s %(message)s"))
    root = logging.getLogger("aicluster.burst")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    root.propagate = False


@contextlib.contextmanager
def group_lock(config: BurstConfig, key: str, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """One resume/suspend/sync at a time per group (slurmctld may run several programs at once)."""
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


def default_opener(node_set: AnyNodeSet, cluster: str) -> Group:
    return open_group(node_set, cluster)


def scontrol_for(config: BurstConfig | None) -> Slurm:
    return Scontrol(config.scontrol if config else "scontrol")


__all__ = [
    "ConfigError",
    "Plan",
    "SlurmError",
    "default_opener",
    "group_lock",
    "group_nodes",
    "load_config",
    "log",
    "parser",
    "scontrol_for",
    "setup_logging",
]
