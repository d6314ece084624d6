"""The HTML report: self-contained, escaped, charts drawn to scale; and, in a real browser, a page
that is not blank."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from aicluster.report import render
from tests.report.png import read_png
from tests.report.previews import REGIONS, outside_regions, pool, waived_outside_regions

BAR_AREA = 400  # the longest bar's length, in SVG units (aicluster.report._html.BAR_AREA)
GAUGE = 320
BLUE = (9, 105, 218)  # bars
RED = (207, 34, 46)  # a gauge over budget
CHROMIUM = Path("/usr/lib/chromium/chromium")
INSTALL = "apt-get install -y --no-install-recommends chromium"


class Page(HTMLParser):
    """Start tags with their attributes, the text of headings and of table cells, in document order."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.headings: list[tuple[str, str]] = []
        self.rows: list[list[str]] = []
        self._open: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        if tag in {"h1", "h2", "h3", "h4"}:
            self._open = tag
            self.headings.append((tag, ""))
        elif tag == "tr":
            self.rows.append([])
        elif tag in {"td", "th"}:
            self._open = tag
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == self._open:
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open in {"td", "th"}:
            self.rows[-1][-1] += data
        elif self._open:
            tag, text = self.headings[-1]
            self.headings[-1] = (tag, text + data)

    def rects(self, cls: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == "rect" and cls in a.get("class", "").split()]

    def named(self, tag: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag]


def page(doc: dict[str, Any]) -> Page:
    return Page(render(doc, "html"))


def bar_widths(doc: dict[str, Any]) -> list[list[float]]:
    """The widths of the bars of each chart (cost, then power)."""
    bars = page(doc).rects("bar")
    half = len(bars) // 2
    return [[float(b["width"]) for b in chart] for chart in (bars[:half], bars[half:])]


@pytest.mark.parametrize("doc", ["passing_doc", "failing_doc", "hostile_doc"])
def test_self_contained(doc: str, request: pytest.FixtureRequest) -> None:
    text = render(request.getfixturevalue(doc), "html")
    parsed = Page(text)
    assert "http://" not in text
    assert "https://" not in text
    assert not [t for t, _ in parsed.tags if t in {"script", "link", "img", "iframe", "object", "embed"}]
    assert "@import" not in text
    assert "url(" not in text
    assert not [a for _, a in parsed.tags if "src" in a or "href" in a]
    assert parsed.named("meta")[2]["content"] == "default-src 'none'; style-src 'unsafe-inline'"
    assert "@media print" in text


def test_untrusted_strings_are_escaped(hostile_doc: dict[str, Any]) -> None:
    text = render(hostile_doc, "html")
    assert "<script>" not in text
    assert "<b>bold</b>" not in text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in text
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in text
    assert "ok &amp; fine" in text
    assert "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt; ünïcödé ✓" in text
    assert "\x1b" not in text
    parsed = Page(text)
    assert parsed.headings[0] == ("h1", "evil|stack")
    message = hostile_doc["policy"]["violations"][0]["message"].replace("\x1b", "")
    assert sum(message in row for row in parsed.rows) == 2  # under cis-aws and under soc2, read back as written


def test_escaping_happens_once(hostile_doc: dict[str, Any]) -> None:
    hostile_doc["cluster"]["allowed_regions"] = ["a&b", "<c>"]
    assert "Allowed: a&amp;b, &lt;c&gt;" in render(hostile_doc, "html")


def test_header_carries_stack_project_verdict_and_pack(failing_doc: dict[str, Any]) -> None:
    text = render(failing_doc, "html")
    assert '<div class="verdict fail">Failed: 3 mandatory violations, 1 advisory</div>' in text
    assert "Project aicluster · cluster llm-dev · policy pack aicluster 0.2.0" in text
    assert "Policy pack aicluster 0.2.0 · project aicluster · stack p5-small" in text


def test_advisory_only_is_a_pass_in_amber(failing_doc: dict[str, Any]) -> None:
    failing_doc["policy"]["violations"] = failing_doc["policy"]["violations"][-1:]
    text = render(failing_doc, "html")
    assert '<div class="verdict pass advisory">Passed: no mandatory violations, 1 advisory finding</div>' in text


def test_bars_are_proportional_to_the_values(failing_doc: dict[str, Any]) -> None:
    # cost 0 / 160,000 / 120,000 and facility power 0 / 45 / 33.75 kW
    assert bar_widths(failing_doc) == [[0.0, 400.0, 300.0], [0.0, 400.0, 300.0]]
    labels = [a for a in page(failing_doc).rects("bar")]
    assert [a["data-value"] for a in labels[:3]] == ["0.0", "160000.0", "120000.0"]


def test_one_pool_spans_the_chart(passing_doc: dict[str, Any]) -> None:
    assert bar_widths(passing_doc) == [[400.0], [400.0]]


def test_twenty_pools_grow_the_chart(passing_doc: dict[str, Any]) -> None:
    passing_doc["pools"] = [
        pool(f"pool-{i:02d}", nodes=1, cost_month=1000.0 * i, kw_it=i, kw_facility=2.0 * i) for i in range(1, 21)
    ]
    cost, power = bar_widths(passing_doc)
    assert cost == power == [pytest.approx(BAR_AREA * i / 20, abs=0.005) for i in range(1, 21)]
    charts = [s for s in page(passing_doc).named("svg") if s.get("class") == "chart"]
    assert [c["height"] for c in charts] == ["480", "480"]


def test_all_zero_values_draw_empty_bars(passing_doc: dict[str, Any]) -> None:
    passing_doc["pools"] = [pool(n, nodes=0, cost_month=0.0, kw_it=0.0, kw_facility=0.0) for n in ("a", "b")]
    assert bar_widths(passing_doc) == [[0.0, 0.0], [0.0, 0.0]]


def test_no_pools(passing_doc: dict[str, Any]) -> None:
    passing_doc["pools"] = []
    text = render(passing_doc, "html")
    assert "<p>No pools.</p>" in text
    assert 'class="chart"' not in text


def test_budget_gauges_fill_to_the_share_used(passing_doc: dict[str, Any], failing_doc: dict[str, Any]) -> None:
    # 171,295.64 of 250,000 (68.5%) and 46.56 of 60 kW (77.6%)
    fills = page(passing_doc).rects("fill")
    assert [(f["class"], float(f["width"])) for f in fills] == [
        ("fill ok", pytest.approx(GAUGE * 171295.64 / 250000, abs=0.005)),
        ("fill ok", pytest.approx(GAUGE * 46.56 / 60, abs=0.005)),
    ]
    over = page(failing_doc).rects("fill")  # 119.7% and 133.3%: full, and red
    assert [(f["class"], f["width"]) for f in over] == [("fill over", "320.00"), ("fill over", "320.00")]
    assert "<strong>119.7%</strong> used: $299,300.00 of $250,000.00" in render(failing_doc, "html")


def test_no_budgets_no_gauges(passing_doc: dict[str, Any]) -> None:
    passing_doc["cluster"]["budgets"] = {}
    assert 'id="budgets"' not in render(passing_doc, "html")


def test_findings_by_framework_then_severity(failing_doc: dict[str, Any]) -> None:
    headings = page(failing_doc).headings
    start = headings.index(("h2", "Findings"))
    end = headings.index(("h2", "Waivers"))
    assert headings[start + 1 : end] == [
        ("h3", "cis-aws"),
        ("h4", "critical (2)"),
        ("h3", "soc2"),
        ("h4", "critical (2)"),
        ("h3", "general"),
        ("h4", "critical (1)"),
        ("h4", "medium (1)"),
    ]


def test_waivers_policies_tags_and_regions(failing_doc: dict[str, Any]) -> None:
    text = render(failing_doc, "html")
    rows = Page(text).rows
    assert [
        "aws-fsx-lustre-enable-encryption",
        "llm-dev-scratch",
        "kmsKeyId is not set",
        "scratch data only, deleted after each run",
        "2027-01-31",
    ] in rows
    assert ["cost-center", "4711"] in rows
    assert "<h3>Passed (2)</h3>" in text
    assert "<h3>Not applicable (1)</h3>" in text
    assert "<h3>Disabled (1)</h3>" in text
    assert '<span class="tag">aws/us-east-1</span>' in text


def find_chromium() -> Path | None:
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    found = shutil.which("chromium")
    return Path(found) if found else None


def require(browser: Path | None, in_ci: bool) -> Path:
    """The browser, or a skip that says what to install; in CI (CI=true) a failure instead."""
    if browser is None:
        message = f"headless Chromium is not installed; install it with `{INSTALL}`"
        if in_ci:
            pytest.fail(f"{message} (CI=true: this test must run)")
        pytest.skip(message)
    return browser


def dom_check(text: str, script: str, check_id: str, width: int, tmp_path: Path) -> Any:
    """Render a report in headless Chromium at `width` with `script` appended (the report's CSP would block it, so
    it is lifted for the check only) and return the JSON the script writes into <pre id=check_id>."""
    browser = require(find_chromium(), in_ci=os.environ.get("CI") == "true")
    csp = '<meta http-equiv="Content-Security-Policy"'
    assert csp in text
    html = tmp_path / "report.html"
    html.write_text(text.replace(csp, '<meta name="csp-off-for-the-check"').replace("</body>", script + "</body>"))
    command = [
        str(browser),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--window-size={width},2000",
        "--dump-dom",
        html.as_uri(),
    ]
    dom = subprocess.run(command, check=True, capture_output=True, text=True, timeout=120).stdout
    found = re.search(rf'<pre id="{check_id}">(.*?)</pre>', dom, re.S)
    assert found, "the check did not run"
    return json.loads(unescape(found.group(1)))


def test_a_missing_browser_skips_locally_and_fails_in_ci() -> None:
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y --no-install-recommends chromium"):
        require(None, in_ci=False)
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require(None, in_ci=True)


def runs(row: bytes, colour: tuple[int, ...], channels: int) -> list[int]:
    """Lengths of the runs of pixels of exactly this colour in one row."""
    found, length = [], 0
    for x in range(0, len(row), channels):
        if tuple(row[x : x + 3]) == colour:
            length += 1
        elif length:
            found.append(length)
            length = 0
    return [*found, length] if length else found


@pytest.mark.slow
def test_renders_in_headless_chromium(failing_doc: dict[str, Any], tmp_path: Path) -> None:
    browser = require(find_chromium(), in_ci=os.environ.get("CI") == "true")
    html, png = tmp_path / "report.html", tmp_path / "report.png"
    html.write_text(render(failing_doc, "html"), encoding="utf-8")
    command = [
        str(browser),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1200,2000",
        f"--screenshot={png}",
        html.as_uri(),
    ]
    started = time.monotonic()
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    print(f"chromium screenshot in {time.monotonic() - started:.1f} s")

    image = read_png(png)
    assert (image.width, image.height) == (1200, 2000)
    white = bytes([255] * image.channels)
    inked = sum(
        row[x : x + image.channels] != white for row in image.rows[::4] for x in range(0, len(row), image.channels * 4)
    )
    assert inked / (image.width * image.height / 16) > 0.03, "the page is (nearly) blank"
    bar_runs = {n for row in image.rows for n in runs(row, BLUE, image.channels)}
    assert {BAR_AREA, 3 * BAR_AREA // 4} <= bar_runs, "bars of 400 and 300 px (160,000 and 120,000 $/month)"
    gauge_runs = {n for row in image.rows for n in runs(row, RED, image.channels)}
    assert GAUGE in gauge_runs, "a full red gauge for a budget overrun"


# Run in the page (the test's copy only: the report itself carries no script and forbids one): every
# headline figure's text must lie inside its card, the card inside the viewport, nothing scrolls.
CLIP_CHECK = """<script>
const clipped = [];
for (const el of document.querySelectorAll('h1, .verdict, .card .label, .card .value, .card .detail, .gauge .meta')) {
  const box = (el.closest('.card') || el.parentElement).getBoundingClientRect();
  const range = document.createRange();
  range.selectNodeContents(el);
  const text = range.getBoundingClientRect();
  if (text.right > box.right + 0.5 || text.left < box.left - 0.5 || el.scrollWidth > el.clientWidth
      || box.right > document.documentElement.clientWidth + 0.5)
    clipped.push(`${el.textContent}: text ${text.left.toFixed(1)}-${text.right.toFixed(1)}, `
                 + `box ${box.left.toFixed(1)}-${box.right.toFixed(1)}`);
}
const result = document.createElement('pre');
result.id = 'clip-check';
result.textContent = JSON.stringify(clipped);
document.body.appendChild(result);
</script>"""


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 900, 375, 320])
def test_no_headline_figure_is_clipped(failing_doc: dict[str, Any], tmp_path: Path, width: int) -> None:
    """A 2,496-node stack's $19,982,955.04/month lost its last digit at 1400 and 900 px (issue 13, #11)."""
    failing_doc["summary"].update(
        nodes=2496,
        gpus=19968,
        cost_usd_per_hour=27373.91,
        cost_usd_per_month=19982955.04,
        power_kw_it=27000.5,
        power_kw_facility=32400.6,
        carbon_t_per_month=12345.67,
        resources=12345,
    )
    text = render(failing_doc, "html")
    assert "$19,982,955.04" in text
    assert dom_check(text, CLIP_CHECK, "clip-check", width, tmp_path) == []


def test_findings_of_one_cause_are_one_row_naming_every_resource() -> None:
    """26 rows for one pool outside the allowed regions became one, with the resources listed (issue 13, #13)."""
    p = page(outside_regions())
    rows = [r for r in p.rows if r and r[0].endswith(REGIONS)]
    assert len(rows) == 2
    subnets = "".join(f"llm-dev-subnet-{i} (subnet)" for i in range(25))
    assert rows[0][1] == "26 resources" + "llm-dev-vpc (vpc)" + subnets
    assert rows[0][3].startswith("26 resources, each is in us-east-1, outside compliance.allowed_regions [us-west-2]")
    assert ("h4", "high (27)") in p.headings


def test_waived_findings_are_grouped_and_the_verdict_counts_groups() -> None:
    p = page(waived_outside_regions())
    rows = [r for r in p.rows if r and r[0] == REGIONS]
    assert len(rows) == 2
    assert rows[0][1] == "4 resources" + "llm-dev-vpc (vpc)" + "".join(f"llm-dev-subnet-{i} (subnet)" for i in range(3))
    assert rows[0][2].startswith("4 resources, each is in us-east-1")
    assert rows[0][3:] == ["moving to us-west-2 in Q3", "2027-09-30"]
    assert rows[1][1:] == [
        "llm-dev-scratch",
        "lustre file system llm-dev-scratch is in eu-west-1",
        "the file system is deleted on Friday",
        "2027-09-30",
    ]
    assert "27 mandatory violations in 2 groups" in render(outside_regions(), "html")


# Every chart value's text, in the chart's own coordinates, must end inside the chart's viewBox.
VALUE_CHECK = """<script>
const cut = [];
for (const svg of document.querySelectorAll('svg.chart')) {
  const width = svg.viewBox.baseVal.width;
  for (const t of svg.querySelectorAll('text.value')) {
    const box = t.getBBox();
    const end = box.x + box.width;
    if (end > width + 0.5) cut.push(`${t.textContent}: ends at ${end.toFixed(1)} of ${width}`);
  }
}
const result = document.createElement('pre');
result.id = 'value-check';
result.textContent = JSON.stringify(cut);
document.body.appendChild(result);
</script>"""


@pytest.mark.slow
def test_no_chart_value_is_cut_off(failing_doc: dict[str, Any], tmp_path: Path) -> None:
    """Issue 30 #9: the cost chart cut its value labels ("$4,064,640.00 + unpr"): the chart is as wide as its longest
    value needs (measured here in Chromium)."""
    failing_doc["pools"][0].update(cost_usd_per_month=4064640.0, unpriced=["root volumes"])
    text = render(failing_doc, "html")
    assert "$4,064,640.00 + unpriced" in text
    assert dom_check(text, VALUE_CHECK, "value-check", 1400, tmp_path) == []
