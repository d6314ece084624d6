"""The JSON report: the reports' facts as data, byte-stable, without resource inputs."""

from __future__ import annotations

import copy
import json
from typing import Any

from aicluster.report import render


def test_stable_sorted_and_newline_terminated(failing_doc: dict[str, Any]) -> None:
    text = render(failing_doc, "json")
    assert text.endswith("}\n")
    assert text == render(copy.deepcopy(failing_doc), "json")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_carries_verdict_budgets_pools_and_policy(failing_doc: dict[str, Any]) -> None:
    report = json.loads(render(failing_doc, "json"))
    assert sorted(report) == [
        "budgets",
        "cluster",
        "kubernetes",  # null for a Slurm preview
        "policy",
        "pools",
        "project",
        "sites",  # [] for a cloud-only preview
        "stack",
        "summary",
        "verdict",
        "warnings",
        "workloads",  # [] when the stack declares none (and for previews written before the key)
    ]
    assert report["verdict"] == {
        "status": "fail",
        "text": "3 mandatory violations, 1 advisory",
        "mandatory": 3,
        "advisory": 1,
        "waived": 1,
        "passed": 2,
        "not_applicable": 1,
    }
    assert report["budgets"] == [
        {"name": "monthly_usd", "budget": 250000.0, "actual": 299300.0, "used_pct": 119.72},
        {"name": "power_kw", "budget": 60.0, "actual": 80.0, "used_pct": 133.33},
    ]
    assert [p["name"] for p in report["pools"]] == ["a100-spot", "h100", "h200"]
    assert report["policy"]["violations"] == failing_doc["policy"]["violations"]
    assert report["policy"]["waived"] == failing_doc["policy"]["waived"]
    assert report["summary"] == {
        **failing_doc["summary"],
        "unpriced": [],
    }  # a preview without the key: nothing unpriced


def test_leaves_out_resource_inputs_and_outputs(failing_doc: dict[str, Any]) -> None:
    text = render(failing_doc, "json")
    assert "inputs" not in text
    assert "instanceType" not in text
    assert "outputs" not in text


def test_unset_budgets_are_absent(passing_doc: dict[str, Any]) -> None:
    passing_doc["cluster"]["budgets"] = {"monthly_usd": 1000}
    report = json.loads(render(passing_doc, "json"))
    assert report["cluster"]["budgets"] == {"monthly_usd": 1000.0}
    assert [b["name"] for b in report["budgets"]] == ["monthly_usd"]


def test_without_policy_results(passing_doc: dict[str, Any]) -> None:
    del passing_doc["policy"]
    report = json.loads(render(passing_doc, "json"))
    assert report["policy"] is None
    assert report["verdict"]["status"] == "not-run"
