"""`diff_markdown`: resources, cost and power, and findings from the base preview to the head."""

from __future__ import annotations

import copy
from typing import Any

from aicluster.report import diff_markdown
from aicluster.report._diff import property_changes
from tests.report.previews import FSX, LT, REGIONS, STACK, failing, outside_regions, pool, resource, urn


def lines(base: dict[str, Any], head: dict[str, Any]) -> list[str]:
    return diff_markdown(base, head).splitlines()


def section(text: list[str], heading: str) -> list[str]:
    start = text.index(heading) + 1
    end = next((i for i in range(start, len(text)) if text[i].startswith("## ")), len(text))
    return [line for line in text[start:end] if line]


def changed_head() -> dict[str, Any]:
    """The failing preview, with one resource changed, one removed and one added."""
    head = failing()
    head["resources"][0]["inputs"]["metadataOptions"] = {"httpTokens": "optional"}
    head["resources"][0]["inputs"]["userData"] = "#cloud-config"
    del head["resources"][2]
    head["resources"].append(resource(LT, "llm-dev-h200-lt", instanceType="p5e.48xlarge"))
    return head


def test_identical_previews_have_no_changes(passing_doc: dict[str, Any]) -> None:
    assert diff_markdown(passing_doc, copy.deepcopy(passing_doc)) == (
        "# ✅ p5-small: no changes\n"
        "\n"
        "Verdict of head: **all 3 policies passed**\n"
        "\n"
        "No changes: resources, cost, power and findings are the same in base and head.\n"
    )


def test_headline_and_totals(passing_doc: dict[str, Any]) -> None:
    text = lines(passing_doc, changed_head())
    assert text[0] == "# ❌ p5-small: 1 resource added, 1 changed, 1 removed"
    assert text[2] == "Verdict of head: **3 mandatory violations, 1 advisory** (base: ✅ all 3 policies passed)"
    assert text[4] == (
        "Cost **+$128,004.36/month** (+74.7%) · power **+33.44 kW** facility (+71.8%) · findings **4 new, 0 fixed**"
    )


def test_cost_and_power_by_pool(passing_doc: dict[str, Any]) -> None:
    rows = section(lines(passing_doc, changed_head()), "## Cost and power")[2:]
    assert rows == [
        "| h100 | $160,877.40 | $160,000.00 | -$877.40 (-0.5%) | 46.51 | 45.00 | -1.51 (-3.2%) |",
        "| a100-spot (added) | — | $0.00 | $0.00 (new) | — | 0.00 | 0.00 (new) |",
        "| h200 (added) | — | $120,000.00 | +$120,000.00 (new) | — | 33.75 | +33.75 (new) |",
        "| **Total** | $171,295.64 | $299,300.00 | +$128,004.36 (+74.7%) | 46.56 | 80.00 | +33.44 (+71.8%) |",
    ]


def test_removed_pools_go_to_zero(passing_doc: dict[str, Any]) -> None:
    head = copy.deepcopy(passing_doc)
    head["pools"] = []
    rows = section(lines(passing_doc, head), "## Cost and power")[2:]
    assert rows[0] == "| h100 (removed) | $160,877.40 | — | -$160,877.40 (-100.0%) | 46.51 | — | -46.51 (-100.0%) |"


def test_resources_added_removed_and_changed(passing_doc: dict[str, Any]) -> None:
    resources = section(lines(passing_doc, changed_head()), "## Resources")
    assert resources == [
        "**Added (1)**",
        f"- {urn(LT, 'llm-dev-h200-lt')}",
        "**Removed (1)**",
        f"- {urn(FSX, 'llm-dev-scratch')}",
        "**Changed (1)**",
        f"- {urn(LT, 'llm-dev-h100-lt')}",
        '  - metadataOptions.httpTokens: "required" → "optional"',
        '  - userData: (none) → "#cloud-config"',
    ]


def test_long_lists_collapse(passing_doc: dict[str, Any]) -> None:
    head = copy.deepcopy(passing_doc)
    head["resources"] += [resource(FSX, f"extra-{i:02d}") for i in range(11)]
    resources = section(lines(passing_doc, head), "## Resources")
    assert resources[0] == "<details><summary>Added (11)</summary>"
    assert resources[-1] == "</details>"
    assert len([r for r in resources if r.startswith("- ")]) == 11


def test_new_and_fixed_findings(passing_doc: dict[str, Any]) -> None:
    base = changed_head()
    head = copy.deepcopy(base)
    fixed = head["policy"]["violations"].pop(0)
    head["policy"]["violations"].append(
        {**fixed, "policy": "aws-ec2-launchtemplate-enforce-imdsv2", "message": "httpTokens is optional"}
    )
    findings = section(lines(base, head), "## Findings")
    assert findings == [
        "**New (1)**",
        "| Policy | Severity | Enforcement | Resources | Message |",
        "| --- | --- | --- | --- | --- |",
        "| aws-ec2-launchtemplate-enforce-imdsv2 | critical | mandatory | llm-dev-h100-lt | httpTokens is optional |",
        "**Fixed (1)**",
        "| Policy | Severity | Enforcement | Resources | Message |",
        "| --- | --- | --- | --- | --- |",
        "| aws-ec2-launchtemplate-disallow-public-ip | critical | mandatory | llm-dev-h100-lt "
        "| associatePublicIpAddress is true; set pools\\[1\\].public\\_ip: false |",
    ]
    assert lines(base, head)[0] == "# ❌ p5-small: no resource changes"


def test_a_finding_whose_message_changed_is_changed_not_new_and_fixed() -> None:
    """Issue 30 #1: a size in a finding's text changed (a budget overrun grew), and the diff showed the finding both
    fixed and new. Findings are matched by policy and resource; another message is the same finding, changed."""
    base = changed_head()
    head = copy.deepcopy(base)
    first = head["policy"]["violations"][0]
    first["message"] = first["message"].replace("public_ip: false", "public_ip: false (2 pools)")
    findings = section(lines(base, head), "## Findings")
    assert findings[0] == "**Changed (1)**"
    assert not any(line.startswith(("**New", "**Fixed")) for line in findings)
    row = next(line for line in findings if line.startswith("| aws-ec2-launchtemplate-disallow-public-ip"))
    assert "public\\_ip: false → " in row
    assert row.endswith("(2 pools) |")
    assert "1 changed" in lines(base, head)[4]


def renamed(doc: dict[str, Any], stack: str) -> dict[str, Any]:
    """The same preview as if its stack were called `stack` (URNs embed the stack name)."""
    doc = copy.deepcopy(doc)
    doc["stack"] = stack
    for item in [*doc["resources"], *doc["policy"]["violations"], *doc["policy"]["waived"]]:
        item["urn"] = item["urn"].replace(f"urn:pulumi:{STACK}::", f"urn:pulumi:{stack}::")
    return doc


def test_different_stacks_are_matched_without_the_stack_name(failing_doc: dict[str, Any]) -> None:
    base = renamed(failing_doc, "p5-old")
    assert base["policy"]["violations"][0]["urn"].startswith("urn:pulumi:p5-old::")
    text = lines(base, failing_doc)
    assert text[0] == "# ❌ p5-small: no changes"
    assert text[4] == (
        "> ⚠️ Different stacks: base p5-old, head p5-small. "
        "Resources and findings are matched with the stack name left out of their URNs."
    )
    base["resources"].pop()
    base["policy"]["violations"].pop(0)
    text = lines(base, failing_doc)
    assert section(text, "## Resources") == ["**Added (1)**", f"- {urn(FSX, 'llm-dev-scratch')}"]
    assert section(text, "## Findings")[0] == "**New (1)**"


def test_previews_without_policy_results(passing_doc: dict[str, Any]) -> None:
    base = copy.deepcopy(passing_doc)
    del base["policy"]
    head = copy.deepcopy(passing_doc)
    head["pools"].append(pool("h200", nodes=1, cost_month=1000.0, kw_it=10.0, kw_facility=11.0))
    text = lines(base, head)
    assert text[2] == "Verdict of head: **all 3 policies passed** (base: ⚪ policy checks not run)"
    assert section(text, "## Findings") == ["Not compared: the base preview has no policy results."]
    del head["policy"]
    assert section(lines(base, head), "## Findings") == ["Not compared: neither preview has policy results."]
    assert lines(base, head)[2] == "Verdict of head: **policy checks not run**"


def test_unchanged_cost_is_one_line(passing_doc: dict[str, Any]) -> None:
    head = copy.deepcopy(passing_doc)
    head["resources"][0]["inputs"]["userData"] = "x"
    assert section(lines(passing_doc, head), "## Cost and power") == [
        "Unchanged: $171,295.64 per month, 46.56 kW (facility)."
    ]


def test_changed_properties_show_old_and_new_values_bounded(passing_doc: dict[str, Any]) -> None:
    """Only the names of the changed keys were shown; Pulumi and Infracost show old -> new."""
    head = copy.deepcopy(passing_doc)
    fsx = head["resources"][2]["inputs"]
    fsx["storageCapacity"] = 9600
    fsx["userData"] = "x" * 5000
    fsx["password"] = "[secret]"  # how the preview writes a secret input: the value never reaches it
    fsx["subnetIds"] = ["subnet-a"]
    head["resources"][0]["inputs"]["metadataOptions"]["httpTokens"] = "optional"
    resources = section(lines(passing_doc, head), "## Resources")
    assert resources[0] == "**Changed (2)**"
    assert resources[1:3] == [
        f"- {urn(LT, 'llm-dev-h100-lt')}",
        '  - metadataOptions.httpTokens: "required" → "optional"',
    ]
    assert resources[3:] == [
        f"- {urn(FSX, 'llm-dev-scratch')}",
        '  - password: (none) → "\\[secret\\]"',
        "  - storageCapacity: 4800 → 9600",
        '  - subnetIds: (none) → \\["subnet-a"\\]',
        '  - userData: (none) → "' + "x" * 58 + "…",
    ]


def test_nested_lists_by_index_and_many_changes_counted(passing_doc: dict[str, Any]) -> None:
    base = copy.deepcopy(passing_doc)
    base["resources"][1]["inputs"]["tags"] = [{"key": "owner", "value": "a"}, {"key": "team", "value": "b"}]
    base["resources"][1]["inputs"].update({f"k{i:02d}": i for i in range(25)})
    head = copy.deepcopy(base)
    head["resources"][1]["inputs"]["tags"][1]["value"] = "c"
    head["resources"][1]["inputs"].update({f"k{i:02d}": i + 1 for i in range(25)})
    resources = section(lines(base, head), "## Resources")
    assert resources[2] == "  - k00: 0 → 1"
    assert '  - tags\\[1\\].value: "b" → "c"' not in resources  # past the first 20 changes
    assert resources[-1] == "  - … and 6 more"
    assert len(resources) == 2 + 20 + 1


def test_property_paths_follow_maps_and_same_length_lists() -> None:
    base = {"tags": [{"key": "team", "value": "b"}], "ports": [22], "deep": {"a": {"b": 1}}}
    head = {"tags": [{"key": "team", "value": "c"}], "ports": [22, 443], "deep": {"a": {"b": 2}}}
    assert [(c.path, c.old, c.new) for c in property_changes(base, head)] == [
        ("deep.a.b", "1", "2"),
        ("ports", "[22]", "[22, 443]"),
        ("tags[0].value", '"b"', '"c"'),
    ]


def test_new_findings_of_one_cause_are_one_row(passing_doc: dict[str, Any]) -> None:
    """A pool moved out of the allowed regions: one row naming its resources, not 26 (issue 13, #13)."""
    findings = section(lines(passing_doc, outside_regions()), "## Findings")
    assert findings[0] == "**New (27)**"
    rows = [r for r in findings if r.startswith(f"| {REGIONS} ")]
    assert len(rows) == 2
    assert rows[0].startswith(f"| {REGIONS} | high | mandatory | 26: llm-dev-vpc (vpc), llm-dev-subnet-0 (subnet), ")
    assert rows[0].endswith(
        "| 26 resources, each is in us-east-1, outside compliance.allowed\\_regions \\[us-west-2\\]; "
        "move it or add us-east-1 to allowed\\_regions |"
    )
