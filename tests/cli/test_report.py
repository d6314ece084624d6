"""SARIF from a real preview: each finding at the line of the stack field it comes from."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_preview_findings import ELSEWHERE, REGIONS, TAGS
from tests.conftest import run_cli, write_stack
from tests.report.test_sarif import validator

STACK = ELSEWHERE.replace("monthly_usd: 250000", "monthly_usd: 1000")
BUDGET = "aicluster-cluster-enforce-monthly-budget"


def line_of(text: str, start: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(start))


def test_results_point_at_the_stack_fields_line(project: Path, tmp_path: Path) -> None:
    """SARIF results named the stack file without a line (issue 13: results carry the stack file's line)."""
    write_stack(project, "elsewhere", STACK)
    out = tmp_path / "report.sarif"
    proc = run_cli("-C", str(project), "report", "elsewhere", "--format", "sarif", "-o", str(out))
    assert proc.returncode == 1, proc.stderr  # mandatory violations: exit 1 as preview, the report written
    log = json.loads(out.read_text())
    validator().validate(log)
    where: dict[str, set[tuple[int | None, str | None]]] = {}
    for result in log["runs"][0]["results"]:
        if result.get("kind") == "notApplicable":  # at the stack, not at a field
            continue
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "stacks/Pulumi.elsewhere.yaml"
        line = physical.get("region", {}).get("startLine")
        where.setdefault(result["ruleId"], set()).add((line, result["properties"].get("stackField")))
    assert where[BUDGET] == {(line_of(STACK, "      monthly_usd:"), "budgets.monthly_usd")}
    assert where[TAGS] == {(line_of(STACK, "    tags:"), "tags")}
    # the pool's resources (and the network's, in its region) at its region; the file system's at its entry
    assert where[REGIONS] == {
        (line_of(STACK, "        region: us-east-1"), "pools[0].region"),
        (line_of(STACK, "      - name: scratch"), "storage[0]"),
    }
