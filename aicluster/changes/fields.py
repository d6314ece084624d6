"""What a change to a stack file does, field by field, from the catalog's update policies: `aicluster validate STACK
--base BASE` compares the two stack files' `aicluster:cluster` and names, for each changed field, the effect its
platform gives that change (applied live, new nodes only, removes nodes, rolls the nodes, replaces the nodes,
replaces the data)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aicluster.catalog import UpdatePolicy

from . import _MISSING, Leaf, leaves

_NAMED_LISTS = ("pools", "storage", "workloads", "sites")


@dataclass(frozen=True)
class FieldChange:
    path: str  # `pools[h100].nodes`
    field: str  # `pools[].nodes`, as the update policies and the spec reference name it
    old: Any
    new: Any
    platform: str
    change: str  # the policy row's change (`fewer nodes`), "" where none is recorded
    effect: str  # the policy's effect, "" where none is recorded
    note: str = ""  # for a refused change: what refuses it


def _by_name(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """Named lists as maps by name, so that a pool is matched by its name and not its place in the list."""
    out = dict(cluster)
    for key in _NAMED_LISTS:
        items = cluster.get(key)
        if isinstance(items, list) and all(isinstance(i, Mapping) and isinstance(i.get("name"), str) for i in items):
            out[key] = {i["name"]: i for i in items}
    return out


def _field(path: str) -> tuple[str, str | None]:
    """`pools.h100.nodes` -> (`pools[].nodes`, `h100`); the display path keeps the name."""
    head, _, rest = path.partition(".")
    if head in _NAMED_LISTS and rest:
        name, _, tail = rest.partition(".")
        field = re.sub(r"\[\d+\]", "[]", f"{head}[].{tail}" if tail else f"{head}[]")
        return (field.removesuffix("[]") if tail else field), name
    # an element of a list of values (`authorized_networks[1]`) is a change of the list
    return re.sub(r"\[\d+\]", "[]", path).removesuffix("[]"), None


def _platform(cluster: Mapping[str, Any], field: str, name: str | None) -> str:
    pools = [p for p in cluster.get("pools") or [] if isinstance(p, Mapping)]
    pool = next((p for p in pools if p.get("name") == name), None) if field.startswith("pools") else None
    if pool is None and field.startswith("storage"):
        fs = next((s for s in cluster.get("storage") or [] if isinstance(s, Mapping) and s.get("name") == name), {})
        provider = fs.get("provider")
        pool = {"provider": provider} if provider else None
    provider = str((pool or (pools[0] if pools else {})).get("provider", ""))
    return f"{provider}-{(cluster.get('scheduler') or {}).get('kind', 'slurm')}"  # as the update policies name it


def _arrow(change: str) -> tuple[str, str] | None:
    """`capacity block -> on-demand` as the two values it names (`capacity-block`, `on-demand`)."""
    parts = change.split(" -> ")
    return (parts[0].replace(" ", "-"), parts[1].replace(" ", "-")) if len(parts) == 2 else None


def _change(field: str, old: Any, new: Any, rows: Sequence[UpdatePolicy], platform: str) -> UpdatePolicy | None:
    """The recorded row for this change: by direction where the field has more than one (nodes, capacity), by the
    values a row names (`on-demand -> spot`), else the one row tried on this platform."""
    mine = [r for r in rows if r.field == field]
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (old, new))
    if len(mine) > 1 and numbers:
        word = ("more nodes", "larger") if new > old else ("fewer nodes", "smaller")
        return next((r for r in mine if r.change in word), None)
    if field == "scheduler.version":
        return next((r for r in mine if r.change == "upgrade"), None) if str(new) > str(old) else None
    if len(mine) > 1:
        named = [r for r in mine if _arrow(r.change) == (str(old), str(new))]
        tried = [r for r in mine if platform in r.effects]
        mine = named or tried
    return mine[0] if len(mine) == 1 else None


def _expanded(leaf: Leaf) -> list[Leaf]:
    """A section added or removed inside a pool, file system or the scheduler (`rollout`, `controller`) as the
    fields it sets, since each has its own policy; a whole pool or file system (`pools.h100`) stays one change."""
    head, _, rest = leaf.path.partition(".")
    whole = head in _NAMED_LISTS and "." not in rest
    for value, missing_old in ((leaf.new, True), (leaf.old, False)):
        other = leaf.old if missing_old else leaf.new
        if not whole and isinstance(value, Mapping) and other is _MISSING and value:
            subs = leaves({}, value, leaf.path) if missing_old else leaves(value, {}, leaf.path)
            return [x for sub in subs for x in _expanded(sub)]
    return [leaf]


def field_changes(
    base: Mapping[str, Any], head: Mapping[str, Any], policies: Sequence[UpdatePolicy]
) -> list[FieldChange]:
    """Each changed leaf of the cluster's config, with the effect its platform records for it."""
    out = []
    for leaf in (x for changed in leaves(_by_name(base), _by_name(head)) for x in _expanded(changed)):
        field, name = _field(leaf.path)
        display = leaf.path if name is None else leaf.path.replace(f".{name}", f"[{name}]", 1)
        platform = _platform(head if leaf.new is not _MISSING else base, field, name)
        row = _change(field, leaf.old, leaf.new, policies, platform)
        recorded = row.effects.get(platform) if row is not None else None
        effect = recorded.effect if recorded is not None else ""
        out.append(
            FieldChange(
                path=display,
                field=field,
                old=None if leaf.old is _MISSING else leaf.old,
                new=None if leaf.new is _MISSING else leaf.new,
                platform=platform,
                change=row.change if row is not None and effect else "",
                effect=effect,
                note=recorded.note if recorded is not None else "",
            )
        )
    return out
