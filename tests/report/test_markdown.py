"""The Markdown report: headline verdict, tables, findings by severity, escaping."""

from __future__ import annotations

from typing import Any

import pytest
from markdown_it import MarkdownIt

from aicluster.report import render
from tests.report.previews import REGIONS, outside_regions, waived_outside_regions


def lines(doc: dict[str, Any]) -> list[str]:
    return render(doc, "md").splitlines()


def section(text: list[str], heading: str) -> list[str]:
    """The lines under a `## heading` up to the next `## `."""
    start = text.index(heading) + 1
    end = next((i for i in range(start, len(text)) if text[i].startswith("## ")), len(text))
    return text[start:end]


def test_headline_counts_mandatory_and_advisory(failing_doc: dict[str, Any]) -> None:
    text = lines(failing_doc)
    assert text[0] == "# ❌ p5-small: 3 mandatory violations, 1 advisory"
    assert text[2] == "Project aicluster · cluster llm-dev · policy pack aicluster 0.2.0"


def test_headline_when_every_policy_passes(passing_doc: dict[str, Any]) -> None:
    assert lines(passing_doc)[0] == "# ✅ p5-small: all 3 policies passed"


def test_headline_with_advisory_findings_only(failing_doc: dict[str, Any]) -> None:
    failing_doc["policy"]["violations"] = failing_doc["policy"]["violations"][-1:]
    assert lines(failing_doc)[0] == "# ⚠️ p5-small: no mandatory violations, 1 advisory finding"


def test_summary_compares_budgets(failing_doc: dict[str, Any]) -> None:
    summary = section(lines(failing_doc), "## Summary")
    assert "| Cost, $/month | $299,300.00 | $250,000.00 | 119.7% |" in summary
    assert "| Power (facility), kW | 80.00 | 60.00 | 133.3% |" in summary
    assert "| Power (IT), kW | 70.20 |  |  |" in summary
    assert "| Carbon, t CO2e/month | 13.20 |  |  |" in summary
    assert "| Accelerators | 80 |  |  |" in summary
    assert "Racks are planned at 40.00 kW each." in summary


def test_pools_table_has_one_row_per_pool(failing_doc: dict[str, Any]) -> None:
    pools = [row for row in section(lines(failing_doc), "## Pools") if row.startswith("| ") and "---" not in row]
    assert pools[1:] == [
        "| a100-spot | aws | us-east-1 | us-east-1a | p4d.24xlarge | spot | 2 | 16 | $0.00 | 0.00 | 0.00 |",
        "| h100 | aws | us-east-1 | us-east-1a | p5.48xlarge | on-demand | 4 | 32 | $160,000.00 | 40.00 | 45.00 |",
        "| h200 | aws | us-east-1 | us-east-1a | p5e.48xlarge | on-demand | 4 | 32 | $120,000.00 | 30.00 | 33.75 |",
    ]


def test_findings_are_grouped_critical_first(failing_doc: dict[str, Any]) -> None:
    findings = section(lines(failing_doc), "## Findings")
    headings = [row for row in findings if row.startswith("### ")]
    assert headings == ["### Critical (3)", "### Medium (1)"]
    assert (
        "| cluster-budget-enforce-monthly-cost | mandatory | (stack) "
        "| $299,300.00/month exceeds budgets.monthly\\_usd $250,000.00 |" in findings
    )
    assert (
        "| cluster-power-enforce-facility-budget | advisory | (stack) "
        "| 80.0 kW facility exceeds budgets.power\\_kw 60 kW |" in findings
    )


def test_waivers_and_warnings(failing_doc: dict[str, Any]) -> None:
    text = lines(failing_doc)
    assert (
        "| aws-fsx-lustre-enable-encryption | llm-dev-scratch | kmsKeyId is not set "
        "| scratch data only, deleted after each run | 2027-01-31 |" in section(text, "## Waived (1)")
    )
    assert section(text, "## Warnings")[1] == "- pool a100-spot: spot capacity may be reclaimed"


def test_passed_not_applicable_and_disabled_policies_are_listed(failing_doc: dict[str, Any]) -> None:
    text = lines(failing_doc)
    assert "<details><summary>Passed policies (2)</summary>" in text
    assert "- aws-fsx-lustre-enable-encryption: Aws fsx lustre enable encryption" in text
    assert "- cluster-tags-missing-owner: the stack sets no tags" in text
    assert "<details><summary>Disabled (1)</summary>" in text


def test_a_preview_without_policy_results_says_so(passing_doc: dict[str, Any]) -> None:
    del passing_doc["policy"]
    text = lines(passing_doc)
    assert text[0] == "# ⚪ p5-small: policy checks not run"
    assert section(text, "## Findings") == ["", "Policy checks were not run for this preview."]


def test_untrusted_strings_cannot_break_tables_or_inject_html(hostile_doc: dict[str, Any]) -> None:
    text = lines(hostile_doc)
    assert text[0] == "# ❌ evil\\|stack: 3 mandatory violations, 1 advisory"
    row = next(r for r in text if r.startswith("| aws-ec2-launchtemplate-disallow-public-ip | mandatory | lt"))
    assert row == (
        "| aws-ec2-launchtemplate-disallow-public-ip | mandatory | lt\\|\\<script\\> "
        "| line one \\| \\<script\\>alert('x')\\</script\\><br>line two \\*not bold\\* "
        "\\[link\\](javascript:alert(1)) \\[31mred\\[0m |"
    )
    assert row.replace("\\|", "").count("|") == 5  # four cells, whatever the values hold
    assert "| ok &amp; fine<br>\\</td\\>\\</tr\\>\\</table\\> ünïcödé ✓ | 2027-01-31 |" in "\n".join(text)
    assert "- \\`code\\` \\_under\\_ \\~strike\\~ \\\\ back" in text
    assert "\x1b" not in "\n".join(text)


@pytest.mark.parametrize("doc", ["passing_doc", "failing_doc", "hostile_doc"])
def test_no_runs_of_blank_lines_and_one_trailing_newline(doc: str, request: pytest.FixtureRequest) -> None:
    text = render(request.getfixturevalue(doc), "md")
    assert text.endswith("\n")
    assert not text.endswith("\n\n")
    assert "\n\n\n" not in text


def test_an_all_passing_preview_lists_no_violations(passing_doc: dict[str, Any]) -> None:
    findings = section(lines(passing_doc), "## Findings")
    assert findings[:4] == ["", "No violations.", "", "<details><summary>Passed policies (3)</summary>"]


def cell_texts(text: str) -> list[list[str]]:
    """Every table row as a CommonMark+GFM-tables parser reads it: the text of each cell, `<br>` as a newline."""
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text)
    rows: list[list[str]] = []
    in_row = False
    for token in tokens:
        if token.type in {"tr_open", "tr_close"}:
            in_row = token.type == "tr_open"
            rows += [[]] if in_row else []
        elif token.type == "inline" and in_row:
            rows[-1].append("".join(c.content if c.type == "text" else "\n" for c in token.children or []))
    return rows


@pytest.mark.parametrize("doc", ["passing_doc", "failing_doc", "hostile_doc"])
def test_values_parse_back_as_plain_text(doc: str, request: pytest.FixtureRequest) -> None:
    text = render(request.getfixturevalue(doc), "md")
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text)
    inline = [c for t in tokens for c in t.children or []]
    assert {c.type for c in inline} <= {"text", "html_inline"}  # no links, emphasis, code or strikethrough
    assert {c.content for c in inline if c.type == "html_inline"} <= {"<br>"}


def test_a_hostile_message_survives_a_markdown_parser(hostile_doc: dict[str, Any]) -> None:
    rows = cell_texts(render(hostile_doc, "md"))
    widths = {len(row) for row in rows}
    assert widths <= {4, 5, 11}  # summary/findings, waivers, pools: no cell split by a `|` in a value
    message = hostile_doc["policy"]["violations"][0]["message"].replace("\x1b", "")
    assert ["aws-ec2-launchtemplate-disallow-public-ip", "mandatory", "lt|<script>", message] in rows
    reason = hostile_doc["policy"]["waived"][0]["reason"].replace("\r\n", "\n")
    assert reason in [row[3] for row in rows if len(row) == 5]


def test_pool_counts_carry_thousands_separators(passing_doc: dict[str, Any]) -> None:
    """A 200-node pool printed "1600" GPUs where the summary printed "1,600" (issue 13, #17)."""
    passing_doc["pools"][0].update(nodes=1200, gpus=9600)
    row = next(r for r in section(lines(passing_doc), "## Pools") if r.startswith("| h100 "))
    assert "| 1,200 | 9,600 |" in row


def test_findings_of_one_cause_are_one_row_naming_every_resource() -> None:
    """One pool outside the allowed regions gave 26 rows, one per VPC, subnet... (issue 13, #13)."""
    findings = section(render(outside_regions(), "md").splitlines(), "## Findings")
    rows = [r for r in findings if r.startswith(f"| {REGIONS} ")]
    assert "### High (27)" in findings  # the count is of findings, as the verdict counts them
    assert len(rows) == 2
    resources = ", ".join(["llm-dev-vpc (vpc)", *(f"llm-dev-subnet-{i} (subnet)" for i in range(25))])
    assert rows[0] == (
        f"| {REGIONS} | mandatory | 26: {resources} "
        "| 26 resources, each is in us-east-1, outside compliance.allowed\\_regions \\[us-west-2\\]; "
        "move it or add us-east-1 to allowed\\_regions |"
    )
    other = "lustre file system llm-dev-scratch is in eu-west-1"
    assert rows[1] == f"| {REGIONS} | mandatory | llm-dev-scratch | {other} |"


def test_headline_counts_findings_and_the_groups_the_table_shows() -> None:
    """27 findings in 2 rows: the verdict says both (it said 27 while the table showed 2)."""
    assert lines(outside_regions())[0] == "# ❌ p5-small: 27 mandatory violations in 2 groups"
    doc = outside_regions()
    for v in doc["policy"]["violations"]:
        v["enforcement"] = "advisory"
    assert lines(doc)[0] == "# ⚠️ p5-small: no mandatory violations, 27 advisory findings in 2 groups"


def test_waived_findings_are_grouped_by_policy_cause_and_waiver() -> None:
    waived = section(lines(waived_outside_regions()), "## Waived (5)")
    rows = [r for r in waived if r.startswith(f"| {REGIONS} ")]
    resources = "llm-dev-vpc (vpc), llm-dev-subnet-0 (subnet), llm-dev-subnet-1 (subnet), llm-dev-subnet-2 (subnet)"
    assert rows == [
        f"| {REGIONS} | 4: {resources} | 4 resources, each is in us-east-1, outside compliance.allowed\\_regions "
        "\\[us-west-2\\]; move it or add us-east-1 to allowed\\_regions | moving to us-west-2 in Q3 | 2027-09-30 |",
        f"| {REGIONS} | llm-dev-scratch | lustre file system llm-dev-scratch is in eu-west-1 "
        "| the file system is deleted on Friday | 2027-09-30 |",
    ]


FILESYSTEMS = [
    {"name": "scratch", "kind": "lustre", "service": "fsx-lustre", "provider": "aws", "region": "us-east-1",
     "zone": "us-east-1a", "mount": "/fsx", "capacity_tib": 46.88, "throughput_mb_s": 12000.0,
     "cost_usd_per_month": 10418.84},
    {"name": "home", "kind": "nfs", "service": "filestore", "provider": "gcp", "region": "us-central1", "zone": None,
     "mount": "/shared", "capacity_tib": 2.5, "throughput_mb_s": 675.0, "cost_usd_per_month": None},
]  # fmt: skip


def test_file_systems_are_listed_with_capacity_throughput_and_cost(passing_doc: dict[str, Any]) -> None:
    """Issue 30 #3: the pools table listed compute only; file systems belong there as `plan` shows them."""
    passing_doc["filesystems"] = FILESYSTEMS
    rows = [line for line in section(lines(passing_doc), "## File systems") if line.startswith("| ")]
    assert rows[0].startswith("| File system | Kind | Service |")
    assert (
        rows[2]
        == "| scratch | lustre | fsx-lustre | aws | us-east-1 | us-east-1a | /fsx | 46.88 | 12.00 | $10,418.84 |"
    )
    assert rows[3] == "| home | nfs | filestore | gcp | us-central1 | — | /shared | 2.50 | 0.68 | unpriced |"
    html = render(passing_doc, "html")
    assert "<h3>File systems</h3>" in html
    assert "<td>scratch</td><td>lustre</td><td>fsx-lustre</td>" in html
    assert '<td class="num">10,418.84</td>' in html


def test_a_preview_without_file_systems_has_no_such_section(passing_doc: dict[str, Any]) -> None:
    passing_doc.pop("filesystems", None)
    assert "## File systems" not in lines(passing_doc)
