"""What a change does, as `preview --base` prints it: the steps that replace, delete or roll out at a cost, and
those the change-safety rule blocks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape
from rich.table import Table

_RISK = {"data-loss": "data loss", "job-kill": "jobs killed", "audit-gap": "audit gap", "network-cut": "network cut"}


def summary_line(changes: Mapping[str, Any]) -> str:
    counts = changes["changeSummary"]
    parts = [f"{counts[op]} to {op}" for op in ("create", "update", "replace", "delete") if counts[op]]
    rollouts = changes.get("rollouts") or 0
    text = ", ".join(parts) or "no resource changes"
    if rollouts:
        text += f" ({rollouts} rollout{'s' if rollouts != 1 else ''} of running nodes)"
    return f"changes from base {changes['base']}: {text}, {counts['same']} same"


def risky_table(changes: Mapping[str, Any]) -> Table | None:
    """One row per step that costs data, jobs, audit or network, or rolls nodes; provider changes first."""
    rows = [
        s
        for s in changes["steps"]
        if s["op"] != "create" and (s.get("risks") or s.get("rollout") or s.get("providerChange"))
    ]
    if not rows:
        return None
    t = Table(title="Replaced, deleted and rolled out", title_justify="left")
    for col in ("resource", "step", "loses", "nodes", "why"):
        t.add_column(col, overflow="fold")
    for s in rows:
        op = s["op"] + (" (rollout)" if s.get("rollout") else "")
        nodes = ""
        if s.get("nodes"):
            nodes = f"{s['nodes']} nodes" + (f", {s['gpus']} GPUs" if s.get("gpus") else "")
        risks = ", ".join(_RISK.get(r, r) for r in s.get("risks") or []) or "-"
        style = "red" if "data-loss" in (s.get("risks") or []) else "yellow"
        t.add_row(
            escape(s["urn"].rsplit("::", 1)[-1]),
            f"[{style}]{escape(op)}[/]",
            escape(risks),
            escape(nodes),
            escape("; ".join(s.get("why") or [])),
        )
    return t


def blocked_lines(changes: Mapping[str, Any]) -> list[str]:
    out = [
        f"[red]blocked[/] {escape(b['name'])} ({escape(b['type'])}, {escape(b['op'])}): {escape(b['fix'])}"
        for b in changes.get("blocked") or []
    ]
    out += [
        f"[dim]waived[/] {escape(w['name'])} ({escape(w['op'])}): {escape(w['reason'])} (until {escape(w['expires'])})"
        for w in changes.get("waived") or []
    ]
    return out
