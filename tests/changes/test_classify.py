"""The step classification on hand-built preview documents: each case is a rule of the catalog's change data
(aicluster/catalog/data/changes/), named with the source that says it."""

from __future__ import annotations

import copy
import datetime as dt
import inspect
from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.changes import CHANGE_SAFETY, ChangeSet, Step, blocked_steps, classify
from aicluster.report._changes import risky_steps
from aicluster.spec import Waiver
from tests.report.previews import ASG, FSX, LT, PASSING, pool, resource, urn

EKS_NG = "aws:eks/nodeGroup:NodeGroup"
NODE_POOL = "gcp:container/nodePool:NodePool"
VMSS = "azure-native:compute:VirtualMachineScaleSet"
SUBNET = "gcp:compute/subnetwork:Subnetwork"


def doc(*resources: dict[str, Any], nodes: int = 4) -> dict[str, Any]:
    d = copy.deepcopy(PASSING)
    d["resources"] = list(resources)
    d["pools"] = [pool("h100", nodes=nodes, cost_month=1.0, kw_it=1.0, kw_facility=1.0)]
    return d


def fsx(**inputs: Any) -> dict[str, Any]:
    return resource(FSX, "scratch-fs", **{"deploymentType": "PERSISTENT_2", "storageCapacity": 4800, **inputs})


def asg(**inputs: Any) -> dict[str, Any]:
    tags = [{"key": "aicluster:pool", "value": "h100", "propagateAtLaunch": True}]
    return resource(ASG, "h100-asg", **{"desiredCapacity": 4, "tags": tags, **inputs})


def one(changes: ChangeSet) -> Step:
    assert len(changes.steps) == 1, [s.to_json() for s in changes.steps]
    return changes.steps[0]


def test_growing_lustre_is_an_update_with_no_risk(catalog: Catalog) -> None:
    step = one(classify(doc(fsx()), doc(fsx(storageCapacity=9600)), catalog.change_rules))
    assert (step.op, step.risks, step.replace_reasons, step.diff_reasons) == ("update", [], [], ["storageCapacity"])


def test_shrinking_lustre_is_a_replace_that_loses_data(catalog: Catalog) -> None:
    """Terraform AWS CustomizeDiff: storage_capacity new < old forces new (lustre_file_system.go)."""
    step = one(classify(doc(fsx()), doc(fsx(storageCapacity=2400)), catalog.change_rules))
    assert (step.op, step.risks, step.replace_reasons) == ("replace", ["data-loss"], ["storageCapacity"])
    assert step.to_json()["detailedDiff"] == {"storageCapacity": {"kind": "update-replace", "inputDiff": True}}
    assert "4800 → 2400" in step.why[0]
    assert "tf-aws-forcenew-2024-06" in step.why[0]
    assert step.to_json()["guardedBy"] == CHANGE_SAFETY


def test_a_new_deployment_type_replaces_lustre(catalog: Catalog) -> None:
    step = one(classify(doc(fsx()), doc(fsx(deploymentType="SCRATCH_2")), catalog.change_rules))
    assert (step.op, step.replace_reasons, step.risks) == ("replace", ["deploymentType"], ["data-loss"])


def test_a_removed_file_system_is_a_delete_that_loses_data(catalog: Catalog) -> None:
    step = one(classify(doc(fsx()), doc(), catalog.change_rules))
    assert (step.op, step.risks) == ("delete", ["data-loss"])


def test_more_nodes_is_an_update_that_kills_no_job(catalog: Catalog) -> None:
    step = one(classify(doc(asg()), doc(asg(desiredCapacity=8), nodes=8), catalog.change_rules))
    assert (step.op, step.risks, step.nodes_removed) == ("update", [], [])


def test_fewer_nodes_names_the_nodes_removed(catalog: Catalog) -> None:
    step = one(classify(doc(asg()), doc(asg(desiredCapacity=2), nodes=2), catalog.change_rules))
    assert (step.op, step.risks, step.nodes, step.gpus) == ("update", ["job-kill"], 2, 16)
    assert step.nodes_removed == ["h100-002", "h100-003"]
    assert step.to_json()["nodesRemoved"] == ["h100-002", "h100-003"]


def test_a_node_pool_machine_type_is_a_rollout(catalog: Catalog) -> None:
    """google-beta: nodeConfig.machineType updates in place, and GKE recreates the nodes to do it."""
    labels = {"aicluster.io/pool": "h100"}
    old = resource(NODE_POOL, "gke-h100", nodeCount=4, nodeConfig={"machineType": "a3-megagpu-8g", "labels": labels})
    new = copy.deepcopy(old)
    new["inputs"]["nodeConfig"]["machineType"] = "a3-highgpu-8g"
    step = one(classify(doc(old), doc(new), catalog.change_rules))
    assert (step.op, step.rollout, step.risks, step.nodes, step.gpus) == ("update", True, ["job-kill"], 4, 32)
    assert step.to_json()["rollout"] is True


def test_a_manual_scale_set_keeps_its_running_vms(catalog: Catalog) -> None:
    """A VMSS model change reaches running VMs only with an Automatic or Rolling upgrade policy."""
    old = resource(VMSS, "h100-ib0", sku={"name": "a", "capacity": 4}, upgradePolicy={"mode": "Manual"})
    new = copy.deepcopy(old)
    new["inputs"]["sku"]["name"] = "b"
    step = one(classify(doc(old), doc(new), catalog.change_rules))
    assert (step.op, step.rollout, step.risks) == ("update", False, [])
    assert "running nodes keep the old configuration" in step.why[0]
    new["inputs"]["upgradePolicy"]["mode"] = "Rolling"
    rolled = one(classify(doc(old), doc(new), catalog.change_rules))
    assert (rolled.rollout, rolled.risks) == (True, ["job-kill"])


def test_a_replaced_resource_changes_its_dependents(catalog: Catalog) -> None:
    """A replacement has a new ID: an input computed from it changes, and here replaces the node group."""
    lt_old = resource(LT, "h100-lt", instanceType="p5.48xlarge")
    lt_new = copy.deepcopy(lt_old)
    lt_old["inputs"]["name"], lt_new["inputs"]["name"] = "h100-lt", "h100-lt-2"
    ng = resource(EKS_NG, "h100", launchTemplate={"id": "<computed>", "version": "<computed>"})
    ng["propertyDependencies"] = {"launchTemplate": [lt_old["urn"]]}
    steps = classify(doc(lt_old, ng), doc(lt_new, ng), catalog.change_rules).steps
    assert [(s.name, s.op) for s in steps] == [("h100-lt", "replace"), ("h100", "replace")]
    assert steps[1].replace_reasons == ["launchTemplate"]
    assert "h100-lt replaced: new ID" in steps[1].why[0]


AWS_SUBNET = "aws:ec2/subnet:Subnet"


def _node_group_in(subnet: dict[str, Any]) -> dict[str, Any]:
    ng = resource(EKS_NG, "h100", subnetIds=["<computed>"])
    ng["propertyDependencies"] = {"subnetIds": [subnet["urn"]]}
    return ng


def test_a_computed_input_from_another_resource_changes(catalog: Catalog) -> None:
    """A node group moved to another zone's subnet: its subnetIds is computed on both sides, but it now comes from
    another resource (a new one, or one that exists already), so it holds other IDs and, being ForceNew (Terraform
    AWS node_group.go), replaces the group, as `pulumi preview` would once the subnet's ID is known."""
    zone_a = resource(AWS_SUBNET, "compute-us-east-1a", availabilityZone="us-east-1a")
    zone_b = resource(AWS_SUBNET, "compute-us-east-1b", availabilityZone="us-east-1b")
    for base, head in (([zone_a], [zone_b]), ([zone_a, zone_b], [zone_a, zone_b])):  # a new subnet; an existing one
        changes = classify(doc(*base, _node_group_in(zone_a)), doc(*head, _node_group_in(zone_b)), catalog.change_rules)
        (step,) = [s for s in changes.steps if s.name == "h100"]
        assert (step.op, step.replace_reasons, step.risks) == ("replace", ["subnetIds"], ["job-kill"])
        assert "subnetIds now comes from compute-us-east-1b" in step.why[0]
        assert "tf-aws-forcenew-2024-06" in step.why[0]
    same = classify(doc(zone_a, _node_group_in(zone_a)), doc(zone_a, _node_group_in(zone_a)), catalog.change_rules)
    assert (same.steps, same.same) == ([], 2)  # the same source: no change


def test_an_update_the_api_refuses_names_its_source(catalog: Catalog) -> None:
    """azure-native previews an AgentPool's availabilityZones as an update; the AKS API refuses it."""
    old = resource("azure-native:containerservice:AgentPool", "h100", availabilityZones=["1"], count=4)
    new = resource("azure-native:containerservice:AgentPool", "h100", availabilityZones=["2"], count=4)
    step = one(classify(doc(old), doc(new), catalog.change_rules))
    assert (step.op, step.rejected) == ("update", ["availabilityZones[0]"])
    assert step.why[-1].startswith("availabilityZones[0]: the provider previews an update, but the cloud's API")
    assert "(azure-specs-mutability" in step.why[-1]
    assert step.to_json()["rejectedByApi"] == ["availabilityZones[0]"]
    resized = resource("azure-native:containerservice:AgentPool", "h100", availabilityZones=["2"], count=4, vmSize="b")
    old["inputs"]["vmSize"] = "a"
    replaced = one(classify(doc(old), doc(resized), catalog.change_rules))  # vmSize: forceNew, a new pool
    assert (replaced.op, replaced.rejected, replaced.replace_reasons) == ("replace", [], ["vmSize"])
    assert not any("API refuses" in w for w in replaced.why)


def test_a_template_update_rolls_the_groups_that_follow_its_version(catalog: Catalog) -> None:
    lt_old = resource(LT, "h100-lt", userData="a")
    lt_new = resource(LT, "h100-lt", userData="b")
    ng = resource(EKS_NG, "h100", launchTemplate={"id": "<computed>", "version": "<computed>"})
    ng["propertyDependencies"] = {"launchTemplate": [lt_old["urn"]]}
    group = asg(launchTemplate={"id": "<computed>", "version": "$Latest"})
    group["propertyDependencies"] = {"launchTemplate": [lt_old["urn"]]}
    steps = classify(doc(lt_old, ng, group), doc(lt_new, ng, group), catalog.change_rules).steps
    assert [(s.name, s.op, s.rollout) for s in steps] == [("h100-lt", "update", False), ("h100", "update", True)]


def test_a_conditional_rule_it_cannot_evaluate_is_may_replace(catalog: Catalog) -> None:
    old = resource(SUBNET, "nodes", ipCidrRange="10.0.0.0/24")
    grown = one(classify(doc(old), doc(resource(SUBNET, "nodes", ipCidrRange="10.0.0.0/23")), catalog.change_rules))
    assert grown.op == "update"  # an expansion is in place (google-beta ForceNewIfChange)
    moved = one(classify(doc(old), doc(resource(SUBNET, "nodes", ipCidrRange="10.1.0.0/24")), catalog.change_rules))
    assert (moved.op, moved.risks) == ("replace", ["network-cut"])
    unknown = one(classify(doc(old), doc(resource(SUBNET, "nodes", ipCidrRange="<computed>")), catalog.change_rules))
    assert (unknown.op, unknown.may_replace) == ("update", ["ipCidrRange"])


def test_provider_changes_come_first(catalog: Catalog) -> None:
    prov = {
        "urn": "urn:pulumi:p5-small::aicluster::pulumi:providers:aws::default",
        "type": "pulumi:providers:aws",
        "name": "default",
        "parent": None,
        "custom": True,
        "inputs": {"region": "us-east-1"},
    }
    moved = {**prov, "inputs": {"region": "us-west-2"}}
    steps = classify(doc(fsx(), prov), doc(fsx(storageCapacity=9600), moved), catalog.change_rules).steps
    assert [s.type for s in steps] == ["pulumi:providers:aws", FSX]
    assert steps[0].to_json()["providerChange"] is True


def test_the_json_has_pulumis_step_fields(catalog: Catalog) -> None:
    out = classify(doc(fsx()), doc(fsx(storageCapacity=2400), asg()), catalog.change_rules).to_json()
    assert out["changeSummary"] == {"create": 1, "update": 0, "replace": 1, "delete": 0, "same": 0}
    for step in out["steps"]:
        assert {"urn", "type", "op", "replaceReasons", "diffReasons", "risks"} <= step.keys()
        assert step["op"] in ("create", "update", "replace", "delete")
    assert out["risks"]["data-loss"] == 1


def _waiver(resource_name: str, expires: str) -> Waiver:
    return Waiver(
        policy=CHANGE_SAFETY, resource=resource_name, reason="moving to a larger file system", expires=expires
    )


@pytest.mark.parametrize(
    ("waivers", "blocked", "waived"),
    [
        pytest.param([], 1, 0, id="no-waiver"),
        pytest.param([_waiver("scratch-fs", "2099-01-01")], 0, 1, id="waived-by-name"),
        pytest.param([_waiver(urn(FSX, "scratch-fs"), "2099-01-01")], 0, 1, id="waived-by-urn"),
        pytest.param([_waiver("scratch-fs", "2020-01-01")], 1, 0, id="expired"),
        pytest.param([_waiver("other", "2099-01-01")], 1, 0, id="another-resource"),
    ],
)
def test_the_change_safety_rule(catalog: Catalog, waivers: list[Waiver], blocked: int, waived: int) -> None:
    changes = classify(doc(fsx()), doc(fsx(storageCapacity=2400)), catalog.change_rules)
    b, w = blocked_steps(changes, waivers, today=dt.date(2026, 11, 28))
    assert (len(b), len(w)) == (blocked, waived)
    if b:
        assert "keep its size or grow it" in b[0].fix
        assert CHANGE_SAFETY in b[0].fix


def test_every_resource_type_of_the_examples_has_a_rule(catalog: Catalog) -> None:
    import json

    from tests.conftest import ROOT

    previews = [json.loads(p.read_text()) for p in sorted((ROOT / "tests" / "golden" / "previews").glob("*.json"))]
    assert len(previews) >= 20
    types = {r["type"] for d in previews for r in d["resources"] if r.get("custom")}
    missing = sorted(t for t in types if t not in catalog.change_rules and not t.startswith("pulumi:providers:"))
    assert missing == []


@pytest.mark.parametrize(
    "deps",
    [
        pytest.param("not a map", id="a-string"),
        pytest.param({"launchTemplate": [1, None, {"x": 1}, ["nested"]]}, id="urns-not-strings"),
        pytest.param({"launchTemplate": "urn"}, id="a-string-list"),
    ],
)
def test_property_dependencies_of_the_wrong_shape_are_ignored(catalog: Catalog, deps: Any) -> None:
    """A hand-edited or hostile preview JSON: propertyDependencies of another shape change nothing and never raise
    (a dict among the URNs raised TypeError: unhashable)."""
    lt_old = resource(LT, "h100-lt", userData="a")
    lt_new = resource(LT, "h100-lt", userData="b")
    ng = resource(EKS_NG, "h100", launchTemplate={"id": "<computed>", "version": "<computed>"})
    ng["propertyDependencies"] = deps
    steps = classify(doc(lt_old, ng), doc(lt_new, ng), catalog.change_rules).steps
    assert [s.name for s in steps] == ["h100-lt"]


def test_hosts_that_are_not_a_list_are_not_names(catalog: Catalog) -> None:
    base, head = doc(asg()), doc(asg(desiredCapacity=2), nodes=2)
    base["pools"][0]["hosts"] = "abc"
    (step,) = classify(base, head, catalog.change_rules).steps
    assert step.nodes_removed == ["h100-002", "h100-003"]


@pytest.mark.parametrize("parent", [["a", "b"], {"urn": "x"}, 5, None], ids=["list", "map", "number", "none"])
def test_a_parent_of_another_shape_is_no_parent(catalog: Catalog, parent: Any) -> None:
    """A hand-edited or hostile preview JSON: a parent that is not a URN (a list raised TypeError: unhashable)."""
    old, new = resource(LT, "h100-lt", userData="a"), resource(LT, "h100-lt", userData="b")
    old["parent"] = new["parent"] = parent
    steps = classify(doc(old), doc(new), catalog.change_rules).steps
    assert [s.name for s in steps] == ["h100-lt"]


DAEMONSET = "kubernetes:apps/v1:DaemonSet"


def daemonset(**labels: str) -> dict[str, Any]:
    spec = {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {}}}
    return resource(
        DAEMONSET, "nccl-installer", metadata={"name": "nccl-installer", "namespace": "kube-system"}, spec=spec
    )


def test_a_new_daemonset_selector_replaces_it(catalog: Catalog) -> None:
    """The API refuses the selector's change in place (field is immutable: counts-k8s-selector-immutable), and
    pulumi-kubernetes replaces the DaemonSet instead: diff.go's forceNew key is "DaemonSet", the kind as the SDK sets
    it and the provider looks it up (exactly), since 3.18.2 (counts-pulumi-k8s-daemonset-kind). So: a replace, never
    an update the API would refuse."""
    rule = catalog.change_rules[DAEMONSET]
    assert "spec.selector" in rule.replace
    assert not rule.rejected_by_api
    before, after = daemonset(app="nccl"), daemonset(app="nccl-v2")
    step = one(classify(doc(before), doc(after), catalog.change_rules))
    assert (step.op, step.rejected, step.replace_reasons) == ("replace", [], ["spec"]), step.to_json()
    assert "spec.selector.matchLabels.app" in step.why[0], step.why
    assert "pulumi-kubernetes-diff" in step.why[0], step.why

    # a new template alone (labels kept) is an update: the DaemonSet rolls its pods itself
    same = daemonset(app="nccl")
    same["inputs"]["spec"]["template"]["spec"] = {"hostNetwork": True}
    step = one(classify(doc(before), doc(same), catalog.change_rules))
    assert (step.op, step.replace_reasons) == ("update", [])


def test_the_sdks_daemonset_kind_is_the_providers_forcenew_key() -> None:
    """diff.go looks forceNew up by the object's kind without case folding: the rule holds only while the SDK's
    DaemonSet carries the kind "DaemonSet" (the key since pulumi-kubernetes 3.18.2; the old "Daemonset" never
    matched)."""
    import pulumi_kubernetes.apps.v1 as apps

    source = inspect.getsource(apps.DaemonSet)
    assert "__props__.__dict__[\"kind\"] = 'DaemonSet'" in source


# A group's zone move (issue 28): the plan puts a pool in one zone, so a group that leaves its one zone loses all its
# nodes; one spanning several loses those in the zones it leaves, which the plan does not count ("up to").


def zoned(zone: str, *resources: dict[str, Any]) -> dict[str, Any]:
    d = doc(*resources)
    d["pools"][0]["zone"] = zone
    return d


def gke_pool(*zones: str) -> dict[str, Any]:
    labels = {"aicluster.io/pool": "h100"}
    return resource(
        NODE_POOL, "gke-h100", nodeCount=4, nodeLocations=list(zones), nodeConfig={"machineType": "m", "labels": labels}
    )


def test_a_group_leaving_its_one_zone_loses_every_node_exactly(catalog: Catalog) -> None:
    base, head = zoned("us-central1-a", gke_pool("us-central1-a")), zoned("us-central1-b", gke_pool("us-central1-b"))
    step = one(classify(base, head, catalog.change_rules))
    assert (step.op, step.rollout, step.risks, step.nodes, step.gpus) == ("update", True, ["job-kill"], 4, 32)
    assert "nodesUpTo" not in step.to_json()
    assert "all 4 nodes of pool h100 are in us-central1-a, the zone it leaves" in step.why[-1]


def test_a_group_spanning_zones_that_leaves_one_counts_up_to_its_nodes(catalog: Catalog) -> None:
    base = zoned("us-central1-a", gke_pool("us-central1-a", "us-central1-b"))
    head = zoned("us-central1-a", gke_pool("us-central1-a", "us-central1-c"))
    step = one(classify(base, head, catalog.change_rules))
    assert (step.op, step.rollout, step.risks, step.nodes, step.nodes_up_to) == (
        "update",
        True,
        ["job-kill"],
        4,
        True,
    )
    assert step.to_json()["nodesUpTo"] is True
    assert "up to 4 nodes: the group spans 2 zones (subnets)" in step.why[-1]
    assert "(us-central1-b)" in step.why[-1]
    (row,) = risky_steps(changes_json(base, head, catalog))
    assert row.nodes.startswith("up to 4 nodes, 32 GPUs")


def test_a_group_that_only_gains_zones_removes_no_node(catalog: Catalog) -> None:
    base = zoned("us-central1-a", gke_pool("us-central1-a"))
    head = zoned("us-central1-a", gke_pool("us-central1-a", "us-central1-b"))
    step = one(classify(base, head, catalog.change_rules))
    assert (step.op, step.rollout, step.risks, step.nodes) == ("update", False, [], None)
    assert "it keeps every zone it has (us-central1-a), so no node is removed" in step.why[-1]


def test_an_asg_spanning_subnets_known_only_after_deployment_counts_up_to_its_nodes(catalog: Catalog) -> None:
    """Subnet IDs are computed in a preview: with the plan's zone unchanged, which subnets go is not known."""
    base = asg(vpcZoneIdentifiers=["<computed>", "<computed>"])
    head = asg(vpcZoneIdentifiers=["<computed>"])
    step = one(classify(zoned("us-east-1a", base), zoned("us-east-1a", head), catalog.change_rules))
    assert (step.rollout, step.nodes, step.nodes_up_to) == (True, 4, True), step.to_json()
    assert "up to 4 nodes: the group spans 2 zones (subnets)" in step.why[-1]


def changes_json(base: dict[str, Any], head: dict[str, Any], catalog: Catalog) -> dict[str, Any]:
    return classify(base, head, catalog.change_rules).to_json()
