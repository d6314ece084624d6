"""`aicluster tune`: run the playbook over the inventory through ansible-runner, and keep score per host.

Ansible's own linear strategy keeps going on the other hosts when one fails, so one bad node never stops
the rest; this module only watches the events (for the live hosts x tasks display) and reads the final
stats into a per-host summary, the exit code and the hint that retries just the failed hosts.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aicluster.plan.registry import SCHEDULERS
from aicluster.schedulers.base import Suggest, placeholder

if TYPE_CHECKING:
    from aicluster.plan import ClusterPlan

# ansible-runner event -> the counter it moves (runner_on_ok with changed=true counts as changed)
_COUNTERS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}


def scheduler_notes(plan: ClusterPlan, stack: str, suggest: Suggest = placeholder) -> list[str]:
    """What `tune` says instead of running the playbook where the stack's scheduler owns its nodes (Kubernetes: who
    does the roles' work there, and how to test the fabric instead, in commands `suggest` writes). Empty: tune runs
    the playbook."""
    return SCHEDULERS[plan.scheduler].tune_notes(plan, stack, suggest)


@dataclass
class HostScore:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    task: str = ""  # the task it is on now (or ended on)
    message: str = ""  # the last failure's message
    reached: int = 0  # tasks that ran on the host itself (not on the controller, not delegated elsewhere)

    @property
    def bad(self) -> bool:
        return self.failed > 0 or self.unreachable > 0

    @property
    def ran(self) -> bool:
        """A task ran on the host (skipped ones do not count)."""
        return self.ok + self.changed + self.failed + self.unreachable > 0


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
    """Turns ansible-runner events into per-host counters; `on_change` is called after each one. `progress` holds
    one line per play started and per host that drops out (failed or unreachable), in order, for a display
    without a terminal (CI) that prints lines as they come rather than redrawing a table."""

    def __init__(self, on_change: Callable[[Scoreboard], None] | None = None) -> None:
        self.hosts: dict[str, HostScore] = {}
        self.task = ""
        self.tasks = 0
        self.on_change = on_change
        self.progress: list[str] = []

    def __call__(self, event: Mapping[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind == "playbook_on_task_start":
            self.task = str(data.get("task", ""))
            self.tasks += 1
        elif kind == "playbook_on_play_start":
            self.progress.append(f"play: {data.get('play', '')}")
        host = data.get("host")
        if host and kind in ("runner_on_start", *_COUNTERS):
            score = self.hosts.setdefault(str(host), HostScore())
            score.task = str(data.get("task", self.task))
            counter = _COUNTERS.get(kind)
            if counter == "ok" and (data.get("res") or {}).get("changed"):
                counter = "changed"
            if counter is not None:
                setattr(score, counter, getattr(score, counter) + 1)
            if kind in ("runner_on_ok", "runner_on_failed") and reaches_host(data):
                score.reached += 1
            if kind in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
                res = data.get("res") or {}
                score.message = str(res.get("msg") or res.get("stderr") or "")[:300]
                what = "unreachable" if kind == "runner_on_unreachable" else "failed"
                self.progress.append(
                    f"{host}: {what} at {score.task}: {score.message.splitlines()[0] if score.message else ''}"
                )
            elif kind == "runner_on_failed":
                score.failed -= 1  # ignore_errors: not a failure of the host
        if self.on_change is not None:
            self.on_change(self)
        return True  # keep the event in the artifacts


@functools.cache
def _action_loader() -> Any:
    from ansible.plugins.loader import action_loader, init_plugin_loader  # type: ignore[import-untyped]

    init_plugin_loader()  # once a process: the collection finder can be set up only once
    return action_loader


@functools.cache
def _requires_connection(action: str) -> bool:
    """Whether Ansible connects to the host for a task of this action. Action plugins that run on the controller
    alone (assert, debug, fail, set_fact, ...) say so with `_requires_connection = False`; an action without a
    plugin of its own is a module, which runs on the host."""
    action_loader = _action_loader()
    if not action_loader.has_plugin(action):
        return True
    return bool(getattr(action_loader.get(action, class_only=True), "_requires_connection", True))


def reaches_host(data: Mapping[str, Any]) -> bool:
    """Whether the task of a runner_on_ok/runner_on_failed event ran on its host: not an action that stays on the
    controller, and not delegated to another host."""
    res = data.get("res")
    # Ansible adds _ansible_delegated_vars to a delegated task's result (the delegate's ansible_host and connection)
    delegated = res.get("_ansible_delegated_vars") if isinstance(res, Mapping) else None
    if isinstance(delegated, Mapping) and delegated.get("ansible_host") not in (data.get("remote_addr"), None):
        return False
    action = str(data.get("resolved_action") or data.get("task_action") or "")
    return not action or _requires_connection(action)


class TuneError(Exception):
    """The playbook cannot be listed over the inventory (a syntax error, a missing role)."""


@dataclass(frozen=True)
class Targets:
    """What `ansible-playbook --list-hosts --list-tags` says before anything runs."""

    hosts: list[str]  # the hosts the plays target under --limit, sorted
    tags: list[str]  # every tag of the plays, roles and tasks


# Tags Ansible itself understands in --tags (https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_tags.html)
SPECIAL_TAGS = ("all", "tagged", "untagged", "always", "never")


HOST_KEY_CHECKING = "ANSIBLE_HOST_KEY_CHECKING"


def users_host_key_checking() -> tuple[str, bool] | None:
    """Where and how the caller set Ansible's host_key_checking: (`ANSIBLE_HOST_KEY_CHECKING=...` or the
    ansible.cfg that sets it, whether it is on as Ansible reads it); None when it is Ansible's default. The run reads
    the same configuration: ansible-runner starts ansible-playbook in this process's directory and environment."""
    from ansible.module_utils.parsing.convert_bool import boolean  # type: ignore[import-untyped]

    value = os.environ.get(HOST_KEY_CHECKING)
    if value is not None:
        return f"{HOST_KEY_CHECKING}={value}", boolean(value, strict=False)
    from ansible.config.manager import ConfigManager  # type: ignore[import-untyped]

    try:
        on, origin = ConfigManager().get_config_value_and_origin("HOST_KEY_CHECKING")
    except Exception:  # a broken ansible.cfg: ansible-playbook itself says what is wrong with it
        return None
    return None if origin == "default" else (f"host_key_checking in {origin}", bool(on))


def _env(roles_path: Path, envvars: Mapping[str, str] | None, host_key_checking: bool = False) -> dict[str, str]:
    # ansible-runner runs `ansible-playbook` from PATH: the one installed next to this Python.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {"PATH": path, "ANSIBLE_ROLES_PATH": str(roles_path)}
    # Ansible's own configuration from the caller's environment applies (ANSIBLE_PRIVATE_KEY_FILE, ...).
    env.update({k: v for k, v in os.environ.items() if k.startswith("ANSIBLE_") and k not in env})
    # Host key checking: the caller's setting (environment or ansible.cfg), whatever it is, is never overridden.
    # Unset, it is on with --host-key-checking and off otherwise: a first `tune` meets freshly provisioned hosts
    # whose keys no known_hosts holds yet, where Ansible's default would stop at every host (README: Node tuning).
    # It always goes into the environment: ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False where it is missing,
    # which would override an ansible.cfg that turns checking on.
    if HOST_KEY_CHECKING not in env:
        setting = users_host_key_checking()
        on = setting[1] if setting is not None else host_key_checking
        env[HOST_KEY_CHECKING] = "True" if on else "False"
    env.update(envvars or {})
    return env


def parse_listing(text: str) -> Targets:
    """The hosts and tags in `ansible-playbook --list-hosts --list-tags` output."""
    hosts: dict[str, None] = {}
    tags: set[str] = set()
    in_hosts = False
    for line in text.splitlines():
        s = line.strip()
        if re.fullmatch(r"hosts \(\d+\):", s):
            in_hosts = True
            continue
        found = re.findall(r"TAGS: \[([^\]]*)\]", s)
        if found or s.startswith(("play #", "pattern:", "playbook:")) or not s:
            in_hosts = False
            for part in found:
                tags.update(t.strip() for t in part.split(",") if t.strip())
            continue
        if in_hosts:
            hosts[s] = None
    return Targets(sorted(hosts), sorted(tags))


def targets(
    playbook: Path,
    inventory: Path,
    *,
    roles_path: Path,
    limit: str | None = None,
    envvars: Mapping[str, str] | None = None,
    host_key_checking: bool = False,
) -> Targets:
    """The hosts the playbook would run on and the tags it knows, from Ansible itself (nothing runs)."""
    cmd = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        "--list-hosts",
        "--list-tags",
        "-i",
        str(inventory.resolve()),
        *(["--limit", limit] if limit else []),
        str(playbook.resolve()),
    ]
    if not Path(cmd[0]).exists():
        cmd[0] = "ansible-playbook"
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **_env(roles_path, envvars, host_key_checking)},
    )
    errors = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip().startswith(("ERROR", "[ERROR]"))]
    if any("no hosts to target" in e for e in errors) or (
        proc.returncode == 0 and not parse_listing(proc.stdout).hosts
    ):
        # --limit matched nothing (Ansible exits 0 or 1 on that, by version): the tags from a listing without it
        tags = (
            targets(
                playbook, inventory, roles_path=roles_path, envvars=envvars, host_key_checking=host_key_checking
            ).tags
            if limit
            else []
        )
        return Targets([], tags)
    if proc.returncode != 0:
        raise TuneError(" ".join(errors) or proc.stderr.strip()[-300:] or f"ansible-playbook exited {proc.returncode}")
    return parse_listing(proc.stdout)


def unmatched_patterns(inventory: Path, limit: str) -> tuple[list[str], list[str]]:
    """The patterns of an Ansible --limit (split as Ansible splits it: commas, else colons) that match no host or
    group of the inventory, and the inventory's groups. Every pattern that selects hosts counts (names, groups,
    globs, ranges, `~regex`, `&x`); `!x` only removes hosts and `@file` names a file, so those are not checked.
    Ansible itself only warns about such a pattern and drops it, running on fewer hosts than asked."""
    from ansible import constants  # type: ignore[import-untyped]
    from ansible.inventory.manager import InventoryManager, split_host_pattern  # type: ignore[import-untyped]
    from ansible.parsing.dataloader import DataLoader  # type: ignore[import-untyped]

    manager = InventoryManager(loader=DataLoader(), sources=[str(inventory.resolve())])
    groups = sorted(g for g in manager.groups if g not in ("all", "ungrouped"))
    missing: list[str] = []
    mismatch = constants.HOST_PATTERN_MISMATCH
    constants.HOST_PATTERN_MISMATCH = "ignore"  # the warning is this function's answer; say it once, as an error
    try:
        for pattern in split_host_pattern(limit):
            if pattern.startswith(("!", "@")):
                continue
            name = pattern.lstrip("&")
            if not name or (name not in manager.groups and not manager.get_hosts(pattern=name, ignore_limits=True)):
                missing.append(name or pattern)
    finally:
        constants.HOST_PATTERN_MISMATCH = mismatch
    return missing, groups


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
    host_key_checking: bool = False,
) -> TuneResult:
    import time

    import ansible_runner

    board = Scoreboard(on_change)
    env = _env(roles_path, envvars, host_key_checking)
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
