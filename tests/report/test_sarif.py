"""SARIF 2.1.0: valid against the official schema, and shaped as code scanning reads it."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from aicluster.report import render

SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json"


@functools.cache
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def sarif(doc: dict[str, Any]) -> dict[str, Any]:
    log: dict[str, Any] = json.loads(render(doc, "sarif"))
    return log


def test_the_vendored_schema_is_the_2020_12_dialect_it_declares() -> None:
    assert isinstance(validator(), jsonschema.Draft202012Validator)


@pytest.mark.parametrize("doc", ["passing_doc", "failing_doc", "hostile_doc"])
def test_valid_against_the_sarif_schema(doc: str, request: pytest.FixtureRequest) -> None:
    log = sarif(request.getfixturevalue(doc))
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator().iter_errors(log)]
    assert not errors
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"


def test_the_schema_catches_a_broken_log(failing_doc: dict[str, Any]) -> None:
    log = sarif(failing_doc)
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert not validator().is_valid(log)


def test_driver_is_the_pack_and_rules_are_every_policy(failing_doc: dict[str, Any]) -> None:
    driver = sarif(failing_doc)["runs"][0]["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("aicluster", "0.2.0")
    assert [r["id"] for r in driver["rules"]] == [p["name"] for p in failing_doc["policy"]["policies"]]
    public_ip = driver["rules"][0]
    assert public_ip["name"] == "Aws ec2 launchtemplate disallow public ip"
    assert public_ip["shortDescription"] == {"text": "Checks aws-ec2-launchtemplate-disallow-public-ip."}
    assert public_ip["help"] == {"text": "Fix aws-ec2-launchtemplate-disallow-public-ip."}
    assert public_ip["properties"]["security-severity"] == "9.0"
    assert public_ip["properties"]["tags"] == ["compliance", "cis-aws", "soc2"]
    levels = {
        r["id"]: (r["defaultConfiguration"]["level"], r["properties"]["security-severity"]) for r in driver["rules"]
    }
    assert levels == {
        "aws-ec2-launchtemplate-disallow-public-ip": ("error", "9.0"),
        "aws-ec2-launchtemplate-enforce-imdsv2": ("error", "7.0"),
        "aws-fsx-lustre-enable-encryption": ("error", "7.0"),
        "cluster-budget-enforce-monthly-cost": ("error", "9.0"),
        "cluster-pool-configure-spot-checkpointing": ("none", "2.0"),
        "cluster-power-enforce-facility-budget": ("warning", "4.0"),
        "cluster-tags-missing-owner": ("error", "2.0"),
    }


def test_violations_are_results_at_the_resource_and_the_stack_file(failing_doc: dict[str, Any]) -> None:
    run = sarif(failing_doc)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    results = [r for r in run["results"] if "suppressions" not in r and r.get("kind", "fail") == "fail"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("aws-ec2-launchtemplate-disallow-public-ip", "error"),
        ("aws-ec2-launchtemplate-disallow-public-ip", "error"),
        ("cluster-budget-enforce-monthly-cost", "error"),
        ("cluster-power-enforce-facility-budget", "warning"),
    ]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in run["results"])
    first = results[0]
    assert first["message"] == {"text": "associatePublicIpAddress is true; set pools[1].public_ip: false"}
    (location,) = first["locations"]
    assert location["physicalLocation"]["artifactLocation"] == {
        "uri": "stacks/Pulumi.p5-small.yaml",
        "uriBaseId": "%SRCROOT%",
    }
    assert location["logicalLocations"] == [
        {
            "name": "llm-dev-h100-lt",
            "fullyQualifiedName": failing_doc["policy"]["violations"][0]["urn"],
            "kind": "resource",
        }
    ]
    assert results[2]["locations"][0]["logicalLocations"] == [
        {
            "name": "p5-small",
            "fullyQualifiedName": "urn:pulumi:p5-small::aicluster::pulumi:pulumi:Stack::aicluster-p5-small",
            "kind": "stack",
        }
    ]


def test_waived_findings_are_suppressed_results(failing_doc: dict[str, Any]) -> None:
    (waived,) = [r for r in sarif(failing_doc)["runs"][0]["results"] if "suppressions" in r]
    assert waived["ruleId"] == "aws-fsx-lustre-enable-encryption"
    assert waived["level"] == "error"
    assert waived["suppressions"] == [
        {
            "kind": "external",
            "status": "accepted",
            "justification": "scratch data only, deleted after each run",
            "properties": {"expires": "2027-01-31"},
        }
    ]


def test_fingerprints_are_stable_and_distinct(failing_doc: dict[str, Any]) -> None:
    def prints(doc: dict[str, Any]) -> list[str]:
        results = sarif(doc)["runs"][0]["results"]
        return [r["partialFingerprints"]["aiclusterFinding/v1"] for r in results if "partialFingerprints" in r]

    first = prints(failing_doc)
    assert len(set(first)) == len(first)
    failing_doc["summary"]["cost_usd_per_month"] = 1.0  # unrelated to any finding
    assert prints(failing_doc) == first
    failing_doc["policy"]["violations"][0]["message"] = "another message"
    assert prints(failing_doc)[0] != first[0]
    assert prints(failing_doc)[1:] == first[1:]


def test_an_all_passing_preview_has_rules_and_no_results(passing_doc: dict[str, Any]) -> None:
    run = sarif(passing_doc)["runs"][0]
    assert len(run["tool"]["driver"]["rules"]) == 3
    assert run["results"] == []


def test_untrusted_strings_stay_data(hostile_doc: dict[str, Any]) -> None:
    run = sarif(hostile_doc)["runs"][0]
    assert run["results"][0]["message"]["text"] == hostile_doc["policy"]["violations"][0]["message"]
    uri = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "stacks/Pulumi.evil%7Cstack.yaml"


def test_a_finding_from_a_stack_field_carries_its_line(failing_doc: dict[str, Any]) -> None:
    failing_doc["policy"]["violations"][0].update(stack_field="pools[1]", stack_line=14)
    log = sarif(failing_doc)
    validator().validate(log)
    results = log["runs"][0]["results"]
    assert results[0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 14}
    assert results[0]["properties"]["stackField"] == "pools[1]"
    assert "region" not in results[1]["locations"][0]["physicalLocation"]
    assert "stackField" not in results[1]["properties"]


def test_not_applicable_policies_are_not_applicable_results_not_passes(failing_doc: dict[str, Any]) -> None:
    """Issue 13 #5: SARIF 2.1.0 has a result kind for a rule that had nothing to judge (3.27.9)."""
    log = sarif(failing_doc)
    assert validator().is_valid(log)
    run = log["runs"][0]
    na = [r for r in run["results"] if r.get("kind") == "notApplicable"]
    assert [(r["ruleId"], r["level"], r["message"]["text"]) for r in na] == [
        ("cluster-tags-missing-owner", "none", "not applicable: the stack sets no tags")
    ]
    assert run["tool"]["driver"]["rules"][na[0]["ruleIndex"]]["id"] == "cluster-tags-missing-owner"
    assert na[0]["locations"][0]["logicalLocations"][0]["kind"] == "stack"
