"""What a Slurm cluster's controller runs before `pulumi up` takes nodes: each pool's `rollout`, as Slurm applies it.

A change that removes a pool's nodes (a lower count, a removed pool) or recreates them (a replaced group, a rollout)
kills the jobs on them unless Slurm stops giving them work first. Per pool (the stack's `rollout`):
- `drain-first`: `scontrol update nodename=LIST state=DRAIN reason="aicluster rollout: ..."`. scontrol(1): DRAIN
  starts no new job, lets the running ones finish, and the node shows DRAINED once idle; `pulumi up` waits for that.
  Nodes that come back (recreated, not removed) are returned with `state=RESUME` afterwards.
- `window`: `scontrol create reservation ... flags=MAINT,IGNORE_JOBS` over the pool's nodes for the next weekly
  window: Slurm starts no job that would still run when the window opens (a reservation holds its nodes), MAINT marks
  it maintenance for accounting; `pulumi up` runs inside the window.
A Slurm pool's group replaced whole (an instance type change) takes all its nodes at once: `rollout.max_unavailable`
bounds the cloud's rolling updates (Kubernetes node groups) and cannot split that; the plan says so.

Commands are argument lists, never shell text; the Markdown shows them quoted (shlex.join).
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from aicluster.plan.models import PlannedRollout, hostlist

if TYPE_CHECKING:
    from aicluster.changes import Step

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
REASON_PREFIX = "aicluster rollout"


@dataclass
class Drain:
    """One pool's nodes to take out of service before `pulumi up`."""

    pool: str
    strategy: str  # drain-first | window
    nodes: list[str]  # the nodes the change removes or recreates
    removed: bool  # True: the nodes go for good; False: they come back (recreated)
    why: str
    window: dict[str, Any] | None = None  # the pool's window (days, start, hours) for strategy window
    notes: list[str] = field(default_factory=list)

    def before(self, now: dt.datetime) -> list[list[str]]:
        """The scontrol commands to run before `pulumi up`."""
        nodes = hostlist(self.nodes)
        if self.strategy == "window" and self.window:
            start = next_window(self.window, now)
            return [
                [
                    "scontrol", "create", "reservation", f"reservationname=aicluster-{self.pool}",
                    f"starttime={start:%Y-%m-%dT%H:%M:%S}", f"duration={int(self.window['hours']) * 60}",
                    f"nodes={nodes}", "flags=MAINT,IGNORE_JOBS", "users=root",
                ]
            ]  # fmt: skip
        return [["scontrol", "update", f"nodename={nodes}", "state=DRAIN", f"reason={REASON_PREFIX}: {self.why}"]]

    def after(self) -> list[list[str]]:
        """The scontrol commands to run once `pulumi up` is done (nodes that come back; a reservation ended)."""
        out = []
        if self.strategy == "window" and self.window:
            out.append(["scontrol", "delete", f"reservationname=aicluster-{self.pool}"])
        if not self.removed:
            out.append(["scontrol", "update", f"nodename={hostlist(self.nodes)}", "state=RESUME"])
        return out

    def to_json(self, now: dt.datetime) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pool": self.pool,
            "strategy": self.strategy,
            "nodes": hostlist(self.nodes),
            "count": len(self.nodes),
            "removed": self.removed,
            "why": self.why,
            "before": self.before(now),
            "after": self.after(),
        }
        if self.notes:
            out["notes"] = self.notes
        return out

    def shown(self, now: dt.datetime) -> list[str]:
        return [shlex.join(c) for c in self.before(now)]


def next_window(window: Mapping[str, Any], now: dt.datetime) -> dt.datetime:
    """The next opening of a weekly UTC window at or after `now` (an open window counts from its start today)."""
    hour, minute = (int(x) for x in str(window["start"]).split(":"))
    days = {WEEKDAYS.index(d) for d in window["days"]}
    now = now.astimezone(dt.UTC).replace(second=0, microsecond=0)
    for ahead in range(8):
        day = now + dt.timedelta(days=ahead)
        start = day.replace(hour=hour, minute=minute)
        if day.weekday() in days and start >= now:
            return start.replace(tzinfo=None)
    raise ValueError(f"no window day in {window['days']!r}")  # unreachable: days is never empty


def slurm_drains(
    base: Mapping[str, Any],
    head: Mapping[str, Any],
    steps: Sequence[Step],
    shrunk: Sequence[Mapping[str, Any]],
    node_names: Mapping[str, list[str]],
) -> list[Drain]:
    """The drains a Slurm cluster needs before this change: for each pool whose nodes it removes (`shrunk`) or
    recreates (a step with nodes and no nodes removed), with the head's `rollout` of the pool (the base's when the
    head drops it). `node_names`: each base pool's node names."""
    if (head.get("cluster") or {}).get("scheduler", "slurm") != "slurm":
        return []
    rollout = {**_rollouts(base), **_rollouts(head)}
    drains: dict[str, Drain] = {}
    for pool in shrunk:
        name = str(pool["pool"])
        removed = [str(n) for n in pool.get("nodesRemoved") or []]
        if removed:
            why = f"pool {name} goes from {pool['nodesBefore']} to {pool['nodesAfter']} nodes"
            drains[name] = _drain(name, rollout.get(name), removed, True, why)
    for step in steps:
        if not step.pool or step.pool in drains or not step.nodes or step.nodes_removed or "job-kill" not in step.risks:
            continue
        name = step.pool
        nodes = node_names.get(name) or []
        if not nodes:
            continue
        verb = "rolled out" if step.rollout else "replaced"
        why = (
            f"{step.type.rsplit(':', 1)[-1]} {step.name} {verb}: {', '.join(step.replace_reasons or step.diff_reasons)}"
        )
        d = _drain(name, rollout.get(name), nodes, False, why)
        if not step.rollout and len(nodes) > (rollout.get(name) or PlannedRollout()).max_unavailable:
            d.notes.append(
                f"the replace takes all {len(nodes)} nodes of pool {name} at once: rollout.max_unavailable bounds "
                "rolling updates, not a replaced group; drain them all first, or change the pool in steps"
            )
        drains[name] = d
    return list(drains.values())


def _drain(pool: str, rollout: PlannedRollout | None, nodes: list[str], removed: bool, why: str) -> Drain:
    r = rollout or PlannedRollout()
    if r.strategy == "window" and r.window_days and r.window_start and r.window_hours:
        window = {"days": list(r.window_days), "start": r.window_start, "hours": r.window_hours}
        return Drain(pool, "window", nodes, removed, why, window)
    return Drain(pool, "drain-first", nodes, removed, why)


def _rollouts(doc: Mapping[str, Any]) -> dict[str, PlannedRollout]:
    """Each pool's rollout as the preview JSON records it; one of another shape counts as the default (drain-first)."""
    out = {}
    for p in doc.get("pools") or []:
        if isinstance(p, Mapping) and isinstance(p.get("name"), str):
            try:
                out[p["name"]] = PlannedRollout.model_validate(p.get("rollout") or {})
            except ValidationError:
                continue
    return out
