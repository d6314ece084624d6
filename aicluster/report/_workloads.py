"""What the reports say about the stack's workloads, computed once from the records: per workload its layout,
memory, step time, days against the target, GPU-hours, cost, energy, failures and checkpoints, runners-up and
notes; the charts' geometry (memory per GPU by part against the GPU's capacity, step time by part, days against
the target, cost); and, for the diff, what changed. Renderers only lay these out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._doc import Candidate, Layout, Memory, PreviewDoc, Reliability, StepTime, Workload
from ._views import Fact, number, signed, usd, whole

TRACK = 400  # SVG units of a bar's track (the row's SVG scales to its column; the text beside it stays HTML)
BAR = 16


def gb(x: float) -> str:
    """Bytes as GB (10^9 bytes, as the catalog's GPU memory): `54.0 GB`."""
    return f"{x / 1e9:,.1f} GB"


def seconds(x: float) -> str:
    """A short time in seconds: `8.65 s`, `0.012 s`."""
    return f"{x:,.2f} s" if x >= 0.1 or x == 0 else f"{x:.3f} s"


def duration(x: float) -> str:
    """A time in the unit a reader thinks in: `3.9 s`, `119 s`, `61.4 min`, `10.2 h` (as `aicluster size` shows it)."""
    if x < 10:
        return f"{x:.1f} s"
    if x < 120:
        return f"{x:,.0f} s"
    if x < 7200:
        return f"{x / 60:,.1f} min"
    return f"{x / 3600:,.1f} h"


def days(x: float) -> str:
    return f"{x:,.1f} days"


def share(x: float) -> str:
    """A fraction as a percentage: `36.8%`."""
    return f"{x * 100:.1f}%"


def count(x: float) -> str:
    """A large count in the field's words: `8B`, `405B`, `15.6T`, `2.1M`."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:g}"


def layout_text(layout: Layout) -> str:
    """`TP 2 x PP 1 x DP 16, ZeRO-1, selective recompute, micro-batch 2 x 8` (the whole layout in one line)."""
    recompute = "no recompute" if layout.recompute == "none" else f"{layout.recompute} recompute"
    zero = "no ZeRO (DDP)" if layout.zero_stage == 0 else f"ZeRO-{layout.zero_stage}"
    return (
        f"{layout.shape}, {zero}, {recompute}, micro-batch {layout.micro_batch} x {layout.micro_batches}"
        f" ({whole(layout.gpus)} GPUs)"
    )


def memory_text(m: Memory) -> str:
    """`54.0 of 80.0 GB`, or `213.5 of 80.0 GB: does not fit`."""
    return f"{m.total / 1e9:,.1f} of {gb(m.capacity)}" + ("" if m.fits else ": does not fit")


MEMORY_PARTS = (
    ("parameters", "Parameters"),
    ("gradients", "Gradients"),
    ("optimizer", "Optimizer states"),
    ("activations", "Activations"),
    ("overhead", "Overhead"),
)
STEP_PARTS = (
    ("compute", "Compute"),
    ("tensor", "Tensor parallel"),
    ("data", "Data parallel"),
    ("bubble", "Pipeline bubble"),
    ("expert", "Expert parallel"),
)
# A part's name where a phone's stacked table has 7em for it
SHORT = {"optimizer": "Optimizer", "tensor": "TP", "data": "DP", "bubble": "PP bubble", "expert": "EP"}


def short(key: str, label: str) -> str:
    return SHORT.get(key, label)


def memory_parts(m: Memory) -> list[tuple[str, str, float]]:
    values = (m.parameters, m.gradients, m.optimizer, m.activations, m.overhead)
    return [(key, label, v) for (key, label), v in zip(MEMORY_PARTS, values, strict=True)]


def step_parts(s: StepTime) -> list[tuple[str, str, float]]:
    values = (s.compute_s, s.tensor_parallel_s, s.data_parallel_s, s.pipeline_bubble_s, s.expert_parallel_s)
    return [(key, label, v) for (key, label), v in zip(STEP_PARTS, values, strict=True)]


def shown_memory(w: Workload) -> tuple[Candidate, bool] | None:
    """The candidate whose memory the report shows: the chosen layout, or where nothing fits the closest attempt
    (the first runner-up), flagged False."""
    if w.chosen is not None:
        return w.chosen, True
    if w.runners_up:
        return w.runners_up[0], False
    return None


def meets_target(w: Workload) -> bool | None:
    """Whether the estimated days are within the target; None where there is no target or no estimate."""
    if w.target_days is None or w.days is None:
        return None
    return w.days <= w.target_days + 1e-9


def days_text(w: Workload) -> str:
    """`47.7 days (target 30.0: over by 17.7)`, `12.0 days (target 30.0: met)`, `—` when nothing fits."""
    if w.days is None:
        return "—"
    if w.target_days is None:
        return days(w.days)
    met = meets_target(w)
    verdict = "met" if met else f"over by {w.days - w.target_days:,.1f}"
    return f"{days(w.days)} (target {w.target_days:,.1f}: {verdict})"


def cost_text(w: Workload) -> str:
    if w.cost_usd is not None:
        return usd(w.cost_usd)
    return "—" if w.days is None else "unpriced"


def goodput_text(r: Reliability | None) -> str:
    if r is None:
        return "—"
    return share(r.goodput) if r.goodput is not None else "no parallel file system"


# -- one workload -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunnerUp:
    layout: str
    memory: str
    step: str
    why: str


@dataclass(frozen=True)
class WorkloadView:
    """One workload as every report shows it."""

    w: Workload
    anchor: str  # an id safe in HTML whatever the name: `workload-1`
    what: str  # "8B parameters (8B active), 1T tokens of 8,192-token sequences"
    where: str  # "pool h100: 32 x h100-sxm GPUs (aws p5.48xlarge)"
    status: Literal["fits", "does not fit"]
    layout: str  # the chosen layout in one line, or "—"
    memory: str  # "54.0 of 80.0 GB"
    step: str  # "8.65 s"
    days: str
    cost: str
    goodput: str
    facts: list[Fact]
    reliability: list[Fact]
    runners_up: list[RunnerUp]


def _run_facts(w: Workload) -> list[Fact]:
    c = w.chosen
    facts = [Fact("Layout", layout_text(c.layout) if c else "none fits")]
    if c is not None:
        facts.append(Fact("Memory per GPU", memory_text(c.memory)))
    if c is not None and c.step is not None:
        s = c.step
        facts += [
            Fact("Step time", f"{seconds(s.total_s)} ({s.flops_per_step:.3g} model FLOP per step)"),
            Fact(
                "Utilisation",
                f"MFU {share(s.mfu)}, {number(s.tflops_per_gpu)} TFLOP/s per GPU "
                f"(compute at the prior {share(s.utilisation_prior)})",
            ),
        ]
    facts += [
        Fact("Global batch", f"{count(w.global_batch_tokens)} tokens"),
        Fact("Steps", whole(w.steps) if w.fits else "—"),
        Fact("Days", days_text(w)),
        Fact(
            "Failure-free days",
            "—" if w.compute_days is None else f"{days(w.compute_days)} (days above: divided by the goodput)",
        ),
    ]
    if w.gpus_for_target_days is not None:
        facts.append(Fact("GPUs for the target days", whole(w.gpus_for_target_days)))
    if w.target_gpus is not None:
        facts.append(Fact("GPU budget", whole(w.target_gpus)))
    facts += [
        Fact("GPU-hours", "—" if w.gpu_hours is None else whole(round(w.gpu_hours))),
        Fact("Cost", cost_text(w)),
        Fact("Energy (facility)", "—" if w.energy_mwh is None else f"{number(w.energy_mwh)} MWh"),
    ]
    return facts


def reliability_facts(r: Reliability | None) -> list[Fact]:
    if r is None:
        return []
    nowhere = "no parallel file system"
    return [
        Fact(
            "Interruptions",
            f"{r.interruptions:,.1f} expected; one every {r.mtbf_h:,.1f} h "
            f"(prior: one per {whole(round(r.gpu_hours_per_interruption))} GPU-hours)",
        ),
        Fact("Checkpoint", gb(r.checkpoint_bytes)),
        Fact("Written to", ", ".join(r.filesystems) or nowhere),
        Fact("Write throughput", nowhere if r.write_gb_s is None else f"{number(r.write_gb_s)} GB/s"),
        Fact("Write time", "—" if r.write_s is None else duration(r.write_s)),
        Fact("Checkpoint interval (Young/Daly)", "—" if r.interval_s is None else duration(r.interval_s)),
        Fact("Restart", duration(r.restart_s)),
        Fact("Goodput", goodput_text(r)),
        Fact(
            f"Write throughput for {share(r.target_overhead)} overhead",
            f"{number(r.required_write_gb_s)} GB/s",
        ),
    ]


def _runner_up(c: Candidate) -> RunnerUp:
    return RunnerUp(
        layout=layout_text(c.layout),
        memory=memory_text(c.memory),
        step="not timed" if c.step is None else seconds(c.step.total_s),
        why=c.why,
    )


def workload_views(doc: PreviewDoc) -> list[WorkloadView]:
    views = []
    for i, w in enumerate(doc.workloads, start=1):
        active = f" ({count(w.active_parameters)} active)" if w.active_parameters != w.parameters else ""
        pools = "pool" if len(w.pools) == 1 else "pools"
        c = w.chosen
        views.append(
            WorkloadView(
                w=w,
                anchor=f"workload-{i}",
                what=f"{count(w.parameters)} parameters{active}, {count(w.tokens)} tokens of "
                f"{whole(w.sequence_length)}-token sequences",
                where=f"{pools} {', '.join(w.pools)}: {whole(w.gpus_available)} x {w.accelerator} GPUs "
                f"({w.provider} {w.instance_type})",
                status="fits" if w.fits else "does not fit",
                layout=c.layout.shape if c else "—",
                memory=memory_text(c.memory) if c else "—",
                step=seconds(c.step.total_s) if c and c.step else "—",
                days=days_text(w),
                cost=cost_text(w),
                goodput=goodput_text(w.reliability),
                facts=_run_facts(w),
                reliability=reliability_facts(w.reliability),
                runners_up=[_runner_up(r) for r in w.runners_up],
            )
        )
    return views


# -- charts -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    key: str  # the part: its CSS class and pattern
    label: str
    text: str  # the part's value as shown
    x: float  # SVG units along the track
    width: float


@dataclass(frozen=True)
class ChartRow:
    label: str
    segments: tuple[Segment, ...]
    value: str  # the total as shown beside the bar
    mark: float | None  # SVG units: the capacity or target line
    over: bool  # the total runs past the mark

    @property
    def description(self) -> str:
        """The bar in words (aria-label and <title>): every part and the total."""
        parts = "; ".join(f"{s.label} {s.text}" for s in self.segments)
        return f"{self.label}: {parts + '; ' if len(self.segments) > 1 else ''}{self.value}"


@dataclass(frozen=True)
class StackedChart:
    """Horizontal bars, one per workload, each split into parts; all rows share one scale (the largest total or
    mark spans the track). A row with no figure draws an empty track and says why."""

    id: str
    title: str
    rows: tuple[ChartRow, ...]
    legend: tuple[tuple[str, str], ...]  # (key, label) of the parts, in bar order
    mark_label: str  # what the mark is ("" when there is none)
    track: int = TRACK
    bar: int = BAR


Parts = Sequence[tuple[str, str, float]]
Row = tuple[str, Parts | None, str, float | None]  # label, parts (None: no figure), the text beside, the mark


def stacked_chart(
    chart_id: str,
    title: str,
    rows: Sequence[Row],
    fmt: Callable[[float], str],
    legend: Sequence[tuple[str, str]],
    mark_label: str = "",
) -> StackedChart:
    """rows: (label, parts as (key, label, value) or None for no figure, the text beside the bar, mark or None)."""
    top = max(
        [sum(v for _, _, v in parts) for _, parts, _, _ in rows if parts]
        + [m for _, _, _, m in rows if m is not None]
        + [0.0]
    )
    scale = TRACK / top if top > 0 else 0.0
    built = []
    for label, parts, value, mark in rows:
        x, segments = 0.0, []
        for key, part, v in parts or ():
            if v > 0:
                segments.append(Segment(key, part, fmt(v), x * scale, v * scale))
            x += v
        built.append(
            ChartRow(
                label=label,
                segments=tuple(segments),
                value=value,
                mark=None if mark is None else mark * scale,
                over=mark is not None and parts is not None and x > mark + 1e-9,
            )
        )
    return StackedChart(chart_id, title, tuple(built), tuple(legend), mark_label)


def memory_chart(workloads: Sequence[Workload]) -> StackedChart:
    rows: list[Row] = []
    for w in workloads:
        shown = shown_memory(w)
        if shown is None:
            rows.append((w.name, None, "no layout considered", None))
            continue
        c, chosen = shown
        closest = "" if chosen else " (closest layout)"
        rows.append((w.name, memory_parts(c.memory), memory_text(c.memory) + closest, c.memory.capacity))
    return stacked_chart(
        "memory-chart",
        "Memory per GPU at the peak of a step, GB",
        rows,
        gb,
        [(k, label) for k, label in MEMORY_PARTS],
        "the GPU's memory",
    )


def step_chart(workloads: Sequence[Workload]) -> StackedChart:
    rows: list[Row] = []
    for w in workloads:
        s = w.chosen.step if w.chosen else None
        if s is None:
            rows.append((w.name, None, "does not fit: not timed", None))
        else:
            rows.append((w.name, step_parts(s), f"{seconds(s.total_s)} per step, MFU {share(s.mfu)}", None))
    return stacked_chart("step-chart", "Step time by part, seconds", rows, seconds, STEP_PARTS)


def days_chart(workloads: Sequence[Workload]) -> StackedChart:
    rows: list[Row] = []
    for w in workloads:
        if w.days is None:
            rows.append((w.name, None, "does not fit", w.target_days))
        else:
            rows.append((w.name, [("days", "Days", w.days)], days_text(w), w.target_days))
    return stacked_chart("days-chart", "Days to train against the target", rows, days, [("days", "Days")], "target")


def cost_chart(workloads: Sequence[Workload]) -> StackedChart:
    rows: list[Row] = []
    for w in workloads:
        parts: Parts | None = None if w.cost_usd is None else [("cost", "Cost", w.cost_usd)]
        rows.append((w.name, parts, cost_text(w) if w.days is not None else "does not fit", None))
    return stacked_chart("cost-chart", "Cost of the run, $", rows, usd, [("cost", "Cost")])


def workload_charts(doc: PreviewDoc) -> list[StackedChart]:
    """The memory picture, then the time and cost picture."""
    ws = doc.workloads
    return [memory_chart(ws), step_chart(ws), days_chart(ws), cost_chart(ws)] if ws else []


# -- the JSON report ----------------------------------------------------------------------------------------------


def workload_data(w: Workload) -> dict[str, object]:
    """What the JSON report adds to the preview's record: the verdicts the other reports print."""
    return {"meets_target_days": meets_target(w), "status": "fits" if w.fits else "does not fit"}


# -- the diff -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadChange:
    """A workload that was added, removed or changed, with what changed."""

    text: str  # "workload llama-70b"
    status: Literal["added", "removed", "changed"]
    details: tuple[str, ...] = ()


def _figures(w: Workload) -> list[tuple[str, str, float | None, Callable[[float], str] | None]]:
    """(label, as shown, amount for a signed change or None, its format) of what the diff compares."""
    c = w.chosen
    goodput = w.reliability.goodput if w.reliability else None
    return [
        ("fits", "yes" if w.fits else "no", None, None),
        ("layout", layout_text(c.layout) if c else "none fits", None, None),
        ("days", days_text(w), w.days, lambda x: f"{x:,.1f}"),
        ("GPU-hours", "—" if w.gpu_hours is None else _hours(w.gpu_hours), w.gpu_hours, _hours),
        ("cost", cost_text(w), w.cost_usd, usd),
        ("goodput", goodput_text(w.reliability), None if goodput is None else goodput * 100, _points),
    ]


def _hours(x: float) -> str:
    return whole(round(x))


def _points(x: float) -> str:
    return f"{x:.1f} points"


def _summary(w: Workload) -> tuple[str, ...]:
    if not w.fits:
        return (f"does not fit: {w.reason or 'no layout fits in GPU memory'}",)
    c = w.chosen
    return (
        f"{layout_text(c.layout)}" if c else "none fits",
        f"days: {days_text(w)}",
        f"cost: {cost_text(w)}",
        f"goodput: {goodput_text(w.reliability)}",
    )


def workload_changes(base: PreviewDoc, head: PreviewDoc) -> list[WorkloadChange]:
    """Workloads by name (base order, then those new in head): added and removed ones with their summary, and
    for the others each figure that changed (`days: 47.7 days → 31.2 days (-16.5)`)."""
    old = {w.name: w for w in base.workloads}
    new = {w.name: w for w in head.workloads}
    found: list[WorkloadChange] = []
    for name in [*old, *(n for n in new if n not in old)]:
        b, h = old.get(name), new.get(name)
        if b is None or h is None:
            w = h or b
            assert w is not None
            found.append(WorkloadChange(f"workload {name}", "added" if b is None else "removed", _summary(w)))
            continue
        lines = []
        for (label, tb, xb, fmt), (_, th, xh, _) in zip(_figures(b), _figures(h), strict=True):
            if tb == th:
                continue
            delta = f" ({signed(xh - xb, fmt)})" if fmt is not None and xb is not None and xh is not None else ""
            lines.append(f"{label}: {tb} → {th}{delta}")
        if lines:
            found.append(WorkloadChange(f"workload {name}", "changed", tuple(lines)))
    return found
