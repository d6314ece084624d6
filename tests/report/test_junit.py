"""JUnit XML: one testcase per policy; failures only for mandatory violations; counts right."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import junitparser
import pytest

from aicluster.report import render
from tests.report.previews import REGIONS, outside_regions


def junit(doc: dict[str, Any]) -> ET.Element:
    return ET.fromstring(render(doc, "junit"))


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {c.attrib["name"]: c for c in root.iter("testcase")}


def counts(element: ET.Element) -> tuple[str, ...]:
    return tuple(element.attrib[k] for k in ("tests", "failures", "errors", "skipped"))


def test_one_suite_named_after_pack_and_stack(failing_doc: dict[str, Any]) -> None:
    root = junit(failing_doc)
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.attrib["name"] == "aicluster (p5-small)"
    assert counts(root) == counts(suite) == ("7", "2", "0", "2")
    props = {p.attrib["name"]: p.attrib["value"] for p in suite.iter("property")}
    assert props == {
        "stack": "p5-small",
        "project": "aicluster",
        "pack.version": "0.2.0",
        "verdict": "3 mandatory violations, 1 advisory",
    }


def test_one_testcase_per_policy_with_its_concern(failing_doc: dict[str, Any]) -> None:
    found = [(c.attrib["classname"], c.attrib["name"]) for c in junit(failing_doc).iter("testcase")]
    assert found == [(p["concern"], p["name"]) for p in failing_doc["policy"]["policies"]]


def test_mandatory_violations_fail_with_every_finding_listed(failing_doc: dict[str, Any]) -> None:
    case = cases(junit(failing_doc))["aws-ec2-launchtemplate-disallow-public-ip"]
    failure = case.find("failure")
    assert failure is not None
    assert failure.attrib["type"] == "critical"
    assert failure.attrib["message"] == (
        "2 mandatory violations: llm-dev-h100-lt: associatePublicIpAddress is true; set pools[1].public_ip: false"
        " (and 1 other cause)"
    )
    assert failure.text is not None
    text = failure.text.splitlines()
    assert len(text) == 3
    assert text[1].startswith("llm-dev-h200-lt (urn:pulumi:p5-small::")
    assert text[2] == "Remediation: Fix aws-ec2-launchtemplate-disallow-public-ip."


def test_advisory_violations_pass_and_are_reported_in_system_out(failing_doc: dict[str, Any]) -> None:
    case = cases(junit(failing_doc))["cluster-power-enforce-facility-budget"]
    assert case.find("failure") is None
    assert case.findtext("system-out") == "advisory: (stack): 80.0 kW facility exceeds budgets.power_kw 60 kW"


def test_waived_findings_are_listed_on_a_passing_test(failing_doc: dict[str, Any]) -> None:
    case = cases(junit(failing_doc))["aws-fsx-lustre-enable-encryption"]
    assert case.find("failure") is None
    assert case.find("skipped") is None
    out = case.findtext("system-out") or ""
    assert out.startswith("waived until 2027-01-31: llm-dev-scratch (urn:pulumi:")
    assert out.endswith("kmsKeyId is not set (reason: scratch data only, deleted after each run)")


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        pytest.param(
            "cluster-pool-configure-spot-checkpointing", "disabled in the policy pack's configuration", id="disabled"
        ),
        pytest.param("cluster-tags-missing-owner", "not applicable: the stack sets no tags", id="not-applicable"),
    ],
)
def test_disabled_and_not_applicable_are_skipped(failing_doc: dict[str, Any], policy: str, message: str) -> None:
    skipped = cases(junit(failing_doc))[policy].find("skipped")
    assert skipped is not None
    assert skipped.attrib["message"] == message


def test_an_all_passing_preview_has_no_failures(passing_doc: dict[str, Any]) -> None:
    root = junit(passing_doc)
    assert counts(root) == ("3", "0", "0", "0")
    assert all(len(c) == 0 for c in root.iter("testcase"))


def test_hostile_strings_stay_well_formed_xml(hostile_doc: dict[str, Any]) -> None:
    root = junit(hostile_doc)
    assert root.attrib["name"] == "aicluster (evil|stack)"
    failure = cases(root)["aws-ec2-launchtemplate-disallow-public-ip"].find("failure")
    assert failure is not None
    assert failure.attrib["message"] == (
        "2 mandatory violations: lt|<script>: line one | <script>alert('x')</script> (and 1 other cause)"
    )
    assert "[31mred[0m" in (failure.text or "")  # the escape character itself cannot be carried by XML 1.0
    assert "ünïcödé ✓" in (cases(root)["aws-fsx-lustre-enable-encryption"].findtext("system-out") or "")


def test_a_junit_reader_agrees(failing_doc: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "policy.xml"
    path.write_text(render(failing_doc, "junit"), encoding="utf-8")
    xml = junitparser.JUnitXml.fromfile(str(path))
    (suite,) = list(xml)
    assert (suite.name, suite.tests, suite.failures, suite.errors, suite.skipped) == (
        "aicluster (p5-small)",
        7,
        2,
        0,
        2,
    )
    outcome = {case.name: [type(r).__name__ for r in case.result] for case in suite}
    assert outcome == {
        "aws-ec2-launchtemplate-disallow-public-ip": ["Failure"],
        "aws-ec2-launchtemplate-enforce-imdsv2": [],
        "aws-fsx-lustre-enable-encryption": [],
        "cluster-budget-enforce-monthly-cost": ["Failure"],
        "cluster-pool-configure-spot-checkpointing": ["Skipped"],
        "cluster-power-enforce-facility-budget": [],
        "cluster-tags-missing-owner": ["Skipped"],
    }
    suite.update_statistics()  # recounted from the testcases: the same numbers
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (7, 2, 0, 2)


def test_a_failure_lists_its_findings_grouped_by_cause() -> None:
    """One testcase per policy; its failure counts every finding and names every resource, by cause."""
    failure = cases(junit(outside_regions()))[REGIONS].find("failure")
    assert failure is not None
    assert failure.attrib["message"] == (
        "27 mandatory violations: 26 resources, each is in us-east-1, outside compliance.allowed_regions "
        "[us-west-2]; move it or add us-east-1 to allowed_regions (and 1 other cause)"
    )
    lines = (failure.text or "").splitlines()
    assert lines[0].startswith("26 resources, each is in us-east-1")
    assert len([line for line in lines if line.startswith("  - ")]) == 26
    assert lines[-2].startswith("llm-dev-scratch (urn:pulumi:")
