"""The preview's findings in the terminal: grouped by policy and cause, while the JSON keeps every one."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT, run_cli, write_stack

# p5-small with its pool outside the allowed regions and a required tag missing.
ELSEWHERE = (
    (ROOT / "stacks" / "Pulumi.p5-small.yaml")
    .read_text()
    .replace("allowed_regions: [us-east-1]", "allowed_regions: [us-west-2]")
    .replace('      cost-center: "4711"\n', "")
)
REGIONS = "aicluster-resource-enforce-allowed-regions"
TAGS = "aws-resource-missing-required-tags"


def test_findings_of_one_cause_are_one_row(project: Path) -> None:
    """One pool outside the allowed regions printed 26 rows, a missing tag 18 (issue 13, #13)."""
    write_stack(project, "elsewhere", ELSEWHERE)
    out = project / "preview.json"
    proc = run_cli("-C", str(project), "preview", "elsewhere", "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    violations = json.loads(out.read_text())["policy"]["violations"]
    in_regions = [v for v in violations if v["policy"] == REGIONS]
    assert len(in_regions) > 20  # the JSON keeps every finding
    rows = [line for line in proc.stdout.splitlines() if line.startswith("│ mandatory")]
    assert sum(REGIONS in row for row in rows) == 1
    assert sum(TAGS in row for row in rows) == 2  # an auto-scaling group lacks tags "that propagate at launch"
    region_row = next(row for row in rows if REGIONS in row)
    assert f"{len(in_regions)}: " in region_row
    assert f"{len(in_regions)} resources, each is in us-east-1" in proc.stdout
    assert f"and {len(in_regions) - 5} more" in proc.stdout
    assert f"{len(violations)} mandatory and 0 advisory violation(s)" in proc.stdout


def test_the_verdict_counts_groups_and_waived_findings_are_grouped_too(project: Path) -> None:
    """The verdict said "49 mandatory" over a table of 3 rows; waived findings were one row each."""
    waived = ELSEWHERE.replace(
        "allowed_regions: [us-west-2]",
        "allowed_regions: [us-west-2]\n      waivers:\n"
        f"        - {{policy: {REGIONS}, resource: llm-dev-audit-logs, reason: audit logs stay home,"
        " expires: '2099-12-31'}",
    )
    assert waived != ELSEWHERE
    write_stack(project, "waived", waived)
    out = project / "preview.json"
    proc = run_cli("-C", str(project), "preview", "waived", "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(out.read_text())
    in_waiver = [w for w in doc["policy"]["waived"] if w["resource"] == "llm-dev-audit-logs"]
    assert len(in_waiver) == 4  # the bucket, its policy, access block and encryption: every one in the JSON
    rows = [line for line in proc.stdout.splitlines() if line.startswith("│ mandatory")]
    waived_rows = [line for line in proc.stdout.splitlines() if line.startswith("│ waived")]
    assert len(waived_rows) == 1
    assert "4 resources, each is in us-east-1" in waived_rows[0]
    violations = doc["policy"]["violations"]
    assert (
        f"{len(violations)} mandatory and 0 advisory violation(s) in {len(rows)} groups, "
        f"{len(doc['policy']['waived'])} waived in 1 group," in proc.stdout
    )
