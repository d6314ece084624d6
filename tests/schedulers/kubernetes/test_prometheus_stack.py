"""A Prometheus, Alertmanager and Grafana in a Kubernetes cluster (kube-prometheus-stack, monitoring.prometheus
self-hosted): the objects and values aicluster gives it, validated against the chart's own files (tests/data/
kube-prometheus-stack: the Prometheus Operator's CRDs and values.yaml at the pinned chart), the rules by `promtool
check rules`, the routing by `amtool check-config` after Helm's merge, and the receivers' secrets kept secret from the
Pulumi config to the Kubernetes Secret."""

from __future__ import annotations

import copy
import functools
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.monitoring import in_cluster, render
from aicluster.plan import ClusterPlan, plan
from aicluster.preview.engine import SECRET_VALUE, ProgramError, run_program
from aicluster.render.monitoring import ALERTMANAGER_SECRET, ALERTMANAGER_SECRETS_DIR, InClusterMonitoring
from aicluster.schedulers.kubernetes.plan import PROMETHEUS_STACK_ADDON
from aicluster.schedulers.kubernetes.prometheus import (
    DASHBOARD_LABEL,
    alertmanager_secret,
    prometheus_stack,
    prometheus_stack_objects,
)
from aicluster.schedulers.kubernetes.render import helm_values, installed_by
from aicluster.spec import parse_cluster
from tests.conftest import KUBERNETES_STACKS, ROOT
from tests.monitoring.test_alerting import SELF_HOSTED, SLACK_KEY
from tests.schedulers.kubernetes.test_render import _int_or_string, _strict, walk
from tests.targets import system_tool

DATA = ROOT / "tests" / "data" / "kube-prometheus-stack"
CRDS = {"PrometheusRule": "crd-prometheusrules.yaml", "PodMonitor": "crd-podmonitors.yaml"}
WEBHOOK = "https://hooks.slack.example/T0/B0/Zq9SECRETmark"


def _tool(name: str, package: str) -> str:
    return system_tool(name, package)


def stack_cluster(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text(encoding="utf-8"))
    return copy.deepcopy(doc["config"]["aicluster:cluster"])


def self_hosted(name: str, alerts: bool = True) -> dict[str, Any]:
    """Example stack `name` with a Prometheus in its cluster, routing every receiver kind it takes."""
    data = stack_cluster(name)
    data["monitoring"] = {"prometheus": "self-hosted", **({"alerts": copy.deepcopy(SELF_HOSTED)} if alerts else {})}
    return data


def planned(catalog: Catalog, data: dict[str, Any]) -> tuple[ClusterPlan, InClusterMonitoring]:
    p = plan(parse_cluster(data, "test"), catalog)
    monitoring = in_cluster(p, catalog)
    assert monitoring is not None
    return p, monitoring


def _go_patterns(schema: Any) -> Any:
    """The CRDs' patterns are Go regular expressions: Go takes a flag group after `^`, Python only at the start."""
    if isinstance(schema, dict):
        out = {k: _go_patterns(v) for k, v in schema.items()}
        if isinstance(out.get("pattern"), str) and out["pattern"].startswith("^(?i)"):
            out["pattern"] = "(?i)^" + out["pattern"].removeprefix("^(?i)")
        return out
    if isinstance(schema, list):
        return [_go_patterns(v) for v in schema]
    return schema


@functools.cache
def crd_schema(kind: str) -> dict[str, Any]:
    doc = yaml.safe_load((DATA / CRDS[kind]).read_text(encoding="utf-8"))
    (served,) = [v for v in doc["spec"]["versions"] if v.get("served")]
    assert served["name"] == "v1"
    return _go_patterns(_int_or_string(_strict(served["schema"]["openAPIV3Schema"])))  # type: ignore[no-any-return]


def validate_cr(obj: dict[str, Any]) -> None:
    schema = crd_schema(obj["kind"])
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    props = {k: v for k, v in schema["properties"].items() if k not in ("apiVersion", "kind", "metadata")}
    jsonschema.validate(body, {**schema, "properties": props})


SELF_HOSTED_STACKS = ["eks-p5", "gke-a4x", "aks-nd-h100"]  # one per cloud (the managed ones made self-hosted)


# ------------------------------------------------------------------------------------------------------- the plan


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_the_stack_runs_a_prometheus_in_the_cluster_only_where_it_is_self_hosted(catalog: Catalog, stack: str) -> None:
    p = plan(parse_cluster(stack_cluster(stack), stack), catalog)
    has = prometheus_stack(p) is not None
    assert has == (p.monitoring.prometheus == "self-hosted")
    assert (in_cluster(p, catalog) is not None) == has
    if not has:
        assert prometheus_stack_objects(p, None) == []


# ---------------------------------------------------------------------------------------------------- schemas


@pytest.mark.parametrize("stack", SELF_HOSTED_STACKS)
def test_prometheus_rules_and_pod_monitors_validate_against_the_operators_crds(catalog: Catalog, stack: str) -> None:
    p, monitoring = planned(catalog, self_hosted(stack))
    objs = prometheus_stack_objects(p, monitoring)
    custom = [o for o in objs if o["apiVersion"] == "monitoring.coreos.com/v1"]
    assert {o["kind"] for o in custom} == ({"PrometheusRule", "PodMonitor"})
    for obj in custom:
        validate_cr(obj)
        assert installed_by(obj) == PROMETHEUS_STACK_ADDON  # created after the release that installs the CRDs
        # the release's Prometheus selects them by its release label (the chart's *SelectorNilUsesHelmValues)
        assert obj["metadata"]["labels"]["release"] == PROMETHEUS_STACK_ADDON


@pytest.mark.parametrize("stack", SELF_HOSTED_STACKS)
def test_dashboard_config_maps_and_the_secret_are_valid_core_objects(catalog: Catalog, stack: str) -> None:
    p, monitoring = planned(catalog, self_hosted(stack))
    assert p.kubernetes is not None
    version = f"{p.kubernetes.version}.0"
    maps = [o for o in prometheus_stack_objects(p, monitoring) if o["kind"] == "ConfigMap"]
    secret = alertmanager_secret(p, monitoring)
    assert secret is not None
    for obj in [*maps, {**secret, "stringData": dict.fromkeys(monitoring["secrets"].values(), "x")}]:
        kubernetes_validate.validate(obj, version, strict=True)
    # every dashboard `aicluster monitoring` writes, loaded by Grafana's sidecar (its label), JSON unchanged
    files = {k: v for k, v in render(p, catalog).items() if k.startswith("dashboards/")}
    assert {next(iter(m["data"])): next(iter(m["data"].values())) for m in maps} == {
        k.removeprefix("dashboards/"): v for k, v in files.items()
    }
    assert all(m["metadata"]["labels"][DASHBOARD_LABEL] == "1" for m in maps)


@pytest.mark.parametrize("stack", SELF_HOSTED_STACKS)
def test_release_values_are_keys_of_the_charts_values_yaml(catalog: Catalog, stack: str) -> None:
    p, monitoring = planned(catalog, self_hosted(stack))
    addon = prometheus_stack(p)
    assert addon is not None
    values = copy.deepcopy(helm_values(p, addon, monitoring))
    chart = yaml.safe_load((DATA / "values.yaml").read_text(encoding="utf-8"))
    routing = values["alertmanager"].pop("config")  # Alertmanager's own format: amtool checks it (below)
    assert set(routing) <= set(chart["alertmanager"]["config"]) | {"receivers", "route"}
    assert walk(values, chart) == []
    # one node_exporter per node: the add-on's, never the chart's too
    assert values["nodeExporter"] == {"enabled": False}
    assert any(a.id == "node-exporter" for a in p.kubernetes.addons) if p.kubernetes else False


# ------------------------------------------------------------------------------------------------------ the rules


@pytest.mark.parametrize("stack", SELF_HOSTED_STACKS)
def test_the_prometheus_rules_hold_the_rule_files_and_promtool_accepts_them(
    catalog: Catalog, stack: str, tmp_path: Path
) -> None:
    promtool = _tool("promtool", "prometheus")
    p, monitoring = planned(catalog, self_hosted(stack))
    rules = [o for o in prometheus_stack_objects(p, monitoring) if o["kind"] == "PrometheusRule"]
    extracted = {"groups": [g for r in rules for g in r["spec"]["groups"]]}
    # the very groups `aicluster monitoring` writes as rules/*.yml
    files = render(p, catalog)
    written = [yaml.safe_load(v)["groups"][0] for k, v in files.items() if k.startswith("rules/")]
    assert extracted["groups"] == written
    path = tmp_path / "extracted.yml"
    path.write_text(yaml.safe_dump(extracted, sort_keys=False, width=1 << 16))
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in extracted['groups'])} rules found" in proc.stdout


@pytest.mark.parametrize("stack", SELF_HOSTED_STACKS)
def test_the_pod_monitors_give_the_targets_the_jobs_the_rules_select(catalog: Catalog, stack: str) -> None:
    p, monitoring = planned(catalog, self_hosted(stack))
    objs = prometheus_stack_objects(p, monitoring)
    monitors = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "PodMonitor"}
    jobs = set()
    for spec in monitors.values():
        (endpoint,) = spec["podMetricsEndpoints"]
        relabel = endpoint["relabelings"]
        # the job is replaced after the operator's default (namespace/name), and node and pool come as on Slurm
        jobs.add(next(r["replacement"] for r in relabel if r["targetLabel"] == "job"))
        assert {r["targetLabel"] for r in relabel} == {"job", "node", "pool"}
        assert spec["attachMetadata"] == {"node": True}
    selected = {
        j for g in monitoring["rule_groups"] for r in g["rules"] for j in re.findall(r'job="([^"]+)"', r["expr"])
    }
    gpu_operator = p.kubernetes is not None and any(a.id == "gpu-operator" for a in p.kubernetes.addons)
    # GKE runs no GPU Operator, so no dcgm-exporter of ours is there to scrape
    assert jobs == ({"node", "dcgm-exporter"} if gpu_operator else {"node"})
    assert selected - {"dcgm-exporter"} <= jobs
    if gpu_operator:  # the GPU's workload labels (pod, namespace, container) win over the exporter pod's
        assert monitors["aicluster-dcgm-exporter"]["podMetricsEndpoints"][0]["honorLabels"] is True
    node = monitors["aicluster-node"]
    assert node["podMetricsEndpoints"][0]["portNumber"] == p.monitoring.node_exporter_port
    assert node["selector"]["matchLabels"]["app.kubernetes.io/instance"] == "node-exporter"


# ---------------------------------------------------------------------------------------------------- alerting


def merged(chart: Any, values: Any) -> Any:
    """Helm's merge of a release's values into the chart's: maps key by key, anything else replaced."""
    if isinstance(chart, dict) and isinstance(values, dict):
        out = dict(chart)
        for key, value in values.items():
            out[key] = merged(chart.get(key), value)
        return out
    return values


@pytest.mark.parametrize("stack", SELF_HOSTED_STACKS)
def test_the_alertmanager_routes_monitoring_alerts_after_helms_merge(
    catalog: Catalog, stack: str, tmp_path: Path
) -> None:
    amtool = _tool("amtool", "prometheus-alertmanager")
    p, monitoring = planned(catalog, self_hosted(stack))
    addon = prometheus_stack(p)
    assert addon is not None
    values = helm_values(p, addon, monitoring)
    chart = yaml.safe_load((DATA / "values.yaml").read_text(encoding="utf-8"))
    config = merged(chart["alertmanager"]["config"], values["alertmanager"]["config"])
    (tmp_path / "alertmanager.yml").write_text(yaml.safe_dump(config))

    def run(*args: str) -> str:
        proc = subprocess.run([amtool, *args], cwd=tmp_path, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout.strip()

    assert "SUCCESS" in run("check-config", "alertmanager.yml")

    def routed(*labels: str) -> str:
        return run("config", "routes", "test", "--config.file=alertmanager.yml", *labels)

    assert routed("alertname=InfinibandPortDown", "severity=warning") == "chat"
    assert routed("alertname=SomethingElse", "severity=info") == "mail"  # the chart's null receiver is gone
    # the secrets are files of the receivers' Secret, which the operator mounts into the Alertmanager pods
    chat = next(r for r in config["receivers"] if r["name"] == "chat")
    assert chat["slack_configs"][0]["api_url_file"] == f"{ALERTMANAGER_SECRETS_DIR}/slackWebhook"
    assert values["alertmanager"]["alertmanagerSpec"] == {"secrets": [ALERTMANAGER_SECRET]}
    # and `aicluster monitoring` writes the same routing, saying where it runs and where its secrets come from
    text = render(p, catalog)["alertmanager.yml"]
    assert yaml.safe_load(text) == monitoring["alertmanager"]
    assert "the kube-prometheus-stack release's Alertmanager" in text
    assert f"the Kubernetes Secret\n# {ALERTMANAGER_SECRET}, which `pulumi up` writes" in text


def test_without_alerts_the_chart_keeps_its_default_routing_and_no_secret(catalog: Catalog) -> None:
    p, monitoring = planned(catalog, self_hosted("gke-a4x", alerts=False))
    addon = prometheus_stack(p)
    assert addon is not None
    assert "alertmanager" not in helm_values(p, addon, monitoring)
    assert alertmanager_secret(p, monitoring) is None


# ------------------------------------------------------------------------------------------- secrets, end to end


def _config(data: dict[str, Any], **secrets: str) -> dict[str, str]:
    return {"aicluster:cluster": json.dumps(data), **secrets}


def test_the_receivers_secrets_reach_the_kubernetes_secret_as_secrets_and_nowhere_in_clear() -> None:
    data = self_hosted("gke-a4x")
    keys = [r[k] for r in SELF_HOSTED["receivers"] for k in r if k.endswith("_secret")]  # type: ignore[attr-defined]
    config = _config(data, **{key: f"{WEBHOOK}-{i}" for i, key in enumerate(keys)})
    capture = run_program(ROOT, "aicluster", "t", config, frozenset(keys))
    (secret,) = [r for r in capture.resources if r.type == "kubernetes:core/v1:Secret"]
    assert secret.inputs["metadata"]["name"] == ALERTMANAGER_SECRET
    assert secret.inputs["stringData"] is SECRET_VALUE or all(
        v is SECRET_VALUE for v in secret.inputs["stringData"].values()
    )
    assert WEBHOOK not in repr([r.inputs for r in capture.resources])
    kinds = {r.type.rpartition(":")[2] for r in capture.resources if "monitoring.coreos.com" in r.type}
    assert kinds == {"PrometheusRule", "PodMonitor"}
    release = next(
        r
        for r in capture.resources
        if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs.get("name") == "kube-prometheus-stack"
    )
    assert release.inputs["values"]["alertmanager"]["alertmanagerSpec"]["secrets"] == [ALERTMANAGER_SECRET]


def test_a_receiver_secret_in_clear_text_is_refused_without_being_shown() -> None:
    with pytest.raises(ProgramError) as err:
        run_program(ROOT, "aicluster", "t", _config(self_hosted("gke-a4x"), **{SLACK_KEY: WEBHOOK}), frozenset())
    message = str(err.value)
    assert f"the alert receivers' secret {SLACK_KEY} is in clear text" in message
    assert f"pulumi config set --secret {SLACK_KEY}" in message
    assert WEBHOOK not in message


def test_a_preview_without_the_receivers_secrets_still_runs_and_up_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    capture = run_program(ROOT, "aicluster", "t", _config(self_hosted("gke-a4x")), frozenset())
    (secret,) = [r for r in capture.resources if r.type == "kubernetes:core/v1:Secret"]
    assert secret.inputs["metadata"]["name"] == ALERTMANAGER_SECRET
    monkeypatch.setattr("pulumi.runtime.is_dry_run", lambda: False)
    with pytest.raises(ProgramError) as err:
        run_program(ROOT, "aicluster", "t", _config(self_hosted("gke-a4x")), frozenset())
    assert re.search(
        r"the alert receivers' secret aicluster:\w+ is not set; set it with `pulumi config set", str(err.value)
    )
