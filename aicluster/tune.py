"""`aicluster tune`: run the playbook over the inventory through ansible-runner, and keep score per host.

Ansible's own linear strategy keeps going on the other hosts when one fails, so one bad node never stops
the rest; this module only watches the events (for the live hosts x tasks display) and reads the final
stats into a per-host summary, the exit code and the hint that retries just the failed hosts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# ansible-runner event -> the counter it moves (runner_on_ok with changed=true counts as changed)
_COUNTERS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}


@dataclass
class HostScore:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    task: str = ""  # the task it is on now (or ended on)
    message: str = ""  # the last failure's message

    @property
    def bad(self) -> bool:
        return self.failed > 0 or self.unreachable > 0


@dataclass
class TuneResult:
    status: str  # ansible-runner's: successful, failed, timeout, canceled
    rc: int
    hosts: dict[str, HostScore]
    artifacts: Path
    tasks: int = 0
    seconds: float = 0.0
    failed_hosts: list[str] = field(default_factory=list)


class Scoreboard:
    """Turns ansible-runner events into per-host counters; `on_change` is called after each one."""

    def __init__(self, on_change: Callable[[Scoreboard], None] | None = None) -> None:
        self.hosts: dict[str, HostScore] = {}
        self.task = ""
        self.tasks = 0
        self.on_change = on_change

    def __call__(self, event: Mapping[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind == "playbook_on_task_start":
            self.task = str(data.get("task", ""))
            self.tasks += 1
        host = data.get("host")
        if host and kind in ("runner_on_start", *_COUNTERS):
            score = self.hosts.setdefault(str(host), HostScore())
            score.task = str(data.get("task", self.task))
            counter = _COUNTERS.get(kind)
            if counter == "ok" and (data.get("res") or {}).get("changed"):
                counter = "changed"
            if counter is not None:
                setattr(score, counter, getattr(score, counter) + 1)
            if kind in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
                res = data.get("res") or {}
                score.message = str(res.get("msg") or res.get("stderr") or "")[:300]
            elif kind == "runner_on_failed":
                score.failed -= 1  # ignore_errors: not a failure of the host
        if self.on_change is not None:
            self.on_change(self)
        return True  # keep the event in the artifacts


def run(
    playbook: Path,
    inventory: Path,
    work: Path,
    *,
    roles_path: Path,
    limit: str | None = None,
    tags: str | None = None,
    check: bool = False,
    extravars: Mapping[str, Any] | None = None,
    envvars: Mapping[str, str] | None = None,
    on_change: Callable[[Scoreboard], None] | None = None,
) -> TuneResult:
    import time

    import ansible_runner

    board = Scoreboard(on_change)
    # ansible-runner runs `ansible-playbook` from PATH: the one installed next to this Python.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {"PATH": path, "ANSIBLE_ROLES_PATH": str(roles_path), "ANSIBLE_HOST_KEY_CHECKING": "False"}
    # Ansible's own configuration from the caller's environment applies (ANSIBLE_PRIVATE_KEY_FILE, ...).
    env.update({k: v for k, v in os.environ.items() if k.startswith("ANSIBLE_") and k not in env})
    env.update(envvars or {})
    cmdline = ["--check", "--diff"] if check else []
    work.mkdir(parents=True, exist_ok=True, mode=0o700)
    start = time.perf_counter()
    r = ansible_runner.run(
        private_data_dir=str(work),
        playbook=str(playbook.resolve()),
        inventory=str(inventory.resolve()),
        limit=limit,
        tags=tags,
        cmdline=" ".join(cmdline) or None,
        extravars=dict(extravars or {}),
        envvars=env,
        event_handler=board,
        quiet=True,
        rotate_artifacts=10,
        suppress_env_files=True,
    )
    seconds = time.perf_counter() - start
    stats = r.stats or {}
    hosts = board.hosts
    # The final stats are the truth (they count rescued and ignored errors as Ansible does).
    for counter, key in (("ok", "ok"), ("changed", "changed"), ("failed", "failures"), ("unreachable", "dark")):
        for host, n in (stats.get(key) or {}).items():
            setattr(hosts.setdefault(host, HostScore()), counter, int(n))
    for host, n in (stats.get("skipped") or {}).items():
        hosts.setdefault(host, HostScore()).skipped = int(n)
    failed = sorted(h for h, s in hosts.items() if s.bad)
    return TuneResult(
        status=str(r.status),
        rc=int(r.rc if r.rc is not None else 1),
        hosts=dict(sorted(hosts.items())),
        artifacts=Path(r.config.artifact_dir),
        tasks=board.tasks,
        seconds=seconds,
        failed_hosts=failed,
    )
