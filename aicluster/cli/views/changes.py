"""What a change does, as `preview --base` prints it: the steps that replace, delete or roll out at a cost, and
those the change-safety rule blocks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


def short_type(type_: str) -> str:
    """A Pulumi type token's last part (`aws:ec2/eip:Eip` -> `Eip`): enough to tell an EIP from a NAT gateway."""
    return type_.rsplit(":", 1)[-1] or type_


def risky_table(changes: Mapping[str, Any]) -> Table | None:
    """One row per step that costs data, jobs, audit or network, rolls nodes, or may replace; provider changes
    first."""
    rows = [
        s
        for s in changes["steps"]
        if s["op"] != "create"
        and (
            s.get("risks")
            or s.get("rollout")
            or s.get("providerChange")
            or s.get("refused")
            or s.get("mayReplaceReasons")
        )
    ]
    if not rows:
        return None
    t = Table(title="Replaced, deleted and rolled out", title_justify="left")
    for col in ("resource", "type", "step", "loses", "nodes", "why"):
        t.add_column(col, overflow="fold")
    for s in rows:
        op = s["op"] + (
            " (refused by the API)"
            if s.get("refused")
            else " (rollout)"
            if s.get("rollout")
            else " (may replace)"
            if s.get("mayReplaceReasons") and s["op"] == "update"
            else ""
        )
        nodes = ""
        if s.get("nodes"):
            nodes = f"{s['nodes']} nodes" + (f", {s['gpus']} GPUs" if s.get("gpus") else "")
        risks = ", ".join(_RISK.get(r, r) for r in s.get("risks") or []) or "-"
        if s.get("risksIfReplaced"):
            risks = ", ".join(f"{_RISK.get(r, r)} if replaced" for r in s["risksIfReplaced"])
        style = "red" if "data-loss" in (s.get("risks") or []) or s.get("refused") or s.get("guardedBy") else "yellow"
        t.add_row(
            escape(s["urn"].rsplit("::", 1)[-1]),
            escape(short_type(str(s.get("type", "")))),
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


_EFFECT = {
    "refused": "[red]refused[/]",
    "replaces-data": "[red]replaces: data lost[/]",
    "replaces-nodes": "[red]replaces the nodes[/]",
    "rollout": "[yellow]rolls the nodes[/]",
    "removes-nodes": "[yellow]removes nodes (their jobs are killed)[/]",
    "new-nodes-only": "new nodes only (running ones keep the old configuration)",
    "live": "[green]applied live[/]",
    "none": "no resource change",
}


def field_table(changes: Sequence[Any], base: str) -> Table | str:
    """Each field the change touches, old -> new, and what its platform does with such a change."""
    if not changes:
        return f"no field differs from {escape(base)}"
    t = Table(title=f"Fields changed from {escape(base)}", title_justify="left")
    for col in ("field", "change", "platform", "effect"):
        t.add_column(col, overflow="fold")
    for c in changes:
        effect = _EFFECT.get(c.effect, "") if c.effect else "not recorded: `aicluster preview --base` shows its steps"
        t.add_row(escape(c.path), escape(f"{_short(c.old)} → {_short(c.new)}"), escape(c.platform), effect)
    return t


def _short(value: Any) -> str:
    text = "(none)" if value is None else str(value)
    return text if len(text) <= 40 else text[:39] + "…"
