"""Reports of a Kubernetes stack's preview show its control plane, node groups, add-ons and Kueue queue."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from aicluster.preview import plan_stack
from aicluster.report import diff_markdown, render
from aicluster.stackfile import find_project, read_stack
from tests.conftest import KUBERNETES_STACKS, ROOT
from tests.report.previews import PASSING
from tests.report.test_html import Page, dom_check


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
        where = f"{a.repository}/{a.chart}" if a.kind == "helm" else f"{a.chart} (manifest)"
        assert f"| {a.name} | {where} | {a.version} | {a.namespace} |" in section
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


def _section(text: str) -> Page:
    start = text.index('<section id="kubernetes">')
    return Page(text[start : text.index("</section>", start)])


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_html_report_shows_the_control_plane_node_groups_addons_and_queue(stack: str) -> None:
    doc, k = _doc(stack)
    text = render(doc, "html")
    section = _section(text)
    rows = section.rows
    assert [h for _, h in section.headings] == [
        "Kubernetes",
        "Control plane",
        "Cost, $/month",
        f"Node groups ({len(k.node_groups)}, {sum(g.nodes for g in k.node_groups):,} nodes)",
        "Add-ons",
        "Kueue",
    ]
    assert ["Service", f"{k.service_name}, cluster {k.cluster_name}"] in rows
    assert ["Version", f"{k.version} ({k.support} support)"] in rows
    assert ["Endpoint", k.endpoint] in rows
    assert ["Region", k.region] in rows
    assert ["System node group", f"{k.system_nodes} x {k.system_instance_type}"] in rows
    assert ["Control plane", f"${k.control_plane_usd_per_month:,.2f}"] in rows
    assert ["Total", f"${k.cost_usd_per_month:,.2f}"] in rows
    for g in k.node_groups:
        taints = "".join(f"{t.key}={t.value}:{t.effect}" for t in g.taints)
        per_node = "".join(f"{name}: {amount}" for name, amount in sorted(g.resources.items()))
        assert [g.name, g.pool, g.zone or "—", f"{g.nodes:,}", taints, per_node] in rows
    for a in k.addons:
        where = f"{a.repository}/{a.chart}" if a.kind == "helm" else f"{a.chart} (manifest)"
        assert [a.name, where, a.version, a.namespace] in rows
    for t in k.topologies:
        assert [t.name, "".join(t.levels)] in rows
    assert f"ClusterQueue {k.cluster_queue}, LocalQueue {k.namespace}/{k.local_queue}" in text
    assert text.index('id="pools"') < text.index('id="kubernetes"') < text.index('id="findings"')


def test_html_costs_add_up_and_say_what_has_no_price() -> None:
    doc, k = _doc("eks-p5")
    rows = _section(render(doc, "html")).rows
    parts = [k.control_plane_usd_per_month, k.system_usd_per_month, k.system_volumes_usd_per_month]
    assert [r[1] for r in rows if r[0] != "Total" and r[1].startswith("$")][-3:] == [f"${x:,.2f}" for x in parts]
    assert sum(x or 0.0 for x in parts) == pytest.approx(k.cost_usd_per_month)
    doc["kubernetes"].update(system_usd_per_month=None, unpriced=["system node group (2 x m7i.2xlarge)"])
    text = render(doc, "html")
    rows = _section(text).rows
    assert ["System nodes (2 x m7i.2xlarge)", "unpriced"] in rows
    assert ["Total", f"${k.cost_usd_per_month:,.2f} + unpriced items"] in rows
    assert "Not in the cost (no price): system node group (2 x m7i.2xlarge)" in text


def test_html_kubernetes_strings_are_escaped() -> None:
    doc, _ = _doc("eks-p5")
    doc["kubernetes"]["node_groups"][0]["name"] = "<script>alert(1)</script>"
    doc["kubernetes"]["addons"][0]["version"] = '"><img src=x>'
    text = render(doc, "html")
    assert "<script>" not in text
    assert "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&#34;&gt;&lt;img src=x&gt;" in text


def test_slurm_html_report_has_no_kubernetes_section() -> None:
    assert 'id="kubernetes"' not in render(copy.deepcopy(PASSING), "html")


# Run in the page (the test's copy only: the report carries no script): the page must not scroll sideways, no
# Kubernetes table may scroll inside its wrapper, and every cell's text must lie inside its cell and the viewport.
K8S_CHECK = """<script>
const view = document.documentElement.clientWidth;
const problems = [];
const scrolled = document.documentElement.scrollWidth;
if (scrolled > view + 0.5) problems.push(`page scrolls: ${scrolled} > ${view}`);
const section = document.getElementById('kubernetes');
for (const wrap of section.querySelectorAll('.wide'))
  if (wrap.scrollWidth > wrap.clientWidth + 0.5)
    problems.push(`table scrolls: ${wrap.scrollWidth} > ${wrap.clientWidth}`);
let cells = 0;
for (const cell of section.querySelectorAll('td, th')) {
  const head = cell.closest('thead');
  if (head && getComputedStyle(head).display === 'none') continue;
  cells += 1;
  const box = cell.getBoundingClientRect();
  const range = document.createRange();
  range.selectNodeContents(cell);
  const text = range.getBoundingClientRect();
  if (text.left < box.left - 0.5 || text.right > box.right + 0.5 || box.left < -0.5 || box.right > view + 0.5)
    problems.push(`${cell.textContent}: text ${text.left.toFixed(1)}-${text.right.toFixed(1)}, `
                  + `cell ${box.left.toFixed(1)}-${box.right.toFixed(1)}`);
}
const labels = [...section.querySelectorAll('table.stacked td')].map(td => getComputedStyle(td, '::before').content);
const result = document.createElement('pre');
result.id = 'k8s-check';
result.textContent = JSON.stringify({problems, cells, labels});
document.body.appendChild(result);
</script>"""


@pytest.mark.slow
@pytest.mark.parametrize("stack", ["eks-p5", "aks-nd-h100"])
@pytest.mark.parametrize("width", [1400, 900, 375, 320])
def test_kubernetes_section_is_readable_in_headless_chromium(stack: str, width: int, tmp_path: Path) -> None:
    doc, k = _doc(stack)
    text = render(doc, "html")
    result = dom_check(text, K8S_CHECK, "k8s-check", width, tmp_path)
    assert result["problems"] == []
    assert result["cells"] >= 6 * len(k.node_groups) + 4 * len(k.addons)
    # a phone gets each row as label: value lines, a wide screen the table with its header
    stacked = {"none"} if width > 640 else {'"Node group"', '"Pool"', '"Zone"', '"Nodes"', '"Taints"', '"Per node"'}
    assert stacked <= set(result["labels"])


def _eks_preview(*, version: str = "1.35", nodes: int = 16, endpoint: str = "private") -> dict[str, Any]:
    """The eks-p5 stack planned with another version, node count or endpoint, as a preview document."""
    stack = read_stack(find_project(ROOT), "eks-p5")
    config = copy.deepcopy(stack.config)
    cluster = config["aicluster:cluster"]
    cluster["scheduler"].update(version=version, endpoint=endpoint)
    if endpoint == "public":
        cluster["scheduler"]["authorized_networks"] = ["203.0.113.0/24"]  # a documentation range
    cluster["pools"][0]["nodes"] = nodes
    k = plan_stack(dataclasses.replace(stack, config=config)).kubernetes
    assert k is not None
    doc = copy.deepcopy(PASSING)
    doc["kubernetes"] = k.model_dump(mode="json")
    return doc


def _diff_section(base: dict[str, Any], head: dict[str, Any]) -> list[str]:
    lines = diff_markdown(base, head).splitlines()
    start = lines.index("## Kubernetes") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## "))
    return [line for line in lines[start:end] if line]


def test_diff_shows_a_version_upgrade_out_of_extended_support_and_a_resized_node_group() -> None:
    base, head = _eks_preview(version="1.33"), _eks_preview(version="1.35", nodes=32)
    b, h = base["kubernetes"], head["kubernetes"]
    assert (b["support"], h["support"]) == ("extended", "standard")
    saved = b["control_plane_usd_per_month"] - h["control_plane_usd_per_month"]
    assert saved > 0  # extended support costs more per cluster-hour
    assert _diff_section(base, head) == [
        "- control plane Amazon EKS (eks-p5)",
        "  - version: 1.33 → 1.35",
        "  - support: extended → standard",
        f"  - control plane $/month: ${b['control_plane_usd_per_month']:,.2f} → "
        f"${h['control_plane_usd_per_month']:,.2f} (-${saved:,.2f})",
        f"  - Kubernetes $/month: ${b['cost_usd_per_month']:,.2f} → ${h['cost_usd_per_month']:,.2f} (-${saved:,.2f})",
        "- node group h100 (resized)",
        "  - nodes: 16 → 32",
    ]


def test_diff_shows_the_endpoint_and_addon_versions_that_change() -> None:
    base, head = _eks_preview(), _eks_preview(endpoint="public")
    addons = head["kubernetes"]["addons"]
    (kueue,) = [a for a in addons if a["id"] == "kueue"]
    kueue["version"] = "0.20.0"  # a catalog upgrade of Kueue
    addons.remove(next(a for a in addons if a["id"] == "jobset"))
    assert _diff_section(base, head) == [
        "- control plane Amazon EKS (eks-p5)",
        "  - endpoint: private → public",
        "- add-on Kueue",
        "  - version: 0.19.2 → 0.20.0",
        "- add-on JobSet (removed)",
        "  - oci://registry.k8s.io/jobset/charts/jobset 0.10.1 in jobset-system",
    ]


def test_diff_names_node_groups_added_and_removed() -> None:
    base, head = _eks_preview(), _eks_preview()
    group = head["kubernetes"]["node_groups"][0]
    head["kubernetes"]["node_groups"] = [{**group, "name": "h100-b", "nodes": 8, "zone": "us-east-1a"}]
    assert _diff_section(base, head) == [
        "- node group h100 (removed)",
        "  - 16 nodes of pool h100 in us-east-1d",
        "- node group h100-b (added)",
        "  - 8 nodes of pool h100 in us-east-1a",
    ]


def test_diff_of_identical_kubernetes_stacks_says_unchanged() -> None:
    base = _eks_preview()
    assert diff_markdown(base, copy.deepcopy(base)).splitlines()[0] == "# ✅ p5-small: no changes"
    head = copy.deepcopy(base)
    head["resources"][0]["inputs"]["instanceType"] = "p5e.48xlarge"
    assert _diff_section(base, head) == [
        "Unchanged: the control plane, node groups and add-ons are the same in base and head."
    ]


def test_diff_from_slurm_to_kubernetes_names_the_control_plane_added() -> None:
    head = _eks_preview()
    k = head["kubernetes"]
    assert _diff_section(copy.deepcopy(PASSING), head) == [
        "- control plane Amazon EKS (eks-p5) (added)",
        "  - version 1.35 (standard support), private endpoint, us-east-1",
        "  - 1 node group, 16 nodes",
        "  - add-ons: " + ", ".join(f"{a['name']} {a['version']}" for a in k["addons"]),
        f"  - Kubernetes $/month: ${k['cost_usd_per_month']:,.2f}",
    ]
    assert "## Kubernetes" not in diff_markdown(PASSING, copy.deepcopy(PASSING))
