"""Issue 28: the change-safety gate on what a new user hit. Growing a GKE or AKS stack keeps the cluster (the pod
range no longer follows the node count); a new pod range, a replaced control plane or GPU node pool, and a
replaced Slurm controller (its job queue is on its disk) fail the gate by the catalog's guards; the fix names the
stack field; waivers that waive nothing are reported; the terminal table shows "may replace" rows and types."""

from __future__ import annotations

import copy
import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster.catalog import Catalog, load_catalog
from aicluster.changes import CHANGE_SAFETY, blocked_steps, classify
from aicluster.preview.check import waiver_warnings
from aicluster.report import diff_markdown
from aicluster.spec import Waiver
from tests.changes.harness import base_preview, changed, preview_doc, scratch_project, stack_doc
from tests.conftest import ROOT, run_cli
from tests.report.previews import PASSING

GKE = "gcp:container/cluster:Cluster"
AKS = "azure-native:containerservice:ManagedCluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
INSTANCE = "aws:ec2/instance:Instance"


def _nodes(n: int) -> Any:
    return lambda c: c["pools"][0].update(nodes=n)


@pytest.mark.parametrize(
    ("stack", "before", "after", "cluster"),
    [
        pytest.param("gke-a3mega", 32, 64, GKE, id="gke-32-to-64"),
        pytest.param("aks-nd-h100", 16, 40, AKS, id="aks-16-to-40"),
    ],
)
def test_growing_a_kubernetes_stack_keeps_the_cluster_and_its_pod_range(
    tmp_path: Path, stack: str, before: int, after: int, cluster: str
) -> None:
    assert stack_doc(stack)["config"]["aicluster:cluster"]["pools"][0]["nodes"] == before
    changes, head = changed(tmp_path, stack, _nodes(after))
    base = base_preview(stack)
    assert base["kubernetes"]["pod_cidr"] == head["kubernetes"]["pod_cidr"] == "100.64.0.0/14"
    assert [s.name for s in changes.steps if s.op in ("replace", "delete")] == []
    assert not [s for s in changes.steps if s.type == cluster]
    assert blocked_steps(changes, []) == ([], [])


def _pinned(tmp: Path, stack: str, pod_cidr: str | None, nodes: int | None = None) -> dict[str, Any]:
    doc = copy.deepcopy(stack_doc(stack))
    cluster = doc["config"]["aicluster:cluster"]
    if pod_cidr is not None:
        cluster.setdefault("network", {})["pod_cidr"] = pod_cidr
    if nodes is not None:
        cluster["pools"][0]["nodes"] = nodes
    tmp.mkdir()
    return preview_doc(scratch_project(tmp), stack, doc)


def test_a_new_pod_range_replaces_the_cluster_and_fails_the_gate(tmp_path: Path) -> None:
    """A cluster created with the old sizing (a /18 for 32 nodes) upgraded without pinning it: GKE replaces the
    cluster (clusterIpv4CidrBlock is ForceNew) and its GPU node pool; both fail the gate, and the fix names
    network.pod_cidr, the field the user writes, with the value to keep."""
    old = _pinned(tmp_path / "old", "gke-a3mega", "100.64.0.0/18")
    new = _pinned(tmp_path / "new", "gke-a3mega", None)
    changes = classify(old, new, load_catalog().change_rules)
    replaced = {s.type: s for s in changes.steps if s.op == "replace"}
    assert replaced[GKE].replace_reasons == ["ipAllocationPolicy"]
    assert replaced[GKE].stateful
    assert replaced[GKE].loses.startswith("the Kubernetes control plane")
    assert replaced[GKE].to_json()["guardedBy"] == CHANGE_SAFETY
    blocked, _ = blocked_steps(changes, [])
    by_type = {b.step.type: b.fix for b in blocked}
    assert set(by_type) == {GKE, NODE_POOL}  # the GPU pool; the system pool runs no GPU
    assert 'keep network.pod_cidr at "100.64.0.0/18"' in by_type[GKE]
    assert "ipAllocationPolicy" in by_type[GKE]
    assert CHANGE_SAFETY in by_type[GKE]


def test_pinning_the_old_pod_range_keeps_the_cluster_as_it_grows(tmp_path: Path) -> None:
    old = _pinned(tmp_path / "old", "gke-a3mega", "100.64.0.0/18")
    grown = _pinned(tmp_path / "grown", "gke-a3mega", "100.64.0.0/18", nodes=60)
    changes = classify(old, grown, load_catalog().change_rules)
    assert grown["kubernetes"]["pod_cidr"] == "100.64.0.0/18"
    assert [s.name for s in changes.steps if s.op == "replace"] == []


def _stack_with(tmp: Path, stack: str, edit: Any) -> Path:
    for f in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / f, tmp / f)
    (tmp / "stacks").mkdir(exist_ok=True)
    doc = copy.deepcopy(stack_doc(stack))
    edit(doc["config"]["aicluster:cluster"])
    (tmp / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(doc))
    return tmp


def _pod_cidr(value: str, nodes: int | None = None) -> Any:
    def edit(c: dict[str, Any]) -> None:
        c.setdefault("network", {})["pod_cidr"] = value
        if nodes is not None:
            c["pools"][0]["nodes"] = nodes

    return edit


@pytest.mark.parametrize(
    ("stack", "edit", "words"),
    [
        pytest.param("gke-a3mega", _pod_cidr("8.8.0.0/14"), "must lie inside 10.0.0.0/8", id="public"),
        pytest.param("gke-a3mega", _pod_cidr("10.0.0.0/8"), "overlaps", id="overlaps-the-networks"),
        pytest.param("gke-a3mega", _pod_cidr("100.64.0.0/20"), "holds 16 node(s)", id="too-small"),
        pytest.param("gke-a3mega", _pod_cidr("100.64.0.0/14", nodes=1100), "pin a /13 or larger", id="outgrown"),
        pytest.param("eks-p5", _pod_cidr("100.64.0.0/14"), "no pod range of its own", id="eks"),
    ],
)
def test_a_bad_pod_range_is_one_clear_error(tmp_path: Path, stack: str, edit: Any, words: str) -> None:
    proc = run_cli("-C", str(_stack_with(tmp_path, stack, edit)), "validate", stack)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "network.pod_cidr" in proc.stderr
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr


def _doc(*resources: dict[str, Any]) -> dict[str, Any]:
    d = copy.deepcopy(PASSING)
    d["resources"] = list(resources)
    return d


def _vm(under: str, zone: str) -> dict[str, Any]:
    name = "llm-dev-slurmctld-vm"
    chain = f"aicluster:index:AiCluster${under}${INSTANCE}" if under else f"aicluster:index:AiCluster${INSTANCE}"
    return {
        "urn": f"urn:pulumi:p5-small::aicluster::{chain}::{name}",
        "type": INSTANCE,
        "name": name,
        "parent": None,
        "custom": True,
        "inputs": {"availabilityZone": zone, "instanceType": "m7i.2xlarge"},
    }


@pytest.mark.parametrize(
    ("under", "gated"),
    [
        pytest.param("aicluster:aws:SlurmController", True, id="slurm-controller"),
        pytest.param("", False, id="another-instance"),
    ],
)
def test_a_replaced_slurm_controller_loses_the_job_queue(catalog: Catalog, under: str, gated: bool) -> None:
    changes = classify(_doc(_vm(under, "us-east-1a")), _doc(_vm(under, "us-east-1b")), catalog.change_rules)
    (step,) = changes.steps
    assert step.op == "replace"
    assert step.stateful is gated
    blocked, _ = blocked_steps(changes, [])
    if gated:
        assert step.risks == ["data-loss", "job-kill"]
        assert step.to_json()["loses"].startswith("Slurm state: job queue")
        assert "it loses Slurm state: job queue" in blocked[0].fix
        text = diff_markdown(_doc(_vm(under, "us-east-1a")), _doc(_vm(under, "us-east-1b")), changes.to_json())
        assert text.startswith("# ⛔ ")
        assert "fails on 1 step unless waived" in text
    else:
        assert (step.risks, blocked) == (["job-kill"], [])


def test_every_guard_cites_a_source_and_covers_each_cloud(catalog: Catalog) -> None:
    guarded = {t: r.guards for t, r in catalog.change_rules.items() if r.guards}
    assert set(guarded) == {
        GKE,
        NODE_POOL,
        AKS,
        "azure-native:containerservice:AgentPool",
        "aws:eks/cluster:Cluster",
        "aws:eks/nodeGroup:NodeGroup",
        INSTANCE,
        "gcp:compute/instance:Instance",
        "azure-native:compute:VirtualMachine",
        "aws:autoscaling/group:Group",
        "gcp:compute/instanceGroupManager:InstanceGroupManager",
        "azure-native:compute:VirtualMachineScaleSet",
    }
    assert all(g.source in catalog.sources for gs in guarded.values() for g in gs)


def test_a_slurm_pools_group_deleted_with_running_gpu_nodes_fails_the_gate(tmp_path: Path) -> None:
    """Renaming p5-small's pool deletes its Auto Scaling group with its 4 running GPU nodes at once (no drain): the
    gate fails on it as on a Kubernetes GPU node pool, by the group's guard; lowering the count does not."""
    changes, _ = changed(tmp_path, "p5-small", lambda c: c["pools"][0].update(name="h100b"))
    (group,) = [s for s in changes.steps if s.type == "aws:autoscaling/group:Group" and s.op == "delete"]
    assert group.stateful
    assert group.nodes == 4
    blocked, _ = blocked_steps(changes, [])
    assert group.urn in {b.step.urn for b in blocked}


def test_lowering_a_slurm_pools_count_is_not_gated(tmp_path: Path) -> None:
    """The group's guard is for a group that goes: lowering the count names the nodes removed and is not blocked."""
    shrunk, _ = changed(tmp_path, "p5-small", _nodes(2))
    assert [s.nodes_removed for s in shrunk.steps if s.nodes_removed]
    assert blocked_steps(shrunk, []) == ([], [])


def test_waivers_that_waive_nothing_are_reported() -> None:
    def waiver(resource: str, expires: str) -> Waiver:
        return Waiver(policy=CHANGE_SAFETY, resource=resource, reason="moving the data by hand", expires=expires)

    waivers = [waiver("llm-dev-scratch-fs", "2026-01-31"), waiver("llm-dev-gone", "2099-01-01")]
    warnings = waiver_warnings(waivers, [("llm-dev-scratch-fs", "urn:x")], today=dt.date(2026, 11, 28))
    assert warnings[0].startswith("compliance.waivers[0]: waiver for llm-dev-scratch-fs")
    assert "expired on 2026-01-31: renew it" in warnings[0]
    assert "waiver for llm-dev-gone" in warnings[1]
    assert "matches no resource of this preview" in warnings[1]
    # validate has no resources: a name outside the cluster's is still one no resource has
    offline = waiver_warnings([waiver("other-fs", "2099-01-01")], cluster="llm-dev", today=dt.date(2026, 11, 28))
    assert offline == [
        "compliance.waivers[0]: waiver for other-fs (aicluster-change-disallow-stateful-replace) matches no "
        "resource of cluster llm-dev (their names begin with llm-dev-): give a resource's name or URN, or remove it"
    ]


def test_an_expired_waiver_is_named_in_the_blocked_fix(catalog: Catalog) -> None:
    under = "aicluster:aws:SlurmController"
    changes = classify(_doc(_vm(under, "us-east-1a")), _doc(_vm(under, "us-east-1b")), catalog.change_rules)
    old = Waiver(policy=CHANGE_SAFETY, resource="llm-dev-slurmctld-vm", reason="new controller", expires="2026-01-01")
    blocked, waived = blocked_steps(changes, [old], today=dt.date(2026, 11, 28))
    assert waived == []
    assert blocked[0].fix.startswith("the waiver for llm-dev-slurmctld-vm expired on 2026-01-01: renew it or ")
