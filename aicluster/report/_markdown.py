"""The Markdown report: a verdict headline, summary and pools tables, findings by severity,
waivers and warnings; for PR comments and CI job summaries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ._changes import change_line, risky_steps
from ._doc import Fabric, PreviewDoc
from ._sites import racks_summary, ratio, site_rows
from ._templates import render_markdown
from ._views import BudgetUse, budget_uses, group_waived, grouped, kw, number, pct, usd, verdict, whole
from ._workloads import gb, memory_parts, memory_text, seconds, share, shown_memory, step_parts, workload_views


@dataclass(frozen=True)
class SummaryRow:
    label: str
    value: str
    budget: str = ""
    used: str = ""


def _budget_cells(use: BudgetUse | None, fmt: Callable[[float], str]) -> tuple[str, str]:
    return (fmt(use.budget), pct(use.used_pct)) if use else ("", "")


def summary_rows(doc: PreviewDoc) -> list[SummaryRow]:
    s = doc.summary
    budgets = {b.key: b for b in budget_uses(doc)}
    return [
        SummaryRow("Nodes", whole(s.nodes)),
        SummaryRow("Accelerators", whole(s.gpus)),
        SummaryRow("Cost, $/hour", usd(s.cost_usd_per_hour, s.unpriced)),
        SummaryRow(
            "Cost, $/month", usd(s.cost_usd_per_month, s.unpriced), *_budget_cells(budgets.get("monthly_usd"), usd)
        ),
        *([SummaryRow("Not in the cost (no price)", "; ".join(s.unpriced))] if s.unpriced else []),
        SummaryRow("Power (IT), kW", number(s.power_kw_it)),
        SummaryRow(
            "Power (facility), kW", number(s.power_kw_facility), *_budget_cells(budgets.get("power_kw"), number)
        ),
        SummaryRow("Carbon, t CO2e/month", number(s.carbon_t_per_month)),
        SummaryRow("Resources", f"{s.resources:,}"),
    ]


def cables(f: Fabric) -> str:
    """Cables per tier the fabric has, node-leaf first: `1,024 / 1,024`."""
    return " / ".join(whole(n) for n in (f.cables_node_leaf, f.cables_leaf_spine, f.cables_spine_core)[: f.tiers])


def render_report(doc: PreviewDoc) -> str:
    rack_kw = doc.cluster.budgets.rack_kw if doc.cluster else None
    return render_markdown(
        "report.md.j2",
        doc=doc,
        verdict=verdict(doc.policy),
        summary=summary_rows(doc),
        changes=doc.changes,
        change_line=change_line(doc.changes) if doc.changes else "",
        risky=risky_steps(doc.changes),
        rack_kw=kw(rack_kw) if rack_kw else "",
        kubernetes=doc.kubernetes,
        workloads=workload_views(doc),
        memory_of=shown_memory,
        memory_parts=memory_parts,
        memory_text=memory_text,
        step_parts=step_parts,
        gb=gb,
        seconds=seconds,
        share=share,
        sites=site_rows(doc.sites),
        fabrics=[(s.name, f) for s in doc.sites for f in s.fabrics],
        racks=[(s.name, racks_summary(s)) for s in doc.sites],
        cables=cables,
        ratio=ratio,
        findings=grouped(doc.policy.violations) if doc.policy else [],
        waived=group_waived(doc.policy.waived) if doc.policy else [],
        disabled=[p for p in doc.policy.policies if p.enforcement == "disabled"] if doc.policy else [],
        usd=usd,
        number=number,
        whole=whole,
    )
