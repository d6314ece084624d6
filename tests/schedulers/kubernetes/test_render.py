"""Kubernetes objects and Helm values rendered from the plan of each Kubernetes example stack, validated against
the upstream schemas: core objects with kubernetes_validate, custom resources with their CRD's openAPIV3Schema,
Helm values against the chart's values.yaml (read from the shared k8s-schemas folder, never copied here)."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from aicluster.catalog import Catalog, load_catalog
from aicluster.plan import ClusterPlan
from aicluster.preview import plan_stack
from aicluster.render.nccl import acceptance_busbw
from aicluster.schedulers.kubernetes.plan import NPD_ADDON, QUARANTINE_ADDON
from aicluster.schedulers.kubernetes.render import (
    ACCEPTANCE_NAME,
    GKE_NETWORK_API,
    JOBSET_API,
    KUEUE_API,
    NIC_POLICY_API,
    acceptance_compute_domains,
    acceptance_jobset,
    acceptance_ssh_secret,
    busbw_gate,
    flavor_name,
    gke_networks,
    helm_values,
    installed_by,
    kubernetes_objects,
    manifest_objects,
    nccl_transport,
    queued_resources,
)
from aicluster.stackfile import find_project, read_stack
from tests.conftest import KUBERNETES_STACKS, ROOT
from tests.helpers import gcp_cluster, gcp_pool, plan_of

SCHEMAS = ROOT.parent.parent / "shared" / "k8s-schemas"
if not SCHEMAS.is_dir():
    SCHEMAS = Path("/work/shared/k8s-schemas")
needs_schemas = pytest.mark.skipif(not SCHEMAS.is_dir(), reason="the upstream k8s-schemas folder is not here")

CRDS = {
    ("kueue.x-k8s.io", "Topology"): "kueue/kueue.x-k8s.io_topologies.yaml",
    ("kueue.x-k8s.io", "ResourceFlavor"): "kueue/kueue.x-k8s.io_resourceflavors.yaml",
    ("kueue.x-k8s.io", "ClusterQueue"): "kueue/kueue.x-k8s.io_clusterqueues.yaml",
    ("kueue.x-k8s.io", "LocalQueue"): "kueue/kueue.x-k8s.io_localqueues.yaml",
    ("jobset.x-k8s.io", "JobSet"): "jobset/jobset.x-k8s.io_jobsets.yaml",
    ("mellanox.com", "NicClusterPolicy"): "network-operator/mellanox.com_nicclusterpolicies.yaml",
    ("resource.nvidia.com", "ComputeDomain"): "dra-driver-gpu/resource.nvidia.com_computedomains.yaml",
}
CHART_VALUES = {"gpu-operator": "gpu-operator/values.yaml", "network-operator": "network-operator/values.yaml"}
# The DRA driver's chart values.yaml is not in the shared schemas folder (only its CRD is): the keys aicluster sets, as
# deployments/helm/dra-driver-nvidia-gpu/values.yaml at v0.4.0 (6910a2be) defines them, nested as there (a list is a
# leaf, as in `walk`).
DRA_CHART_KEYS: dict[str, Any] = {
    "nvidiaDriverRoot": "/",
    "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}},
    "kubeletPlugin": {
        "tolerations": [],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
    },
}
# prometheus-node-exporter's chart values.yaml is not in the shared schemas folder either (and the chart has no
# values.schema.json): the keys aicluster sets, as charts/prometheus-node-exporter/values.yaml at chart 4.56.1
# (prometheus-community/helm-charts 8b8e639c) defines them.
NODE_EXPORTER_CHART_KEYS: dict[str, Any] = {
    "hostNetwork": True,
    "service": {"port": 9100, "targetPort": 9100},
    "extraArgs": [],
    "tolerations": [],
}

# GKE installs networking.gke.io itself and publishes no CRD; the fields its guides set, from
# https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx (and the A3 Ultra / A4 RDMA
# guide): GKENetworkParamSet spec {vpc, vpcSubnet, deviceMode: NetDevice | RDMA (| DPDK-VFIO)};
# Network spec {type: Device | L3, parametersRef {group: networking.gke.io, kind: GKENetworkParamSet, name}}.
GKE_FIELDS = {
    "GKENetworkParamSet": {"vpc": str, "vpcSubnet": str, "deviceMode": ("NetDevice", "RDMA", "DPDK-VFIO")},
    "Network": {"type": ("Device", "L3"), "parametersRef": dict},
}


@functools.cache
def stack_plan(stack: str) -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), stack))


@functools.cache
def crd_schema(group: str, kind: str, version: str) -> dict[str, Any]:
    doc = yaml.safe_load((SCHEMAS / CRDS[(group, kind)]).read_text(encoding="utf-8"))
    served = {v["name"]: v for v in doc["spec"]["versions"] if v.get("served")}
    assert version in served, f"{kind}: {version} is not served by the upstream CRD ({sorted(served)})"
    schema: dict[str, Any] = served[version]["schema"]["openAPIV3Schema"]
    return schema


def _strict(schema: Any) -> Any:
    """The CRD schema with unknown fields refused, as the API server prunes them (a silently dropped key is a bug
    here); objects that preserve unknown fields stay open."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if out.get("type") == "object" and "properties" in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def _int_or_string(schema: Any) -> Any:
    """jsonschema does not know x-kubernetes-int-or-string: spell it out."""
    if isinstance(schema, dict):
        out = {k: _int_or_string(v) for k, v in schema.items()}
        if out.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
            out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
        return out
    if isinstance(schema, list):
        return [_int_or_string(v) for v in schema]
    return schema


def validate_cr(obj: dict[str, Any]) -> None:
    group, _, version = obj["apiVersion"].rpartition("/")
    schema = _int_or_string(_strict(crd_schema(group, obj["kind"], version)))
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    props = {k: v for k, v in schema.get("properties", {}).items() if k not in ("apiVersion", "kind", "metadata")}
    jsonschema.validate(body, {**schema, "properties": props})


def kube_version(plan: ClusterPlan) -> str:
    assert plan.kubernetes is not None
    return f"{plan.kubernetes.version}.0"


def walk(values: Any, chart: Any, path: str = "") -> list[str]:
    """Paths in `values` that the chart's values.yaml does not define (lists are leaves)."""
    if not isinstance(values, dict):
        return []
    missing = []
    for key, value in values.items():
        where = f"{path}.{key}" if path else key
        if not isinstance(chart, dict) or key not in chart:
            missing.append(where)
        elif isinstance(value, dict) and value:
            missing += walk(value, chart[key], where)
    return missing


# ------------------------------------------------------------------------------------------------------- schemas


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_core_objects_validate_against_the_clusters_kubernetes_version(stack: str) -> None:
    plan = stack_plan(stack)
    core = [o for o in kubernetes_objects(plan) if o["apiVersion"] in ("v1", "apps/v1", "rbac.authorization.k8s.io/v1")]
    kinds = {"Namespace", "DaemonSet", "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding"}
    kinds |= {"Role", "RoleBinding", "Deployment"}  # the GPU quarantine controller's
    assert {o["kind"] for o in core} <= kinds
    assert "Namespace" in {o["kind"] for o in core}
    for obj in core:
        kubernetes_validate.validate(obj, kube_version(plan), strict=True)


@needs_schemas
@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_custom_resources_validate_against_their_crds(stack: str) -> None:
    plan = stack_plan(stack)
    checked = 0
    for obj in [*kubernetes_objects(plan), *acceptance_compute_domains(plan), acceptance_jobset(plan)]:
        if obj["apiVersion"].split("/")[0] in (
            "kueue.x-k8s.io",
            "jobset.x-k8s.io",
            "mellanox.com",
            "resource.nvidia.com",
        ):
            validate_cr(obj)
            checked += 1
    assert checked >= 5  # Topology, flavor, ClusterQueue, LocalQueue, JobSet at least


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_acceptance_ssh_secret_is_a_valid_secret(stack: str) -> None:
    plan = stack_plan(stack)
    secret = acceptance_ssh_secret(plan, "PRIVATE", "ssh-ed25519 AAAA test")
    kubernetes_validate.validate(secret, kube_version(plan), strict=True)
    assert secret["metadata"]["namespace"] == acceptance_jobset(plan)["metadata"]["namespace"]
    assert set(secret["stringData"]) == {"id_ed25519", "id_ed25519.pub", "authorized_keys"}


@needs_schemas
@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_acceptance_pod_template_is_a_valid_pod(stack: str) -> None:
    plan = stack_plan(stack)
    job = acceptance_jobset(plan)["spec"]["replicatedJobs"][0]["template"]
    kubernetes_validate.validate(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "nccl"}, "spec": job["spec"]},
        kube_version(plan),
        strict=True,
    )


@needs_schemas
@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_helm_values_keys_exist_in_the_chart(stack: str) -> None:
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    for addon in plan.kubernetes.addons:
        if addon.kind != "helm":
            continue  # manifests are rendered as objects (manifest_objects)
        values = helm_values(plan, addon)
        if addon.id in CHART_VALUES:
            chart = yaml.safe_load((SCHEMAS / CHART_VALUES[addon.id]).read_text(encoding="utf-8"))
            assert walk(values, chart) == [], f"{addon.id}: keys the chart does not define"
        if addon.id == "dra-driver-gpu":
            assert walk(values, DRA_CHART_KEYS) == [], f"{addon.id}: keys the chart does not define"
        if addon.id == "node-exporter":
            assert walk(values, NODE_EXPORTER_CHART_KEYS) == [], f"{addon.id}: keys the chart does not define"


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_gke_network_objects_have_the_documented_shape(stack: str) -> None:
    plan = stack_plan(stack)
    objs = [o for o in kubernetes_objects(plan) if o["apiVersion"] == GKE_NETWORK_API]
    assert plan.kubernetes is not None
    if plan.kubernetes.service != "gke":
        assert objs == []
        return
    params = {o["metadata"]["name"]: o for o in objs if o["kind"] == "GKENetworkParamSet"}
    networks = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Network"}
    assert params
    assert params.keys() == networks.keys()
    for obj in objs:
        fields = GKE_FIELDS[obj["kind"]]
        assert set(obj["spec"]) == set(fields), obj
        for key, allowed in fields.items():
            value = obj["spec"][key]
            assert value in allowed if isinstance(allowed, tuple) else isinstance(value, allowed), (key, value)
    for name, net in networks.items():
        assert net["spec"]["parametersRef"] == {
            "group": "networking.gke.io",
            "kind": "GKENetworkParamSet",
            "name": name,
        }


# ----------------------------------------------------------------------------------------------------- semantics


def test_gke_tcpxo_networks_name_the_gpu_vpcs_as_the_gcp_network_component_does() -> None:
    plan = stack_plan("gke-a3mega")
    net = next(n for n in plan.networks if n.provider == "gcp")
    gpu_vpcs = [v for v in net.vpcs if v.role == "gpu"]
    params = [o for o in kubernetes_objects(plan) if o["kind"] == "GKENetworkParamSet"]
    assert len(params) == len(gpu_vpcs) == 8  # A3 Mega: 8 GPU NICs, one VPC each
    for i, (obj, vpc) in enumerate(zip(params, gpu_vpcs, strict=True)):
        # components/gcp/network.py: GcpNetwork(f"{cluster}-{region}") creates f"{name}-{vpc.name}" and its subnet
        assert obj["metadata"]["name"] == f"vpc{i + 1}"
        assert obj["spec"] == {
            "vpc": f"{plan.name}-{net.region}-{vpc.name}",
            "vpcSubnet": f"{plan.name}-{net.region}-{vpc.name}",
            "deviceMode": "NetDevice",
        }


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_each_flavor_selects_and_tolerates_its_node_group(stack: str) -> None:
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    flavors = {o["metadata"]["name"]: o for o in kubernetes_objects(plan) if o["kind"] == "ResourceFlavor"}
    # one flavor per node group; a rack-scale pool's NVLink domains share their pool's (TAS picks the domain)
    assert set(flavors) == {flavor_name(g) for g in plan.kubernetes.node_groups}
    topologies = {t.name for t in plan.kubernetes.topologies}
    for g in plan.kubernetes.node_groups:
        spec = flavors[flavor_name(g)]["spec"]
        assert spec["nodeLabels"].items() <= g.labels.items()
        assert spec["nodeLabels"] == (g.labels if g.nvlink_domain is None else {"aicluster.io/pool": g.pool})
        assert spec["topologyName"] == g.topology
        assert g.topology in topologies
        for taint in g.all_taints():
            assert any(
                t["key"] == taint.key
                and t["effect"] == taint.effect
                and (t["operator"] == "Exists" or t.get("value") == taint.value)
                for t in spec["tolerations"]
            ), taint


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_cluster_queue_quotas_are_nodes_times_per_node_amounts(stack: str) -> None:
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    objs = kubernetes_objects(plan)
    (cq,) = [o for o in objs if o["kind"] == "ClusterQueue"]
    (lq,) = [o for o in objs if o["kind"] == "LocalQueue"]
    assert cq["spec"]["namespaceSelector"] == {}
    assert lq["metadata"]["namespace"] == plan.kubernetes.namespace
    assert lq["spec"]["clusterQueue"] == cq["metadata"]["name"] == plan.kubernetes.cluster_queue
    quota = {
        (f["name"], r["name"]): r["nominalQuota"]
        for rg in cq["spec"]["resourceGroups"]
        for f in rg["flavors"]
        for r in f["resources"]
    }
    expected: dict[tuple[str, str], int] = {}
    for g in plan.kubernetes.node_groups:
        assert queued_resources(g).items() >= {r: v for r, v in g.resources.items() if "hugepages" not in r}.items()
        for r, v in queued_resources(g).items():
            expected[(flavor_name(g), r)] = expected.get((flavor_name(g), r), 0) + int(v) * g.nodes
    assert quota == {k: str(v) for k, v in expected.items()}
    for rg in cq["spec"]["resourceGroups"]:  # Kueue: every flavor of a group lists the covered resources, in order
        for f in rg["flavors"]:
            assert [r["name"] for r in f["resources"]] == rg["coveredResources"]


def test_eks_quota_covers_gpus_and_efa_not_hugepages() -> None:
    plan = stack_plan("eks-p5")
    (cq,) = [o for o in kubernetes_objects(plan) if o["kind"] == "ClusterQueue"]
    (rg,) = cq["spec"]["resourceGroups"]
    assert rg["coveredResources"] == ["nvidia.com/gpu", "vpc.amazonaws.com/efa"]
    assert rg["flavors"][0]["resources"] == [
        {"name": "nvidia.com/gpu", "nominalQuota": "128"},  # 16 x p5.48xlarge x 8
        {"name": "vpc.amazonaws.com/efa", "nominalQuota": "512"},  # 16 x 32 EFA interfaces
    ]


def test_eks_gpu_operator_leaves_driver_and_toolkit_to_the_node_image() -> None:
    plan = stack_plan("eks-p5")
    assert plan.kubernetes is not None
    assert plan.kubernetes.node_image == "AL2023_x86_64_NVIDIA"
    addons = {a.id: a for a in plan.kubernetes.addons}
    values = helm_values(plan, addons["gpu-operator"])
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}
    assert values["dcgmExporter"] == {"enabled": True}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["daemonsets"][
        "tolerations"
    ]
    efa = helm_values(plan, addons["efa-device-plugin"])
    assert efa == {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}


def test_aks_gpu_operator_installs_the_rdma_driver_and_leaves_nfd_to_the_network_operator() -> None:
    plan = stack_plan("aks-nd-h100")
    assert plan.kubernetes is not None
    addons = {a.id: a for a in plan.kubernetes.addons}
    gpu = helm_values(plan, addons["gpu-operator"])
    assert gpu["driver"] == {"enabled": True, "rdma": {"enabled": True}}
    assert gpu["nfd"] == {"enabled": False}
    net = helm_values(plan, addons["network-operator"])
    assert net == {
        "nfd": {"enabled": True, "deployNodeFeatureRules": False},
        "sriovNetworkOperator": {"enabled": False},
    }


def test_aks_nic_cluster_policy_offers_shared_ib_on_mellanox_nodes() -> None:
    plan = stack_plan("aks-nd-h100")
    (ncp,) = [o for o in kubernetes_objects(plan) if o["kind"] == "NicClusterPolicy"]
    assert ncp["apiVersion"] == NIC_POLICY_API
    assert installed_by(ncp) == "network-operator"
    spec = ncp["spec"]
    term = spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [
        {"key": "feature.node.kubernetes.io/pci-15b3.present", "operator": "In", "values": ["true"]}
    ]
    assert spec["ofedDriver"]["image"] == "doca-driver"
    assert spec["ofedDriver"]["version"].startswith("doca")
    config = yaml.safe_load(spec["rdmaSharedDevicePlugin"]["config"])["configList"][0]
    assert config["resourceName"] == "shared_ib"
    assert config["selectors"] == {"vendors": ["15b3"], "linkTypes": ["infiniband"]}
    (group,) = plan.kubernetes.node_groups if plan.kubernetes else ()
    assert "rdma/shared_ib" in group.resources  # what the NicClusterPolicy offers is what the flavor queues


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_acceptance_jobset_runs_one_pod_per_node_of_the_largest_group(stack: str) -> None:
    """One replicated job per tested group: the largest group, or every NVLink domain of a rack-scale pool."""
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    largest = max(plan.kubernetes.node_groups, key=lambda g: g.nodes)
    groups = [
        g
        for g in plan.kubernetes.node_groups
        if g == largest or (largest.nvlink_domain is not None and g.pool == largest.pool)
    ]
    js = acceptance_jobset(plan)
    assert js["apiVersion"] == JOBSET_API
    assert installed_by(js) == "jobset"
    assert js["metadata"]["namespace"] == plan.kubernetes.namespace
    assert js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == plan.kubernetes.local_queue
    assert js["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"] == "kubernetes.io/hostname"
    jobs = js["spec"]["replicatedJobs"]
    assert len(jobs) == len(groups)
    for rj, group in zip(jobs, groups, strict=True):
        assert rj["replicas"] == 1
        job = rj["template"]["spec"]
        assert job["parallelism"] == job["completions"] == group.nodes
        pod = job["template"]
        assert pod["spec"]["nodeSelector"] == group.labels
        annotations = pod["metadata"]["annotations"]
        (level,) = [v for k, v in annotations.items() if k.startswith("kueue.x-k8s.io/podset-")]
        levels = next(t.levels for t in plan.kubernetes.topologies if t.name == group.topology)
        assert level in levels
        assert level != "kubernetes.io/hostname"
        (container,) = pod["spec"]["containers"]
        requests = {k: v for k, v in container["resources"].items() if k != "claims"}
        assert requests == {"requests": group.resources, "limits": group.resources}
        assert ":" in container["image"]
        assert not container["image"].endswith(":latest")
        script = container["command"][-1]
        assert "all_reduce_perf" in script
        gpus = int(group.resources["nvidia.com/gpu"])
        assert f"-np {gpus * group.nodes} " in script
        assert f"-H {ACCEPTANCE_NAME}-{rj['name']}-0-0.{ACCEPTANCE_NAME}:{gpus}," in script
        assert pod["spec"]["tolerations"] == [
            {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect} for t in group.all_taints()
        ]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_every_custom_resource_names_the_release_that_installs_its_crd(stack: str) -> None:
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    addons = {a.id for a in plan.kubernetes.addons}
    for obj in kubernetes_objects(plan):
        owner = installed_by(obj)
        if obj["apiVersion"].startswith((KUEUE_API.split("/")[0], NIC_POLICY_API.split("/")[0])):
            assert owner in addons, obj["kind"]
        else:
            assert owner is None, obj["kind"]


def test_queued_resources_leave_hugepages_to_the_scheduler() -> None:
    plan = stack_plan("eks-p5")
    assert plan.kubernetes is not None
    (g,) = plan.kubernetes.node_groups
    assert "hugepages-2Mi" in g.resources
    assert "hugepages-2Mi" not in queued_resources(g)


def test_a_plan_without_kubernetes_is_refused() -> None:
    plan = stack_plan("p5-small")
    with pytest.raises(ValueError, match="no Kubernetes control plane"):
        kubernetes_objects(plan)


def _pod(plan: ClusterPlan) -> dict[str, Any]:
    spec: dict[str, Any] = acceptance_jobset(plan)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return spec


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", [])}


def test_eks_acceptance_runs_over_efa_with_aws_ofi_nccl() -> None:
    plan = stack_plan("eks-p5")
    pod = _pod(plan)
    (c,) = pod["spec"]["containers"]
    assert c["image"].startswith("public.ecr.aws/hpc-cloud/nccl-tests:")
    assert "-efa" in c["image"]
    assert "-ofiv" in c["image"]
    env = _env(c)
    assert env["FI_PROVIDER"] == "efa"
    assert "aws-ofi-nccl" in env["NCCL_TUNER_PLUGIN"]
    script = c["command"][-1]
    for name in ("FI_PROVIDER", "NCCL_TUNER_PLUGIN", "LD_LIBRARY_PATH"):
        assert f"-x {name} " in script  # every rank gets it, not just the launcher
    assert "/opt/nccl-tests/build/all_reduce_perf" in script
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32"


def test_gke_a3mega_acceptance_runs_over_tcpxo_with_rxdm_and_the_gpu_nic_networks() -> None:
    plan = stack_plan("gke-a3mega")
    pod = _pod(plan)
    (c,) = pod["spec"]["containers"]
    assert "gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v" in c["image"]
    (rxdm,) = pod["spec"]["initContainers"]
    assert rxdm["name"] == "tcpxo-daemon"
    assert rxdm["restartPolicy"] == "Always"  # a native sidecar: the pod completes with the test
    assert "gpudirect-tcpxo/tcpgpudmarxd-dev:v" in rxdm["image"]
    env = _env(c)
    assert env["LD_LIBRARY_PATH"] == env["NCCL_LIB_DIR"] == "/usr/local/nvidia/lib64"
    assert 'source "$NCCL_LIB_DIR/nccl-env-profile.sh"' in c["command"][-1]
    annotations = pod["metadata"]["annotations"]
    interfaces = json.loads(annotations["networking.gke.io/interfaces"])
    names = [n.name for n in gke_networks(plan)]
    assert interfaces[0] == {"interfaceName": "eth0", "network": "default"}
    assert [i["network"] for i in interfaces[1:]] == names
    assert [i["interfaceName"] for i in interfaces[1:]] == [f"eth{i}" for i in range(1, 9)]
    devices = yaml.safe_load(annotations["devices.gke.io/container.tcpxo-daemon"])
    assert {"path": "/dev/nvidia7"} in devices
    assert {"path": "/dev/dmabuf_import_helper"} in devices
    host_paths = {v["hostPath"]["path"] for v in pod["spec"]["volumes"] if "hostPath" in v}
    assert {"/home/kubernetes/bin/nvidia/lib64", "/dev/aperture_devices", "/sys", "/proc/sys"} <= host_paths


def test_aks_acceptance_forces_infiniband_and_asks_for_the_hcas() -> None:
    plan = stack_plan("aks-nd-h100")
    (c,) = _pod(plan)["spec"]["containers"]
    env = _env(c)
    assert env["NCCL_IB_DISABLE"] == "0"
    assert c["resources"]["requests"]["rdma/shared_ib"] == "1"
    assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]
    assert nccl_transport(plan, plan.kubernetes.node_groups[0]).fabric == "infiniband"  # type: ignore[union-attr]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_the_gate_is_the_model_at_the_jobsets_shape_and_under_the_wire_rate(stack: str) -> None:
    """The JobSet's gate is the collective model for all the group's nodes at its largest message (NCCL's own
    algorithm, no SHARP), times the Slurm role's fraction: never above what the nodes' NICs carry (issue 29: p5 was
    held to AWS's 2-node tree figure, 487 GB/s, above EFA's 400 GB/s; ND H100 v5 to a single-VM NVLink minimum)."""
    plan = stack_plan(stack)
    catalog = load_catalog()
    js = acceptance_jobset(plan)
    group = next(g for g in plan.kubernetes.node_groups if g.pool != "system")  # type: ignore[union-attr]
    pool = next(p for p in plan.pools if p.name == group.pool)
    expected = float(js["metadata"]["annotations"]["aicluster.io/expected-busbw-gb-s"])
    (c,) = _pod(plan)["spec"]["containers"]
    assert float(_env(c)["AICLUSTER_MIN_BUSBW_GB_S"]) == pytest.approx(expected * 0.9, abs=0.01)
    if group.nvlink_domain is not None:
        return  # inside one NVLink domain: the domain's NVLink figure (tests/schedulers/kubernetes/test_nvlink.py)
    model = acceptance_busbw(pool, catalog, group.nodes, algorithm=None, message_bytes=16 * 2**30)
    assert model is not None
    assert expected == model.busbw_gb_s
    network = catalog.collectives.network_of(pool.provider, pool.instance_type)
    assert network is not None
    assert 0 < expected <= network.node_gb_s, f"{stack}: {expected} GB/s over the wire's {network.node_gb_s}"


HEADER = "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong\n"


def _row(size: int, busbw: float, wrong: int = 0) -> str:
    out_of_place = f"100.0  1.00  {busbw:7.2f}  {wrong}"
    return f"  {size:>11}  {size // 4:>12}  float  sum  -1  {out_of_place}  100.0  1.00  {busbw:7.2f}  0\n"


@pytest.mark.parametrize(
    ("rows", "minimum", "passes"),
    [
        pytest.param([_row(1 << 20, 10.0), _row(1 << 34, 450.0)], "438.38", True, id="largest-size-above"),
        pytest.param([_row(1 << 20, 500.0), _row(1 << 34, 400.0)], "438.38", False, id="largest-size-below"),
        pytest.param([_row(1 << 34, 450.0, wrong=3)], "438.38", False, id="wrong-results"),
        pytest.param([], "0", False, id="no-rows"),
        pytest.param([_row(1 << 34, 5.0)], "", True, id="no-minimum"),
    ],
)
def test_busbw_gate_reads_the_largest_size_out_of_place(
    rows: list[str], minimum: str, passes: bool, tmp_path: Path
) -> None:
    log = tmp_path / "all_reduce_perf.log"
    log.write_text("host:1:1 [0] NCCL INFO NET/OFI Selected provider is efa\n" + HEADER + "".join(rows))
    env = {"PATH": "/usr/bin:/bin"} | ({"AICLUSTER_MIN_BUSBW_GB_S": minimum} if minimum else {})
    proc = subprocess.run(["bash", "-c", busbw_gate(str(log))], env=env, capture_output=True, text=True, check=False)
    assert (proc.returncode == 0) is passes, proc.stdout + proc.stderr
    assert proc.stdout.startswith("acceptance: " + ("ok" if passes else "FAIL"))


# ------------------------------------------------------------------------------------------ GKE manifest add-ons


def _a3_ultra(catalog: Catalog) -> ClusterPlan:
    pool = gcp_pool(name="h200", instance_type="a3-ultragpu-8g", zone="us-central1-b", nodes=4)
    return plan_of(catalog, gcp_cluster(storage=[], scheduler={"kind": "kubernetes", "version": "1.35"}, pools=[pool]))


def _daemonsets(plan: ClusterPlan) -> dict[str, dict[str, Any]]:
    """The fabric installers' DaemonSets (Node Problem Detector's have their own tests, test_health.py)."""
    return {
        o["metadata"]["name"]: o
        for o in kubernetes_objects(plan)
        if o["kind"] == "DaemonSet" and not o["metadata"]["name"].startswith(NPD_ADDON)
    }


def _ds_pod(ds: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = ds["spec"]["template"]["spec"]
    return pod


def _images(ds: dict[str, Any]) -> list[str]:
    pod = _ds_pod(ds)
    return [c["image"] for c in [*pod.get("initContainers", []), *pod["containers"]]]


def test_a3_mega_gets_the_tcpxo_installer_and_the_nri_injector() -> None:
    plan = stack_plan("gke-a3mega")
    assert plan.kubernetes is not None
    manifests = {a.id: a for a in plan.kubernetes.addons if a.kind == "manifest"}
    assert set(manifests) == {"nccl-tcpxo-installer", "nri-device-injector", NPD_ADDON, QUARANTINE_ADDON}
    ds = _daemonsets(plan)
    assert set(ds) == {"nccl-tcpxo-installer", "device-injector"}  # upstream's names
    tcpxo = manifests["nccl-tcpxo-installer"]
    pod = _ds_pod(ds["nccl-tcpxo-installer"])
    installer = next(c for c in pod["initContainers"] if c["name"] == "nccl-tcpxo-installer")
    assert installer["image"].endswith(f"/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:{tcpxo.version}")
    # the plugin on the host and the acceptance pods' plugin + RxDM come from one TCPXO release
    assert installer["image"] == nccl_transport(plan, plan.kubernetes.node_groups[0]).image
    assert "/scripts/container_entry.sh install --install-nccl" in installer["args"][0]
    # the plugin lands where GKE's GPU pods find the driver libraries: /home/kubernetes/bin/nvidia/lib64
    assert {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]} == {
        "var-lib": "/var/lib",
        "tcpxo": "/var/lib/tcpxo",
        "library-dir-host": "/home/kubernetes/bin",
    }
    assert {m["mountPath"] for m in installer["volumeMounts"]} == {"/var/lib", "/usr/local"}
    pre = next(c for c in pod["initContainers"] if c["name"] == "pre-installation")
    assert pre["command"][:5] == ["nsenter", "-at", "1", "--", "sh"]
    assert "1ae0:0084" in pre["command"][-1]  # the aperture devices the plugin maps
    nri = _ds_pod(ds["device-injector"])
    assert _images(ds["device-injector"]) == [
        f"gcr.io/gke-release/nri-device-injector@{manifests['nri-device-injector'].version}"
    ]
    assert {v["hostPath"]["path"] for v in nri["volumes"]} == {"/dev", "/var/run/nri"}
    for obj in ds.values():
        assert obj["metadata"]["namespace"] == "kube-system"
        terms = _ds_pod(obj)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"] == [
            {
                "matchExpressions": [
                    {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-h100-mega-80gb"]}
                ]
            }
        ]
        assert _ds_pod(obj)["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        assert _ds_pod(obj)["hostNetwork"] is True
        assert _ds_pod(obj)["hostPID"] is True
        assert obj["spec"]["selector"]["matchLabels"].items() <= obj["spec"]["template"]["metadata"]["labels"].items()
        # every image is pinned: a tag other than latest, or a digest
        for image in _images(obj):
            assert "@sha256:" in image or (":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")), image


def test_a3_ultra_gets_the_rdma_installer_only(catalog: Catalog) -> None:
    plan = _a3_ultra(catalog)
    assert plan.kubernetes is not None
    manifests = [a.id for a in plan.kubernetes.addons if a.kind == "manifest"]
    assert manifests == ["nccl-rdma-installer", NPD_ADDON, QUARANTINE_ADDON]
    (ds,) = _daemonsets(plan).values()
    assert ds["metadata"]["name"] == "nccl-rdma-installer"
    pod = _ds_pod(ds)
    expr = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert expr[0]["matchExpressions"][0]["values"] == ["nvidia-h200-141gb"]
    rdma = next(a for a in plan.kubernetes.addons if a.id == "nccl-rdma-installer")
    installer = next(c for c in pod["initContainers"] if c["name"] == "nccl-rdma-installer")
    assert installer["image"].endswith(f"/gpudirect-gib/nccl-plugin-gib:{rdma.version}")
    assert {v["hostPath"]["path"] for v in pod["volumes"]} == {
        "/home/kubernetes/bin/nvidia/lib64",
        "/home/kubernetes/bin/gib",
    }
    martians = next(c for c in pod["initContainers"] if c["name"] == "disable-log-martian")
    assert martians["args"][1].count("log_martians=0") == 8  # gpu0rdma0 .. gpu7rdma0
    kubernetes_validate.validate(ds, kube_version(plan), strict=True)


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_manifest_daemonsets_validate_strictly(stack: str) -> None:
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    for addon in plan.kubernetes.addons:
        if addon.kind == "manifest":
            objs = manifest_objects(plan, addon)
            assert objs, addon.id
            for obj in objs:
                kubernetes_validate.validate(obj, kube_version(plan), strict=True)
    if plan.kubernetes.service != "gke":
        assert not _daemonsets(plan)  # EKS and AKS get their fabric plugins from Helm charts


def test_manifest_objects_refuse_a_helm_addon() -> None:
    plan = stack_plan("gke-a3mega")
    assert plan.kubernetes is not None
    kueue = next(a for a in plan.kubernetes.addons if a.id == "kueue")
    with pytest.raises(ValueError, match="not a manifest"):
        manifest_objects(plan, kueue)
