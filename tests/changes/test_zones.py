"""Zone moves and updates the cloud's API refuses, from the example stacks with one field changed (issue 28):

- AWS: a Slurm pool moved to another zone changes its Auto Scaling group's subnets (vpcZoneIdentifiers): the group
  terminates the instances of the zone it leaves (zones-aws-asg-rebalancing), a rollout that kills their jobs, drained
  first like any rollout; the controller VM on its launch template's `$Default` may be replaced; the diff counts
  every step that is not same.
- Azure: an AKS pool's zones cannot change (zones-aks-zones-fixed): the step is refused in every output and fails
  `aicluster preview --base` unless waived.
- Zone lists the provider holds as sets (Terraform's TypeSet: an ASG's vpcZoneIdentifiers, a GKE pool's
  nodeLocations) are no change in another order; azure-native compares lists by index, so the AKS component keeps
  the system pool's zones sorted.
- GKE: a node pool's new zones add and remove nodes per zone, not at the upgrade settings' pace (gke-nodepool-update).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster.catalog import load_catalog
from aicluster.changes import CHANGE_SAFETY, blocked_steps, classify
from aicluster.report import diff_markdown
from tests.changes.harness import base_preview, changed, stack_doc
from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow

ASG = "aws:autoscaling/group:Group"
INSTANCE = "aws:ec2/instance:Instance"
AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
NODE_POOL = "gcp:container/nodePool:NodePool"


def _zone(zone: str) -> Any:
    return lambda c: c["pools"][0].update(zone=zone)


def test_moving_an_aws_slurm_pool_to_another_zone_rolls_its_group_and_drains_it(tmp_path: Path) -> None:
    changes, head = changed(tmp_path, "p5-small", _zone("us-east-1b"))
    (asg,) = [s for s in changes.steps if s.type == ASG]
    assert (asg.op, asg.rollout, asg.risks, asg.pool, asg.nodes, asg.gpus) == (
        "update",
        True,
        ["job-kill"],
        "h100",
        4,
        32,
    ), asg.to_json()
    assert asg.diff_reasons == ["vpcZoneIdentifiers"]
    assert "terminates its instances in the zones (subnets) it no longer has" in asg.why[-1]
    assert "(zones-aws-asg-rebalancing)" in asg.why[-1]
    # exact: the plan puts the pool in one zone, and its group leaves it (the subnet IDs are known only after the
    # deployment, the plan's zones say what moved)
    assert "all 4 nodes of pool h100 are in us-east-1a, the zone it leaves" in asg.why[-1]
    assert "nodesUpTo" not in asg.to_json()
    # the Slurm drain plan covers the pool, as for any rollout: its nodes come back (in the new zone)
    (drain,) = changes.drains
    assert (drain.pool, len(drain.nodes), drain.removed) == ("h100", 4, False)
    assert "vpcZoneIdentifiers" in drain.why

    # the controller runs on its launch template's $Default, which the template's update moves: the provider
    # replaces an instance that no longer runs the version the alias names (ec2_instance.go CustomizeDiff)
    (vm,) = [s for s in changes.steps if s.type == INSTANCE]
    assert (vm.op, vm.may_replace) == ("update", ["launchTemplate.version"]), vm.to_json()
    assert "slurmctld-lt's new version" in vm.why[0]

    # the Markdown counts every step that is not same: the launch templates, the group, the VPC endpoint, the VM and
    # the file system (replaced), not only the template whose own inputs differ
    text = diff_markdown(base_preview("p5-small"), head, changes.to_json())
    not_same = sum(1 for s in changes.steps if s.op in ("update", "replace"))
    assert not_same == 6
    assert f"7 resources added, {not_same} changed, 7 removed" in text.splitlines()[0]
    assert f"**Changed ({not_same})**" in text
    assert (
        "| llm-dev-h100-asg | aws:autoscaling/group:Group | **update (rollout)** | jobs killed | 4 nodes, 32 GPUs"
        in (text)
    )


@pytest.fixture(scope="module")
def aks_zone_3(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any]]:
    """The AKS example with its GPU pool in zone 3: the pool's zone and the system pool's ({1, 2} -> {1, 3}) change."""
    return changed(tmp_path_factory.mktemp("aks"), "aks-nd-h100", _zone("3"))


def test_an_aks_zone_change_is_refused_and_blocked_unless_waived(aks_zone_3: tuple[Any, dict[str, Any]]) -> None:
    changes, _ = aks_zone_3
    refused = {s.type: s for s in changes.steps if s.rejected}
    assert set(refused) == {AGENT_POOL, MANAGED_CLUSTER}
    system = refused[MANAGED_CLUSTER]
    assert (system.op, system.rejected) == ("update", ["agentPoolProfiles[0].availabilityZones[1]"])
    assert system.to_json()["refused"] is True
    assert "(zones-aks-zones-fixed)" in system.why[-1]

    blocked, waived = blocked_steps(changes, [])
    assert {b.step.type for b in blocked} == {AGENT_POOL, MANAGED_CLUSTER}
    assert waived == []
    fix = next(b.fix for b in blocked if b.step.type == AGENT_POOL)
    assert "refuses to change availabilityZones[0] in place" in fix
    assert "add a new node pool with the new setting beside this one" in fix
    assert "waive" not in fix  # `pulumi up` fails on it whatever a waiver says: the fix only

    class Waiver:
        policy, reason, expires = CHANGE_SAFETY, "moving the pool by hand this week", "2099-01-01"
        resource = system.name

    blocked, waived = blocked_steps(changes, [Waiver()])
    assert [w.step.type for w in waived] == [MANAGED_CLUSTER]
    assert [b.step.type for b in blocked] == [AGENT_POOL]


def test_a_refused_step_is_the_diffs_first_section(aks_zone_3: tuple[Any, dict[str, Any]]) -> None:
    changes, head = aks_zone_3
    text = diff_markdown(base_preview("aks-nd-h100"), head, changes.to_json())
    first = text.split("## Replaced, deleted and rolled out", 1)[1].split("\n## ", 1)[0]
    assert "Nothing is replaced or deleted" not in first
    assert "**update (refused by the cloud's API: pulumi up fails)**" in first
    assert f"fails on 2 of these (aks-nd-aks-h100ib0, aks-nd-aks-cluster): {CHANGE_SAFETY}" in first


def test_preview_base_fails_on_a_refused_zone_change_unless_waived(tmp_path: Path) -> None:
    for f in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / f, tmp_path / f)
    (tmp_path / "stacks").mkdir()
    base = tmp_path / "base.json"
    assert run_cli("preview", "aks-nd-h100", "--json", str(base)).returncode == 0
    doc = copy.deepcopy(stack_doc("aks-nd-h100"))
    cluster = doc["config"]["aicluster:cluster"]
    cluster["pools"][0]["zone"] = "2"  # the system pool keeps zones 1 and 2: only the GPU pool's zone changes
    stack = tmp_path / "stacks" / "Pulumi.aks-nd-h100.yaml"
    stack.write_text(yaml.safe_dump(doc))
    head = tmp_path / "head.json"

    proc = run_cli("-C", str(tmp_path), "preview", "aks-nd-h100", "--json", str(head), "--base", str(base))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "update(s) the cloud's API refuses (aks-nd-aks-h100ib0: availabilityZones[0])" in proc.stdout
    assert "blocked aks-nd-aks-h100ib0" in proc.stdout
    steps = json.loads(head.read_text())["changes"]["steps"]
    assert [(s["type"], s["op"], s.get("refused")) for s in steps] == [(AGENT_POOL, "update", True)]

    waiver = {
        "policy": CHANGE_SAFETY,
        "resource": "aks-nd-aks-h100ib0",
        "reason": "a new pool replaces it next week",
        "expires": "2099-01-01",
    }
    cluster.setdefault("compliance", {})["waivers"] = [waiver]
    stack.write_text(yaml.safe_dump(doc))
    proc = run_cli("-C", str(tmp_path), "preview", "aks-nd-h100", "--json", str(head), "--base", str(base))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "waived aks-nd-aks-h100ib0" in proc.stdout


@pytest.mark.parametrize(
    ("stack", "type_", "path"),
    [
        pytest.param("gke-a3mega", NODE_POOL, "nodeLocations", id="gke-nodeLocations"),
        pytest.param("p5-large", ASG, "vpcZoneIdentifiers", id="asg-vpcZoneIdentifiers"),
    ],
)
def test_a_zone_list_in_another_order_is_no_change_where_the_provider_holds_a_set(
    stack: str, type_: str, path: str
) -> None:
    """Terraform's TypeSet (google-beta node_locations, AWS vpc_zone_identifier) ignores order: no step at all."""
    rules = load_catalog().change_rules
    assert path in rules[type_].unordered
    base = copy.deepcopy(base_preview(stack))
    (r,) = [r for r in base["resources"] if r["type"] == type_][:1]
    r["inputs"][path] = ["zone-a", "zone-b"]
    head = copy.deepcopy(base)
    next(x for x in head["resources"] if x["urn"] == r["urn"])["inputs"][path] = ["zone-b", "zone-a"]
    assert classify(base, head, rules).steps == []
    # a new member is still a change
    next(x for x in head["resources"] if x["urn"] == r["urn"])["inputs"][path] = ["zone-b", "zone-c"]
    (step,) = classify(base, head, rules).steps
    assert step.op == "update"
    assert step.rollout


def test_the_aks_system_pool_keeps_its_zones_when_only_the_gpu_pools_zone_moves(tmp_path: Path) -> None:
    """The system pool's zones are {1, 2} with the GPU pool in zone 1 or 2; azure-native would see ["1","2"] ->
    ["2","1"] as an update (diff.go compares lists by index), so the component sorts them: no ManagedCluster step."""
    changes, _ = changed(tmp_path, "aks-nd-h100", _zone("2"))
    assert [s.type for s in changes.steps] == [AGENT_POOL]


def test_a_gke_zone_move_says_what_gke_does_per_zone(tmp_path: Path) -> None:
    changes, _ = changed(tmp_path, "gke-a3mega", _zone("us-central1-b"))
    (pool,) = [s for s in changes.steps if s.type == NODE_POOL]
    assert (pool.op, pool.rollout, pool.risks, pool.nodes, pool.gpus) == ("update", True, ["job-kill"], 32, 256)
    (why,) = pool.why
    assert why.startswith("nodeLocations[0]: a rollout, GKE creates nodeCount nodes in each added zone")
    assert "removes every node of each dropped zone" in why
    assert why.endswith("; all 32 nodes of pool h100 are in us-central1-a, the zone it leaves (gke-nodepool-update)")
    assert "at a time" not in why  # not the surge settings' pace: that is for machine type, image, version


def test_a_refused_step_shows_in_the_html_and_markdown_reports(aks_zone_3: tuple[Any, dict[str, Any]]) -> None:
    """`aicluster report` of a head preview JSON written with --base: the same first section, refused steps in it."""
    from aicluster.report import render

    changes, head = aks_zone_3
    doc = {**head, "changes": {"base": "aks-nd-h100", **changes.to_json(), "blocked": [], "waived": []}}
    for fmt in ("html", "md"):
        text = render(doc, fmt)
        assert "refused by the cloud" in text, fmt
        assert "agentPoolProfiles[0].availabilityZones[1]" in text.replace("\\[", "[").replace("\\]", "]"), fmt


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        pytest.param(lambda c: c["pools"][0].update(root_volume_gib=2048), "osDiskSizeGB", id="os-disk-size"),
    ],
)
def test_other_aks_pool_settings_the_api_refuses_are_blocked(edit: Any, field: str, tmp_path: Path) -> None:
    changes, _ = changed(tmp_path, "aks-nd-h100", edit)
    blocked, _ = blocked_steps(changes, [])
    assert [(b.step.type, b.step.rejected) for b in blocked] == [(AGENT_POOL, [field])]
    assert f"refuses to change {field} in place" in blocked[0].fix


def test_an_eks_zone_move_counts_the_gpu_group_not_the_system_group_as_gpu_nodes(tmp_path: Path) -> None:
    """The system node group spans two zones and holds no GPU pool's nodes: it carries its own pool label (as GKE's
    system pool does), so its replacement is not counted as the GPU pool's nodes and GPUs (it was: 2 nodes and 16
    GPUs of pool h100, taken from its sibling's label)."""
    changes, _ = changed(tmp_path, "eks-p5", _zone("us-east-1a"))
    groups = {s.name: s for s in changes.steps if s.type == "aws:eks/nodeGroup:NodeGroup"}
    gpu, system = groups["eks-p5-eks-h100"], groups["eks-p5-eks-system"]
    assert (gpu.op, gpu.pool, gpu.nodes, gpu.gpus) == ("replace", "h100", 16, 128)
    assert (system.op, system.pool, system.nodes, system.gpus) == ("replace", "system", None, None), system.to_json()
