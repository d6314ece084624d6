"""Owned sites in the reports: the sites table, each fabric's bill of materials, the rack power picture (HTML),
the Markdown and JSON reports, and the diff of site and fabric figures."""

from __future__ import annotations

import copy
import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from aicluster.report import diff_markdown, render
from tests.report.previews import fabric, onprem, rack
from tests.report.test_html import Page, dom_check


@pytest.fixture
def site_doc() -> dict[str, Any]:
    return onprem()


def rack_rows(text: str) -> list[dict[str, str]]:
    """Each rack of the picture: its name, the fill's and the limit mark's inline widths, its figure, its class."""
    found = re.findall(
        r'<div class="rack( over)?" title="[^"]*">\s*<div class="name">([^<]*)</div>\s*'
        r'<div class="track"><div class="fill[^"]*" style="width: ([\d.]+)%"></div>'
        r'<div class="limit" style="left: ([\d.]+)%"></div></div>\s*<div class="value">([^<]*)</div>',
        text,
    )
    return [{"over": o.strip(), "name": n, "fill": f, "limit": m, "value": unescape(v)} for o, n, f, m, v in found]


def test_a_preview_without_sites_has_no_sites_section(passing_doc: dict[str, Any]) -> None:
    assert "sites" not in passing_doc  # a cloud-only preview written before sites existed
    assert 'id="sites"' not in render(passing_doc, "html")
    assert "## Sites" not in render(passing_doc, "md")
    assert json.loads(render(passing_doc, "json"))["sites"] == []
    passing_doc["sites"] = []
    assert 'id="sites"' not in render(passing_doc, "html")


def test_html_sites_table_names_power_racks_cost_and_carbon(site_doc: dict[str, Any]) -> None:
    rows = Page(render(site_doc, "html")).rows
    assert [
        "fra1",
        "h100",
        "128",
        "1,024",
        "1,305.60 kW of 2,500.00 kW (52.2%)",
        "1,632.00 kW",
        "32",
        "40.80 kW of 41.00 kW",
        "$1,013,333.33",
        "$142,963.20",
        "452.72",
    ] in rows


def test_html_bill_of_materials_lists_switches_cables_and_transceivers_by_tier(site_doc: dict[str, Any]) -> None:
    page = Page(render(site_doc, "html"))
    assert ("h4", "Bill of materials: fabric fra1") in page.headings
    start = page.rows.index(["Item", "Model", "Quantity"])
    assert page.rows[start + 1 : start + 7] == [
        ["leaf switches", "qm9700", "32"],
        ["spine switches", "qm9700", "16"],
        ["node-leaf cables", "400G InfiniBand", "1,024"],
        ["leaf-spine cables", "400G InfiniBand", "1,024"],
        ["switch side transceivers", "qm9700 ports", "1,536"],
        ["node side transceivers", "node NIC ports", "512"],
    ]


def test_three_tier_fabric_lists_its_core_tier(site_doc: dict[str, Any]) -> None:
    site_doc["sites"][0]["fabrics"] = [
        fabric(tiers=3, core_switches=64, cables_spine_core=4096, switch="qm9790", fabric="roce", link_gbps=200)
    ]
    rows = Page(render(site_doc, "html")).rows
    assert ["core switches", "qm9790", "64"] in rows
    assert ["spine-core cables", "200G Ethernet (RoCE)", "4,096"] in rows


def test_two_tier_fabric_lists_no_core_tier(site_doc: dict[str, Any]) -> None:
    rows = Page(render(site_doc, "html")).rows
    assert not [r for r in rows if r and r[0] in {"core switches", "spine-core cables"}]


def test_rack_picture_draws_a_bar_per_rack_against_its_limit(site_doc: dict[str, Any]) -> None:
    text = render(site_doc, "html")
    racks = rack_rows(text)
    assert [r["name"] for r in racks] == [f"h100-r{i:02d}" for i in range(1, 33)]
    # 40.8 of 41 kW: the track is the limit (no rack is over it), so the mark sits at its end
    assert {(r["fill"], r["limit"], r["value"], r["over"]) for r in racks} == {
        ("99.51", "100.00", "40.80 of 41.00 kW", "")
    }
    assert ("h4", "Rack power: 32 racks; the fullest draws 40.80 kW of 41.00 kW; none over the limit") in Page(
        text
    ).headings


def test_an_over_limit_rack_is_marked_and_runs_past_the_limit(site_doc: dict[str, Any]) -> None:
    site_doc["sites"][0]["racks"][1] = rack("h100-r02", 51.25, nodes=5)
    text = render(site_doc, "html")
    racks = rack_rows(text)
    over = [r for r in racks if r["over"]]
    assert over == [
        {
            "over": "over",
            "name": "h100-r02",
            "fill": "100.00",
            "limit": "80.00",
            "value": "51.25 of 41.00 kW: 10.25 kW over ⚠",
        }
    ]
    assert racks[0]["fill"] == f"{40.8 / 51.25 * 100:.2f}"  # every bar on the over-limit rack's scale
    assert "1 over the limit: h100-r02" in text
    row = next(r for r in Page(text).rows if r and r[0] == "fra1")
    assert row[7] == "51.25 kW of 41.00 kW (1 over)"
    assert '<td class="num over">51.25 kW of 41.00 kW (1 over)</td>' in text


def test_a_site_over_its_ceiling_is_marked(site_doc: dict[str, Any]) -> None:
    site_doc["sites"][0]["max_kw"] = 1200.0
    text = render(site_doc, "html")
    assert '<td class="num over">1,305.60 kW of 1,200.00 kW (108.8%): over</td>' in text


def test_site_strings_are_escaped(site_doc: dict[str, Any]) -> None:
    site_doc["sites"][0]["name"] = "<script>x</script>"
    site_doc["sites"][0]["racks"][0]["name"] = '"><img src=x>'
    text = render(site_doc, "html")
    assert "<script>x" not in text
    assert "<img src=x>" not in text
    assert "&lt;script&gt;x&lt;/script&gt;" in text
    md = render(site_doc, "md")
    assert "\\<script\\>x\\</script\\>" in md


def test_a_malformed_site_names_its_key_path(site_doc: dict[str, Any]) -> None:
    site_doc["sites"][0]["racks"][3]["power_kw"] = "hot"
    with pytest.raises(ValueError, match=r"'sites\[0\]\.racks\[3\]\.power_kw' must be a finite number"):
        render(site_doc, "html")
    site_doc["sites"][0]["racks"][3]["power_kw"] = 40.8
    del site_doc["sites"][0]["fabrics"][0]["spine_switches"]
    with pytest.raises(ValueError, match=r"missing key 'sites\[0\]\.fabrics\[0\]\.spine_switches'"):
        render(site_doc, "md")


def test_markdown_has_the_sites_fabrics_and_racks(site_doc: dict[str, Any]) -> None:
    md = render(site_doc, "md").splitlines()
    assert (
        "| fra1 | h100 | 128 | 1,024 | 1,305.60 kW of 2,500.00 kW (52.2%) | 1,632.00 kW | 32 | 40.80 kW of 41.00 kW "
        "| $1,013,333.33 | $142,963.20 | 452.72 |"
    ) in md
    assert (
        "| fra1 | fra1 | qm9700 (infiniband, radix 64 at 400G, 8 rails) | 2 | 32 / 16 / 0 | 1,024 / 1,024 "
        "| 1,536 + 512 | 3,072 / 0 | 1:1 / 1:1 |"
    ) in md
    assert "- Racks of fra1: 32 racks; the fullest draws 40.80 kW of 41.00 kW; none over the limit" in md


def test_json_report_carries_sites_with_bill_of_materials_and_over_limit_racks(site_doc: dict[str, Any]) -> None:
    site_doc["sites"][0]["racks"][31] = rack("h100-r32", 42.0)
    data = json.loads(render(site_doc, "json"))
    (site,) = data["sites"]
    assert (site["name"], site["nodes"], site["max_kw"], len(site["racks"])) == ("fra1", 128, 2500.0, 32)
    assert site["racks_over_limit"] == ["h100-r32"]
    assert site["fullest_rack"] == "h100-r32"
    assert [r["over_limit"] for r in site["racks"]] == [False] * 31 + [True]
    assert [(b["what"], b["item"], b["quantity"]) for b in site["fabrics"][0]["bill_of_materials"]] == [
        ("leaf", "switch", 32),
        ("spine", "switch", 16),
        ("node-leaf", "cable", 1024),
        ("leaf-spine", "cable", 1024),
        ("switch side", "transceiver", 1536),
        ("node side", "transceiver", 512),
    ]


def section(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line]


def test_diff_shows_fabric_and_site_figures_that_change(site_doc: dict[str, Any]) -> None:
    head = copy.deepcopy(site_doc)
    head["sites"][0]["fabrics"][0].update(spine_switches=24, cables_leaf_spine=1536)
    head["sites"][0]["racks"][0] = rack("h100-r01", 43.0)
    assert section(diff_markdown(site_doc, head), "## Sites and fabrics") == [
        "- site fra1",
        "  - racks over the limit: 0 → 1",
        "- fabric fra1 (site fra1)",
        "  - spine switches: 16 → 24",
        "  - leaf-spine cables: 1,024 → 1,536",
    ]


def test_diff_of_identical_sites_says_unchanged(site_doc: dict[str, Any]) -> None:
    text = diff_markdown(site_doc, copy.deepcopy(site_doc))
    assert "no changes" in text.splitlines()[0]
    head = copy.deepcopy(site_doc)
    head["resources"][0]["inputs"]["instanceType"] = "p5e.48xlarge"
    assert section(diff_markdown(site_doc, head), "## Sites and fabrics") == [
        "Unchanged: the sites' power, racks, cost and fabrics are the same in base and head."
    ]


def test_diff_names_a_site_that_is_added(passing_doc: dict[str, Any], site_doc: dict[str, Any]) -> None:
    found = section(diff_markdown(passing_doc, site_doc), "## Sites and fabrics")
    assert found[:2] == ["- site fra1 (added)", "  - 128 nodes"]
    assert found[2].startswith(
        "  - fabric fra1: qm9700 (radix 64 at 400G, infiniband, 8 rails), 2 tiers: 32/16 leaf/spine"
    )


def test_cloud_only_diff_has_no_sites_section(passing_doc: dict[str, Any]) -> None:
    assert "## Sites and fabrics" not in diff_markdown(passing_doc, copy.deepcopy(passing_doc))


# Run in the page (the test's copy only: the report carries no script): the page must not scroll sideways, every
# rack's name and figure must lie inside the viewport, and each bar's fill must be its share of the track.
RACK_CHECK = """<script>
const view = document.documentElement.clientWidth;
const problems = [];
const scrolled = document.documentElement.scrollWidth;
if (scrolled > view + 0.5) problems.push(`page scrolls: ${scrolled} > ${view}`);
const racks = [];
for (const rack of document.querySelectorAll('.rack')) {
  for (const el of rack.querySelectorAll('.name, .value')) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const box = range.getBoundingClientRect();
    if (box.left < -0.5 || box.right > view + 0.5 || box.width < 1)
      problems.push(`${el.textContent}: ${box.left}-${box.right}`);
  }
  const track = rack.querySelector('.track').getBoundingClientRect();
  const fill = rack.querySelector('.fill');
  racks.push({name: rack.querySelector('.name').textContent, share: fill.getBoundingClientRect().width / track.width,
              track: track.width, colour: getComputedStyle(fill).backgroundColor});
}
const result = document.createElement('pre');
result.id = 'rack-check';
result.textContent = JSON.stringify({problems, racks});
document.body.appendChild(result);
</script>"""


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 900, 375, 320])
def test_rack_picture_is_readable_in_headless_chromium(site_doc: dict[str, Any], tmp_path: Path, width: int) -> None:
    site_doc["sites"][0]["racks"][2] = rack("row7-rack-with-a-long-name", 51.25, nodes=5)
    text = render(site_doc, "html")
    result = dom_check(text, RACK_CHECK, "rack-check", width, tmp_path)
    assert result["problems"] == []
    racks = result["racks"]
    assert len(racks) == 32
    assert min(r["track"] for r in racks) >= 80, "a bar too short to read"
    over = racks[2]
    assert over["name"] == "row7-rack-with-a-long-name"
    assert over["share"] == pytest.approx(1.0, abs=0.01)
    assert over["colour"] == "rgb(207, 34, 46)"  # red: over the limit
    assert {r["colour"] for i, r in enumerate(racks) if i != 2} == {"rgb(26, 127, 55)"}
    assert all(r["share"] == pytest.approx(40.8 / 51.25, abs=0.01) for i, r in enumerate(racks) if i != 2)
