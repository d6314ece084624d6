"""Reading the preview JSON: a wrong shape is a ValueError that names the key path."""

from __future__ import annotations

import re
from typing import Any

import pytest

from aicluster.report import FORMATS, diff_markdown, render


def _without(doc: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    target: Any = doc
    for step in path[:-1]:
        target = target[step]
    del target[path[-1]]
    return doc


@pytest.mark.parametrize(
    ("path", "named"),
    [
        pytest.param(("stack",), "'stack'", id="stack"),
        pytest.param(("summary", "carbon_t_per_month"), "'summary.carbon_t_per_month'", id="summary-key"),
        pytest.param(("pools", 1, "cost_usd_per_month"), "'pools[1].cost_usd_per_month'", id="pool-key"),
        pytest.param(("resources", 0, "inputs"), "'resources[0].inputs'", id="resource-inputs"),
        pytest.param(("cluster", "budgets"), "'cluster.budgets'", id="cluster-budgets"),
        pytest.param(("policy", "pack", "version"), "'policy.pack.version'", id="pack-version"),
        pytest.param(("policy", "violations", 2, "message"), "'policy.violations[2].message'", id="violation"),
        pytest.param(("policy", "waived", 0, "expires"), "'policy.waived[0].expires'", id="waiver-expiry"),
        pytest.param(("policy", "not_applicable"), "'policy.not_applicable'", id="not-applicable"),
    ],
)
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_missing_key_is_named(failing_doc: dict[str, Any], path: tuple[str | int, ...], named: str, fmt: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"missing key {named}")):
        render(_without(failing_doc, path), fmt)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"summary": []}, "'summary' must be an object, got an array", id="summary-not-object"),
        pytest.param({"pools": {}}, "'pools' must be an array, got an object", id="pools-not-list"),
        pytest.param({"stack": 7}, "'stack' must be a string, got a number", id="stack-not-string"),
        pytest.param({"warnings": ["ok", None]}, "'warnings[1]' must be a string, got null", id="warning-null"),
        pytest.param({"warnings": [True]}, "'warnings[0]' must be a string, got true", id="warning-bool"),
        pytest.param({"stack": 1.5}, "'stack' must be a string, got a number", id="stack-float"),
    ],
)
def test_a_wrong_type_is_named(failing_doc: dict[str, Any], change: dict[str, Any], message: str) -> None:
    failing_doc.update(change)
    with pytest.raises(ValueError, match=re.escape(message)):
        render(failing_doc, "md")


def test_numbers_are_checked(failing_doc: dict[str, Any]) -> None:
    failing_doc["pools"][0]["nodes"] = 2.5
    with pytest.raises(ValueError, match=r"'pools\[0\].nodes' must be a whole number, got 2.5"):
        render(failing_doc, "json")
    failing_doc["pools"][0]["nodes"] = True
    with pytest.raises(ValueError, match=r"'pools\[0\].nodes' must be a whole number, got true"):
        render(failing_doc, "json")
    failing_doc["pools"][0]["nodes"] = float("inf")
    with pytest.raises(ValueError, match=r"'pools\[0\].nodes' must be a whole number, got Infinity"):
        render(failing_doc, "json")
    failing_doc["pools"][0]["nodes"] = 2
    failing_doc["summary"]["power_kw_it"] = float("nan")
    with pytest.raises(ValueError, match=r"'summary.power_kw_it' must be a finite number, got NaN"):
        render(failing_doc, "json")
    failing_doc["summary"]["power_kw_it"] = "70"
    with pytest.raises(ValueError, match=r"'summary.power_kw_it' must be a finite number, got \"70\""):
        render(failing_doc, "json")


def test_closed_sets_are_checked(failing_doc: dict[str, Any]) -> None:
    failing_doc["policy"]["violations"][0]["severity"] = "urgent"
    with pytest.raises(
        ValueError, match=r"'policy.violations\[0\].severity' must be one of critical, high, medium, low"
    ):
        render(failing_doc, "sarif")


def test_a_budget_must_be_positive(failing_doc: dict[str, Any]) -> None:
    failing_doc["cluster"]["budgets"]["power_kw"] = 0
    with pytest.raises(ValueError, match=r"'cluster.budgets.power_kw' must be greater than 0, got 0"):
        render(failing_doc, "html")


def test_findings_must_name_a_policy_of_the_pack(failing_doc: dict[str, Any]) -> None:
    failing_doc["policy"]["waived"][0]["policy"] = "no-such-policy"
    with pytest.raises(ValueError, match=r'\'policy.waived\[0\].policy\' names "no-such-policy", which is not in'):
        render(failing_doc, "junit")


def test_the_document_must_be_an_object() -> None:
    with pytest.raises(ValueError, match="the document must be an object, got an array"):
        render([], "md")  # type: ignore[arg-type]


def test_an_unknown_format_is_refused(passing_doc: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="unknown report format 'pdf'; choose one of md, html, sarif, junit, json"):
        render(passing_doc, "pdf")


@pytest.mark.parametrize("fmt", ["sarif", "junit"])
def test_policy_formats_need_the_policy_section(passing_doc: dict[str, Any], fmt: str) -> None:
    del passing_doc["policy"]
    with pytest.raises(ValueError, match=r"missing key 'policy' \(a (SARIF|JUnit) report lists policy results\)"):
        render(passing_doc, fmt)


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_older_previews_without_cluster_and_policy_render(passing_doc: dict[str, Any], fmt: str) -> None:
    del passing_doc["policy"], passing_doc["cluster"]
    assert "not run" in render(passing_doc, fmt)


def test_diff_reads_both_documents(passing_doc: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="missing key 'project'"):
        diff_markdown(passing_doc, {k: v for k, v in passing_doc.items() if k != "project"})
