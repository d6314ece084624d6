"""The HTML report: one self-contained file (inline CSS and SVG, no script, no external URL) for
compliance reviewers. Chart geometry is computed here; the template only draws it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._changes import change_line, risky_steps
from ._doc import Fabric, Kubernetes, NodeGroup, PreviewDoc, Site
from ._sites import BomLine, RackBar, SiteRow, bill_of_materials, fabric_line, rack_bars, racks_summary, site_rows
from ._templates import render_html
from ._views import Fact, budget_uses, group_waived, grouped_by_framework, kw, number, pct, plural, usd, verdict, whole
from ._workloads import (
    gb,
    memory_parts,
    memory_text,
    seconds,
    share,
    short,
    shown_memory,
    step_parts,
    workload_charts,
    workload_views,
)

CHART_WIDTH = 720
LABEL_WIDTH = 180
BAR_AREA = 400
VALUE_GAP = 6  # between a bar's end and its value
# the widest a 12 px sans-serif character draws (digits and `$` about 6.7 px in the fonts browsers pick): the chart
# is made wide enough for its longest value at this width, so "$4,064,640.00 + unpriced" is never cut off
VALUE_CHAR_PX = 7.5
ROW_HEIGHT = 24
BAR_HEIGHT = 16
LABEL_CHARS = 24
GAUGE_WIDTH = 320


@dataclass(frozen=True)
class Bar:
    label: str
    short_label: str
    value: float
    text: str
    y: float
    width: float


@dataclass(frozen=True)
class BarChart:
    title: str
    width: int
    height: int
    label_width: int
    bar_height: int
    bars: tuple[Bar, ...]


def _shorten(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def bar_chart(
    title: str,
    rows: Sequence[tuple[str, float | None]],
    fmt: Callable[[float], str],
    partial: Sequence[bool] = (),
) -> BarChart:
    """Horizontal bars whose lengths are proportional to the values (the largest spans BAR_AREA);
    all-zero values draw zero-length bars, and the height grows with the number of rows. A value of None
    (an unpriced pool) draws no bar and says "unpriced", never a zero; a `partial` row's value leaves out
    what has no price and says so."""
    top = max((value for _, value in rows if value is not None), default=0.0)
    bars = tuple(
        Bar(
            label=label,
            short_label=_shorten(label),
            value=value or 0.0,
            text=(fmt(value) + (" + unpriced" if i < len(partial) and partial[i] else ""))
            if value is not None
            else "unpriced",
            y=i * ROW_HEIGHT + (ROW_HEIGHT - BAR_HEIGHT) / 2,
            width=(value or 0.0) / top * BAR_AREA if top > 0 else 0.0,
        )
        for i, (label, value) in enumerate(rows)
    )
    needed = max((LABEL_WIDTH + b.width + VALUE_GAP + len(b.text) * VALUE_CHAR_PX for b in bars), default=0.0)
    width = max(CHART_WIDTH, math.ceil(needed) + VALUE_GAP)
    return BarChart(title, width, max(len(bars), 1) * ROW_HEIGHT, LABEL_WIDTH, BAR_HEIGHT, bars)


@dataclass(frozen=True)
class Gauge:
    label: str
    actual: str
    budget: str
    used: str
    fill_width: float
    state: Literal["ok", "near", "over"]


def gauges(doc: PreviewDoc) -> list[Gauge]:
    """Used against budget; the fill stops at the track's end, the label carries the real share."""
    found = []
    for b in budget_uses(doc):
        state: Literal["ok", "near", "over"] = "over" if b.used_pct > 100 else "near" if b.used_pct >= 80 else "ok"
        fill = min(b.used_pct, 100.0) / 100 * GAUGE_WIDTH
        found.append(Gauge(b.label, b.actual_text, b.fmt(b.budget), pct(b.used_pct), fill, state))
    return found


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    detail: str = ""


def cards(doc: PreviewDoc) -> list[Card]:
    s = doc.summary
    return [
        Card("Nodes", f"{s.nodes:,}", plural(len(doc.pools), "pool")),
        Card("Accelerators", f"{s.gpus:,}"),
        Card(
            "Cost per month",
            usd(s.cost_usd_per_month, s.unpriced),
            f"{usd(s.cost_usd_per_hour, s.unpriced)} per hour"
            + (f"; not counted, no price: {'; '.join(s.unpriced)}" if s.unpriced else ""),
        ),
        Card("Power (IT)", kw(s.power_kw_it)),
        Card("Power (facility)", kw(s.power_kw_facility)),
        Card("Carbon", f"{number(s.carbon_t_per_month)} t", "CO2e per month"),
        Card("Resources", f"{s.resources:,}"),
    ]


@dataclass(frozen=True)
class FabricView:
    fabric: Fabric
    line: str
    bom: list[BomLine]


@dataclass(frozen=True)
class SiteView:
    site: Site
    row: SiteRow
    fabrics: list[FabricView]
    bars: list[RackBar]
    summary: str

    @property
    def any_over(self) -> bool:
        return any(b.over for b in self.bars)


def site_views(doc: PreviewDoc) -> list[SiteView]:
    """Each site's table row, its fabrics' bills of materials and its racks' power bars."""
    return [
        SiteView(
            site=s,
            row=row,
            fabrics=[FabricView(f, fabric_line(f), bill_of_materials(f)) for f in s.fabrics],
            bars=rack_bars(s),
            summary=racks_summary(s),
        )
        for s, row in zip(doc.sites, site_rows(doc.sites), strict=True)
    ]


@dataclass(frozen=True)
class NodeGroupRow:
    group: NodeGroup
    nodes: str
    resources: tuple[tuple[str, str], ...]  # (resource name, amount per node), in name order


@dataclass(frozen=True)
class KubernetesView:
    """A Kubernetes stack's control plane (facts and costs), node groups, add-ons and Kueue queue, as shown."""

    k: Kubernetes
    control_plane: list[Fact]
    costs: list[Fact]
    node_groups: list[NodeGroupRow]
    nodes: str  # the node groups' nodes together

    @property
    def queue(self) -> str:
        return f"ClusterQueue {self.k.cluster_queue}, LocalQueue {self.k.namespace}/{self.k.local_queue}"


def kubernetes_view(k: Kubernetes | None) -> KubernetesView | None:
    if k is None:
        return None
    system = f"{whole(k.system_nodes)} x {k.system_instance_type}"
    control_plane = [
        Fact("Service", f"{k.service_name}, cluster {k.cluster_name}"),
        Fact("Version", f"{k.version} ({k.support} support)"),
        Fact("Endpoint", k.endpoint),
        Fact("Region", k.region),
        Fact("System node group", system),
        Fact("Node image", k.node_image),
    ]
    costs = [
        Fact("Control plane", usd(k.control_plane_usd_per_month)),
        Fact(f"System nodes ({system})", usd(k.system_usd_per_month)),
        *(
            [Fact("System nodes' root volumes", usd(k.system_volumes_usd_per_month))]
            if k.system_volumes_usd_per_month is not None
            else []
        ),
        Fact("Total", usd(k.cost_usd_per_month, k.unpriced)),
    ]
    groups = [NodeGroupRow(g, whole(g.nodes), tuple(g.resources.items())) for g in k.node_groups]
    return KubernetesView(k, control_plane, costs, groups, whole(sum(g.nodes for g in k.node_groups)))


def render_report(doc: PreviewDoc) -> str:
    rack_kw = doc.cluster.budgets.rack_kw if doc.cluster else None
    return render_html(
        "report.html.j2",
        doc=doc,
        verdict=verdict(doc.policy),
        cards=cards(doc),
        value_gap=VALUE_GAP,
        changes=doc.changes,
        change_line=change_line(doc.changes) if doc.changes else "",
        risky=risky_steps(doc.changes),
        gauges=gauges(doc),
        gauge_width=GAUGE_WIDTH,
        rack_kw=kw(rack_kw) if rack_kw else "",
        charts=[
            bar_chart(
                "Cost by pool, $/month",
                [(p.name, p.cost_usd_per_month) for p in doc.pools],
                usd,
                [bool(p.unpriced) for p in doc.pools],
            ),
            bar_chart("Power by pool, kW (facility)", [(p.name, p.power_kw_facility) for p in doc.pools], kw),
        ],
        kubernetes=kubernetes_view(doc.kubernetes),
        workloads=workload_views(doc),
        workload_charts=workload_charts(doc),
        memory_of=shown_memory,
        memory_parts=memory_parts,
        memory_text=memory_text,
        step_parts=step_parts,
        gb=gb,
        seconds=seconds,
        share=share,
        short=short,
        sites=site_views(doc),
        frameworks=grouped_by_framework(doc.policy) if doc.policy else [],
        waived=group_waived(doc.policy.waived) if doc.policy else [],
        disabled=[p for p in doc.policy.policies if p.enforcement == "disabled"] if doc.policy else [],
    )
