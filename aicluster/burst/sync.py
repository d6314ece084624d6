"""aicluster-burst-sync: reconcile Slurm's cloud nodes with the cloud. `aicluster-burst-sync [--config PATH]`

Run every minute from a systemd timer or cron on the controller, as SlurmUser. Idempotent. Per node set, under the
same per-group lock as resume and suspend, and reading Slurm's node states only once it holds the lock:
- a node Slurm believes is up (not POWERED_DOWN, POWERING_DOWN, POWER_DOWN or POWERING_UP) whose instance is gone,
  stopping, terminated or being reclaimed (spot) is set `state=POWER_DOWN_FORCE reason="aicluster-burst-sync: ..."`:
  scontrol(1) says POWER_DOWN_FORCE "will cancel all jobs on the node, power it down, and reset its state to IDLE";
  a batch job that may be requeued (the default, JobRequeue=1) goes back to the queue, and the node is free to be
  resumed again after SuspendTimeout;
- a node resume reported DOWN (reason `aicluster-resume: ...`) with no live instance is powered down the same way,
  so Slurm tries it again later rather than keeping it DOWN until an admin resumes it;
- a live instance bound to a powered-down node (a suspend that failed), or bound to no node for longer than
  orphan_grace_s (launched after resume gave up, or an Auto Scaling replacement), is deleted and the group shrunk.
Node sets are handled apart: one that fails (the cloud refuses or never answers, scontrol refuses its hostlist, the
group lock stays busy past config.lock_wait_s, an unexpected error) is logged and the others are still reconciled.
Exit status: 0, or 1 when the cloud or Slurm refused something (logged), 2 for a bad configuration.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence

from aicluster.burst.cloud import Group
from aicluster.burst.common import (
    ConfigError,
    Opener,
    default_opener,
    failure,
    group_key,
    group_lock,
    load_config,
    log,
    parser,
    scontrol_for,
    setup_logging,
    unexpected,
)
from aicluster.burst.config import BurstConfig
from aicluster.burst.resume import PROG as RESUME
from aicluster.burst.slurm import Slurm, node_states, one_line, own_reason

PROG = "aicluster-burst-sync"
NOT_UP = {"POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN", "POWERING_UP"}
OFF = {"POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN"}


def sync_group(group: Group, slurm: Slurm, expression: str, orphan_grace_s: float,
               clock: Callable[[], float] = time.time) -> list[str]:  # fmt: skip
    """Reconcile one group; returns the nodes it powered down."""
    instances = group.instances()
    records = {r["NodeName"]: r for r in slurm.nodes(expression) if "NodeName" in r}
    live = {i.node: i for i in instances if i.alive and i.node}
    dead = {i.node: i for i in instances if not i.alive and i.node}
    powered_down: list[str] = []
    for name, rec in records.items():
        states = node_states(rec)
        if name in live:
            continue
        if not states & NOT_UP:
            inst = dead.get(name)
            why = f"instance {inst.id} {inst.why_not}" if inst else "no instance bound to the node"
            reason = one_line(f"{PROG}: {why}")
        elif "DOWN" in states and own_reason(rec.get("Reason", "")).startswith(RESUME) and not states & OFF:
            reason = one_line(f"{PROG}: retry later after {own_reason(rec['Reason'])}")
        elif "DOWN" in states and states & {"POWERED_DOWN"} and own_reason(rec.get("Reason", "")).startswith(PROG):
            # powered down by an earlier run: Slurm (22.05) keeps it DOWN; RESUME makes it IDLE+POWERED_DOWN,
            # free to be resumed again, one sync period after the failure
            log.info("node %s (State=%s): RESUME (was: %s)", name, rec.get("State"), rec.get("Reason"))
            slurm.update([name], state="RESUME")
            continue
        else:
            continue
        log.warning("node %s (State=%s): POWER_DOWN_FORCE: %s", name, rec.get("State"), reason)
        slurm.update([name], state="POWER_DOWN_FORCE", reason=reason)
        powered_down.append(name)
    stale = []
    now = clock()
    for i in instances:
        suspended = bool(i.node in records and node_states(records[i.node]) & OFF) if i.node else False
        orphan = not i.node and now - i.launched_s > orphan_grace_s
        if i.alive and (suspended or orphan):
            stale.append(i)
    if stale:
        log.warning("group %s: deleting %s", group.name, ", ".join(f"{i.id} ({i.node or 'unbound'})" for i in stale))
        group.remove([i.id for i in stale])
    return powered_down


def sync(config: BurstConfig, slurm: Slurm, opener: Opener = default_opener) -> list[str]:
    errors = []
    for node_set in config.node_sets:
        try:
            with group_lock(config, group_key(node_set)):
                group = opener(node_set, config)
                sync_group(group, slurm, node_set.nodes, config.orphan_grace_s)
        except Exception as exc:  # this node set only: the next ones are still reconciled
            log.error("group %s: %s", node_set.group, failure(exc), exc_info=unexpected(exc))
            errors.append(f"{node_set.group}: {failure(exc)}")
    return errors


def main(argv: Sequence[str] | None = None, opener: Opener = default_opener) -> int:
    args = parser(PROG, "reconcile Slurm cloud nodes with their instances", nodes=False).parse_args(argv)
    try:
        config = load_config(args)
    except ConfigError as exc:
        setup_logging(None, PROG)
        log.error("%s", exc)
        return 2
    setup_logging(config, PROG)
    return 1 if sync(config, scontrol_for(config), opener) else 0


if __name__ == "__main__":
    sys.exit(main())
