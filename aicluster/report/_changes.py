"""What a change does, as the reports show it: the steps of `aicluster.changes` (the JSON of `diff --json`, or a
preview's `changes` from `preview --base`) that a reviewer must see first."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._templates import Code, code
from ._views import plural


def change_line(changes: Mapping[str, Any]) -> str:
    """`1 to replace, 2 to update (1 rollout of running nodes), 35 same`."""
    counts = changes.get("changeSummary") or {}
    parts = [f"{counts[op]} to {op}" for op in ("create", "update", "replace", "delete") if counts.get(op)]
    text = ", ".join(parts) or "no resource changes"
    rollouts = int(changes.get("rollouts") or 0)
    if rollouts:
        text += f" ({plural(rollouts, 'rollout')} of running nodes)"
    return f"{text}, {counts.get('same', 0)} same"


RISK_WORDS = {
    "data-loss": "data loss",
    "job-kill": "jobs killed",
    "audit-gap": "audit gap",
    "network-cut": "network cut",
}
_RISK_RANK = {"data-loss": 0, "job-kill": 1, "audit-gap": 2, "network-cut": 3}


@dataclass(frozen=True)
class RiskyStep:
    """A step a reviewer must see: a replace or delete that costs something, a rollout, nodes removed, an update the
    cloud's API refuses."""

    name: str
    type: str
    op: str  # "replace", "delete", "update (rollout)", "update"
    risks: str
    nodes: str  # "32 nodes, 256 GPUs (pool h100)" or ""
    why: tuple[str, ...]
    guarded_by: str  # the change-safety rule `aicluster preview --base` fails it by, unless waived ("" if none)


def _short(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def risky_steps(changes: Mapping[str, Any] | None) -> list[RiskyStep]:
    """The steps that replace or delete something, roll nodes or remove them, most costly first: data loss,
    then jobs killed, then audit gaps and network cuts; provider changes before all (they may replace everything
    of that provider)."""
    if not changes:
        return []
    rows = []
    for step in changes.get("steps") or []:
        risks = [r for r in step.get("risks") or [] if r in RISK_WORDS]
        provider = bool(step.get("providerChange"))
        refused = bool(step.get("refused"))
        if not (risks or step.get("rollout") or provider or step.get("mayReplaceReasons") or refused):
            continue
        if step.get("op") == "create":
            continue
        op = str(step.get("op", ""))
        if refused:
            op += " (refused by the cloud's API: pulumi up fails)"
        elif step.get("rollout"):
            op += " (rollout)"
        elif provider:
            op += " (provider: may replace every resource it manages)"
        elif step.get("mayReplaceReasons") and op == "update":
            op += " (may replace)"
        nodes = ""
        if step.get("nodes"):
            nodes = ("up to " if step.get("nodesUpTo") else "") + plural(int(step["nodes"]), "node")
            if step.get("gpus"):
                nodes += f", {plural(int(step['gpus']), 'GPU')}"
            if step.get("pool"):
                nodes += f" (pool {step['pool']})"
            removed = step.get("nodesRemoved") or []
            if removed:
                shown = ", ".join(removed[:8]) + (f" … {removed[-1]}" if len(removed) > 8 else "")
                nodes += f": {shown}"
        rank = min((_RISK_RANK[r] for r in risks), default=0 if refused else 4)
        rows.append(
            (
                -1 if provider else rank,
                RiskyStep(
                    name=_short(str(step.get("urn", ""))),
                    type=str(step.get("type", "")),
                    op=op,
                    risks=", ".join(RISK_WORDS[r] for r in risks) or "—",
                    nodes=nodes,
                    why=tuple(str(w) for w in step.get("why") or ()),
                    guarded_by=str(step.get("guardedBy") or ""),
                ),
            )
        )
    rows.sort(key=lambda x: x[0])
    return [r for _, r in rows]


@dataclass(frozen=True)
class DrainView:
    """One pool's nodes to take out of service on the Slurm controller before `pulumi up` (aicluster.changes.drain)."""

    pool: str
    strategy: str
    nodes: str
    count: int
    why: str
    before: tuple[Code, ...]
    after: tuple[Code, ...]
    notes: tuple[str, ...]


def slurm_drains(changes: Mapping[str, Any] | None) -> list[DrainView]:
    """The classification's `slurmDrains`, each command shell-quoted for a code block; an entry of another shape, or
    a command with a character no aicluster command has, is left out."""
    out = []
    for d in (changes or {}).get("slurmDrains") or []:
        if not isinstance(d, Mapping):
            continue
        commands = {}
        for when in ("before", "after"):
            given = d.get(when) or []
            argvs = [a for a in given if isinstance(a, list) and a and all(isinstance(x, str) for x in a)]
            shown = [code(shlex.join(a)) for a in argvs]
            commands[when] = tuple(c for c in shown if c is not None)
        if not commands["before"]:
            continue
        out.append(
            DrainView(
                pool=str(d.get("pool", "")),
                strategy=str(d.get("strategy", "")),
                nodes=str(d.get("nodes", "")),
                count=int(d["count"]) if isinstance(d.get("count"), int) else 0,
                why=str(d.get("why", "")),
                before=commands["before"],
                after=commands["after"],
                notes=tuple(str(n) for n in d.get("notes") or [] if isinstance(n, str)),
            )
        )
    return out
