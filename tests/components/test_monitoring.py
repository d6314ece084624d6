"""`monitoring.prometheus: managed` as Pulumi resources, under the SDK mocks: the AMP workspace with the nodes' right
to remote-write (Slurm) or an AMP scraper with its EKS access entry (EKS), GKE's managed collection, and an Azure
Monitor workspace linked to AKS's metrics add-on through a data collection rule. Self-hosted stacks make none."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.monitoring import groups, render
from aicluster.preview.engine import UNKNOWN
from components.aws.monitoring import remote_write_policy
from components.azure.monitoring import iso_duration
from tests.components.conftest import Built

Build = Callable[[dict[str, Any]], Built]
ROOT = Path(__file__).resolve().parents[2]
MANAGED = {"prometheus": "managed"}

AMP_WORKSPACE = "aws:amp/workspace:Workspace"
AMP_SCRAPER = "aws:amp/scraper:Scraper"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ROLE = "aws:iam/role:Role"
EKS = "aws:eks/cluster:Cluster"
GKE = "gcp:container/cluster:Cluster"
AKS = "azure-native:containerservice:ManagedCluster"
AMW = "azure-native:monitor:AzureMonitorWorkspace"
DCE = "azure-native:monitor:DataCollectionEndpoint"
DCR = "azure-native:monitor:DataCollectionRule"
DCRA = "azure-native:monitor:DataCollectionRuleAssociation"
MANAGED_TYPES = (AMP_WORKSPACE, AMP_SCRAPER, AMW, DCE, DCR, DCRA)
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
K8S_PROVIDER = "pulumi:providers:kubernetes"


def stack(name: str, **changes: Any) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text(encoding="utf-8"))
    cluster: dict[str, Any] = copy.deepcopy(doc["config"]["aicluster:cluster"])
    cluster.update(changes)
    return cluster


@pytest.mark.parametrize("name", ["p5-small", "eks-p5", "gke-a3mega", "aks-nd-h100"])
def test_self_hosted_stacks_make_no_managed_prometheus(build: Build, name: str) -> None:
    b = build(stack(name, monitoring={"prometheus": "self-hosted"}))
    assert [r.type for r in b.capture.resources if r.type in MANAGED_TYPES] == []
    for cluster in b.of_type(GKE):
        assert cluster.inputs.get("monitoringConfig") is None
    assert [r.name for r in b.of_type(CLUSTER_ROLE) if r.name.endswith("aps-collector-role")] == []
    assert [r.name for r in b.of_type(CONFIG_MAP) if r.name.endswith("ama-metrics-prometheus-config")] == []
    for cluster in b.of_type(AKS):
        assert cluster.inputs.get("azureMonitorProfile") is None


def test_slurm_on_aws_gets_a_workspace_its_nodes_may_remote_write_to(build: Build) -> None:
    b = build(stack("p5-small", monitoring=MANAGED))
    workspace = b.one(AMP_WORKSPACE)
    assert workspace.inputs["alias"] == b.plan.name
    assert workspace.inputs["region"] == b.plan.controller.region  # type: ignore[union-attr]
    assert workspace.inputs["tags"]["aicluster:cluster"] == b.plan.name  # the cluster tags reach it
    policy = b.one(ROLE_POLICY, "-prometheus-write")
    node_role = b.one(ROLE, "-nodes-role")
    assert b.by_urn(policy.parent or "").name == node_role.name.removesuffix("-role")  # the nodes' identity owns it
    assert policy.inputs["policy"] == UNKNOWN  # the workspace's ARN, known after `up`
    assert workspace.urn in policy.property_dependencies["policy"]
    statement = json.loads(remote_write_policy("arn:aws:aps:us-east-1:1:workspace/ws-1", "aps:RemoteWrite"))
    assert statement["Statement"] == [
        {"Effect": "Allow", "Action": "aps:RemoteWrite", "Resource": "arn:aws:aps:us-east-1:1:workspace/ws-1"}
    ]
    assert b.of_type(AMP_SCRAPER) == []  # Slurm's Prometheus writes itself: no scraper


def test_eks_gets_an_amp_scraper_on_its_subnets_and_rbac_for_its_user(build: Build) -> None:
    b = build(stack("eks-p5", monitoring=MANAGED))
    b.one(AMP_WORKSPACE)
    scraper = b.one(AMP_SCRAPER)
    eks = scraper.inputs["source"]["eks"]
    assert len(eks["subnetIds"]) >= 2  # the control plane's subnets, in two zones
    assert eks["securityGroupIds"]
    config = yaml.safe_load(scraper.inputs["scrapeConfiguration"])
    assert [j["job_name"] for j in config["scrape_configs"]] == ["node", "dcgm-exporter"]
    assert config["global"] == {"scrape_interval": "30s"}  # AMP's floor: the plan's 15 s would be refused
    # AMP creates the scraper's access entry itself on a cluster in API authentication mode: a second one for the
    # same principal would fail the deploy
    assert b.of_type(ACCESS_ENTRY) == []
    # the user is bound to the collector's ClusterRole in the cluster, through the add-ons' Kubernetes provider
    role, binding = b.one(CLUSTER_ROLE, "-aps-collector-role"), b.one(ROLE_BINDING, "-aps-collector-user-role-binding")
    assert binding.inputs["subjects"] == [
        {"kind": "User", "name": "aps-collector-user", "apiGroup": "rbac.authorization.k8s.io"}
    ]
    assert binding.inputs["roleRef"]["name"] == role.inputs["metadata"]["name"] == "aps-collector-role"
    assert {"nonResourceURLs": ["/metrics"], "verbs": ["get"]} in role.inputs["rules"]
    assert role.provider is not None
    assert role.provider.startswith(b.one(K8S_PROVIDER).urn)
    assert [r.name for r in b.of_type(ROLE_POLICY) if r.name.endswith("-prometheus-write")] == []  # no node writes


def test_gke_switches_on_managed_collection(build: Build) -> None:
    b = build(stack("gke-a3mega", monitoring=MANAGED))
    cluster = b.one(GKE)
    assert cluster.inputs["monitoringConfig"]["managedPrometheus"]["enabled"] is True
    # GKE's own dcgm-exporter and ClusterPodMonitoring (no GPU Operator on GKE): the DCGM package
    assert cluster.inputs["monitoringConfig"]["enableComponents"] == ["SYSTEM_COMPONENTS", "DCGM"]
    assert [r.type for r in b.capture.resources if r.type in MANAGED_TYPES] == []  # Monarch: nothing to create


def test_aks_metrics_addon_is_linked_to_the_workspace_by_a_rule_association(build: Build) -> None:
    b = build(stack("aks-nd-h100", monitoring=MANAGED))
    cluster = b.one(AKS)
    assert cluster.inputs["azureMonitorProfile"] == {"metrics": {"enabled": True}}
    workspace, endpoint, rule = b.one(AMW), b.one(DCE), b.one(DCR)
    assert workspace.inputs["location"] == b.plan.kubernetes.region  # type: ignore[union-attr]
    assert rule.inputs["dataSources"]["prometheusForwarder"][0]["streams"] == ["Microsoft-PrometheusMetrics"]
    destination = rule.inputs["destinations"]["monitoringAccounts"][0]
    assert rule.inputs["dataFlows"] == [
        {"streams": ["Microsoft-PrometheusMetrics"], "destinations": [destination["name"]]}
    ]
    assert workspace.urn in rule.property_dependencies["destinations"]
    assert endpoint.urn in rule.property_dependencies["dataCollectionEndpointId"]
    link = b.one(DCRA)
    assert rule.urn in link.property_dependencies["dataCollectionRuleId"]
    assert cluster.urn in link.property_dependencies["resourceUri"]
    # the add-on's custom scrape job for the GPU Operator's dcgm-exporter
    config = b.one(CONFIG_MAP, "-ama-metrics-prometheus-config")
    assert config.inputs["metadata"]["namespace"] == "kube-system"
    jobs = yaml.safe_load(config.inputs["data"]["prometheus-config"])["scrape_configs"]
    assert [j["job_name"] for j in jobs] == ["dcgm-exporter"]


AMP_RULES = "aws:amp/ruleGroupNamespace:RuleGroupNamespace"
AZURE_RULES = "azure-native:alertsmanagement:PrometheusRuleGroup"
K8S_RULES = "kubernetes:monitoring.googleapis.com/v1:ClusterRules"


def generated(b: Built, catalog: Catalog) -> list[dict[str, Any]]:
    """The rule groups `aicluster monitoring` writes for the stack, read back from its rules/*.yml files."""
    files = render(b.plan, catalog)
    return [yaml.safe_load(files[f"rules/{g.file}.yml"])["groups"][0] for g in groups(b.plan, catalog)]


@pytest.mark.parametrize(
    ("name", "monitoring"),
    [
        pytest.param("p5-small", MANAGED, id="slurm"),
        pytest.param("p5-small", {**MANAGED, "slurm_exporter": "binary"}, id="slurm-with-its-exporter"),
        pytest.param("eks-p5", MANAGED, id="eks"),
    ],
)
def test_amp_workspace_gets_the_rule_groups_aicluster_monitoring_writes(
    build: Build, catalog: Catalog, name: str, monitoring: dict[str, str]
) -> None:
    b = build(stack(name, monitoring=monitoring))
    workspace, namespace = b.one(AMP_WORKSPACE), b.one(AMP_RULES)
    assert workspace.urn in namespace.property_dependencies["workspaceId"]
    assert namespace.inputs["region"] == workspace.inputs["region"]
    data = yaml.safe_load(namespace.inputs["data"])
    assert data["groups"] == generated(b, catalog)
    names = [g["name"] for g in data["groups"]]
    # Slurm's rules only where a Slurm controller runs the exporter (monitoring.slurm_exporter)
    assert ("aicluster-slurm" in names) == ("slurm_exporter" in monitoring)


def test_aks_workspace_gets_one_azure_rule_group_per_generated_group(build: Build, catalog: Catalog) -> None:
    b = build(stack("aks-nd-h100", monitoring=MANAGED))
    workspace = b.one(AMW)
    made = {r.inputs["ruleGroupName"]: r for r in b.of_type(AZURE_RULES)}  # registered in no fixed order
    want = {f"{b.plan.name}-{g['name']}": g for g in generated(b, catalog)}
    assert sorted(made) == sorted(want)
    severity = {"critical": 0, "warning": 2, "info": 3}  # Azure's 0 Critical .. 4 Verbose
    for key, group in want.items():
        resource = made[key]
        assert workspace.urn in resource.property_dependencies["scopes"]
        assert resource.inputs["location"] == workspace.inputs["location"]
        rules = resource.inputs["rules"]
        assert [r["alert"] for r in rules] == [r["alert"] for r in group["rules"]]
        for ours, theirs in zip(group["rules"], rules, strict=True):
            assert theirs["expression"] == ours["expr"]
            assert theirs["labels"] == ours["labels"]
            assert theirs["annotations"] == ours["annotations"]
            assert theirs["severity"] == severity[ours["labels"]["severity"]]
            assert theirs.get("for") == (iso_duration(ours["for"]) if "for" in ours else None)


@pytest.mark.parametrize(
    ("duration", "iso"),
    [
        pytest.param("10m", "PT10M", id="minutes"),
        pytest.param("1h", "PT1H", id="hours"),
        pytest.param("90s", "PT90S", id="seconds"),
    ],
)
def test_prometheus_durations_become_iso_8601(duration: str, iso: str) -> None:
    assert iso_duration(duration) == iso


def test_gke_managed_collection_gets_cluster_rules_with_the_generated_groups(build: Build, catalog: Catalog) -> None:
    b = build(stack("gke-a3mega", monitoring=MANAGED))
    rules = b.one(K8S_RULES)
    assert rules.inputs["apiVersion"] == "monitoring.googleapis.com/v1"
    assert "namespace" not in rules.inputs["metadata"]  # cluster-scoped: every namespace's metrics
    got = rules.inputs["spec"]["groups"]
    assert [{"name": g["name"], "rules": g["rules"]} for g in got] == generated(b, catalog)
    assert {g["interval"] for g in got} == {"1m"}


@pytest.mark.parametrize("name", ["p5-small", "eks-p5", "gke-a3mega", "aks-nd-h100"])
def test_self_hosted_stacks_load_no_rules_into_a_service(build: Build, name: str) -> None:
    b = build(stack(name, monitoring={"prometheus": "self-hosted"}))
    assert [r.type for r in b.capture.resources if r.type in (AMP_RULES, AZURE_RULES, K8S_RULES)] == []


AMP_ALERTS = "aws:amp/alertManagerDefinition:AlertManagerDefinition"
SNS_ALERTS = {
    "receivers": [
        {"kind": "sns", "name": "pager", "topic_arn": "arn:aws:sns:us-east-1:123456789012:gpu-pager"},
        {"kind": "sns", "name": "chat", "topic_arn": "arn:aws:sns:us-east-1:123456789012:gpu-chat"},
    ],
    "routes": [{"receiver": "pager", "severities": ["critical"]}],
    "receiver": "chat",
}


@pytest.mark.parametrize("name", ["p5-small", "eks-p5"])
def test_amp_routes_the_stacks_alerts_to_its_sns_topics(build: Build, name: str) -> None:
    b = build(stack(name, monitoring={**MANAGED, "alerts": SNS_ALERTS}))
    workspace, definition = b.one(AMP_WORKSPACE), b.one(AMP_ALERTS)
    assert definition.parent == b.by_urn(workspace.parent or "").urn  # the workspace's component owns both
    assert workspace.urn in definition.property_dependencies["workspaceId"]
    assert definition.inputs["region"] == workspace.inputs["region"]
    config = yaml.safe_load(yaml.safe_load(definition.inputs["definition"])["alertmanager_config"])
    assert config["route"]["receiver"] == "chat"
    assert config["route"]["routes"] == [{"receiver": "pager", "matchers": ['severity=~"critical"']}]
    pager = next(r for r in config["receivers"] if r["name"] == "pager")
    # AMP's rules for an SNS receiver: a sigv4 region, no api_url, no http_config
    assert pager["sns_configs"] == [
        {
            "topic_arn": "arn:aws:sns:us-east-1:123456789012:gpu-pager",
            "sigv4": {"region": "us-east-1"},
            "send_resolved": True,
        }
    ]


def test_a_managed_workspace_without_alerts_has_no_alert_manager(build: Build) -> None:
    b = build(stack("p5-small", monitoring=MANAGED))
    b.one(AMP_WORKSPACE)
    assert b.of_type(AMP_ALERTS) == []
