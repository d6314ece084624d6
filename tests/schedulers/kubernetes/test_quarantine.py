"""The GPU node quarantine controller's objects (aicluster/schedulers/kubernetes/quarantine.py): they validate against
the cluster's Kubernetes version, grant no more than the controller uses, ship the repository's own modules (standard
library only) with a configuration made of the plan and the catalog, and run off the GPU nodes as a non-root,
read-only single replica. The controller's behaviour is tested in tests/repair/test_quarantine.py."""

from __future__ import annotations

import ast
import functools
import json
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from aicluster.preview import plan_stack
from aicluster.repair.quarantine import load_config
from aicluster.schedulers.kubernetes.health import npd_objects
from aicluster.schedulers.kubernetes.plan import NPD_ADDON, POOL_LABEL, QUARANTINE_ADDON
from aicluster.schedulers.kubernetes.quarantine import CONFIG_DIGEST, CONFIG_FILE, MODULES, NAME, quarantine_objects
from aicluster.stackfile import find_project, read_stack
from tests.conftest import KUBERNETES_STACKS, ROOT


@functools.cache
def stack_plan(stack: str) -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), stack))


def objects(plan: ClusterPlan) -> list[dict[str, Any]]:
    assert plan.kubernetes is not None
    (addon,) = [a for a in plan.kubernetes.addons if a.id == QUARANTINE_ADDON]
    return quarantine_objects(plan, addon)


def one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (obj,) = [o for o in objs if o["kind"] == kind]
    return obj


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_objects_validate_against_the_clusters_kubernetes_version(stack: str) -> None:
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    objs = objects(plan)
    assert [o["kind"] for o in objs] == [
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment"
    ]  # fmt: skip
    for obj in objs:
        kubernetes_validate.validate(obj, f"{plan.kubernetes.version}.0", strict=True)


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_deployed_wherever_node_problem_detector_is(stack: str) -> None:
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    ids = [a.id for a in plan.kubernetes.addons]
    assert (NPD_ADDON in ids) == (QUARANTINE_ADDON in ids)
    (npd_addon,) = [a for a in plan.kubernetes.addons if a.id == NPD_ADDON]
    assert bool(npd_objects(plan, npd_addon)) == bool(objects(plan))


def test_rbac_is_least_privilege_and_bound_to_the_controllers_account() -> None:
    objs = objects(stack_plan("eks-p5"))
    account = one(objs, "ServiceAccount")["metadata"]
    subject = [{"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}]
    nodes = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]}]
    assert one(objs, "ClusterRole")["rules"] == nodes
    role = one(objs, "Role")
    assert role["metadata"]["namespace"] == "default"  # the API keeps a Node's events there
    assert role["rules"] == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
    for kind, ref in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = one(objs, kind)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": ref, "name": NAME}
        assert binding["subjects"] == subject
    assert one(objs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_config_is_the_plans_gpu_pools_npd_conditions_and_the_catalogs_breaker(
    stack: str, catalog: Catalog, tmp_path: Path
) -> None:
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    assert plan.kubernetes.health is not None
    health = plan.kubernetes.health
    path = tmp_path / CONFIG_FILE
    path.write_text(one(objects(plan), "ConfigMap")["data"][CONFIG_FILE])
    cfg = load_config(path)  # what the pod reads, through the controller's own loader
    assert catalog.health is not None
    assert catalog.health.repair is not None
    assert cfg.max_share == catalog.health.repair.limits.max_share_in_repair == health.quarantine_max_share
    assert cfg.pools == tuple(sorted(health.gpus_per_pool))
    assert cfg.conditions == (health.xid_condition, health.count_condition)
    assert cfg.pool_label == POOL_LABEL


def test_shipped_modules_are_the_repositorys_and_import_only_the_standard_library() -> None:
    data = one(objects(stack_plan("eks-p5")), "ConfigMap")["data"]
    for module in MODULES:
        source = (ROOT / "aicluster" / "repair" / module).read_text(encoding="utf-8")
        assert data[module] == source
        imported: set[str] = set()
        for n in ast.walk(ast.parse(source)):
            if isinstance(n, ast.Import):
                imported |= {a.name for a in n.names}
            elif isinstance(n, ast.ImportFrom) and n.module:
                imported.add(n.module)
        foreign = {m for m in imported if m.split(".")[0] not in sys.stdlib_module_names and m != "__future__"}
        assert foreign <= {f"aicluster.repair.{m.removesuffix('.py')}" for m in MODULES}, (module, foreign)


def test_deployment_is_one_non_root_read_only_replica_off_the_gpu_nodes() -> None:
    plan = stack_plan("eks-p5")
    assert plan.kubernetes is not None
    assert plan.kubernetes.health is not None
    spec = one(objects(plan), "Deployment")["spec"]
    assert (spec["replicas"], spec["strategy"]) == (1, {"type": "Recreate"})
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["image"] == "python:3.12.12-slim-bookworm"
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": POOL_LABEL, "operator": "NotIn", "values": sorted(plan.kubernetes.health.gpus_per_pool)}
    ]
    digest = spec["template"]["metadata"]["annotations"][CONFIG_DIGEST]
    assert len(digest) == 64


def test_a_changed_breaker_rolls_the_pod() -> None:
    plan = stack_plan("eks-p5")
    assert plan.kubernetes is not None
    assert plan.kubernetes.health is not None
    health = plan.kubernetes.health.model_copy(update={"quarantine_max_share": 0.25})
    other = plan.model_copy(update={"kubernetes": plan.kubernetes.model_copy(update={"health": health})})
    before, after = (one(objects(p), "Deployment")["spec"]["template"]["metadata"] for p in (plan, other))
    assert before["annotations"][CONFIG_DIGEST] != after["annotations"][CONFIG_DIGEST]
    assert json.loads(one(objects(other), "ConfigMap")["data"][CONFIG_FILE])["max_share"] == 0.25


def test_no_breaker_in_the_catalog_no_controller() -> None:
    plan = stack_plan("eks-p5")
    assert plan.kubernetes is not None
    assert plan.kubernetes.health is not None
    health = plan.kubernetes.health.model_copy(update={"quarantine_max_share": None})
    other = plan.model_copy(update={"kubernetes": plan.kubernetes.model_copy(update={"health": health})})
    assert objects(other) == []
