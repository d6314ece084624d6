"""Every example stack previewed with one stack field changed at a time, and the step classification checked
against the catalog's change rules: a pool grown or shrunk (by its unit: a node, an NVLink domain, a TPU slice),
each file system grown or shrunk, and, for one stack per platform, a pool's instance type changed.

The shrink cases preview the grown stack as the base and the example as the head, so that both sides are valid
stacks. Each expected op and risk names the rule (and its source) that says it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from aicluster.catalog import load_catalog
from aicluster.changes import classify
from tests.changes.harness import base_preview, changed, preview_doc, scratch_project, stack_doc
from tests.conftest import STACKS

pytestmark = pytest.mark.slow


def _pools(stack: str) -> list[dict[str, Any]]:
    return list(stack_doc(stack)["config"]["aicluster:cluster"].get("pools") or [])


def _unit(stack: str, pool: dict[str, Any]) -> tuple[str, int]:
    """The field that counts a pool and the step it grows by (a whole NVLink domain for rack-scale types)."""
    if "slices" in pool:
        return "slices", 1
    domains = [d for d in base_preview(stack)["nvlink_domains"] if d.get("pool") == pool["name"]]
    return "nodes", len(domains[0]["nodes"]) if domains else 1


def _grown(stack: str, index: int) -> dict[str, Any]:
    doc = copy.deepcopy(stack_doc(stack))
    pool = doc["config"]["aicluster:cluster"]["pools"][index]
    field, step = _unit(stack, pool)
    if "hosts" in pool:
        pytest.fail("an example pool lists hosts: grow it by a host")
    pool[field] = pool[field] + step
    if isinstance(pool.get("reservations"), list):  # one Capacity Block per UltraServer: the new one's id
        last = pool["reservations"][-1]
        pool["reservations"].append(last[:-4] + f"{int(last[-4:], 16) + 1:04x}")
    return doc


POOL_CASES = [pytest.param(s, i, id=f"{s}-{p['name']}") for s in STACKS for i, p in enumerate(_pools(s))]


@pytest.mark.parametrize(("stack", "index"), POOL_CASES)
def test_growing_and_shrinking_a_pool(stack: str, index: int, tmp_path: Path) -> None:
    rules = load_catalog().change_rules
    grown = preview_doc(scratch_project(tmp_path), stack, _grown(stack, index))
    example = base_preview(stack)
    name = _pools(stack)[index]["name"]

    up = classify(example, grown, rules)
    # more nodes: no resource is replaced or deleted, no running node recreated or removed
    assert [s.to_json() for s in up.steps if s.op in ("replace", "delete") or s.risks] == []
    assert up.pools == []

    down = classify(grown, example, rules)
    before = next(p for p in grown["pools"] if p["name"] == name)
    after = next(p for p in example["pools"] if p["name"] == name)
    gone = before["nodes"] - after["nodes"]
    (pool,) = down.pools
    assert (pool["pool"], pool["nodesBefore"], pool["nodesAfter"]) == (name, before["nodes"], after["nodes"])
    assert len(pool["nodesRemoved"]) == gone
    assert pool["gpusRemoved"] == before["gpus"] - after["gpus"]
    # each cloud group that holds the pool's nodes (its rule's `capacity`) drops them: an update that kills jobs
    for step in down.steps:
        rule = rules.get(step.type)
        if rule is not None and rule.capacity and step.pool == name and step.op == "update":
            assert "job-kill" in step.risks, step.to_json()
            assert step.nodes_removed == pool["nodesRemoved"]
    assert [s.to_json() for s in down.steps if "data-loss" in s.risks] == []


STORAGE_CASES = [
    pytest.param(s, i, id=f"{s}-{f['name']}")
    for s in STACKS
    for i, f in enumerate(stack_doc(s)["config"]["aicluster:cluster"].get("storage") or [])
]


@pytest.mark.parametrize(("stack", "index"), STORAGE_CASES)
def test_growing_and_shrinking_a_file_system(stack: str, index: int, tmp_path: Path) -> None:
    """Each file system at twice its size (or half, where twice is over its maximum), both ways. The op follows the
    rules: FSx and GCP Lustre grow in place and FSx shrinks only by replacement (CustomizeDiff on a decrease);
    Azure Managed Lustre's storageCapacityTiB is create-only (azure-native forceNew), so any resize replaces it; a
    replace of a file system loses its data and is guarded by the change-safety rule."""
    from aicluster.spec import SpecError

    rules = load_catalog().change_rules
    doc = copy.deepcopy(stack_doc(stack))
    fs = doc["config"]["aicluster:cluster"]["storage"][index]
    example = base_preview(stack)
    fs["capacity_tib"] = fs["capacity_tib"] * 2
    try:
        small, large = example, preview_doc(scratch_project(tmp_path), stack, doc)
    except SpecError:
        fs["capacity_tib"] = fs["capacity_tib"] / 4
        small, large = preview_doc(scratch_project(tmp_path), stack, doc), example

    for base, head, grows in ((small, large, True), (large, small, False)):
        steps = [s for s in classify(base, head, rules).steps if s.stateful]
        if fs["kind"] == "nfs" and doc["config"].get("aws:region"):
            assert steps == []  # EFS is elastic: no capacity input, nothing to change
        else:
            assert steps, "a resize changes the file system"
        for step in steps:
            rule = rules[step.type]
            replaced_by = [p for p in step.detailed_diff if any(p == r or p.startswith(r + ".") for r in rule.replace)]
            shrink_rule = [
                p for p in step.detailed_diff for c in rule.replace_if if c.path == p and c.when == "decrease"
            ]
            expected = "replace" if replaced_by or (shrink_rule and not grows) else "update"
            assert step.op == expected, step.to_json()
            if step.op == "replace":
                assert "data-loss" in step.risks
                assert step.to_json()["guardedBy"]
            else:
                assert step.risks == []


def test_shrinking_fsx_lustre_is_blocked_and_growing_it_is_not(tmp_path: Path) -> None:
    rules = load_catalog().change_rules
    doc = copy.deepcopy(stack_doc("p5-small"))
    doc["config"]["aicluster:cluster"]["storage"][0]["capacity_tib"] = 24
    small = preview_doc(scratch_project(tmp_path), "p5-small", doc)
    (step,) = [s for s in classify(base_preview("p5-small"), small, rules).steps if s.stateful]
    assert (step.type, step.op, step.replace_reasons, step.risks) == (
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        "replace",
        ["storageCapacity"],
        ["data-loss"],
    )


INSTANCE_TYPES = [
    # stack, new instance type, the pool's resource type, its op, rollout, why (the rule)
    pytest.param("gke-a3mega", "a3-highgpu-8g", "gcp:container/nodePool:NodePool", "replace", False, id="gke"),
    pytest.param("eks-p5", "p4d.24xlarge", "aws:eks/nodeGroup:NodeGroup", "update", True, id="eks"),
    pytest.param(
        "aks-nd-h100", "Standard_ND96asr_v4", "azure-native:containerservice:AgentPool", "replace", False, id="aks"
    ),
]


@pytest.mark.parametrize(("stack", "new_type", "group_type", "op", "rollout"), INSTANCE_TYPES)
def test_a_new_instance_type_recreates_the_pools_gpus(
    stack: str, new_type: str, group_type: str, op: str, rollout: bool, tmp_path: Path
) -> None:
    """GKE: a new accelerator type replaces the node pool (guestAccelerators are ForceNew); EKS: the launch template's
    new version rolls the node group, one node at a time (updateConfig.maxUnavailable); AKS: vmSize is in
    azure-native's forceNew list."""
    changes, _ = changed(tmp_path, stack, lambda c: c["pools"][0].update(instance_type=new_type))
    (step,) = [s for s in changes.steps if s.type == group_type and s.pool == _pools(stack)[0]["name"]]
    assert (step.op, step.rollout, step.risks) == (op, rollout, ["job-kill"]), step.to_json()
    example = next(p for p in base_preview(stack)["pools"] if p["name"] == step.pool)
    assert (step.nodes, step.gpus) == (example["nodes"], example["gpus"])
    if rollout:
        assert "1 at a time (updateConfig.maxUnavailable)" in step.why[-1]


@pytest.mark.parametrize("stack", ["p5-small", "azure-nd-h100", "gcp-a3mega-slurm"])
def test_a_new_instance_type_of_a_slurm_group_leaves_running_nodes(stack: str, tmp_path: Path) -> None:
    """An Auto Scaling group on the template's $Latest without an instance refresh, a scale set with a Manual
    upgrade policy and a MIG with an OPPORTUNISTIC update policy start new nodes of the new type and leave the running
    ones (Slurm's jobs on them): no rollout, and the diff says so. (GCP replaces the instance template itself.)"""
    new = {"p5-small": "p4d.24xlarge", "azure-nd-h100": "Standard_ND96asr_v4", "gcp-a3mega-slurm": "a3-highgpu-8g"}
    new_type = new[stack]
    changes, _ = changed(tmp_path, stack, lambda c: c["pools"][0].update(instance_type=new_type))
    groups = {t for t, r in load_catalog().change_rules.items() if r.capacity}
    assert [s.to_json() for s in changes.steps if s.rollout or (s.op == "replace" and s.type in groups)] == []
    notes = [w for s in changes.steps for w in s.why]
    assert any("running" in w for w in notes), notes


def test_what_the_program_tells_the_engine_to_ignore_is_no_change() -> None:
    """GKE's maintenance exclusion starts when `pulumi up` first runs (the clock) and carries ignore_changes on that
    start: two previews of an unchanged stack at different times are no change, in the steps and in the diff."""
    from aicluster.catalog import load_catalog
    from aicluster.changes import classify
    from aicluster.report import diff_markdown
    from tests.changes.harness import base_preview

    base = base_preview("gke-a3mega")
    cluster = next(r for r in base["resources"] if r["type"] == "gcp:container/cluster:Cluster")
    path = "maintenancePolicy.maintenanceExclusions[0].startTime"
    assert path in cluster["ignoreChanges"]
    head = copy.deepcopy(base)
    later = next(r for r in head["resources"] if r["urn"] == cluster["urn"])
    later["inputs"]["maintenancePolicy"]["maintenanceExclusions"][0]["startTime"] = "2031-01-01T00:00:00Z"
    assert classify(base, head, load_catalog().change_rules).steps == []
    assert "No changes: resources, cost, power and findings are the same" in diff_markdown(base, head)
    # without the option the same edit is a change: the filter is the option, not the path
    del later["ignoreChanges"]
    assert [s.op for s in classify(base, head, load_catalog().change_rules).steps] == ["update"]
    assert "startTime" in diff_markdown(base, head)
