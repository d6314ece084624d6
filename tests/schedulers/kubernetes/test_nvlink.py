"""Kubernetes on rack-scale pools (GKE A4X, the gke-a4x example): one node group per NVLink domain of the plan,
NVIDIA's DRA driver only there and only where the catalog shows the service runs it, Kueue's NVLink level, the
ComputeDomains of the acceptance test and its per-domain ranks on multi-node NVLink."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import kubernetes_validate
import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from aicluster.preview import plan_stack
from aicluster.schedulers.kubernetes.nvlink import (
    CHANNEL_CLAIM,
    CHANNEL_RESOURCE,
    KUEUE_DEFAULT_CONFIG,
    channel_template,
    dra_values,
)
from aicluster.schedulers.kubernetes.plan import NVLINK_LABEL
from aicluster.schedulers.kubernetes.render import (
    acceptance_compute_domains,
    acceptance_jobset,
    flavor_name,
    helm_values,
    installed_by,
    kubernetes_objects,
    manifest_objects,
    nccl_transport,
    release_prerequisites,
)
from aicluster.stackfile import find_project, read_stack
from tests.conftest import KUBERNETES_STACKS, ROOT
from tests.helpers import gcp_cluster, gcp_pool, plan_of
from tests.helpers import plan_problems as located

A4X = {"instance_type": "a4x-highgpu-4g", "region": "us-east4", "zone": "us-east4-b", "market": "reserved"}
SUBBLOCK = "cloud.google.com/gce-topology-subblock"
ARM_TAINT = {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}


@functools.cache
def stack_plan(stack: str) -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), stack))


def a4x_on_gke(nodes: int = 36, version: str = "1.35") -> dict[str, object]:
    pool = gcp_pool(name="gb200", nodes=nodes, **A4X)
    return gcp_cluster(pools=[pool], storage=[], scheduler={"kind": "kubernetes", "version": version})


def problems(catalog: Catalog, data: dict[str, object]) -> list[str]:
    return [p.removeprefix("t: ") for p in located(catalog, data)]


def with_gke(catalog: Catalog, **changes: Any) -> Catalog:
    """The catalog with GKE's record changed (a service the catalog documents less of)."""
    gke = catalog.kubernetes["gcp"].model_copy(update=changes)
    return dataclasses.replace(catalog, kubernetes={**catalog.kubernetes, "gcp": gke})


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = job["template"]["spec"]["template"]
    return pod


# ---------------------------------------------------------------------------------------------------- node groups


def test_each_nvlink_domain_of_the_plan_is_one_node_group_labelled_with_it() -> None:
    plan = stack_plan("gke-a4x")
    k = plan.kubernetes
    assert k is not None
    assert [g.name for g in k.node_groups] == [d.id for d in plan.nvlink_domains] == ["gb200-nvl0", "gb200-nvl1"]
    for g, d in zip(k.node_groups, plan.nvlink_domains, strict=True):
        assert g.nvlink_domain == g.domain == d.id
        assert g.nodes == len(d.nodes) == 18
        assert g.labels[NVLINK_LABEL] == d.id
        assert g.topology == "nvlink"
        assert g.cpu_arch == "arm64"
        # GKE taints Arm nodes itself: tolerated by the plan, never set by aicluster
        assert [t.model_dump() for t in g.service_taints] == [ARM_TAINT]
        assert ARM_TAINT not in [t.model_dump() for t in g.taints]
    assert k.nvlink_level == SUBBLOCK
    assert k.node_image_arm64 == "COS_CONTAINERD"
    assert k.node_image_of(k.node_groups[0]) == "COS_CONTAINERD"
    # the GCP pool's placement groups are the same domains, in the same order (one node pool per sub-block)
    pool = plan.pools[0]
    assert pool.gcp is not None
    assert [(g.name, g.index) for g in pool.gcp.groups] == [(n.name, n.index) for n in k.node_groups]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_the_dra_driver_comes_only_with_rack_scale_pools(stack: str) -> None:
    plan = stack_plan(stack)
    k = plan.kubernetes
    assert k is not None
    rack_scale = bool(plan.nvlink_domains)
    assert ("dra-driver-gpu" in {a.id for a in k.addons}) is rack_scale
    assert (k.nvlink_level is not None) is rack_scale
    assert all((g.nvlink_domain is not None) is rack_scale for g in k.node_groups)
    if not rack_scale:
        assert acceptance_compute_domains(plan) == []


def test_the_dra_driver_is_pinned_from_the_kubernetes_registry() -> None:
    k = stack_plan("gke-a4x").kubernetes
    assert k is not None
    (dra,) = [a for a in k.addons if a.id == "dra-driver-gpu"]
    assert (dra.kind, dra.repository, dra.chart, dra.version) == (
        "helm",
        "oci://registry.k8s.io/dra-driver-nvidia/charts",
        "dra-driver-nvidia-gpu",
        "0.4.0",
    )
    assert dra.namespace == "dra-driver-nvidia-gpu"
    assert "k8s-gke-dra" in k.sources


def test_a_kubernetes_version_without_dra_is_refused_with_the_versions_that_have_it(catalog: Catalog) -> None:
    assert problems(catalog, a4x_on_gke(version="1.33")) == [
        'scheduler.version: got "1.33"; the NVLink domains of pool(s) gb200 need '
        "NVIDIA's DRA driver (a "
        "ComputeDomain per job), which Google Kubernetes Engine runs from Kubernetes 1.34 (DRA on by default; GKE: "
        "Prepare GKE infrastructure for DRA workloads (requirements), 2026-11-28): pick 1.34 or 1.35 or 1.36"
    ]


def test_a_service_without_documented_dra_refuses_rack_scale_pools(catalog: Catalog) -> None:
    undocumented = with_gke(catalog, dra_min_version=None)
    assert problems(undocumented, a4x_on_gke()) == [
        'pools[0].instance_type: got "a4x-highgpu-4g"; a rack-scale type: its NVLink domains reach pods only '
        "through NVIDIA's DRA driver (ComputeDomains), and the catalog documents no Google Kubernetes Engine "
        "cluster running it: use scheduler kind slurm"
    ]


def test_an_arm_pool_without_a_sourced_arm_node_image_is_refused(catalog: Catalog) -> None:
    no_image = with_gke(catalog, node_image_arm64=None)
    assert problems(no_image, a4x_on_gke()) == [
        'pools[0].instance_type: got "a4x-highgpu-4g"; its hosts are Arm (Grace), and the catalog has no Google '
        "Kubernetes Engine node image for Arm GPU nodes (none is sourced): use scheduler kind slurm, or an x86 "
        "instance type"
    ]


def test_an_nvlink_domain_is_never_split_over_node_groups(catalog: Catalog) -> None:
    small = with_gke(catalog, max_nodes_per_group=10)
    assert problems(small, a4x_on_gke(nodes=18)) == [
        "pools[0].nodes: got 18; an NVLink domain of gb200 has 18 nodes, more than one Google Kubernetes Engine "
        "node group holds (10); a domain is never split over node groups: use scheduler kind slurm"
    ]


def test_8_gpu_pools_keep_their_node_groups_and_no_dra(catalog: Catalog) -> None:
    plan = plan_of(catalog, gcp_cluster(storage=[], scheduler={"kind": "kubernetes", "version": "1.35"}))
    k = plan.kubernetes
    assert k is not None
    assert all(g.nvlink_domain is None and g.cpu_arch == "x86_64" and not g.service_taints for g in k.node_groups)
    assert all(NVLINK_LABEL not in g.labels for g in k.node_groups)
    assert k.nvlink_level is None
    assert "dra-driver-gpu" not in {a.id for a in k.addons}


# ---------------------------------------------------------------------------------------------------------- Kueue


def test_kueue_topology_has_the_nvlink_domain_as_a_level_and_one_flavor_spans_the_domains() -> None:
    plan = stack_plan("gke-a4x")
    k = plan.kubernetes
    assert k is not None
    objs = kubernetes_objects(plan)
    (topology,) = [o for o in objs if o["kind"] == "Topology"]
    levels = [level["nodeLabel"] for level in topology["spec"]["levels"]]
    # Cluster Toolkit's a4x-default: block > sub-block (the NVL72 rack) > node pool > host > hostname
    assert levels == [
        "cloud.google.com/gce-topology-block",
        SUBBLOCK,
        "cloud.google.com/gke-nodepool",
        "cloud.google.com/gce-topology-host",
        "kubernetes.io/hostname",
    ]
    assert k.nvlink_level in levels
    (flavor,) = [o for o in objs if o["kind"] == "ResourceFlavor"]
    assert flavor["metadata"]["name"] == flavor_name(k.node_groups[0]) == "gb200"
    assert flavor["spec"]["topologyName"] == topology["metadata"]["name"] == "nvlink"
    assert flavor["spec"]["nodeLabels"] == {"aicluster.io/pool": "gb200"}
    assert {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"} in flavor[
        "spec"
    ]["tolerations"]
    (cq,) = [o for o in objs if o["kind"] == "ClusterQueue"]
    (rg,) = cq["spec"]["resourceGroups"]
    # 144 GPUs, and one IMEX channel per node (Kueue charges each pod's channel claim to it)
    assert rg["coveredResources"] == [CHANNEL_RESOURCE, "nvidia.com/gpu"]
    assert rg["flavors"] == [
        {
            "name": "gb200",
            "resources": [
                {"name": CHANNEL_RESOURCE, "nominalQuota": "36"},
                {"name": "nvidia.com/gpu", "nominalQuota": "144"},
            ],
        }
    ]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_kueue_maps_the_imex_channel_device_class_only_on_rack_scale_stacks(stack: str) -> None:
    """Kueue 0.18+ refuses a job whose claim template names a DeviceClass its Configuration does not map."""
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    (kueue,) = [a for a in plan.kubernetes.addons if a.id == "kueue"]
    values = helm_values(plan, kueue)
    if not plan.nvlink_domains:
        assert values == {}  # the chart's defaults
        return
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert config["resources"]["deviceClassMappings"] == [
        {"name": CHANNEL_RESOURCE, "deviceClassNames": ["compute-domain-default-channel.nvidia.com"]}
    ]
    # the rest is the chart's default Configuration: the JobSet integration stays on
    assert config["kind"] == "Configuration"
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert "jobset.x-k8s.io/jobset" in config["integrations"]["frameworks"]
    assert {k: v for k, v in config.items() if k != "resources"} == KUEUE_DEFAULT_CONFIG


# ------------------------------------------------------------------------------------------------- the DRA driver


def test_dra_driver_values_turn_compute_domains_on_and_gpu_allocation_off_on_the_rack_scale_nodes() -> None:
    plan = stack_plan("gke-a4x")
    k = plan.kubernetes
    assert k is not None
    (dra,) = [a for a in k.addons if a.id == "dra-driver-gpu"]
    values = helm_values(plan, dra)
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    assert values["nvidiaDriverRoot"] == "/home/kubernetes/bin/nvidia"  # where GKE installs the driver
    plugin = values["kubeletPlugin"]
    terms = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": NVLINK_LABEL, "operator": "Exists"}]}]
    assert plugin["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "kubernetes.io/arch", "operator": "Exists", "effect": "NoSchedule"},
    ]


@pytest.mark.parametrize(
    ("service", "root"),
    [
        pytest.param("gke", "/home/kubernetes/bin/nvidia", id="gke-driver"),
        pytest.param("eks", "/", id="eks-ami-driver"),
        pytest.param("aks", "/run/nvidia/driver", id="aks-gpu-operator-driver"),
    ],
)
def test_dra_driver_root_is_where_the_clouds_driver_is(service: str, root: str) -> None:
    plan = stack_plan("gke-a4x")
    assert plan.kubernetes is not None
    other = plan.model_copy(update={"kubernetes": plan.kubernetes.model_copy(update={"service": service})})
    assert dra_values(other)["nvidiaDriverRoot"] == root


def test_on_gke_the_dra_release_waits_for_a_quota_admitting_its_critical_pods() -> None:
    plan = stack_plan("gke-a4x")
    k = plan.kubernetes
    assert k is not None
    (dra,) = [a for a in k.addons if a.id == "dra-driver-gpu"]
    ns, quota = release_prerequisites(plan, dra)
    assert (ns["kind"], ns["metadata"]["name"]) == ("Namespace", dra.namespace)
    assert quota["kind"] == "ResourceQuota"
    assert quota["metadata"]["namespace"] == dra.namespace
    # a kubelet plugin on each of the 36 rack-scale nodes, the controller, one more for its rollout
    assert quota["spec"]["hard"] == {"pods": "38"}
    (expr,) = quota["spec"]["scopeSelector"]["matchExpressions"]
    assert expr == {
        "scopeName": "PriorityClass",
        "operator": "In",
        "values": ["system-node-critical", "system-cluster-critical"],
    }
    for obj in (ns, quota):
        kubernetes_validate.validate(obj, f"{k.version}.0", strict=True)
    assert all(release_prerequisites(plan, a) == [] for a in k.addons if a.id != "dra-driver-gpu")


# --------------------------------------------------------------------------------------- acceptance, ComputeDomains


def test_acceptance_tests_every_nvlink_domain_with_its_own_compute_domain() -> None:
    plan = stack_plan("gke-a4x")
    k = plan.kubernetes
    assert k is not None
    domains = acceptance_compute_domains(plan)
    js = acceptance_jobset(plan)
    jobs = js["spec"]["replicatedJobs"]
    assert [j["name"] for j in jobs] == ["nvl0", "nvl1"]
    assert [d["metadata"]["name"] for d in domains] == ["nccl-allreduce-nvl0", "nccl-allreduce-nvl1"]
    for cd, job, group in zip(domains, jobs, k.node_groups, strict=True):
        assert installed_by(cd) == "dra-driver-gpu"
        assert cd["metadata"]["namespace"] == k.namespace == js["metadata"]["namespace"]
        assert cd["metadata"]["labels"][NVLINK_LABEL] == group.nvlink_domain
        assert cd["spec"]["numNodes"] == 0  # the CRD's advice with IMEXDaemonsWithDNSNames (the default)
        template = cd["spec"]["channel"]["resourceClaimTemplate"]["name"]
        assert template == channel_template(cd["metadata"]["name"])
        pod = _pod(job)
        # pinned to the domain's nodes, required in one NVLink domain by Kueue
        assert pod["spec"]["nodeSelector"][NVLINK_LABEL] == group.nvlink_domain
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] == SUBBLOCK
        assert pod["spec"]["resourceClaims"] == [{"name": CHANNEL_CLAIM, "resourceClaimTemplateName": template}]
        (container,) = pod["spec"]["containers"]
        assert container["resources"]["claims"] == [{"name": CHANNEL_CLAIM}]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"
        # 72 ranks per domain, each domain's own MPI launch over its own pods
        script = container["command"][-1]
        assert "-np 72 " in script
        assert f"nccl-allreduce-{job['name']}-0-17.nccl-allreduce:4" in script
        other = "nvl1" if job["name"] == "nvl0" else "nvl0"
        assert f"nccl-allreduce-{other}-" not in script


def test_acceptance_forces_multi_node_nvlink_and_gates_on_the_nvl72_figure() -> None:
    plan = stack_plan("gke-a4x")
    js = acceptance_jobset(plan)
    assert js["metadata"]["annotations"]["aicluster.io/expected-busbw-gb-s"] == "840"  # catalog nvlink5-nvl72
    for job in js["spec"]["replicatedJobs"]:
        (container,) = _pod(job)["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["NCCL_MNNVL_ENABLE"] == "1"  # not auto: a broken IMEX channel must fail, not fall back
        assert env["NCCL_CUMEM_ENABLE"] == "1"
        assert env["AICLUSTER_MIN_BUSBW_GB_S"] == "756"  # 0.9 x 840
        assert "-x NCCL_MNNVL_ENABLE " in container["command"][-1]  # every rank gets it
        assert container["image"].endswith("/nccl-plugin-gib-diagnostic-arm64:v1.0.6")


def test_acceptance_without_a_pinned_mnnvl_image_is_refused() -> None:
    plan = stack_plan("gke-a4x")
    k = plan.kubernetes
    assert k is not None
    elsewhere = plan.model_copy(update={"pools": tuple(p.model_copy(update={"provider": "aws"}) for p in plan.pools)})
    with pytest.raises(ValueError, match="no pinned arm64 nccl-tests image for multi-node NVLink on aws"):
        nccl_transport(elsewhere, k.node_groups[0])


# ---------------------------------------------------------------------------------------------- the Arm gIB plugin


def test_a4x_gets_the_arm_gib_installer() -> None:
    plan = stack_plan("gke-a4x")
    k = plan.kubernetes
    assert k is not None
    manifests = {a.id: a for a in k.addons if a.kind == "manifest"}
    assert set(manifests) == {"nccl-rdma-installer-arm64", "node-problem-detector", "gpu-quarantine"}
    (ds,) = manifest_objects(plan, manifests["nccl-rdma-installer-arm64"])
    pod = ds["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["nccl-rdma-installer"]  # no gpu<N>rdma0 sysctls on A4X
    assert pod["initContainers"][0]["image"] == (
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-arm64:v1.1.0"
    )
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["nvidia-gb200"]
    assert {"key": "kubernetes.io/arch", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    kubernetes_validate.validate(ds, f"{k.version}.0", strict=True)
