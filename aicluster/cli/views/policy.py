"""A preview's policy results and resources, as `preview` and `report` print them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from ..exits import EXIT_FAILED, EXIT_OK

_LISTED = 5  # resources named per group in the terminal; the JSON and the reports list every one


def verdict(result: Any) -> tuple[int, str]:
    """Exit code and one line for a policy result: mandatory violations fail the run."""
    from aicluster.report import in_groups, waived_in_groups

    pol = result.policy
    mandatory, advisory = len(pol.mandatory), len(pol.violations) - len(pol.mandatory)
    # findings counted one by one, and the groups (table rows) they make where those are fewer
    summary = (
        f"policy pack {pol.pack['name']}@{pol.pack['version']}: {len(pol.passed)} passed, "
        f"{mandatory} mandatory and {advisory} advisory violation(s){in_groups(pol.violations)}, "
        f"{len(pol.waived)} waived{waived_in_groups(pol.waived)}, {len(pol.not_applicable)} not applicable"
    )
    return (EXIT_FAILED if mandatory else EXIT_OK), summary


def not_applicable_line(result: Any) -> str | None:
    """The policies that had nothing to judge (neither passed nor failed), named apart from the passed ones."""
    na = result.policy.not_applicable
    if not na:
        return None
    return f"not applicable ({len(na)}): " + ", ".join(n["policy"] for n in na) + " (reasons in --json and reports)"


def findings_table(result: Any) -> Table | None:
    """Findings grouped by policy and cause (one pool outside the allowed regions is one row naming
    its resources, not 26 rows); waived findings likewise, by policy, cause and waiver."""
    from aicluster.report import FindingGroup, group_findings, group_waived

    def listed(g: FindingGroup[Any]) -> str:
        names = g.resources()
        shown = ", ".join(names[:_LISTED]) + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")
        return shown if g.count == 1 else f"{g.count}: {shown}"

    pol = result.policy
    if not pol.violations and not pol.waived:
        return None
    t = Table(title="Policy findings", title_justify="left")
    for col in ("level", "severity", "policy", "resources", "message"):
        t.add_column(col, overflow="fold")
    style = {"mandatory": "red", "advisory": "yellow"}
    for g in group_findings(pol.violations):
        v = g.first
        t.add_row(
            f"[{style[v.enforcement]}]{v.enforcement}[/]", v.severity, v.policy, escape(listed(g)), escape(g.summary)
        )
    for wg in group_waived(pol.waived):
        w = wg.first
        t.add_row(
            "[dim]waived[/]",
            w.severity,
            w.policy,
            escape(listed(wg)),
            escape(f"{wg.summary} [waived until {w.expires}: {w.reason}]"),
        )
    return t


def resource_tree(stack: str, resources: Sequence[Any]) -> Tree:
    """The resources by name and type, children under their parent component, as `pulumi preview`
    shows them; siblings in registration order. A resource whose parent is not in the preview (the
    stack itself) hangs from the root."""
    root = Tree(f"[bold]pulumi:pulumi:Stack[/] {escape(stack)}", guide_style="dim")
    urns = {r.urn for r in resources}
    children: dict[str | None, list[Any]] = {}
    for r in resources:
        children.setdefault(r.parent if r.parent in urns else None, []).append(r)
    pending: list[tuple[Tree, str | None]] = [(root, None)]
    while pending:  # iterative: a deep component nesting cannot exhaust the stack
        node, urn = pending.pop()
        for r in children.get(urn, []):
            kind = "" if r.custom else " [dim](component)[/]"
            branch = node.add(f"[cyan]{escape(r.type)}[/] {escape(r.name)}{kind}")
            pending.append((branch, r.urn))
    return root


def resource_counts_table(title: str, counts: Sequence[tuple[str, int]]) -> Table:
    """The preview's resources counted by type."""
    t = Table(title=title, title_justify="left")
    t.add_column("type")
    t.add_column("count", justify="right")
    for typ, n in counts:
        t.add_row(typ, str(n))
    return t


def policies_table(described: Sequence[dict[str, Any]]) -> Table:
    """The pack's policies (`aicluster policies`), each as preview.policy.describe gives it."""
    t = Table(title=f"Policies ({len(described)})", title_justify="left")
    for col in ("policy", "concern", "kind", "severity", "enforcement", "frameworks", "description"):
        t.add_column(col, overflow="fold")
    for d in described:
        t.add_row(
            d["name"],
            d["concern"],
            d["kind"],
            d["severity"],
            d["enforcement"],
            ", ".join(d["frameworks"]),
            d["description"],
        )
    return t
