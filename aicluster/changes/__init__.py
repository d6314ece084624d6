"""What a change does, resource by resource, between two preview JSONs (a base and a head): the operation Pulumi's
engine would report for each (create, update, replace, delete), the inputs that cause it, whether an update rolls
running nodes, and what the step costs (data loss, jobs killed, an audit gap, a network cut).

Everything comes from data: the catalog's change rules per resource type (aicluster/catalog/data/changes/), each
with its source. The classification follows Pulumi's semantics:

- resources are matched by URN (with the stack name left out, so two stacks' previews compare);
- an input change replaces the resource when a rule says so (Terraform's ForceNew, azure-native's forceNew, the
  Kubernetes provider's list), including conditional rules the diff can evaluate (a capacity decrease, a CIDR that
  no longer contains the old one); one it cannot evaluate is listed as "may replace";
- a replaced resource gets a new ID and outputs, so each resource whose input comes from it (its
  `propertyDependencies`, where the value is computed) changes that input too; a launch template's update changes
  its version for the groups that follow it;
- a change to a provider resource is listed first: it can replace every resource of that provider;
- a list the provider holds as a set (`unordered`) is compared as one; an update the cloud's API refuses although the
  provider previews it (`rejected_by_api`) is `refused`, and blocks `preview --base` like a stateful replace;
- an input that names the version of the resource it comes from by an alias (`$Default`) changes when that resource
  is updated (`version_aliases`).

The output is `ChangeSet.to_json()`: a `steps` list shaped like `pulumi preview --json`'s (`op`, `urn`, `type`,
`replaceReasons`, `diffReasons`, `detailedDiff`) with `risks`, `rollout` and the nodes and GPUs a step removes or
recreates. This package reads the catalog and the plan's node naming only.
"""

from __future__ import annotations

import datetime as dt
import graphlib
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aicluster.catalog import ChangeRule, ConditionalReplace
from aicluster.changes.drain import Drain, slurm_drains
from aicluster.plan.models import node_name

__all__ = ["CHANGE_SAFETY", "Blocked", "ChangeSet", "Step", "blocked_steps", "classify"]

# The mandatory rule `aicluster preview --base` applies; a waiver names it (compliance.waivers[].policy)
CHANGE_SAFETY = "aicluster-change-disallow-stateful-replace"

COMPUTED = "<computed>"  # how the preview JSON writes a value known only after the deployment
MAX_DEPTH = 32
Op = Literal["create", "update", "replace", "delete"]
_MISSING: Any = object()
_INDEX = re.compile(r"\[\d+\]")
_POOL_KEYS = ("aicluster:pool", "aicluster_pool", "aicluster.io/pool")


@dataclass(frozen=True)
class Leaf:
    """One changed input: its path (`a.b`, `a[2].c`), both values (`_MISSING` where a side lacks it), and, for a
    change that comes from another resource, why."""

    path: str
    old: Any
    new: Any
    cause: str = ""


def leaves(old: Any, new: Any, path: str = "", depth: int = 0) -> list[Leaf]:
    """The inputs that differ, down to the changed leaf: maps by key, lists of the same length by index; a list
    that grew or shrank, or a value that appeared or went, is one change at its own path."""
    if old == new:
        return []
    if depth < MAX_DEPTH and isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[Leaf] = []
        for key in sorted(old.keys() | new.keys(), key=str):
            sub = f"{path}.{key}" if path else str(key)
            out.extend(leaves(old.get(key, _MISSING), new.get(key, _MISSING), sub, depth + 1))
        return out
    if depth < MAX_DEPTH and isinstance(old, list) and isinstance(new, list) and len(old) == len(new) and path:
        return [
            x for i, (a, b) in enumerate(zip(old, new, strict=True)) for x in leaves(a, b, f"{path}[{i}]", depth + 1)
        ]
    return [Leaf(path, old, new)]


def _pattern(path: str) -> str:
    return _INDEX.sub("[*]", path)


def _under(path: str, rule: str) -> bool:
    return path == rule or path.startswith((rule + ".", rule + "["))


def _top(path: str) -> str:
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def _get(inputs: Mapping[str, Any], path: str) -> Any:
    value: Any = inputs
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _shrinks(old: Any, new: Any) -> bool:
    try:
        a, b = ipaddress.ip_network(str(old)), ipaddress.ip_network(str(new))
    except ValueError:
        return True
    return not (a.version == b.version and b.supernet_of(a))  # type: ignore[arg-type]


def _holds(cond: ConditionalReplace, leaf: Leaf, head_inputs: Mapping[str, Any]) -> bool | None:
    """Whether the conditional replacement fires for this changed leaf: True, False, or None (cannot tell)."""
    if any(_get(head_inputs, p) != v for p, v in cond.only_if.items()):
        return False
    old, new = leaf.old, leaf.new
    if COMPUTED in (old, new) and cond.when != "changed":
        return None
    if cond.when == "changed":
        return True
    if cond.when == "decrease":
        return (new < old) if _is_number(old) and _is_number(new) else None
    if cond.when == "shrink":
        return _shrinks(old, new) if old is not _MISSING and new is not _MISSING else None
    if cond.when == "true_to_false":
        return old is True and new is not True
    if cond.when == "removed":
        return old not in (_MISSING, None, [], {}) and new in (_MISSING, None, [], {})
    return None


def _kind(leaf: Leaf, replaces: bool) -> str:
    kind = "add" if leaf.old is _MISSING else "delete" if leaf.new is _MISSING else "update"
    return f"{kind}-replace" if replaces else kind


@dataclass
class Step:
    """One resource that is not the same between base and head."""

    urn: str
    type: str
    name: str
    op: Op
    detailed_diff: dict[str, str] = field(default_factory=dict)  # path -> add|delete|update[-replace]
    replace_paths: list[str] = field(default_factory=list)
    may_replace: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # inputs the cloud's API refuses to change in place
    refused_fix: str = ""  # how to make such a change (the rule's rejected_fix)
    rollout: bool = False
    risks: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)  # each cause in words, with the rule's source
    pool: str | None = None
    nodes: int | None = None  # nodes the step removes or recreates
    nodes_up_to: bool = False  # `nodes` is a bound: the plan does not know how many of them the step reaches
    gpus: int | None = None
    nodes_removed: list[str] = field(default_factory=list)
    protect: bool = False
    provider: bool = False  # a pulumi:providers:* resource
    stateful: bool = False  # a replace or delete of it fails the change-safety gate (data loss, or a guard's loss)
    loses: str = ""  # a guard's loss, in words (`Slurm state: job queue`)
    risks_if_replaced: list[str] = field(default_factory=list)  # a guarded resource that may be replaced
    stack_fields: list[str] = field(default_factory=list)  # the stack fields behind its change (`storage[x].zone`)
    conditions: list[str] = field(default_factory=list)  # the conditional rules that replaced it (`decrease`)

    @property
    def replace_reasons(self) -> list[str]:
        return sorted({_top(p) for p in self.replace_paths})

    @property
    def diff_reasons(self) -> list[str]:
        return sorted({_top(p) for p in self.detailed_diff})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "urn": self.urn,
            "type": self.type,
            "op": self.op,
            "replaceReasons": self.replace_reasons,
            "diffReasons": self.diff_reasons,
            "detailedDiff": {p: {"kind": k, "inputDiff": True} for p, k in sorted(self.detailed_diff.items())},
            "risks": self.risks,
        }
        if self.rollout:
            out["rollout"] = True
        if self.rejected:
            out["refused"] = True
        extras: dict[str, Any] = {
            "mayReplaceReasons": self.may_replace,
            "rejectedByApi": self.rejected,
            "why": self.why,
            "pool": self.pool,
            "nodes": self.nodes,
            "nodesUpTo": self.nodes_up_to or None,
            "gpus": self.gpus,
            "nodesRemoved": self.nodes_removed,
            "stackFields": self.stack_fields,
            "risksIfReplaced": self.risks_if_replaced,
        }
        out.update({k: v for k, v in extras.items() if v not in (None, [])})
        if (self.stateful and self.op in ("replace", "delete")) or self.rejected:
            out["guardedBy"] = CHANGE_SAFETY
        if self.loses and self.op in ("replace", "delete"):
            out["loses"] = self.loses
        if self.protect:
            out["protect"] = True
        if self.provider:
            out["providerChange"] = True
        return out


@dataclass(frozen=True)
class _Pool:
    name: str
    nodes: int
    gpus: int
    hosts: tuple[str, ...] = ()  # owned hosts the stack names
    zone: str | None = None  # the plan's zone for the pool (a pool is in one zone; None: regional or not known)

    def names(self) -> list[str]:
        return list(self.hosts) or [node_name(self.name, i, self.nodes) for i in range(self.nodes)]

    def removed(self, after: _Pool | None, left: int) -> list[str]:
        """The nodes of this (base) pool that a head with `left` nodes no longer has: by name where the stack names
        hosts, else the last ones (a pool shrinks from its end)."""
        if after is not None and self.hosts and after.hosts:
            kept = set(after.hosts)
            return [h for h in self.hosts if h not in kept]
        return self.names()[left:]

    @property
    def gpus_per_node(self) -> float:
        return self.gpus / self.nodes if self.nodes else 0.0


@dataclass
class ChangeSet:
    steps: list[Step]
    same: int
    base_stack: str
    head_stack: str
    unknown_types: list[str]  # types the catalog has no rule for: classified by their inputs alone
    pools: list[dict[str, Any]] = field(default_factory=list)  # pools that lose nodes, whatever resource holds them
    drains: list[Drain] = field(default_factory=list)  # what a Slurm controller runs before `pulumi up` takes nodes
    now: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))  # for the next maintenance window

    def to_json(self) -> dict[str, Any]:
        summary: dict[str, int] = {op: 0 for op in ("create", "update", "replace", "delete")}
        for s in self.steps:
            summary[s.op] += 1
        summary["same"] = self.same
        return {
            "steps": [s.to_json() for s in self.steps],
            "changeSummary": summary,
            "rollouts": sum(1 for s in self.steps if s.rollout),
            "risks": {r: sum(1 for s in self.steps if r in s.risks) for r in _RISK_ORDER},
            "pools": self.pools,
            "slurmDrains": [d.to_json(self.now) for d in self.drains],
            "typesWithoutRules": self.unknown_types,
        }


_RISK_ORDER = ("data-loss", "job-kill", "audit-gap", "network-cut")


def _stack_free(urn: str, stack: str) -> str:
    prefix = f"urn:pulumi:{stack}::"
    return "urn:pulumi:::" + urn[len(prefix) :] if urn.startswith(prefix) else urn


def _pool_label(inputs: Mapping[str, Any]) -> str | None:
    """The pool a resource belongs to, from the tags or labels aicluster puts on it."""
    stack: list[Any] = [inputs]
    seen = 0
    while stack and seen < 2000:
        value = stack.pop()
        seen += 1
        if isinstance(value, Mapping):
            if value.get("key") in _POOL_KEYS and isinstance(value.get("value"), str):
                return str(value["value"])
            for key in _POOL_KEYS:
                if isinstance(value.get(key), str):
                    return str(value[key])
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def _pools(doc: Mapping[str, Any]) -> dict[str, _Pool]:
    out = {}
    for p in doc.get("pools") or []:
        if isinstance(p, Mapping) and isinstance(p.get("name"), str):
            given = p.get("hosts")
            hosts = tuple(h for h in given if isinstance(h, str)) if isinstance(given, list) else ()
            zone = p.get("zone") if isinstance(p.get("zone"), str) else None
            out[p["name"]] = _Pool(p["name"], int(p.get("nodes") or 0), int(p.get("gpus") or 0), hosts, zone)
    return out


def _resources(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The custom resources (components have no inputs of their own to change, as in `pulumi preview`)."""
    return [
        r
        for r in doc.get("resources") or []
        if isinstance(r, Mapping) and isinstance(r.get("urn"), str) and r.get("custom", True) is not False
    ]


def _source(rule: ChangeRule, what: str) -> str:
    where = f"{rule.source_of(what)}" + (f": {rule.file}" if rule.file and rule.source_of(what) == rule.source else "")
    return f"({where})"


class _Classifier:
    def __init__(
        self,
        base: Mapping[str, Any],
        head: Mapping[str, Any],
        rules: Mapping[str, ChangeRule],
        now: dt.datetime | None = None,
    ) -> None:
        self.rules = rules
        self.base, self.head = base, head
        self.now = now or dt.datetime.now(dt.UTC)
        self.base_stack, self.head_stack = str(base.get("stack", "")), str(head.get("stack", ""))
        self.old = {_stack_free(r["urn"], self.base_stack): r for r in _resources(base)}
        self.new_list = _resources(head)
        self.new = {_stack_free(r["urn"], self.head_stack): r for r in self.new_list}
        self.base_pools, self.head_pools = _pools(base), _pools(head)
        self.steps: dict[str, Step] = {}  # by stack-free URN
        self.unknown: set[str] = set()
        # the pool of each resource: its own tag or label, else a sibling's (a GCP MIG and its template)
        self.pool_of: dict[str, str] = {}
        for side in (self.old, self.new):
            by_parent: dict[str, str] = {}
            for key, r in side.items():
                label = _pool_label(r.get("inputs") or {})
                if label:
                    self.pool_of.setdefault(key, label)
                    if isinstance(r.get("parent"), str):
                        by_parent.setdefault(r["parent"], label)
            for key, r in side.items():
                parent = r.get("parent")
                if key not in self.pool_of and isinstance(parent, str) and parent in by_parent:
                    self.pool_of[key] = by_parent[parent]

    def run(self) -> ChangeSet:
        head_urn_to_key = {r["urn"]: k for k, r in self.new.items()}
        same = 0
        for key in self._dependencies_first(head_urn_to_key):
            r = self.new[key]
            if key not in self.old:
                self.steps[key] = self._created(r)
                continue
            step = self._compared(key, self.old[key], r, head_urn_to_key)
            if step is None:
                same += 1
            else:
                self.steps[key] = step
        for key, r in self.old.items():
            if key not in self.new:
                self.steps[key] = self._deleted(key, r)
        fields = _plan_field_changes(self.base, self.head)
        for key, step in self.steps.items():
            self._guard(key, step)
            if step.op in ("replace", "delete") or step.rejected or step.may_replace:
                step.stack_fields = self._stack_fields(key, step, fields)
        order = [*self.new, *(k for k in self.old if k not in self.new)]
        steps = [self.steps[k] for k in order if k in self.steps]
        steps.sort(key=lambda s: not s.provider)  # provider changes first (a stable sort keeps the rest in order)
        shrunk = self._shrunk_pools()
        names = {name: pool.names() for name, pool in self.base_pools.items()}
        drains = slurm_drains(self.base, self.head, steps, shrunk, names)
        return ChangeSet(steps, same, self.base_stack, self.head_stack, sorted(self.unknown), shrunk, drains, self.now)

    def _guard(self, key: str, step: Step) -> None:
        """A replace or delete the rule's guards make the gate fail on (besides data loss): a control plane, a node
        pool with running GPU nodes, a VM under a component that keeps the scheduler's state on its disk."""
        rule = self.rules.get(step.type)
        maybe = step.op == "update" and bool(step.may_replace)
        if rule is None or (step.op not in ("replace", "delete") and not maybe):
            return
        chain = _component_types(step.urn)
        for guard in rule.guards:
            if guard.under and not any(t in chain for t in guard.under):
                continue
            if guard.gpu_nodes and not self._runs_gpus(key, step):
                continue
            if maybe:  # shown, not gated: the offline diff cannot tell whether the provider replaces it
                step.risks_if_replaced = [guard.risk]
                step.why.append(f"if replaced, loses {guard.loses} ({guard.source})")
                return
            step.stateful = True
            step.loses = guard.loses
            step.risks = [r for r in _RISK_ORDER if r in {*step.risks, guard.risk}]
            step.why.append(f"{step.op} loses {guard.loses} ({guard.source})")
            return

    def _stack_fields(self, key: str, step: Step, fields: Mapping[str, list[str]]) -> list[str]:
        """The stack fields a user changed that lead to this step: those of the pool or file system the resource
        belongs to (by its pool label, else its name), else the cluster-wide ones (a pod range)."""
        prefix = f"{(self.head.get('cluster') or self.base.get('cluster') or {}).get('name', '')}-"
        owners = [o for o in fields if o and step.name.startswith(f"{prefix}{o.split(':', 1)[1]}-")]
        label = self.pool_of.get(key)
        if label and f"pools:{label}" in fields:
            owners = [f"pools:{label}"]
        owner = max(owners, key=len, default="")
        return fields.get(owner) or fields.get("", [])

    def _runs_gpus(self, key: str, step: Step) -> bool:
        """Whether the step removes or recreates running GPU nodes: its own count, else its pool's in the base."""
        if step.gpus:
            return True
        pool = self.base_pools.get(self.pool_of.get(key) or "")
        return pool is not None and pool.nodes > 0 and pool.gpus > 0

    def _shrunk_pools(self) -> list[dict[str, Any]]:
        """Each pool of the base that the head removes or gives fewer nodes, with the nodes it loses (by the plan's
        names: a pool loses its last nodes). An on-prem pool or a Slurm pool's nodes are no cloud resource's count,
        so this is where their removal shows."""
        out = []
        for name, before in self.base_pools.items():
            after = self.head_pools.get(name)
            left = after.nodes if after is not None else 0
            if left >= before.nodes:
                continue
            out.append(
                {
                    "pool": name,
                    "nodesBefore": before.nodes,
                    "nodesAfter": left,
                    "gpusRemoved": round((before.nodes - left) * before.gpus_per_node),
                    "nodesRemoved": before.removed(after, left),
                }
            )
        return out

    def _dependencies_first(self, head_urn_to_key: Mapping[str, str]) -> list[str]:
        """The head's resources with each one after those its inputs come from (the preview lists them by URN):
        a replaced template is classified before the group that uses it."""
        graph: dict[str, set[str]] = {}
        for key, r in self.new.items():
            deps = r.get("propertyDependencies")
            urns = (
                [u for v in deps.values() if isinstance(v, list) for u in v if isinstance(u, str)]
                if isinstance(deps, Mapping)
                else []
            )
            graph[key] = {head_urn_to_key[u] for u in urns if u in head_urn_to_key and head_urn_to_key[u] != key}
        try:
            return list(graphlib.TopologicalSorter(graph).static_order())
        except graphlib.CycleError:
            return list(self.new)

    def _rule(self, type_: str) -> ChangeRule | None:
        rule = self.rules.get(type_)
        if rule is None and not type_.startswith("pulumi:providers:"):
            self.unknown.add(type_)
        return rule

    def _base_step(self, r: Mapping[str, Any], op: Op) -> Step:
        rule = self._rule(str(r.get("type", "")))
        step = Step(
            urn=str(r["urn"]),
            type=str(r.get("type", "")),
            name=str(r.get("name", "")),
            op=op,
            protect=bool(r.get("protect")),
            provider=str(r.get("type", "")).startswith("pulumi:providers:"),
            stateful=rule is not None and "data-loss" in rule.risks,
        )
        return step

    def _created(self, r: Mapping[str, Any]) -> Step:
        step = self._base_step(r, "create")
        step.detailed_diff = {leaf.path: "add" for leaf in leaves({}, r.get("inputs") or {}) if leaf.path}
        return step

    def _deleted(self, key: str, r: Mapping[str, Any]) -> Step:
        step = self._base_step(r, "delete")
        rule = self._rule(step.type)
        if rule is not None:
            step.risks = _own_risks(rule)
            step.why.append(f"the head no longer declares it: {self._loses(rule)}")
        self._nodes_of(step, key, r, self.base_pools, whole=True)
        return step

    def _loses(self, rule: ChangeRule) -> str:
        words = {
            "data-loss": "its data is lost",
            "job-kill": "the jobs on its nodes are killed",
            "audit-gap": "audit records stop until a new one exists",
            "network-cut": "traffic through it is cut",
        }
        lost = [words[r] for r in rule.risks]
        if rule.recreates_nodes_of_others:
            lost.append(
                "the groups that use it change with it (their own steps say whether running nodes are recreated)"
            )
        return "; ".join(lost) or "nothing of note is lost"

    def _nodes_of(self, step: Step, key: str, r: Mapping[str, Any], pools: Mapping[str, _Pool], whole: bool) -> None:
        """The nodes and GPUs a replace, delete or rollout of this resource removes or recreates."""
        rule = self.rules.get(step.type)
        name = self.pool_of.get(key)
        pool = pools.get(name) if name else None
        if name is None or rule is None or not (rule.capacity or "job-kill" in rule.risks):
            return
        if pool is None:  # a group of no pool of the plan (a Kubernetes system pool): named, not counted (GKE's
            step.pool = name  # nodeCount is per zone, so its input is not the group's node count)
            return
        step.pool = pool.name
        nodes = None
        for path in rule.capacity:
            value = _get(r.get("inputs") or {}, path)
            if _is_number(value):
                nodes = int(value)
        if nodes is None and whole and "job-kill" in rule.risks and (rule.capacity or rule.rollout):
            nodes = pool.nodes
        if nodes is not None:
            step.nodes = nodes
            step.gpus = round(nodes * pool.gpus_per_node)

    def _propagated(self, key: str, r: Mapping[str, Any], head_urn_to_key: Mapping[str, str]) -> list[Leaf]:
        """Inputs that change because a resource they come from is replaced (a new ID) or updated (a template's new
        version): computed values under the dependent input."""
        out: list[Leaf] = []
        deps = r.get("propertyDependencies") or {}
        if not isinstance(deps, Mapping):
            return out
        before = self._base_dependencies(key)
        for prop, urns in sorted(deps.items()):
            if not isinstance(urns, list):
                continue
            # a computed input that now comes from another resource (a new subnet of another zone) holds that
            # resource's values, not the ones it held: a change, as Terraform's "(known after apply)"
            now = sorted({head_urn_to_key[u] for u in urns if isinstance(u, str) and u in head_urn_to_key})
            moved = [k for k in now if k not in before.get(str(prop), set())]
            if moved and str(prop) in before:
                sources = ", ".join(str(self.new[k].get("name", k)) for k in moved)
                out.extend(
                    Leaf(leaf, COMPUTED, COMPUTED, cause=f"{prop} now comes from {sources}")
                    for leaf in _computed_leaves((r.get("inputs") or {}).get(prop), str(prop))
                )
                continue
            for urn in urns:
                if not isinstance(urn, str):
                    continue
                source = self.steps.get(head_urn_to_key.get(urn, ""))
                if source is None or source.op not in ("replace", "update"):
                    continue
                rule = self.rules.get(source.type)
                names = () if source.op == "replace" else (rule.dependents_see_on_update if rule else ())
                if source.op == "update" and not names:
                    continue
                for leaf in _computed_leaves((r.get("inputs") or {}).get(prop), str(prop)):
                    if source.op == "replace" or leaf.rsplit(".", 1)[-1] in names:
                        verb = "replaced: new ID" if source.op == "replace" else "updated: new version"
                        out.append(Leaf(leaf, COMPUTED, COMPUTED, cause=f"{source.name} {verb}"))
                out.extend(self._aliased(r, str(prop), source, names))
        return out

    def _aliased(self, r: Mapping[str, Any], prop: str, source: Step, names: Sequence[str]) -> list[Leaf]:
        """The dependent's inputs under `prop` that name a version of the updated `source` by an alias its rule lists
        (an instance on its launch template's `$Default`): the alias now names the new version."""
        own = self.rules.get(str(r.get("type", "")))
        if own is None or source.op != "update":
            return []
        out = []
        for path, aliases in own.version_aliases.items():
            value = _get(r.get("inputs") or {}, path)
            if _under(path, prop) and path.rsplit(".", 1)[-1] in names and value in aliases:
                cause = f"{_shown(value)} now names {source.name}'s new version"
                out.append(Leaf(path, value, value, cause=cause))
        return out

    def _base_dependencies(self, key: str) -> dict[str, set[str]]:
        """The base's propertyDependencies of a resource, by input, as stack-free URNs."""
        deps = self.old[key].get("propertyDependencies") if key in self.old else None
        if not isinstance(deps, Mapping):
            return {}
        return {
            str(prop): {_stack_free(u, self.base_stack) for u in urns if isinstance(u, str)}
            for prop, urns in deps.items()
            if isinstance(urns, list)
        }

    def _compared(
        self, key: str, old: Mapping[str, Any], new: Mapping[str, Any], head_urn_to_key: Mapping[str, str]
    ) -> Step | None:
        old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
        rule = self._rule(str(new.get("type", "")))
        if rule is not None and rule.unordered:
            # a list the provider holds as a set (Terraform's TypeSet): the same members in another order are no change
            old_in, new_in = _as_sets(old_in, rule.unordered), _as_sets(new_in, rule.unordered)
        changed = leaves(old_in, new_in)
        seen = {leaf.path for leaf in changed}
        for leaf in self._propagated(key, new, head_urn_to_key):
            if leaf.path not in seen:
                seen.add(leaf.path)
                changed.append(leaf)
        # what the head program tells the engine to ignore (ignore_changes) is no step: Pulumi diffs it away too
        ignored = new.get("ignoreChanges") or []
        changed = [leaf for leaf in changed if not any(_under(leaf.path, p) for p in ignored)]
        if not changed:
            return None
        step = self._base_step(new, "update")
        replacing: set[str] = set()
        for leaf in changed:
            reason = self._replaces(rule, leaf, new_in, step) if rule is not None else False
            because = f" ({leaf.cause})" if leaf.cause else ""
            values = f" {_shown(leaf.old)} → {_shown(leaf.new)}" if not leaf.cause else ""
            if reason is True:
                replacing.add(leaf.path)
                fired = step.conditions[-1:] if step.conditions and reason_kind(rule, leaf) else []
                how = f", {self._condition(rule, leaf)}" if fired else f" {self._rule_source(rule)}"
                step.why.append(f"{leaf.path}{values}{because} forces a replacement{how}")
            elif reason is None:
                step.may_replace.append(leaf.path)
                step.why.append(f"{leaf.path}{values}{because} may force a replacement: {self._condition(rule, leaf)}")
            if rule is not None and any(_under(_pattern(leaf.path), p) for p in rule.rejected_by_api):
                step.rejected.append(leaf.path)
                step.refused_fix = rule.rejected_fix
                first = len(step.rejected) == 1  # the fix once per step
                fix = f"; instead, {rule.rejected_fix}" if rule.rejected_fix and first else ""
                step.why.append(
                    f"{leaf.path}: the provider previews an update, but the cloud's API refuses it{fix} "
                    f"{_source(rule, 'rejected_by_api')}"
                )
        step.detailed_diff = {leaf.path: _kind(leaf, leaf.path in replacing) for leaf in changed}
        step.replace_paths = sorted(replacing)
        if replacing:
            # a replacement creates a new resource: the cloud's API sees no update to refuse
            refused = {f"{p}: the provider previews an update" for p in step.rejected}
            step.why = [w for w in step.why if not w.startswith(tuple(refused))]
            step.rejected = []
            step.refused_fix = ""
            step.op = "replace"
            assert rule is not None
            step.risks = _own_risks(rule)
            self._nodes_of(step, key, old, self.base_pools, whole=True)
            return step
        if rule is None:
            return step
        self._updated(step, key, rule, changed, old_in, new_in)
        return step

    def _rule_source(self, rule: ChangeRule | None) -> str:
        return _source(rule, "replace") if rule is not None else ""

    def _condition(self, rule: ChangeRule | None, leaf: Leaf) -> str:
        for cond in rule.replace_if if rule else ():
            if _under(_pattern(leaf.path), cond.path):
                return f"{cond.condition} {_source(rule, 'replace_if')}" if rule else cond.condition
        return "a condition the offline diff cannot evaluate"

    def _replaces(self, rule: ChangeRule, leaf: Leaf, head_inputs: Mapping[str, Any], step: Step) -> bool | None:
        """True: this change replaces the resource; None: it may (a condition the diff cannot evaluate)."""
        path = _pattern(leaf.path)
        if any(_under(path, r) or _under(r, path) for r in rule.replace):
            return True
        if any(path == r or (_under(r, path) and r != path) for r in rule.replace_on_add_or_remove):
            return True
        verdict: bool | None = False
        for cond in rule.replace_if:
            if _under(path, cond.path) or _under(cond.path, path):
                holds = _holds(cond, leaf, head_inputs)
                if cond.path == "region" and (leaf.old is _MISSING or leaf.new is _MISSING):
                    holds = None  # unset <-> the provider's region is not a change; the diff cannot see the provider's
                if holds is True:
                    step.conditions.append(cond.when)
                    return True
                if holds is None:
                    verdict = None
        return verdict

    def _updated(
        self,
        step: Step,
        key: str,
        rule: ChangeRule,
        changed: Sequence[Leaf],
        old_in: Mapping[str, Any],
        new_in: Mapping[str, Any],
    ) -> None:
        """An in-place update: a rollout where it recreates running nodes, a removal of nodes where a count drops."""
        rolled = [
            leaf.path
            for leaf in changed
            if any(r == "*" or _under(_pattern(leaf.path), r) for r in rule.rollout)
            and (not rule.rollout_requires or _get(new_in, rule.rollout_requires) not in (_MISSING, None))
        ]
        if not rule.rollout and rule.rollout_note:  # a template: how its new version reaches (or not) running nodes
            step.why.append(f"a new version: {rule.rollout_note} {_source(rule, 'rollout_note')}")
        cases = [
            (leaf.path, case)
            for leaf in changed
            for case in rule.rollout_cases
            if _under(_pattern(leaf.path), case.path)
        ]
        rolled = [p for p in rolled if p not in {path for path, _ in cases}]
        held = [f"{p} is {_shown(v)}" for p, v in rule.rollout_unless.items() if _get(new_in, p) == v]
        if rolled and held:
            step.why.append(
                f"{', '.join(rolled)}: running nodes keep the old configuration ({', '.join(held)}): "
                f"{rule.rollout_note} {_source(rule, 'rollout')}"
            )
        elif rolled:
            step.rollout = True
            step.risks = ["job-kill"]
            batch = [
                f"{_shown(v)} at a time ({p})" for p in rule.rollout_batch if (v := _get(new_in, p)) is not _MISSING
            ]
            pace = f"; {', '.join(batch)}" if batch else ""
            step.why.append(f"{', '.join(rolled)}: a rollout{pace}, {rule.rollout_note} {_source(rule, 'rollout')}")
            self._nodes_of(step, key, {"inputs": new_in}, self.head_pools, whole=True)
        for case in dict.fromkeys(c for _, c in cases):
            paths = ", ".join(p for p, c in cases if c == case)
            moved = self._zone_move(key, case.path, old_in, new_in)
            if moved is not None and moved[0] == 0:  # zones added, none left: nodes come, none go
                step.why.append(f"{paths}: {moved[2]}; {case.note} ({case.source})")
                continue
            # its own pace, whatever the rule's rollout settings (an ASG moves zones without an instance refresh)
            step.rollout = True
            step.risks = ["job-kill"]
            counted = f"; {moved[2]}" if moved is not None else ""
            step.why.append(f"{paths}: a rollout, {case.note}{counted} ({case.source})")  # the source last
            self._nodes_of(step, key, {"inputs": new_in}, self.head_pools, whole=True)
            if moved is not None:
                pool = self.base_pools[self.pool_of[key]]
                step.pool, step.nodes, step.nodes_up_to = pool.name, moved[0], moved[1]
                step.gpus = round(moved[0] * pool.gpus_per_node)
        for path in rule.capacity:
            a, b = _get(old_in, path), _get(new_in, path)
            if _is_number(a) and _is_number(b) and b < a:
                self._removed(step, key, int(a), int(b), path)

    def _zone_move(
        self, key: str, path: str, old_in: Mapping[str, Any], new_in: Mapping[str, Any]
    ) -> tuple[int, bool, str] | None:
        """The nodes a group's new zones (or subnets) take from it: (nodes, whether that is only a bound, why), or
        None where the group belongs to no pool of the plan. The plan puts a pool in one zone, so a group that held
        one zone (or subnet) and leaves it loses all its nodes; a group that spans several loses those in the zones it
        leaves, which the plan does not count: "up to" the pool's nodes. Zones only added remove no node."""
        name = self.pool_of.get(key)
        pool = self.base_pools.get(name or "")
        old, new = _get(old_in, path), _get(new_in, path)
        if pool is None or not isinstance(old, list) or not isinstance(new, list) or not old:
            return None
        after = self.head_pools.get(pool.name)
        dropped: list[str] | None = None
        if all(isinstance(v, str) and v != COMPUTED for v in (*old, *new)):  # zone names (GKE's nodeLocations)
            dropped = sorted(set(old) - set(new))
        elif pool.zone and after is not None and after.zone and after.zone != pool.zone:
            dropped = [pool.zone]  # subnet IDs known after the deployment: the plan's zones say what moved
        nodes = f"{pool.nodes} node{'s' if pool.nodes != 1 else ''}"
        if dropped == []:
            return 0, False, f"it keeps every zone it has ({', '.join(old)}), so no node is removed"
        if len(old) == 1 and dropped is not None:
            return pool.nodes, False, f"all {nodes} of pool {pool.name} are in {dropped[0]}, the zone it leaves"
        if len(old) == 1:
            return (
                pool.nodes,
                True,
                f"up to {nodes}: pool {pool.name} stays in {pool.zone or 'its zone'} as far as the plan says, and the "
                "preview does not show whether the group's new subnet is in the zone it leaves",
            )
        leaves = f" ({', '.join(dropped)})" if dropped else ""
        return (
            pool.nodes,
            True,
            f"up to {nodes}: the group spans {len(old)} zones (subnets) and the plan does not know how many of its "
            f"nodes are in those it leaves{leaves}",
        )

    def _removed(self, step: Step, key: str, old: int, new: int, path: str) -> None:
        if "job-kill" not in step.risks:
            step.risks.append("job-kill")
        name = self.pool_of.get(key)
        before, after = self.base_pools.get(name or ""), self.head_pools.get(name or "")
        step.pool = name
        gone = old - new
        step.nodes = gone if step.nodes is None else max(step.nodes, gone)
        if before is not None:
            step.gpus = round(step.nodes * before.gpus_per_node)
        if before is not None and after is not None and after.nodes < before.nodes:
            step.nodes_removed = before.removed(after, after.nodes)
        step.why.append(f"{path}: {old} → {new} removes {gone} node{'s' if gone != 1 else ''} and the jobs on them")


# The stack fields the preview JSON's plan records show, by record kind: a changed value there is a changed field
# (the plan copies these from the stack, or places them from it: an unset zone is the plan's choice)
_PLAN_FIELDS = {
    "pools": ("provider", "region", "zone", "instance_type", "market"),
    "filesystems": ("provider", "region", "zone", "kind", "service", "capacity_tib"),
}
_CLUSTER_FIELDS = {"pod_cidr": "network.pod_cidr", "version": "scheduler.version", "endpoint": "scheduler.endpoint"}
_STACK_LISTS = {"pools": "pools", "filesystems": "storage"}


def _plan_field_changes(base: Mapping[str, Any], head: Mapping[str, Any]) -> dict[str, list[str]]:
    """The stack fields whose planned value differs between the previews, by owner (`pools:h100`,
    `filesystems:scratch`; "" for cluster-wide ones such as the pod range)."""
    out: dict[str, list[str]] = {}
    for kind, keys in _PLAN_FIELDS.items():
        before = {r.get("name"): r for r in base.get(kind) or [] if isinstance(r, Mapping)}
        for r in head.get(kind) or []:
            if not isinstance(r, Mapping) or r.get("name") not in before:
                continue
            name, old = str(r["name"]), before[r.get("name")]
            changed = [
                f"{_STACK_LISTS[kind]}[{name}].{k} at {_shown(old.get(k))}" for k in keys if old.get(k) != r.get(k)
            ]
            if changed:
                out[f"{kind}:{name}"] = changed
    kb, kh = base.get("kubernetes"), head.get("kubernetes")
    if isinstance(kb, Mapping) and isinstance(kh, Mapping):
        changed = [f"{f} at {_shown(kb.get(k))}" for k, f in _CLUSTER_FIELDS.items() if kb.get(k) != kh.get(k)]
        if changed:
            out[""] = changed
    return out


def _component_types(urn: str) -> list[str]:
    """The types of the components a resource is under, from its URN (`...::a$b$type::name` -> `[a, b]`)."""
    parts = urn.split("::")
    return parts[2].split("$")[:-1] if len(parts) >= 4 else []


def _own_risks(rule: ChangeRule) -> list[str]:
    """What replacing or deleting this resource costs by itself: a template's or placement's nodes belong to the
    groups that use it, whose own steps (a rollout, or running nodes left as they are) carry the jobs at risk."""
    return [r for r in rule.risks if not (r == "job-kill" and rule.recreates_nodes_of_others)]


def reason_kind(rule: ChangeRule | None, leaf: Leaf) -> bool:
    """Whether a conditional rule (not an unconditional one) covers this path."""
    path = _pattern(leaf.path)
    if rule is None or any(_under(path, r) or _under(r, path) for r in rule.replace):
        return False
    return any(_under(path, c.path) or _under(c.path, path) for c in rule.replace_if)


def _shown(value: Any, limit: int = 40) -> str:
    if value is _MISSING:
        return "(none)"
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON numbers: 48000, not 48000.0
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_sets(inputs: Mapping[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """The inputs with each list at one of `paths` (`a.b`, no index) in a canonical order."""
    out = dict(inputs)
    for path in paths:
        head, _, rest = path.partition(".")
        value = out.get(head)
        if rest and isinstance(value, Mapping):
            out[head] = _as_sets(value, [rest])
        elif not rest and isinstance(value, list):
            out[head] = sorted(value, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return out


def _computed_leaves(value: Any, path: str) -> list[str]:
    if value == COMPUTED:
        return [path]
    if isinstance(value, Mapping):
        return [p for k, v in sorted(value.items()) for p in _computed_leaves(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _computed_leaves(v, f"{path}[{i}]")]
    return []


def classify(
    base: Mapping[str, Any], head: Mapping[str, Any], rules: Mapping[str, ChangeRule], now: dt.datetime | None = None
) -> ChangeSet:
    """The steps from the base preview JSON to the head's, each classified by the catalog's change rules; `now`
    (default: the clock) dates the next maintenance window of a pool whose rollout waits for one."""
    return _Classifier(base, head, rules, now).run()


@dataclass(frozen=True)
class Blocked:
    step: Step
    fix: str


@dataclass(frozen=True)
class Waived:
    step: Step
    reason: str
    expires: str


def blocked_steps(
    changes: ChangeSet, waivers: Iterable[Any], today: dt.date | None = None
) -> tuple[list[Blocked], list[Waived]]:
    """The change-safety rule: a replace or delete of a resource whose loss loses data, or an update the cloud's API
    refuses (the provider previews it, `pulumi up` fails on it), fails the preview, unless a waiver of CHANGE_SAFETY
    names the resource (logical name or URN) and has not expired."""
    today = today or dt.date.today()
    live: dict[str, Any] = {}
    expired: dict[str, Any] = {}
    for w in waivers:
        if getattr(w, "policy", None) == CHANGE_SAFETY:
            current = dt.date.fromisoformat(str(w.expires)) >= today
            (live if current else expired)[str(w.resource)] = w
    blocked, waived = [], []
    for step in changes.steps:
        if not step.rejected and (step.op not in ("replace", "delete") or not step.stateful):
            continue
        w = live.get(step.name) or live.get(step.urn)
        if w is not None:  # a refused step too (a change made by hand): the fix does not suggest it
            waived.append(Waived(step, str(w.reason), str(w.expires)))
            continue
        old = expired.get(step.name) or expired.get(step.urn)
        lapsed = f"the waiver for {step.name} expired on {old.expires}: renew it or " if old is not None else ""
        blocked.append(Blocked(step, lapsed + _fix(step)))
    return blocked, waived


def _what(step: Step) -> str:
    """What to leave as it is: the stack fields behind the step where known (the inputs they set in brackets),
    else the provider inputs that replace it."""
    inputs = ", ".join(step.replace_reasons)
    if step.stack_fields:
        # the value the base had: a field the stack leaves unset (a file system's zone follows its pools) is pinned
        verb = "it sets" if len(step.stack_fields) == 1 else "they set"
        return f"{', '.join(step.stack_fields)} (set it where unset; {verb} {inputs})"
    return f"{inputs} as {'it is' if len(step.replace_reasons) == 1 else 'they are'}"


def _fix(step: Step) -> str:
    if step.rejected:
        # a waiver cannot help: the cloud's API refuses the update whatever the gate says
        return (
            f"the cloud's API refuses to change {', '.join(step.rejected)} in place (`pulumi up` would fail on it); "
            f"{step.refused_fix or 'keep the value, or create a new resource beside it and remove the old one'}"
        )
    lost = f"it loses {step.loses}: " if step.loses else ""
    if step.op == "delete":
        how = f"{lost}keep it in the stack" + ("" if step.loses else " (or move its data first)")
    elif "decrease" in step.conditions:
        how = f"{lost}keep its size or grow it: only an increase is in place"
    elif step.loses:
        how = f"{lost}keep {_what(step)}"
    else:
        how = f"keep {_what(step)}, or create a new one beside it and move the data"
    return (
        f"{how}; to accept the loss, waive it: compliance.waivers with policy {CHANGE_SAFETY}, resource "
        f"{step.name}, a reason and an expiry"
    )
