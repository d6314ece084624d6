"""The managed Prometheus collector's objects inside a Kubernetes cluster (issue 29), from the example stacks set to
`monitoring.prometheus: managed`: EKS's RBAC for the AMP scraper's user, AKS's custom scrape job for the GPU
Operator's dcgm-exporter, GKE's DCGM metrics package. Core objects are checked against the Kubernetes OpenAPI schema
of the stack's version (kubernetes_validate, strict)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.monitoring.rules import groups
from aicluster.plan import ClusterPlan, plan
from aicluster.render.monitoring import DCGM_JOB, DCGM_POD_LABEL, NODE_JOB
from aicluster.schedulers.kubernetes.collector import (
    amp_scraper_configuration,
    collector_objects,
    gke_monitoring_components,
)
from aicluster.schedulers.kubernetes.plan import NODE_EXPORTER_ADDON
from aicluster.schedulers.kubernetes.render import helm_values, kubernetes_objects
from aicluster.spec import parse_cluster
from tests.schedulers.kubernetes.test_render import _int_or_string, _strict

ROOT = Path(__file__).resolve().parents[3]
STACKS = {"eks": "eks-p5", "aks": "aks-nd-h100", "gke": "gke-a3mega"}


def stack_plan(catalog: Catalog, name: str, prometheus: str) -> ClusterPlan:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text(encoding="utf-8"))
    cluster: dict[str, Any] = copy.deepcopy(doc["config"]["aicluster:cluster"])
    cluster["monitoring"] = {"prometheus": prometheus}
    return plan(parse_cluster(cluster, name), catalog)


def validate(p: ClusterPlan, obj: dict[str, Any]) -> None:
    assert p.kubernetes is not None
    kubernetes_validate.validate(obj, f"{p.kubernetes.version}.0", strict=True)


@pytest.mark.parametrize("name", list(STACKS.values()))
def test_self_hosted_stacks_get_no_collector_objects(catalog: Catalog, name: str) -> None:
    p = stack_plan(catalog, name, "self-hosted")
    assert collector_objects(p, catalog) == []
    assert gke_monitoring_components(p, catalog) == []


def test_eks_binds_the_scrapers_user_to_the_collector_role(catalog: Catalog) -> None:
    p = stack_plan(catalog, STACKS["eks"], "managed")
    role, binding = collector_objects(p, catalog)
    for obj in (role, binding):
        validate(p, obj)
    assert (role["kind"], role["metadata"]["name"]) == ("ClusterRole", "aps-collector-role")
    core = next(r for r in role["rules"] if r.get("apiGroups") == [""])
    assert {"nodes", "nodes/metrics", "pods", "services", "endpoints"} <= set(core["resources"])
    assert core["verbs"] == ["get", "list", "watch"]  # discovery only: no write verb anywhere
    assert all(set(r["verbs"]) <= {"get", "list", "watch"} for r in role["rules"])
    assert {"nonResourceURLs": ["/metrics"], "verbs": ["get"]} in role["rules"]
    assert binding["kind"] == "ClusterRoleBinding"
    rbac = "rbac.authorization.k8s.io"
    assert binding["roleRef"] == {"kind": "ClusterRole", "name": "aps-collector-role", "apiGroup": rbac}
    # the user AMP's own access entry for the scraper names (the catalog's): without it, it may do nothing
    user = "aps-collector-user"
    assert binding["subjects"] == [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]
    assert role in kubernetes_objects(p)
    assert binding in kubernetes_objects(p)


def test_amp_scraper_interval_is_never_under_amps_floor(catalog: Catalog) -> None:
    p = stack_plan(catalog, STACKS["eks"], "managed")
    assert p.monitoring.scrape_interval_s < 30  # the catalog's 15 s: AMP refuses a scraper configuration under 30 s
    config = yaml.safe_load(amp_scraper_configuration(p, catalog))
    assert config["global"] == {"scrape_interval": "30s"}
    assert [j["job_name"] for j in config["scrape_configs"]] == ["node", DCGM_JOB]


def test_aks_metrics_addon_gets_a_scrape_job_for_the_gpu_operators_dcgm_exporter(catalog: Catalog) -> None:
    p = stack_plan(catalog, STACKS["aks"], "managed")
    assert p.kubernetes is not None
    assert any(a.id == "gpu-operator" for a in p.kubernetes.addons)
    cm, _settings = collector_objects(p, catalog)
    validate(p, cm)
    assert cm["metadata"]["name"] == "ama-metrics-prometheus-config"
    assert cm["metadata"]["namespace"] == "kube-system"
    assert list(cm["data"]) == ["prometheus-config"]
    config = yaml.safe_load(cm["data"]["prometheus-config"])
    assert config["global"] == {"scrape_interval": f"{p.monitoring.scrape_interval_s}s"}
    (job,) = config["scrape_configs"]  # the add-on scrapes node-exporter itself
    assert job["job_name"] == DCGM_JOB
    assert job["kubernetes_sd_configs"] == [{"role": "pod"}]
    keeps = {r["source_labels"][0]: r["regex"] for r in job["relabel_configs"] if r.get("action") == "keep"}
    assert keeps == {
        "__meta_kubernetes_pod_label_app": DCGM_POD_LABEL,
        "__meta_kubernetes_pod_container_port_number": str(p.monitoring.dcgm_exporter_port),
    }


def test_aks_metrics_addon_keeps_the_infiniband_counters_the_fabric_rules_read(catalog: Catalog) -> None:
    """The add-on's own node-exporter target is job `node` (what the rules select on), and its minimal ingestion
    profile drops every node_infiniband_* metric: the settings ConfigMap adds exactly those the rules read."""
    p = stack_plan(catalog, STACKS["aks"], "managed")
    access = catalog.monitoring.scrape_access["aks-metrics-addon"] if catalog.monitoring is not None else None
    assert access is not None
    assert access.node_job == NODE_JOB
    _dcgm, settings = collector_objects(p, catalog)
    validate(p, settings)
    assert settings["metadata"] == {
        "name": "ama-metrics-settings-configmap",
        "namespace": "kube-system",
        "labels": {"app.kubernetes.io/managed-by": "aicluster"},
    }
    data = settings["data"]
    assert data["schema-version"] == "v1"
    assert len(data["config-version"]) <= 10  # the add-on truncates longer ones
    # one TOML line: the target's keep regex (the add-on ORs it with the minimal profile's list)
    key, _, value = data["default-targets-metrics-keep-list"].partition(" = ")
    assert key == "nodeexporter"
    keep = re.compile(value.strip('"'))
    exprs = " ".join(a.expr for g in groups(p, catalog) for a in g.alerts)
    read = set(re.findall(r"\bnode_infiniband_\w+", exprs))
    assert read
    assert {m for m in read if not keep.fullmatch(m)} == set()
    assert not keep.fullmatch("node_cpu_seconds_total")  # nothing else: the minimal profile's volume stays


def test_gke_turns_on_the_dcgm_package_and_scrapes_node_exporter_as_the_node_job(catalog: Catalog) -> None:
    """Managed collection scrapes only what a (Cluster)PodMonitoring selects and names the job after it: one named
    `node` for the node-exporter add-on's pods (the chart's selector labels: its name, the release's), at the port
    the add-on listens on, labelled with their node, so the fabric and file-system rules have their metrics."""
    p = stack_plan(catalog, STACKS["gke"], "managed")
    assert p.kubernetes is not None
    assert not any(a.id == "gpu-operator" for a in p.kubernetes.addons)
    assert gke_monitoring_components(p, catalog) == ["SYSTEM_COMPONENTS", "DCGM"]
    (addon,) = [a for a in p.kubernetes.addons if a.id == NODE_EXPORTER_ADDON]
    (mon,) = collector_objects(p, catalog)
    assert (mon["apiVersion"], mon["kind"]) == ("monitoring.googleapis.com/v1", "ClusterPodMonitoring")
    assert mon["metadata"]["name"] == NODE_JOB  # GMP writes the object's name to the `job` label
    assert "namespace" not in mon["metadata"]  # cluster-scoped: the add-on's pods are in its own namespace
    spec = mon["spec"]
    assert spec["selector"] == {
        "matchLabels": {"app.kubernetes.io/name": addon.chart, "app.kubernetes.io/instance": addon.id}
    }
    (endpoint,) = spec["endpoints"]
    assert endpoint["port"] == helm_values(p, addon)["service"]["port"] == p.monitoring.node_exporter_port
    assert endpoint["interval"] == f"{p.monitoring.scrape_interval_s}s"
    assert spec["targetLabels"] == {"metadata": ["node"]}
    _gmp_fields(mon)


def test_gke_node_pod_monitoring_is_valid_against_the_upstream_crd(catalog: Catalog) -> None:
    for obj in collector_objects(stack_plan(catalog, STACKS["gke"], "managed"), catalog):
        validate_gmp(obj)


def test_gke_self_hosted_gets_no_pod_monitoring(catalog: Catalog) -> None:
    p = stack_plan(catalog, STACKS["gke"], "self-hosted")
    assert collector_objects(p, catalog) == []


# The ClusterPodMonitoring fields, as GoogleCloudPlatform/prometheus-engine@2ffde4e
# charts/operator/crds/monitoring.googleapis.com_clusterpodmonitorings.yaml (v1) defines them: checked always; the
# CRD itself (vendored in tests/data/gmp), with the same strict validation as the other CRDs.
GMP_SPEC = {"endpoints", "filterRunning", "limits", "selector", "targetLabels"}
GMP_ENDPOINT = {"authorization", "basicAuth", "interval", "metricRelabeling", "oauth2", "params", "path", "port",
                "proxyUrl", "scheme", "timeout", "tls"}  # fmt: skip
GMP_METADATA = {"container", "namespace", "node", "pod", "top_level_controller_name", "top_level_controller_type"}
GMP_CRD = Path(__file__).resolve().parents[2] / "data" / "gmp" / "monitoring.googleapis.com_clusterpodmonitorings.yaml"


def _gmp_fields(obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    assert set(spec) <= GMP_SPEC
    assert {"endpoints", "selector"} <= set(spec)
    for ep in spec["endpoints"]:
        assert set(ep) <= GMP_ENDPOINT
        assert {"interval", "port"} <= set(ep)
        assert isinstance(ep["port"], int | str)
        assert ep["port"] != 0
    assert set(spec["targetLabels"]["metadata"]) <= GMP_METADATA


def validate_gmp(obj: dict[str, Any]) -> None:
    doc = yaml.safe_load(GMP_CRD.read_text(encoding="utf-8"))
    (v1,) = [v for v in doc["spec"]["versions"] if v["name"] == "v1" and v.get("served")]
    schema = _int_or_string(_strict(v1["schema"]["openAPIV3Schema"]))
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    props = {k: v for k, v in schema["properties"].items() if k not in ("apiVersion", "kind", "metadata")}
    jsonschema.validate(body, {**schema, "properties": props})
