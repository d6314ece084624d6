"""Reports of a Kubernetes stack's preview show its control plane, node groups, add-ons and Kueue queue."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from aicluster.preview import plan_stack
from aicluster.report import render
from aicluster.stackfile import find_project, read_stack
from tests.conftest import KUBERNETES_STACKS, ROOT
from tests.report.previews import PASSING


def _doc(stack: str) -> tuple[dict[str, Any], Any]:
    k = plan_stack(read_stack(find_project(ROOT), stack)).kubernetes
    assert k is not None
    doc = copy.deepcopy(PASSING)
    doc["kubernetes"] = k.model_dump(mode="json")
    return doc, k


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_markdown_report_shows_the_control_plane_node_groups_and_addons(stack: str) -> None:
    doc, k = _doc(stack)
    text = render(doc, "md")
    section = text.split("## Kubernetes", 1)[1]
    assert f"| {k.service_name} ({k.cluster_name}) | {k.version} | {k.support} | {k.endpoint} |" in section
    assert f"${k.control_plane_usd_per_month:,.2f}" in section
    for g in k.node_groups:
        row = next(line for line in section.splitlines() if line.startswith(f"| {g.name} | {g.pool} |"))
        assert f"| {g.nodes:,} |" in row
        assert "nvidia.com/gpu=present:NoSchedule" in row or "google.com/tpu=present:NoSchedule" in row
    for a in k.addons:
        assert f"| {a.name} | {a.repository}/{a.chart} | {a.version} | {a.namespace} |" in section
    assert f"LocalQueue {k.namespace}/{k.local_queue}" in section


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_json_report_carries_the_kubernetes_block(stack: str) -> None:
    doc, k = _doc(stack)
    report = json.loads(render(doc, "json"))["kubernetes"]
    assert report["cluster_name"] == k.cluster_name
    assert [g["name"] for g in report["node_groups"]] == [g.name for g in k.node_groups]
    assert [(a["name"], a["version"]) for a in report["addons"]] == [(a.name, a.version) for a in k.addons]
    assert report["topologies"] == [{"name": t.name, "levels": list(t.levels)} for t in k.topologies]


def test_slurm_preview_has_no_kubernetes_section() -> None:
    doc = copy.deepcopy(PASSING)
    assert "## Kubernetes" not in render(doc, "md")
    assert json.loads(render(doc, "json"))["kubernetes"] is None


def test_a_malformed_kubernetes_block_names_its_key_path() -> None:
    doc, _ = _doc(KUBERNETES_STACKS[0])
    doc["kubernetes"]["node_groups"][0]["nodes"] = "many"
    with pytest.raises(ValueError, match=r"kubernetes\.node_groups\[0\]\.nodes"):
        render(doc, "md")
