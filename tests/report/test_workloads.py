"""Reports show the stack's workloads (the preview's `workloads`): layout, memory by part against the GPU's memory,
step time by part, days against the target, GPU-hours, cost, energy, failures and checkpoints, runners-up; the HTML
report draws them; the JSON report carries them; the diff names what changed. The figures asserted here are worked
out from the hand-built estimates (tests/report/workloads.py), not read back from the renderer."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from aicluster.report import diff_markdown, render
from tests.report.previews import PASSING
from tests.report.test_html import Page, dom_check
from tests.report.workloads import (
    H100,
    all_four,
    days_of,
    fitting,
    no_parallel_fs,
    not_fitting,
    step_of,
    unpriced,
    with_workloads,
)

TRACK = 400  # SVG units of a workload bar's track (aicluster.report._workloads.TRACK)


def _md_section(text: str) -> str:
    start = text.index("## Workloads")
    return text[start : text.index("\n## ", start + 1)]


def _html_section(text: str) -> str:
    start = text.index('<section id="workloads">')
    return text[start : text.index("</section>", start)]


# -- Markdown -----------------------------------------------------------------------------------------------------


def test_markdown_summary_row_per_workload() -> None:
    w = fitting()
    section = _md_section(render(all_four(), "md"))
    days = w.steps * step_of(w).total_s / 86400
    assert f"{days:.1f}" == "47.7"
    assert w.gpu_hours is not None
    cost = w.gpu_hours / 8 * 160877.4 / 730 / 4
    assert (
        f"| llama-8b | fits | TP 2 x PP 1 x DP 16 | 54.0 of 80.0 GB | 8.65 s | 47.7 days (target 30.0: over by 17.7) "
        f"| {round(w.gpu_hours):,} | ${cost:,.2f} | 53.30 MWh | 99.3% |" in section
    )
    assert "| llama-405b | **does not fit** | — | — | — | — | — | — | — | — |" in section
    assert "| mixtral-47b | fits | TP 2 x PP 4 x DP 4 x EP 4 | 68.2 of 80.0 GB |" in section
    assert "23.5 days (target 30.0: met) | 18,075 | unpriced |" in section
    nfs = next(line for line in section.splitlines() if line.startswith("| llama-8b-nfs |"))
    assert nfs.endswith("| 47.7 days | 36,671 | $252,549.49 | 53.30 MWh | no parallel file system |")


def test_markdown_details_memory_step_reliability_and_runners_up() -> None:
    section = _md_section(render(all_four(), "md"))
    llama = section[section.index("### llama-8b\n") : section.index("### llama-405b")]
    assert "| Layout | TP 2 x PP 1 x DP 16, ZeRO-1, selective recompute, micro-batch 2 x 8 (32 GPUs) |" in llama
    assert "| TP 2 x PP 1 x DP 16 | 8.0 GB | 8.0 GB | 3.0 GB | 30.0 GB | 5.0 GB | 54.0 of 80.0 GB |" in llama
    assert "| TP 2 x PP 1 x DP 16 | 7.95 s | 0.40 s | 0.30 s | 0.00 s | 0.00 s | 8.65 s | 36.8% |" in llama
    # Young/Daly: 112 GB at 0.94 GB/s is 119 s; MTBF 50,676 GPU-hours / 32 GPUs; interval sqrt(2 x 119 s x MTBF)
    write = 112e9 / 0.94e9
    mtbf = 50676 / 32 * 3600
    interval = math.sqrt(2 * write * mtbf)
    goodput = 1 - write / interval - interval / (2 * mtbf) - 600 / mtbf
    assert "| Write time | 119 s |" in llama
    assert f"| Checkpoint interval (Young/Daly) | {interval / 3600:.1f} h |" in llama
    assert f"| Goodput | {goodput * 100:.1f}% |" in llama
    assert f"| Write throughput for 1.0% overhead | {112e9 / (1e-4 * mtbf / 2) / 1e9:.2f} GB/s |" in llama
    assert (
        "| TP 1 x PP 1 x DP 32, ZeRO-1, no recompute, micro-batch 2 x 8 (32 GPUs) | 93.1 of 80.0 GB: does not fit "
        "| not timed | does not fit: 93.1 GB of 80.0 GB |" in llama
    )
    assert "- MFU prior 40%: Llama 3 reports 38-43% BF16 MFU on 16K H100" in llama


def test_markdown_says_why_a_workload_does_not_fit_and_shows_its_closest_layout() -> None:
    section = _md_section(render(all_four(), "md"))
    big = section[section.index("### llama-405b") : section.index("### mixtral-47b")]
    assert f"**Does not fit:** {not_fitting().reason}" in big
    assert "| Memory per GPU (closest layout) |" in big
    closest = "| TP 8 x PP 4 x DP 1 | 25.3 GB | 25.3 GB | 151.9 GB | 6.0 GB | 5.0 GB | 213.5 of 80.0 GB: does not fit |"
    assert closest in big
    assert "| Layout considered | Memory per GPU | Step time | Why it lost |" in big
    assert "Failures and checkpoints" not in big  # nothing runs, so nothing fails


def test_markdown_without_a_parallel_file_system_has_no_interval_or_goodput() -> None:
    section = _md_section(render(with_workloads(no_parallel_fs()), "md"))
    assert "| Written to | no parallel file system |" in section
    assert "| Checkpoint interval (Young/Daly) | — |" in section
    assert "| Goodput | no parallel file system |" in section
    assert "| Days | 47.7 days |" in section  # no target: no verdict on it


# -- a preview without workloads ----------------------------------------------------------------------------------


def test_a_preview_without_the_key_renders_without_a_workloads_section() -> None:
    doc = copy.deepcopy(PASSING)
    assert "workloads" not in doc
    assert "## Workloads" not in render(doc, "md")
    assert 'id="workloads"' not in render(doc, "html")
    assert json.loads(render(doc, "json"))["workloads"] == []
    empty = with_workloads()
    assert "## Workloads" not in render(empty, "md")
    assert "## Workloads" not in diff_markdown(doc, empty)


def test_a_malformed_workload_names_its_key_path() -> None:
    doc = all_four()
    doc["workloads"][0]["chosen"]["memory"]["total"] = "a lot"
    with pytest.raises(ValueError, match=r"workloads\[0\]\.chosen\.memory\.total' must be a finite number"):
        render(doc, "md")
    doc = all_four()
    del doc["workloads"][1]["reason"]
    with pytest.raises(ValueError, match=r"missing key 'workloads\[1\]\.reason'"):
        render(doc, "html")


# -- hostile strings ----------------------------------------------------------------------------------------------

HOSTILE = "<script>alert(1)</script>|*bold* [x](javascript:1) \x1b[31mred\x1b[0m"


def _hostile() -> dict[str, Any]:
    doc = with_workloads(fitting(), not_fitting())
    doc["workloads"][0]["name"] = HOSTILE
    doc["workloads"][0]["notes"] = ['"><img src=x onerror=alert(1)>']
    doc["workloads"][1]["reason"] = "</td></tr></table><b>nope</b>"
    return doc


def test_hostile_workload_strings_are_text_in_html() -> None:
    text = render(_hostile(), "html")
    section = _html_section(text)
    assert "<script>" not in text
    assert "<img" not in text
    assert "<b>nope" not in text
    assert "\x1b" not in text
    # control characters go; the printable rest of an ANSI colour code stays as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;|*bold* [x](javascript:1) [31mred[0m" in section
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in section
    assert "Does not fit: &lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;b&gt;nope&lt;/b&gt;" in section
    # the name is also the bar's accessible name, escaped as an attribute value
    assert 'aria-label="&lt;script&gt;alert(1)&lt;/script&gt;|*bold*' in section
    # anchors are numbered, never made from the name
    assert 'id="workload-1"' in section
    assert 'href="#workload-1"' in section


def test_hostile_workload_strings_are_text_in_markdown() -> None:
    section = _md_section(render(_hostile(), "md"))
    assert "\\<script\\>alert(1)\\</script\\>\\|\\*bold\\* \\[x\\](javascript:1) \\[31mred\\[0m" in section
    assert "\x1b" not in section
    assert "<b>" not in section
    assert "\\<b\\>nope\\</b\\>" in section


# -- HTML ---------------------------------------------------------------------------------------------------------


def _chart(page: Page, chart_id: str) -> list[tuple[str, dict[str, str]]]:
    """The tags of one chart's figure, in order."""
    start = next(i for i, (t, a) in enumerate(page.tags) if t == "figure" and a.get("id") == chart_id)
    end = next((i for i in range(start + 1, len(page.tags)) if page.tags[i][0] == "figure"), len(page.tags))
    return page.tags[start:end]


def _bars(tags: list[tuple[str, dict[str, str]]]) -> list[dict[str, Any]]:
    """Each bar's accessible name, its parts (class, x, width) and its mark."""
    bars: list[dict[str, Any]] = []
    for tag, attrs in tags:
        if tag == "svg" and "track" in attrs.get("class", ""):
            bars.append({"label": attrs["aria-label"], "parts": [], "mark": None})
        elif tag == "rect" and "part" in attrs.get("class", "").split():
            bars[-1]["parts"].append((attrs["class"].split()[1], float(attrs["x"]), float(attrs["width"])))
        elif tag == "line" and attrs.get("class") == "mark" and bars and "x1" in attrs and float(attrs["y2"]) == 16:
            bars[-1]["mark"] = float(attrs["x1"])
    return bars


def test_memory_chart_stacks_the_parts_against_the_gpus_memory() -> None:
    page = Page(render(all_four(), "html"))
    bars = _bars(_chart(page, "memory-chart"))
    assert [b["label"].split(":")[0] for b in bars] == ["llama-8b", "llama-405b", "mixtral-47b", "llama-8b-nfs"]
    top = not_fitting().runners_up[0].memory.total  # the largest total spans the track: 213.5 GB
    scale = TRACK / top
    llama = bars[0]
    assert [p[0] for p in llama["parts"]] == ["parameters", "gradients", "optimizer", "activations", "overhead"]
    widths = [p[2] for p in llama["parts"]]
    assert widths == pytest.approx([x * 1e9 * scale for x in (8, 8, 3, 30, 5)], abs=0.01)
    # the parts abut: each starts where the previous ends
    assert [p[1] for p in llama["parts"]] == pytest.approx([0, *list(itertools_accumulate(widths))[:-1]], abs=0.02)
    assert llama["mark"] == pytest.approx(H100 * scale, abs=0.01)  # the 80 GB line
    # the 405B's closest layout runs past the mark and says so
    assert bars[1]["parts"][-1][1] + bars[1]["parts"][-1][2] == pytest.approx(TRACK, abs=0.02)
    assert "213.5 of 80.0 GB: does not fit (closest layout)" in bars[1]["label"]
    assert llama["label"] == (
        "llama-8b: Parameters 8.0 GB; Gradients 8.0 GB; Optimizer states 3.0 GB; Activations 30.0 GB; "
        "Overhead 5.0 GB; 54.0 of 80.0 GB"
    )


def itertools_accumulate(xs: list[float]) -> list[float]:
    out, total = [], 0.0
    for x in xs:
        total += x
        out.append(total)
    return out


def test_step_days_and_cost_charts() -> None:
    page = Page(render(all_four(), "html"))
    step = _bars(_chart(page, "step-chart"))
    moe, llama = step_of(unpriced()), step_of(fitting())
    scale = TRACK / llama.total_s  # the slowest step spans the track
    assert [p[0] for p in step[2]["parts"]] == ["compute", "tensor", "data", "bubble", "expert"]
    assert sum(p[2] for p in step[2]["parts"]) == pytest.approx(moe.total_s * scale, abs=0.05)
    assert [p[0] for p in step[0]["parts"]] == ["compute", "tensor", "data"]  # zero parts draw nothing
    assert step[1] == {"label": "llama-405b: does not fit: not timed", "parts": [], "mark": None}

    days = _bars(_chart(page, "days-chart"))
    w = fitting()
    top = max(days_of(w), 60.0)  # the 405B's target of 60 days is the largest figure
    assert days[0]["parts"][0][2] == pytest.approx(days_of(w) * TRACK / top, abs=0.01)
    assert days[0]["mark"] == pytest.approx(30 * TRACK / top, abs=0.01)
    assert days[0]["label"] == "llama-8b: 47.7 days (target 30.0: over by 17.7)"
    assert days[3]["mark"] is None  # no target, no mark

    cost = _bars(_chart(page, "cost-chart"))
    assert [b["label"] for b in cost[1:3]] == ["llama-405b: does not fit", "mixtral-47b: unpriced"]
    assert cost[2]["parts"] == []  # unpriced: no bar, never a $0 one
    assert cost[0]["parts"][0][2] == pytest.approx(TRACK)


def test_every_chart_has_a_data_table_and_a_legend_in_words() -> None:
    text = render(all_four(), "html")
    section = _html_section(text)
    rows = Page(section).rows
    assert ["llama-8b", "8.0 GB", "8.0 GB", "3.0 GB", "30.0 GB", "5.0 GB", "54.0 of 80.0 GB"] in rows
    closest = "213.5 of 80.0 GB: does not fit (closest layout)"
    assert ["llama-405b", "25.3 GB", "25.3 GB", "151.9 GB", "6.0 GB", "5.0 GB", closest] in rows
    assert ["mixtral-47b", "3.23 s", "0.35 s", "0.25 s", "0.90 s", "0.60 s", "5.33 s", "24.2%"] in rows
    assert ["llama-8b", "47.7", "30.0", "51", "36,671"] in rows
    assert ["mixtral-47b", "unpriced", "26.27 MWh", "32"] in rows
    parts = ("Parameters", "Gradients", "Optimizer states", "Activations", "Overhead")
    for label in (*parts, "mark: the GPU&#39;s memory"):
        assert f"</svg>{label}</span>" in section
    assert section.count('<figure class="wchart"') == 4
    assert section.count("<title>") >= section.count('role="img"')
    # the parts' fills are patterns as well as colours, so the bars read in grey
    assert 'fill="url(#wl-fill-gradients)"' in section
    assert '<pattern id="wl-fill-gradients"' in section


def test_workload_details_in_html() -> None:
    page = Page(_html_section(render(all_four(), "html")))
    rows = page.rows
    assert ["Layout", "TP 2 x PP 1 x DP 16, ZeRO-1, selective recompute, micro-batch 2 x 8 (32 GPUs)"] in rows
    assert ["Cost", "unpriced"] in rows
    assert ["Goodput", "no parallel file system"] in rows
    assert ["Checkpoint", "112.0 GB"] in rows
    headings = [h for _, h in page.headings]
    assert headings[:5] == [
        "Workloads",
        "Memory per GPU at the peak of a step, GB",
        "Step time by part, seconds",
        "Days to train against the target",
        "Cost of the run, $",
    ]
    assert "Runners-up" in headings
    assert "Layouts considered" in headings


# -- JSON ---------------------------------------------------------------------------------------------------------


def test_json_report_carries_the_workloads_with_their_verdicts() -> None:
    doc = all_four()
    report = json.loads(render(doc, "json"))["workloads"]
    assert [w["name"] for w in report] == ["llama-8b", "llama-405b", "mixtral-47b", "llama-8b-nfs"]
    assert [w["meets_target_days"] for w in report] == [False, None, True, None]
    assert [w["status"] for w in report] == ["fits", "does not fit", "fits", "fits"]
    first = report[0]
    assert first["chosen"]["layout"] == doc["workloads"][0]["chosen"]["layout"]
    assert first["chosen"]["memory"] == doc["workloads"][0]["chosen"]["memory"]
    assert first["reliability"]["goodput"] == pytest.approx(doc["workloads"][0]["reliability"]["goodput"])
    assert report[2]["cost_usd"] is None


# -- the diff -----------------------------------------------------------------------------------------------------


def _diff_section(base: dict[str, Any], head: dict[str, Any]) -> list[str]:
    lines = diff_markdown(base, head).splitlines()
    start = lines.index("## Workloads") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## "))
    return [line for line in lines[start:end] if line]


def test_diff_names_workloads_added_removed_and_what_changed() -> None:
    w = fitting()
    # the same run on twice the GPUs (a larger pool): DP 32, half the days, the same GPU-hours and cost
    chosen = w.chosen
    assert chosen is not None
    wider = chosen.model_copy(update={"layout": chosen.layout.model_copy(update={"data_parallel": 32, "gpus": 64})})
    faster = w.model_copy(update={"chosen": wider, "days": days_of(w) / 2})
    base = with_workloads(w, no_parallel_fs())
    head = with_workloads(faster, unpriced())
    half = days_of(w) / 2
    assert f"{half:.1f}" == "23.9"
    assert _diff_section(base, head) == [
        "- workload llama-8b",
        "  - layout: TP 2 x PP 1 x DP 16, ZeRO-1, selective recompute, micro-batch 2 x 8 (32 GPUs) → "
        "TP 2 x PP 1 x DP 32, ZeRO-1, selective recompute, micro-batch 2 x 8 (64 GPUs)",
        "  - days: 47.7 days (target 30.0: over by 17.7) → 23.9 days (target 30.0: met) (-23.9)",
        "- workload llama-8b-nfs (removed)",
        "  - TP 2 x PP 1 x DP 16, ZeRO-1, selective recompute, micro-batch 2 x 8 (32 GPUs)",
        "  - days: 47.7 days",
        "  - cost: $252,549.49",
        "  - goodput: no parallel file system",
        "- workload mixtral-47b (added)",
        "  - TP 2 x PP 4 x DP 4 x EP 4, ZeRO-1, selective recompute, micro-batch 2 x 8 (32 GPUs)",
        "  - days: 23.5 days (target 30.0: met)",
        "  - cost: unpriced",
        "  - goodput: 98.4%",
    ]


def test_diff_shows_a_workload_that_stops_fitting_and_its_cost_and_goodput() -> None:
    w = fitting()
    base = with_workloads(w)
    gone = not_fitting().model_copy(update={"name": "llama-8b"})
    assert _diff_section(base, with_workloads(gone)) == [
        "- workload llama-8b",
        "  - fits: yes → no",
        "  - layout: TP 2 x PP 1 x DP 16, ZeRO-1, selective recompute, micro-batch 2 x 8 (32 GPUs) → none fits",
        "  - days: 47.7 days (target 30.0: over by 17.7) → —",
        "  - GPU-hours: 36,671 → —",
        "  - cost: $252,549.49 → —",
        "  - goodput: 99.3% → —",
    ]
    r = w.reliability
    assert r is not None
    better = w.model_copy(
        update={
            "cost_usd": 200000.0,
            "reliability": r.model_copy(update={"goodput": 0.95}),
        }
    )
    assert _diff_section(base, with_workloads(better)) == [
        "- workload llama-8b",
        "  - cost: $252,549.49 → $200,000.00 (-$52,549.49)",
        f"  - goodput: 99.3% → 95.0% (-{((r.goodput or 0.0) - 0.95) * 100:.1f} points)",
    ]


def test_diff_of_the_same_workloads_says_unchanged() -> None:
    doc = all_four()
    assert diff_markdown(doc, copy.deepcopy(doc)).splitlines()[0] == "# ✅ p5-small: no changes"
    head = copy.deepcopy(doc)
    head["resources"][0]["inputs"]["instanceType"] = "p5e.48xlarge"
    assert _diff_section(doc, head) == [
        "Unchanged: the workloads' fit, layout, days, cost and goodput are the same in base and head."
    ]
    # a workloads-only change is a change
    head = copy.deepcopy(doc)
    head["workloads"][0]["days"] = 40.0
    assert diff_markdown(doc, head).splitlines()[0] != "# ✅ p5-small: no changes"


# -- headless Chromium --------------------------------------------------------------------------------------------

# Run in the page (the test's copy only: the report carries no script): the page must not scroll sideways, every
# chart's bars must be drawn at a visible size inside the viewport, and no text of the workloads section (cells,
# bar names and figures, legend) may run out of its box.
WORKLOAD_CHECK = """<script>
const view = document.documentElement.clientWidth;
const problems = [];
if (document.documentElement.scrollWidth > view + 0.5)
  problems.push(`page scrolls: ${document.documentElement.scrollWidth} > ${view}`);
const section = document.getElementById('workloads');
const bars = [...section.querySelectorAll('svg.track')].map(svg => svg.getBoundingClientRect());
for (const b of bars)
  if (b.width < 60 || b.height < 4 || b.left < -0.5 || b.right > view + 0.5)
    problems.push(`bar ${b.left.toFixed(1)}-${b.right.toFixed(1)} x ${b.height.toFixed(1)}`);
for (const wrap of section.querySelectorAll('.wide'))
  if (wrap.scrollWidth > wrap.clientWidth + 0.5)
    problems.push(`table scrolls: ${wrap.scrollWidth} > ${wrap.clientWidth}`);
let texts = 0;
for (const el of section.querySelectorAll('td, th, .wbar .name, .wbar .value, .legend .key, h3, h4, p')) {
  const head = el.closest('thead');
  if (head && getComputedStyle(head).display === 'none') continue;
  texts += 1;
  const box = el.getBoundingClientRect();
  const range = document.createRange();
  range.selectNodeContents(el);
  const text = range.getBoundingClientRect();
  if (text.left < box.left - 0.5 || text.right > box.right + 0.5 || box.right > view + 0.5)
    problems.push(`${el.textContent.slice(0, 40)}: text ${text.left.toFixed(1)}-${text.right.toFixed(1)}, `
                  + `box ${box.left.toFixed(1)}-${box.right.toFixed(1)}`);
}
const result = document.createElement('pre');
result.id = 'workload-check';
result.textContent = JSON.stringify({problems, bars: bars.length, texts});
document.body.appendChild(result);
</script>"""


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 900, 375, 320])
def test_workloads_section_is_readable_in_headless_chromium(width: int, tmp_path: Path) -> None:
    doc = all_four()
    doc["workloads"][2]["name"] = "mixtral-8x7b-instruct-long-context-experiment"  # a long name must wrap, not clip
    result = dom_check(render(doc, "html"), WORKLOAD_CHECK, "workload-check", width, tmp_path)
    assert result["problems"] == []
    assert result["bars"] == 4 * 4  # four charts, a bar per workload
    assert result["texts"] > 100


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 900])
def test_the_p5_large_report_keeps_its_tables_on_the_page(width: int, tmp_path: Path) -> None:
    """A new user saw the memory table beside its chart run past the page's right margin at 1280 px (the report of a
    real stack: 9 columns need more than half the page). The memory and step tables stack under their charts
    where both halves would get less than 640 px; long policy ids wrap in the policy lists."""
    from aicluster.cli import main

    report = tmp_path / "p5-large.html"
    assert main(["-q", "report", "p5-large", "--format", "html", "-o", str(report)]) == 0
    result = dom_check(report.read_text(), WORKLOAD_CHECK, "workload-check", width, tmp_path)
    assert result["problems"] == []
    assert result["bars"] == 4 * 2  # four charts, two workloads
    inside = """<script>
const out = [];
for (const table of document.querySelectorAll('#workloads table')) {
  const box = table.getBoundingClientRect(), section = document.getElementById('workloads').getBoundingClientRect();
  if (box.right > section.right + 0.5)
    out.push(`${table.className}: ${box.right.toFixed(1)} > ${section.right.toFixed(1)}`);
}
const r = document.createElement('pre');
r.id = 'inside';
r.textContent = JSON.stringify(out);
document.body.appendChild(r);
</script>"""
    (tmp_path / "inside").mkdir()
    assert dom_check(report.read_text(), inside, "inside", width, tmp_path / "inside") == []


def test_failure_free_days_are_shown_beside_the_calendar_days() -> None:
    """`days` are calendar days (the failure-free step time divided by the goodput); `compute_days` keeps the
    failure-free figure, and the reports show both so a reader sees what failures cost."""
    doc = all_four()
    w = doc["workloads"][0]
    w["compute_days"] = w["days"] * 0.95
    md = render(doc, "md")
    assert f"| Failure-free days | {w['compute_days']:,.1f} days (days above: divided by the goodput) |" in md
    assert json.loads(render(doc, "json"))["workloads"][0]["compute_days"] == pytest.approx(w["compute_days"])
    del w["compute_days"]  # a preview written before the field: shown as unknown, not as zero
    assert "| Failure-free days | — |" in render(doc, "md")
