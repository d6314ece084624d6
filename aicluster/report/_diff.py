"""The PR comment for `aicluster diff BASE.json HEAD.json`: what a change does to the stack's
resources, cost, power, owned sites and their fabrics, a Kubernetes stack's control plane, node groups and add-ons,
its workloads (fit, layout, days, cost, goodput), and findings, and the head's verdict.

Resources are matched by URN, findings by (policy, URN, message), pools by name. URNs embed the
stack name, so when the two previews are of different stacks it is left out of the match (and the
comment says so): a renamed stack then shows what really changed, not everything replaced."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._changes import risky_steps, slurm_drains
from ._doc import Addon, Kubernetes, NodeGroup, PreviewDoc, Resource, Violation
from ._sites import site_changes
from ._templates import render_markdown
from ._views import Verdict, change_pct, group_findings, number, plural, signed, usd, verdict, whole
from ._workloads import workload_changes

COLLAPSE_OVER = 10
MAX_VALUE_CHARS = 60  # a longer value (user data, a policy document) is cut, as Infracost and Pulumi do
MAX_PROPERTIES = 20  # changed properties shown per resource; the rest are counted
MAX_DEPTH = 8  # nested inputs deeper than this are compared as one value
_MISSING = object()


def _urn_key(urn: str, stack: str) -> str:
    prefix = f"urn:pulumi:{stack}::"
    return "urn:pulumi:::" + urn[len(prefix) :] if urn.startswith(prefix) else urn


@dataclass(frozen=True)
class PropertyChange:
    """One input that differs, by its path (`metadataOptions.httpTokens`, `tags.owner`,
    `networkInterfaces[1].deviceIndex`), with both values as shown: JSON, cut to MAX_VALUE_CHARS,
    `(none)` where a side lacks it. Secret inputs are placeholders in the preview, so they stay hidden."""

    path: str
    old: str
    new: str


def show_value(value: object) -> str:
    if value is _MISSING:
        return "(none)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def property_changes(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[PropertyChange]:
    """The inputs that differ, old -> new, down to the changed leaf (maps by key, lists of the same
    length by index; a list that grew or shrank is one change), in key order."""
    found: list[PropertyChange] = []
    _compare(base, head, "", 0, found)
    return found


def _compare(old: object, new: object, path: str, depth: int, found: list[PropertyChange]) -> None:
    if old == new:
        return
    if depth < MAX_DEPTH and isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(old.keys() | new.keys(), key=str):
            _compare(
                old.get(key, _MISSING), new.get(key, _MISSING), f"{path}.{key}" if path else str(key), depth + 1, found
            )
    elif depth < MAX_DEPTH and isinstance(old, list) and isinstance(new, list) and len(old) == len(new) and path:
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _compare(a, b, f"{path}[{i}]", depth + 1, found)
    else:
        found.append(PropertyChange(path, show_value(old), show_value(new)))


def _stepped(found: list[PropertyChange], step: Mapping[str, Any] | None) -> list[PropertyChange]:
    """The property changes of a resource as its step has them: none without a step; the step's own paths where the
    inputs show no difference (a computed input whose source is replaced or updated)."""
    if step is None or step.get("op") not in ("update", "replace"):
        return []
    paths = [str(p) for p in step.get("detailedDiff") or {}]
    shown = {c.path for c in found}
    return found + [
        PropertyChange(p, "(from a changed resource)", "(known after apply)") for p in paths if p not in shown
    ]


def _heeded(changes: list[PropertyChange], ignored: tuple[str, ...]) -> list[PropertyChange]:
    """The changes the engine would diff: not those under a path the head's ignore_changes names."""
    return [c for c in changes if not any(c.path == p or c.path.startswith((p + ".", p + "[")) for p in ignored)]


@dataclass(frozen=True)
class ResourceChanges:
    added: list[Resource]
    removed: list[Resource]
    changed: list[tuple[Resource, list[PropertyChange]]]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def resource_changes(base: PreviewDoc, head: PreviewDoc, changes: Mapping[str, Any] | None = None) -> ResourceChanges:
    """Added, removed and changed resources. With the classification (`changes`, aicluster.changes), a resource in
    both is changed exactly when it has a step: one whose inputs change only through a resource they come from (a
    subnet replaced: known after apply) counts, one whose lists differ only in an order the provider ignores does
    not."""
    old = {_urn_key(r.urn, base.stack): r for r in base.resources}
    new = {_urn_key(r.urn, head.stack): r for r in head.resources}
    changed = [
        (new[k], _heeded(property_changes(old[k].inputs, new[k].inputs), new[k].ignore_changes))
        for k in sorted(old.keys() & new.keys())
    ]
    if changes is not None:
        steps = {_urn_key(str(st.get("urn", "")), head.stack): st for st in changes.get("steps") or []}
        changed = [
            (r, _stepped(found, steps.get(k)))
            for (r, found), k in zip(changed, sorted(old.keys() & new.keys()), strict=True)
        ]
    return ResourceChanges(
        added=[new[k] for k in sorted(new.keys() - old.keys())],
        removed=[old[k] for k in sorted(old.keys() - new.keys())],
        changed=[(r, keys) for r, keys in changed if keys],
    )


@dataclass(frozen=True)
class Change:
    base: str
    head: str
    delta: str
    pct: str


def _change(
    base: float | None,
    head: float | None,
    fmt: Callable[[float], str],
    added: bool,
    unpriced: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
) -> Change:
    """`unpriced`: what each side's figure leaves out for want of a price; the figures and the change then
    say so (a priced part is never shown as the whole)."""
    b, h = base or 0.0, head or 0.0
    partial = " (priced parts only)" if any(unpriced) else ""
    return Change(
        base=_shown(base, unpriced[0], fmt),
        head=_shown(head, unpriced[1], fmt),
        delta=signed(h - b, fmt) + partial,
        pct="new" if added else change_pct(b, h),
    )


def _shown(value: float | None, unpriced: tuple[str, ...], fmt: Callable[[float], str]) -> str:
    """`—` for a side without the item, `unpriced` for an item with no price, never `$0.00` for it."""
    if value is None:
        return "unpriced" if unpriced else "—"
    return fmt(value) + (" + unpriced items" if unpriced else "")


@dataclass(frozen=True)
class Delta:
    """One row of the cost and power table; a pool only one side has counts as zero on the other."""

    label: str
    status: Literal["", "added", "removed"]
    base_cost: float | None
    head_cost: float | None
    base_kw: float | None
    head_kw: float | None
    base_unpriced: tuple[str, ...] = ()
    head_unpriced: tuple[str, ...] = ()

    @property
    def cost(self) -> Change:
        return _change(
            self.base_cost, self.head_cost, usd, self.status == "added", (self.base_unpriced, self.head_unpriced)
        )

    @property
    def power(self) -> Change:
        return _change(self.base_kw, self.head_kw, number, self.status == "added")

    @property
    def unchanged(self) -> bool:
        return (
            self.status == ""
            and self.base_cost == self.head_cost
            and self.base_kw == self.head_kw
            and self.base_unpriced == self.head_unpriced
        )


def pool_deltas(base: PreviewDoc, head: PreviewDoc) -> list[Delta]:
    """Pools by name (base order, then pools new in head), with the stack totals last."""
    old = {p.name: p for p in base.pools}
    new = {p.name: p for p in head.pools}
    names = [*old, *(n for n in new if n not in old)]
    rows = []
    for name in names:
        b, h = old.get(name), new.get(name)
        status: Literal["", "added", "removed"] = "added" if b is None else "removed" if h is None else ""
        rows.append(
            Delta(
                name,
                status,
                b.cost_usd_per_month if b else None,
                h.cost_usd_per_month if h else None,
                b.power_kw_facility if b else None,
                h.power_kw_facility if h else None,
                b.unpriced if b else (),
                h.unpriced if h else (),
            )
        )
    bs, hs = base.summary, head.summary
    total = Delta(
        "Total",
        "",
        bs.cost_usd_per_month,
        hs.cost_usd_per_month,
        bs.power_kw_facility,
        hs.power_kw_facility,
        bs.unpriced,
        hs.unpriced,
    )
    return [*rows, total]


@dataclass(frozen=True)
class FindingChanges:
    compared: bool
    why_not: str
    new: list[Violation]
    fixed: list[Violation]
    # the same policy on the same resource with another message (a size in it changed): (base, head)
    changed: list[tuple[Violation, Violation]] = dataclasses.field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.new or self.fixed or self.changed)


def finding_changes(base: PreviewDoc, head: PreviewDoc) -> FindingChanges:
    if base.policy is None or head.policy is None:
        lacking = [side for side, doc in (("base", base), ("head", head)) if doc.policy is None]
        why = "neither preview has" if len(lacking) == 2 else f"the {lacking[0]} preview has no"
        return FindingChanges(False, f"{why} policy results", [], [])

    def key(v: Violation, stack: str) -> tuple[str, str]:
        return (v.policy, _urn_key(v.urn, stack))

    # by policy and resource: the same message is the same finding; another message of the same policy on the same
    # resource is that finding changed (a size in its text), never one fixed and one new
    olds: dict[tuple[str, str], list[Violation]] = {}
    for v in base.policy.violations:
        olds.setdefault(key(v, base.stack), []).append(v)
    news: dict[tuple[str, str], list[Violation]] = {}
    for v in head.policy.violations:
        news.setdefault(key(v, head.stack), []).append(v)
    new: list[Violation] = []
    fixed: list[Violation] = []
    changed: list[tuple[Violation, Violation]] = []
    for k in [*olds, *(k for k in news if k not in olds)]:
        before, after = olds.get(k, []), news.get(k, [])
        same = {v.message for v in before} & {v.message for v in after}
        gone = [v for v in before if v.message not in same]
        came = [v for v in after if v.message not in same]
        changed += list(zip(gone, came, strict=False))
        fixed += gone[len(came) :]
        new += came[len(gone) :]
    return FindingChanges(compared=True, why_not="", new=new, fixed=fixed, changed=changed)


def _headline(changes: ResourceChanges) -> str:
    counted = [
        (n, word)
        for n, word in (
            (len(changes.added), "added"),
            (len(changes.changed), "changed"),
            (len(changes.removed), "removed"),
        )
        if n
    ]
    if not counted:
        return "no resource changes"
    (n, word), *rest = counted
    return ", ".join([f"{plural(n, 'resource')} {word}", *(f"{m} {w}" for m, w in rest)])


@dataclass(frozen=True)
class Item:
    """One line of a resources section, with the lines nested under it (changed properties)."""

    text: str
    details: tuple[str, ...] = ()


def _changed(resource: Resource, changes: list[PropertyChange]) -> Item:
    lines = [f"{c.path}: {c.old} → {c.new}" for c in changes[:MAX_PROPERTIES]]
    if len(changes) > MAX_PROPERTIES:
        lines.append(f"… and {len(changes) - MAX_PROPERTIES} more")
    return Item(resource.urn, tuple(lines))


def _resource_sections(changes: ResourceChanges) -> list[tuple[str, list[Item]]]:
    return [
        ("Added", [Item(r.urn) for r in changes.added]),
        ("Removed", [Item(r.urn) for r in changes.removed]),
        ("Changed", [_changed(r, found) for r, found in changes.changed]),
    ]


@dataclass(frozen=True)
class KubernetesChange:
    """The control plane, a node group or an add-on that was added, removed or changed, with what changed."""

    text: str  # "control plane Amazon EKS (eks-p5)", "node group h100", "add-on Kueue"
    status: Literal["added", "removed", "changed", "resized"]  # resized: a node group of which only the count changed
    details: tuple[str, ...] = ()


def _cost(x: float | None, unpriced: tuple[str, ...] = ()) -> str:
    return usd(x, unpriced)


def _control_plane_figures(k: Kubernetes) -> list[tuple[str, str, float | None]]:
    """(label, as shown, amount for a cost's change or None) of what the diff compares on the control plane."""
    return [
        ("version", k.version, None),
        ("support", k.support, None),
        ("endpoint", k.endpoint, None),
        ("region", k.region, None),
        ("node image", k.node_image, None),
        ("system node group", f"{whole(k.system_nodes)} x {k.system_instance_type}", None),
        ("control plane $/month", _cost(k.control_plane_usd_per_month), k.control_plane_usd_per_month),
        ("system nodes $/month", _cost(k.system_usd_per_month), k.system_usd_per_month),
        ("Kubernetes $/month", _cost(k.cost_usd_per_month, k.unpriced), k.cost_usd_per_month),
        ("Kueue queue", f"ClusterQueue {k.cluster_queue}, LocalQueue {k.namespace}/{k.local_queue}", None),
        *((f"topology {t.name}", " > ".join(t.levels), None) for t in k.topologies),
    ]


def _figure_changes(old: list[tuple[str, str, float | None]], new: list[tuple[str, str, float | None]]) -> list[str]:
    """`label: old → new`, with the signed change of a cost both sides price; a figure one side lacks (a topology
    added) reads `(none)` there."""
    a, b = {label: (text, x) for label, text, x in old}, {label: (text, x) for label, text, x in new}
    found = []
    for label in [*a, *(n for n in b if n not in a)]:
        (ta, xa), (tb, xb) = a.get(label, ("(none)", None)), b.get(label, ("(none)", None))
        if ta == tb:
            continue
        delta = f" ({signed(xb - xa, usd)})" if xa is not None and xb is not None else ""
        found.append(f"{label}: {ta} → {tb}{delta}")
    return found


def _group_figures(g: NodeGroup) -> list[tuple[str, str, float | None]]:
    return [
        ("pool", g.pool, None),
        ("zone", g.zone or "(none)", None),
        ("nodes", whole(g.nodes), None),
        ("taints", ", ".join(g.taints) or "(none)", None),
        *((f"per node {r}", amount, None) for r, amount in g.resources.items()),
    ]


def _addon_figures(a: Addon) -> list[tuple[str, str, float | None]]:
    chart = a.where
    return [("chart", chart, None), ("version", a.version, None), ("namespace", a.namespace, None)]


def _group_line(g: NodeGroup) -> str:
    return f"{plural(g.nodes, 'node')} of pool {g.pool}" + (f" in {g.zone}" if g.zone else "")


def kubernetes_changes(base: PreviewDoc, head: PreviewDoc) -> list[KubernetesChange]:
    """The control plane's figures, then node groups and add-ons by name: what was added or removed, and each
    figure that changed (`version: 1.34 → 1.35`, `nodes: 16 → 32`)."""
    b, h = base.kubernetes, head.kubernetes
    if b is None and h is None:
        return []
    if b is None or h is None:
        k = h or b
        assert k is not None
        return [
            KubernetesChange(
                f"control plane {k.service_name} ({k.cluster_name})",
                "added" if b is None else "removed",
                (
                    f"version {k.version} ({k.support} support), {k.endpoint} endpoint, {k.region}",
                    f"{plural(len(k.node_groups), 'node group')}, "
                    f"{plural(sum(g.nodes for g in k.node_groups), 'node')}",
                    "add-ons: " + (", ".join(f"{a.name} {a.version}" for a in k.addons) or "none"),
                    f"Kubernetes $/month: {_cost(k.cost_usd_per_month, k.unpriced)}",
                ),
            )
        ]
    found: list[KubernetesChange] = []
    status: Literal["added", "removed"]
    figures = _figure_changes(_control_plane_figures(b), _control_plane_figures(h))
    if b.service_name != h.service_name or b.cluster_name != h.cluster_name:
        figures.insert(0, f"service: {b.service_name} ({b.cluster_name}) → {h.service_name} ({h.cluster_name})")
    if figures:
        found.append(KubernetesChange(f"control plane {h.service_name} ({h.cluster_name})", "changed", tuple(figures)))
    old_g, new_g = {g.name: g for g in b.node_groups}, {g.name: g for g in h.node_groups}
    for name in [*old_g, *(n for n in new_g if n not in old_g)]:
        gb, gh = old_g.get(name), new_g.get(name)
        if gb is None or gh is None:
            g = gh or gb
            assert g is not None
            status = "added" if gb is None else "removed"
            found.append(KubernetesChange(f"node group {name}", status, (_group_line(g),)))
            continue
        lines = _figure_changes(_group_figures(gb), _group_figures(gh))
        if lines:
            resized = gb.nodes != gh.nodes and len(lines) == 1
            found.append(KubernetesChange(f"node group {name}", "resized" if resized else "changed", tuple(lines)))
    old_a, new_a = {a.name: a for a in b.addons}, {a.name: a for a in h.addons}
    for name in [*old_a, *(n for n in new_a if n not in old_a)]:
        ab, ah = old_a.get(name), new_a.get(name)
        if ab is None or ah is None:
            a = ah or ab
            assert a is not None
            status = "added" if ab is None else "removed"
            line = f"{a.where} {a.version} in {a.namespace}"
            found.append(KubernetesChange(f"add-on {name}", status, (line,)))
            continue
        lines = _figure_changes(_addon_figures(ab), _addon_figures(ah))
        if lines:
            found.append(KubernetesChange(f"add-on {name}", "changed", tuple(lines)))
    return found


def render_diff(base: PreviewDoc, head: PreviewDoc, changes: Mapping[str, Any] | None = None) -> str:
    resources = resource_changes(base, head, changes)
    deltas = pool_deltas(base, head)
    findings = finding_changes(base, head)
    head_verdict = verdict(head.policy)
    base_verdict = _verdict_or_none(verdict(base.policy), head_verdict)
    costs_unchanged = all(d.unchanged for d in deltas)
    sites = site_changes(base, head)
    kubernetes = kubernetes_changes(base, head)
    workloads = workload_changes(base, head)
    unchanged = (
        not resources
        and not findings
        and costs_unchanged
        and not sites
        and not kubernetes
        and not workloads
        and base_verdict is None
    )
    risky = risky_steps(changes)
    ops = {str(s.get("urn")): str(s.get("op")) for s in (changes or {}).get("steps") or []}
    return render_markdown(
        "diff.md.j2",
        base=base,
        head=head,
        unchanged=unchanged,
        classified=changes is not None,
        risky=risky,
        ops=ops,
        guarded=[r for r in risky if r.guarded_by],
        drains=slurm_drains(changes),
        headline=_headline(resources),
        verdict=head_verdict,
        base_verdict=base_verdict,
        resources=resources,
        resource_sections=_resource_sections(resources),
        deltas=deltas,
        costs_unchanged=costs_unchanged,
        has_sites=bool(base.sites or head.sites),
        sites=sites,
        has_kubernetes=base.kubernetes is not None or head.kubernetes is not None,
        kubernetes=kubernetes,
        has_workloads=bool(base.workloads or head.workloads),
        workloads=workloads,
        findings=findings,
        finding_sections=[
            (title, len(found), group_findings(found))
            for title, found in (("New", findings.new), ("Fixed", findings.fixed))
        ],
        collapse_over=COLLAPSE_OVER,
    )


def _verdict_or_none(base: Verdict, head: Verdict) -> Verdict | None:
    """The base's verdict, shown only where it reads differently from the head's."""
    return None if (base.status, base.text) == (head.status, head.text) else base
