"""KubernetesAddons under the capturing mocks: a Helm v3 release per add-on with the rendered values, the
Kueue / NicClusterPolicy objects after the release that installs their CRDs, and the kubeconfig kept secret."""

from __future__ import annotations

import functools

import pulumi
import pytest

from aicluster.catalog import load_catalog
from aicluster.plan import ClusterPlan
from aicluster.preview import plan_stack
from aicluster.preview.engine import SECRET_VALUE, Capture, Resource, run
from aicluster.render.monitoring import NODE_JOB, kubernetes_jobs
from aicluster.schedulers.kubernetes.render import helm_values, kubernetes_objects
from aicluster.stackfile import find_project, read_stack
from components.kubernetes.addons import KubernetesAddons
from tests.conftest import ROOT

KUBECONFIG = "apiVersion: v1\nkind: Config\nusers: [{name: admin, user: {token: not-a-real-token}}]\n"
RELEASE = "kubernetes:helm.sh/v3:Release"
CATALOG = load_catalog()
CR_TYPES = {"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "NicClusterPolicy"}


@functools.cache
def stack_plan(stack: str) -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), stack))


def deploy(stack: str) -> tuple[ClusterPlan, Capture]:
    plan = stack_plan(stack)

    def program() -> None:
        KubernetesAddons("aks", {"plan": plan, "kubeconfig": pulumi.Output.secret(KUBECONFIG)})

    return plan, run(program, "aicluster", "test")


@pytest.fixture(scope="module")
def aks() -> tuple[ClusterPlan, Capture]:
    return deploy("aks-nd-h100")


def of_type(capture: Capture, type_: str) -> list[Resource]:
    return [r for r in capture.resources if r.type == type_]


def test_one_helm_release_per_addon_with_the_rendered_values(aks: tuple[ClusterPlan, Capture]) -> None:
    plan, capture = aks
    assert plan.kubernetes is not None
    releases = {r.inputs["name"]: r for r in of_type(capture, RELEASE)}
    helm = [a for a in plan.kubernetes.addons if a.kind == "helm"]
    assert set(releases) == {a.id for a in helm}
    for addon in helm:
        inputs = releases[addon.id].inputs
        assert inputs["version"] == addon.version
        assert inputs["namespace"] == addon.namespace
        assert inputs["createNamespace"] is True
        assert inputs["values"] == helm_values(plan, addon)
        if addon.repository.startswith("oci://"):
            assert inputs["chart"] == f"{addon.repository}/{addon.chart}"
        else:
            assert inputs["chart"] == addon.chart
            assert inputs["repositoryOpts"] == {"repo": addon.repository}
    assert releases["gpu-operator"].inputs["values"]["driver"]["rdma"] == {"enabled": True}


def test_every_object_is_created_on_the_clusters_provider(aks: tuple[ClusterPlan, Capture]) -> None:
    plan, capture = aks
    (provider,) = of_type(capture, "pulumi:providers:kubernetes")
    objs = kubernetes_objects(plan)
    crs = [r for r in capture.resources if r.inputs.get("kind") in CR_TYPES]
    assert sorted((r.inputs["kind"], r.inputs["metadata"]["name"]) for r in crs) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in objs if o["kind"] in CR_TYPES
    )
    (ns,) = of_type(capture, "kubernetes:core/v1:Namespace")
    assert plan.kubernetes is not None
    assert ns.inputs["metadata"]["name"] == plan.kubernetes.namespace
    for r in [*crs, ns, *of_type(capture, RELEASE)]:
        assert r.provider is not None
        assert r.provider.startswith(provider.urn)
    assert not [r for r in capture.resources if r.inputs.get("kind") == "JobSet"]  # written out, never deployed


def test_custom_resources_wait_for_the_release_that_installs_their_crd(aks: tuple[ClusterPlan, Capture]) -> None:
    _, capture = aks
    release_of = {r.inputs["name"]: r.urn for r in of_type(capture, RELEASE)}
    for r in capture.resources:
        kind = r.inputs.get("kind")
        if kind in ("Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"):
            assert release_of["kueue"] in r.dependencies, kind
        elif kind == "NicClusterPolicy":
            assert release_of["network-operator"] in r.dependencies
            assert r.inputs["apiVersion"] == "mellanox.com/v1alpha1"


def test_the_kubeconfig_stays_secret(aks: tuple[ClusterPlan, Capture]) -> None:
    _, capture = aks
    (provider,) = of_type(capture, "pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] is SECRET_VALUE
    assert "not-a-real-token" not in repr([r.inputs for r in capture.resources])


def test_gke_networks_take_the_clouds_vpc_names() -> None:
    plan = stack_plan("gke-a3mega")
    links = "https://www.googleapis.com/compute/v1/projects/p/global/networks/"

    def program() -> None:
        KubernetesAddons(
            "gke",
            {
                "plan": plan,
                "kubeconfig": pulumi.Output.secret(KUBECONFIG),
                "gcp_vpc_ids": {f"gpu-{i}": f"{links}gke-gpu-{i}-abc123" for i in range(8)},
                "gcp_subnet_ids": {("gpu", i): f"{links}subnetworks/gke-gpu-{i}-def456" for i in range(8)},
            },
        )

    capture = run(program, "aicluster", "test")
    params = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]
        for r in capture.resources
        if r.inputs.get("kind") == "GKENetworkParamSet"
    }
    assert params["vpc1"] == {"vpc": "gke-gpu-0-abc123", "vpcSubnet": "gke-gpu-0-def456", "deviceMode": "NetDevice"}
    assert len(params) == 8
    releases = {r.inputs["name"] for r in of_type(capture, RELEASE)}
    assert releases == {"kueue", "jobset", "node-exporter"}  # GKE manages the GPU driver; no GPU Operator


def test_gke_manifest_addons_are_typed_daemonsets_on_the_clusters_provider() -> None:
    plan = stack_plan("gke-a3mega")

    def program() -> None:
        KubernetesAddons("gke", {"plan": plan, "kubeconfig": pulumi.Output.secret(KUBECONFIG)})

    capture = run(program, "aicluster", "test")
    (provider,) = of_type(capture, "pulumi:providers:kubernetes")
    daemonsets = {r.inputs["metadata"]["name"]: r for r in of_type(capture, "kubernetes:apps/v1:DaemonSet")}
    expected = {o["metadata"]["name"]: o for o in kubernetes_objects(plan) if o["kind"] == "DaemonSet"}
    assert set(daemonsets) == set(expected) == {"nccl-tcpxo-installer", "device-injector", "node-problem-detector-8gpu"}
    for name, r in daemonsets.items():
        assert r.provider is not None
        assert r.provider.startswith(provider.urn)
        assert r.inputs["metadata"]["namespace"] == "kube-system"
        assert r.inputs["spec"] == expected[name]["spec"]
    # a manifest add-on is no Helm release
    assert {r.inputs["name"] for r in of_type(capture, RELEASE)} == {"kueue", "jobset", "node-exporter"}


def test_rack_scale_stack_gets_the_dra_release_its_prerequisites_and_an_nvlink_topology() -> None:
    plan, capture = deploy("gke-a4x")
    releases = {r.inputs["name"]: r for r in of_type(capture, RELEASE)}
    assert set(releases) == {"dra-driver-gpu", "node-exporter", "kube-prometheus-stack", "kueue", "jobset"}
    dra = releases["dra-driver-gpu"]
    assert plan.kubernetes is not None
    (addon,) = [a for a in plan.kubernetes.addons if a.id == "dra-driver-gpu"]
    assert dra.inputs["values"] == helm_values(plan, addon)
    assert dra.inputs["values"]["resources"]["computeDomains"] == {"enabled": True}
    (quota,) = of_type(capture, "kubernetes:core/v1:ResourceQuota")
    assert quota.urn in dra.dependencies
    assert quota.inputs["spec"]["scopeSelector"]["matchExpressions"][0]["scopeName"] == "PriorityClass"
    (topology,) = [r for r in capture.resources if r.inputs.get("kind") == "Topology"]
    assert "cloud.google.com/gce-topology-subblock" in [lv["nodeLabel"] for lv in topology.inputs["spec"]["levels"]]
    assert releases["kueue"].urn in topology.dependencies
    # the Arm gIB installer is a typed DaemonSet; the other releases keep creating their namespace
    daemonsets = {r.inputs["metadata"]["name"] for r in of_type(capture, "kubernetes:apps/v1:DaemonSet")}
    # A4X: 4 GPUs a node, so Node Problem Detector's count check expects 4
    assert daemonsets == {"nccl-rdma-installer-arm64", "node-problem-detector-4gpu"}
    assert releases["kueue"].inputs["createNamespace"] is True


def test_node_problem_detector_objects_are_typed_core_and_rbac_objects_on_the_clusters_provider(
    aks: tuple[ClusterPlan, Capture],
) -> None:
    plan, capture = aks
    (provider,) = of_type(capture, "pulumi:providers:kubernetes")
    expected = {o["kind"]: o for o in kubernetes_objects(plan) if "node-problem-detector" in o["metadata"]["name"]}
    assert set(expected) == {"ServiceAccount", "ClusterRoleBinding", "ConfigMap", "DaemonSet"}
    # the GPU quarantine controller has its own account and binding (the next test)
    (account,) = [r for r in of_type(capture, "kubernetes:core/v1:ServiceAccount") if "node-problem" in r.name]
    (binding,) = [
        r
        for r in of_type(capture, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
        if "node-problem" in r.name
    ]
    # the stack's managed Prometheus adds the metrics add-on's ConfigMap (test_monitoring): NPD's is the other one
    (config,) = [r for r in of_type(capture, "kubernetes:core/v1:ConfigMap") if "node-problem-detector" in r.name]
    (npd,) = [r for r in of_type(capture, "kubernetes:apps/v1:DaemonSet") if r.name.endswith("-8gpu")]
    assert binding.inputs["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "system:node-problem-detector",
    }
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": account.inputs["metadata"]["name"], "namespace": "kube-system"}
    ]
    assert config.inputs["data"] == expected["ConfigMap"]["data"]
    assert npd.inputs["spec"] == expected["DaemonSet"]["spec"]
    for r in (account, binding, config, npd):
        assert r.provider is not None
        assert r.provider.startswith(provider.urn)
    # no Helm release: upstream publishes manifests
    assert "node-problem-detector" not in {r.inputs["name"] for r in of_type(capture, RELEASE)}


def test_gpu_quarantine_objects_are_typed_objects_on_the_clusters_provider(aks: tuple[ClusterPlan, Capture]) -> None:
    """The controller that acts on NPD's conditions: its ServiceAccount, roles, bindings, ConfigMap and Deployment
    are typed resources with the rendered content, the Role and its binding in `default` (node events)."""
    plan, capture = aks
    (provider,) = of_type(capture, "pulumi:providers:kubernetes")
    expected = {o["kind"]: o for o in kubernetes_objects(plan) if o["metadata"]["name"] == "aicluster-gpu-quarantine"}
    assert set(expected) == {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment"
    }  # fmt: skip
    rbac = "kubernetes:rbac.authorization.k8s.io/v1"
    types = {
        "ServiceAccount": "kubernetes:core/v1:ServiceAccount",
        "ClusterRole": f"{rbac}:ClusterRole",
        "ClusterRoleBinding": f"{rbac}:ClusterRoleBinding",
        "Role": f"{rbac}:Role",
        "RoleBinding": f"{rbac}:RoleBinding",
        "ConfigMap": "kubernetes:core/v1:ConfigMap",
        "Deployment": "kubernetes:apps/v1:Deployment",
    }
    for kind, type_ in types.items():
        (res,) = [r for r in of_type(capture, type_) if r.inputs["metadata"]["name"] == "aicluster-gpu-quarantine"]
        assert res.inputs["metadata"] == expected[kind]["metadata"]
        assert res.provider is not None
        assert res.provider.startswith(provider.urn)
        for key, inp in (("rules", "rules"), ("roleRef", "roleRef"), ("subjects", "subjects"), ("data", "data")):
            if key in expected[kind]:
                assert res.inputs[inp] == expected[kind][key], (kind, key)
        if kind == "Deployment":
            assert res.inputs["spec"] == expected[kind]["spec"]
        if kind in ("Role", "RoleBinding"):
            assert res.inputs["metadata"]["namespace"] == "default"


def test_node_exporter_release_listens_where_the_node_job_scrapes_and_tolerates_every_node_taint() -> None:
    """EKS with the AMP scraper (which runs the `node` job): node_exporter is a pinned Helm release on the host network
    at the catalog's port, the port the job's relabelling puts after each node's InternalIP."""
    plan, capture = deploy("eks-p5")
    assert plan.kubernetes is not None
    assert plan.monitoring.collector == "amp-scraper"
    addon = CATALOG.addons["node-exporter"]
    (release,) = [r for r in of_type(capture, RELEASE) if r.inputs["name"] == "node-exporter"]
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]) == (
        "prometheus-node-exporter",
        "4.56.1",
        {"repo": "https://prometheus-community.github.io/helm-charts"},
    )
    assert (addon.chart, addon.version, addon.namespace) == ("prometheus-node-exporter", "4.56.1", inputs["namespace"])
    values = inputs["values"]
    port = CATALOG.monitoring.exporters.node_exporter_port if CATALOG.monitoring is not None else None
    assert values["hostNetwork"] is True
    assert values["service"] == {"port": port, "targetPort": port}
    (node_job,) = [j for j in kubernetes_jobs(plan.monitoring) if j["job_name"] == NODE_JOB]
    assert node_job["relabel_configs"][0]["replacement"] == f"$1:{port}"
    assert "--collector.infiniband" in values["extraArgs"]
    tolerated = {(t.get("key"), t["effect"]) for t in values["tolerations"]}
    gpu_taints = {(t.key, t.effect) for g in plan.kubernetes.node_groups for t in g.all_taints()}
    assert ("nvidia.com/gpu", "NoSchedule") in gpu_taints
    assert gpu_taints <= tolerated
    assert {"effect": "NoSchedule", "operator": "Exists"} in values["tolerations"]  # the chart's default kept


def test_rack_scale_self_hosted_stack_runs_node_exporter_on_its_arm_nvlink_nodes() -> None:
    """gke-a4x (self-hosted: `aicluster monitoring` gives the in-cluster Prometheus the `node` job): the release
    tolerates the GPU taint and GKE's Arm taint on the rack-scale nodes."""
    plan, capture = deploy("gke-a4x")
    assert plan.kubernetes is not None
    assert plan.monitoring.prometheus == "self-hosted"
    (release,) = [r for r in of_type(capture, RELEASE) if r.inputs["name"] == "node-exporter"]
    tolerated = {(t.get("key"), t["effect"]) for t in release.inputs["values"]["tolerations"]}
    rack = [g for g in plan.kubernetes.node_groups if g.nvlink_domain is not None]
    assert rack
    for g in rack:
        assert {(t.key, t.effect) for t in g.all_taints()} <= tolerated
    assert ("kubernetes.io/arch", "NoSchedule") in tolerated


def test_no_node_exporter_where_the_managed_collector_brings_its_own() -> None:
    """AKS's metrics add-on brings its own node-exporter (its default `node` target)."""
    plan, capture = deploy("aks-nd-h100")
    assert plan.monitoring.collector == "aks-metrics-addon"
    assert [r for r in of_type(capture, RELEASE) if r.inputs["name"] == "node-exporter"] == []


def test_the_in_cluster_prometheus_objects_wait_for_its_release_and_run_on_the_cluster() -> None:
    """gke-a4x (self-hosted): the PrometheusRules, the node PodMonitor and the dashboards' ConfigMaps go in after the
    kube-prometheus-stack release (its CRDs, its namespace), through the cluster's provider."""
    from aicluster.monitoring import in_cluster

    plan = stack_plan("gke-a4x")
    monitoring = in_cluster(plan, CATALOG)
    assert monitoring is not None

    def program() -> None:
        KubernetesAddons(
            "a4x",
            {"plan": plan, "kubeconfig": pulumi.Output.secret(KUBECONFIG), "in_cluster_monitoring": monitoring},
        )

    capture = run(program, "aicluster", "test")
    (release,) = [r for r in of_type(capture, RELEASE) if r.inputs["name"] == "kube-prometheus-stack"]
    assert release.inputs["values"]["nodeExporter"] == {"enabled": False}
    created = [r for r in capture.resources if r.inputs.get("metadata", {}).get("namespace") == "monitoring"]
    kinds = sorted(r.type.rpartition(":")[2] for r in created)
    assert kinds == sorted(
        ["PodMonitor"]
        + ["PrometheusRule"] * len(monitoring["rule_groups"])
        + ["ConfigMap"] * len(monitoring["dashboards"])
    )
    provider = next(r.urn for r in capture.resources if r.type == "pulumi:providers:kubernetes")
    for r in created:
        assert release.urn in r.dependencies, r.name
        assert r.provider is not None, r.name
        assert r.provider.startswith(provider), r.name


def test_gke_managed_collection_scrapes_the_node_exporter_release_through_a_cluster_pod_monitoring() -> None:
    """GKE's managed collection scrapes only what a PodMonitoring selects: the node-exporter release is installed
    and a ClusterPodMonitoring named `node` (its targets' job) selects its pods, through the add-ons' provider."""
    plan, capture = deploy("gke-a3mega")
    assert plan.monitoring.collector == "gke-managed-collection"
    (release,) = [r for r in of_type(capture, RELEASE) if r.inputs["name"] == "node-exporter"]
    (mon,) = of_type(capture, "kubernetes:monitoring.googleapis.com/v1:ClusterPodMonitoring")
    assert mon.inputs["metadata"]["name"] == "node"
    assert mon.inputs["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] == release.inputs["name"]
    assert mon.inputs["spec"]["endpoints"][0]["port"] == release.inputs["values"]["service"]["port"]
    assert mon.provider == release.provider
