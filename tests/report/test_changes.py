"""The reports of a `preview --base` JSON lead with what the change replaces, deletes and rolls out."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aicluster.report import render
from tests.report.previews import FSX, PASSING, urn

CHANGES: dict[str, Any] = {
    "base": "p5-small",
    "steps": [
        {
            "urn": urn(FSX, "scratch-fs"),
            "type": FSX,
            "op": "replace",
            "replaceReasons": ["storageCapacity"],
            "diffReasons": ["storageCapacity"],
            "risks": ["data-loss"],
            "why": ["storageCapacity 4800 → 2400 forces a replacement"],
            "guardedBy": "aicluster-change-disallow-stateful-replace",
        },
        {
            "urn": urn("aws:autoscaling/group:Group", "h100-asg"),
            "type": "aws:autoscaling/group:Group",
            "op": "update",
            "replaceReasons": [],
            "diffReasons": ["desiredCapacity"],
            "risks": ["job-kill"],
            "nodes": 2,
            "gpus": 16,
            "pool": "h100",
            "nodesRemoved": ["h100-002", "h100-003"],
        },
    ],
    "changeSummary": {"create": 0, "update": 1, "replace": 1, "delete": 0, "same": 30},
    "rollouts": 0,
    "blocked": [{"urn": "u", "name": "scratch-fs", "type": FSX, "op": "replace", "fix": "keep its size or grow it"}],
    "waived": [],
}


def _doc(changes: dict[str, Any] | None) -> dict[str, Any]:
    doc = copy.deepcopy(PASSING)
    if changes is not None:
        doc["changes"] = changes
    return doc


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_report_shows_the_changes_first(fmt: str) -> None:
    text = render(_doc(CHANGES), fmt)
    assert "Changes from p5-small" in text
    assert text.index("Changes from p5-small") < text.index("Pools")
    assert "1 to update, 1 to replace, 30 same" in text
    # data loss before jobs killed; the nodes removed by name
    assert text.index("scratch-fs") < text.index("h100-asg")
    assert "h100-002, h100-003" in text
    assert "Blocked: scratch-fs" in text


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_a_preview_without_a_base_has_no_changes_section(fmt: str) -> None:
    assert "Changes from" not in render(_doc(None), fmt)


def test_changes_of_the_wrong_shape_are_named() -> None:
    with pytest.raises(ValueError, match=r"missing key 'changes.steps'"):
        render(_doc({"base": "x", "changeSummary": {}}), "md")
