"""GKE: a private regional control plane with Dataplane V2, multi-networking, KMS-encrypted secrets and logs; one
node pool per node group on the pool's GPU NIC VPCs (A3 Mega: 8 extra node networks) under compact placement, with
GKE's NVIDIA driver, the plan's labels and taint; a secret kubeconfig; no MIGs, TPU VMs or slurmctld."""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan, plan
from aicluster.preview.engine import SECRET_VALUE, run
from aicluster.spec import parse_cluster
from components.gcp import build as gcp_build
from components.kubernetes.gke import kubeconfig, master_cidr, tpu_shape
from tests.components.conftest import Built

Build = Callable[[dict[str, Any]], Built]

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
KEY_RING = "gcp:kms/keyRing:KeyRing"
KEY = "gcp:kms/cryptoKey:CryptoKey"
KEY_GRANT = "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember"
AGENT = "gcp:projects/serviceIdentity:ServiceIdentity"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
NETWORK = "gcp:compute/network:Network"


def stack(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text(encoding="utf-8"))
    return copy.deepcopy(doc["config"]["aicluster:cluster"])


def a3mega(**scheduler: Any) -> dict[str, Any]:
    c = stack("gke-a3mega")
    c["scheduler"].update(scheduler)
    return c


def tpu_on_gke() -> dict[str, Any]:
    c = stack("gcp-tpu-v5p")
    c["scheduler"] = {"kind": "kubernetes", "version": "1.35"}
    return c


@pytest.fixture(scope="module")
def a3(catalog: Catalog) -> Built:
    p = plan(parse_cluster(a3mega(), "test"), catalog)
    from components import AiCluster

    return Built(p, run(lambda: AiCluster(p.name, {"plan": p}), "aicluster", "test", {"gcp:project": "ml-proj"}))


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    from aicluster.catalog import load_catalog

    return load_catalog()


def gpu_pool(b: Built) -> dict[str, Any]:
    return b.one(NODE_POOL, "-h100-p0").inputs


def test_control_plane_is_private_regional_dataplane_v2_with_multi_networking(a3: Built) -> None:
    c = a3.one(CLUSTER).inputs
    k = a3.plan.kubernetes
    assert k is not None
    assert c["name"] == "gke-a3mega"
    assert c["location"] == "us-central1"  # regional control plane
    assert c["removeDefaultNodePool"] is True
    assert c["initialNodeCount"] == 1
    assert c["minMasterVersion"] == "1.35"
    assert c["releaseChannel"] == {"channel": "REGULAR"}
    private = c["privateClusterConfig"]
    assert private["enablePrivateNodes"] is True
    assert private["enablePrivateEndpoint"] is True
    block = ipaddress.IPv4Network(private["masterIpv4CidrBlock"])
    assert block.prefixlen == 28
    ranges = [n.cidr for n in a3.plan.networks] + [k.pod_cidr, k.service_cidr]
    assert not any(block.overlaps(ipaddress.IPv4Network(r)) for r in ranges if r)
    # a private endpoint admits the cluster network only; never Google's public ranges
    assert [b["cidrBlock"] for b in c["masterAuthorizedNetworksConfig"]["cidrBlocks"]] == ["10.133.0.0/16"]
    assert c["masterAuthorizedNetworksConfig"]["gcpPublicCidrsAccessEnabled"] is False
    assert c["datapathProvider"] == "ADVANCED_DATAPATH"
    assert c["enableMultiNetworking"] is True
    assert c["ipAllocationPolicy"] == {
        "clusterIpv4CidrBlock": k.pod_cidr,
        "servicesIpv4CidrBlock": k.service_cidr,
    }
    assert c["loggingConfig"]["enableComponents"] == [
        "SYSTEM_COMPONENTS",
        "APISERVER",
        "CONTROLLER_MANAGER",
        "SCHEDULER",
        "WORKLOADS",
    ]
    assert c["workloadIdentityConfig"]["workloadPool"] == "ml-proj.svc.id.goog"
    assert c["deletionProtection"] is False
    assert c["resourceLabels"] == {"owner": "ml-platform", "cost-center": "4711", "aicluster_cluster": "gke-a3mega"}
    # the network is the host VPC and the compute subnet GcpNetwork made
    host = a3.one(NETWORK, "-us-central1-vpc")
    nodes = a3.one(SUBNET, "-us-central1-nodes")
    assert a3.by_urn(a3.one(CLUSTER).property_dependencies["network"][0]) is host
    assert a3.by_urn(a3.one(CLUSTER).property_dependencies["subnetwork"][0]) is nodes


def test_node_upgrades_are_held_back_by_a_maintenance_exclusion(a3: Built) -> None:
    """A release channel forbids auto_upgrade=false; the exclusion keeps node upgrades from killing jobs."""
    policy = a3.one(CLUSTER).inputs["maintenancePolicy"]
    (exclusion,) = policy["maintenanceExclusions"]
    assert exclusion["exclusionOptions"] == {
        "scope": "NO_MINOR_OR_NODE_UPGRADES",
        "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
    }
    assert policy["dailyMaintenanceWindow"]["startTime"] == "03:00"
    assert all(p.inputs["management"]["autoUpgrade"] is True for p in a3.of_type(NODE_POOL))


def test_secrets_are_encrypted_with_a_rotated_kms_key_the_gke_agent_may_use(a3: Built) -> None:
    cluster = a3.one(CLUSTER)
    key = a3.one(KEY)
    assert cluster.inputs["databaseEncryption"]["state"] == "ENCRYPTED"
    assert a3.by_urn(cluster.property_dependencies["databaseEncryption"][0]) is key
    assert key.inputs["rotationPeriod"] == "7776000s"
    assert key.inputs["purpose"] == "ENCRYPT_DECRYPT"
    ring = a3.one(KEY_RING)
    assert ring.inputs["location"] == "us-central1"  # the key lives where the control plane does
    assert a3.by_urn(key.property_dependencies["keyRing"][0]) is ring
    grant = a3.one(KEY_GRANT)
    assert grant.inputs["role"] == "roles/cloudkms.cryptoKeyEncrypterDecrypter"
    assert a3.by_urn(grant.property_dependencies["member"][0]) is a3.one(AGENT)
    assert a3.one(AGENT).inputs["service"] == "container.googleapis.com"
    assert grant.urn in cluster.dependencies  # GKE checks the grant when it creates the cluster


def test_gpu_node_pool_joins_eight_gpu_networks_under_compact_placement(a3: Built) -> None:
    np = gpu_pool(a3)
    assert np["name"] == "h100-p0"
    assert np["nodeLocations"] == ["us-central1-a"]
    assert np["nodeCount"] == 32
    assert np["location"] == "us-central1"
    extra = np["networkConfig"]["additionalNodeNetworkConfigs"]
    assert len(extra) == 8
    # nic k+1 -> VPC gpu-k and its subnet, as the Slurm path wires the VM's NICs
    deps = a3.one(NODE_POOL, "-h100-p0").property_dependencies["networkConfig"]
    names = {a3.by_urn(u).name for u in deps}
    assert names == {f"gke-a3mega-us-central1-gpu-{k}" for k in range(8)}
    assert {a3.by_urn(u).type for u in deps} == {NETWORK, SUBNET}
    placement = np["placementPolicy"]
    assert placement["type"] == "COMPACT"
    policy = a3.one(POLICY)
    assert policy.inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED", "maxDistance": 2}
    assert a3.by_urn(a3.one(NODE_POOL, "-h100-p0").property_dependencies["placementPolicy"][0]) is policy


def test_gpu_node_pool_has_gke_drivers_labels_taint_and_careful_upgrades(a3: Built) -> None:
    np = gpu_pool(a3)
    cfg = np["nodeConfig"]
    assert cfg["machineType"] == "a3-megagpu-8g"
    assert cfg["guestAccelerators"] == [
        {
            "type": "nvidia-h100-mega-80gb",
            "count": 8,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        }
    ]
    assert cfg["imageType"] == "COS_CONTAINERD"
    assert cfg["gvnic"] == {"enabled": True}
    assert cfg["labels"] == {"aicluster.io/pool": "h100", "aicluster.io/fabric-domain": "h100-p0"}
    assert cfg["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert cfg["reservationAffinity"] == {"consumeReservationType": "ANY_RESERVATION"}
    assert cfg["spot"] is False
    assert cfg["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert cfg["resourceLabels"]["aicluster_pool"] == "h100"
    assert np["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert np["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}


def test_system_pool_spreads_over_two_zones(a3: Built) -> None:
    np = a3.one(NODE_POOL, "-system").inputs
    assert np["nodeLocations"] == ["us-central1-a", "us-central1-b"]
    assert np["nodeCount"] == 1  # per zone: 2 nodes over 2 zones
    assert np["nodeConfig"]["machineType"] == "n2-standard-8"
    assert "taints" not in np["nodeConfig"]


def test_kubernetes_replaces_migs_tpu_vms_and_slurmctld(a3: Built) -> None:
    types = {r.type for r in a3.capture.resources}
    for absent in (
        "gcp:compute/instanceGroupManager:InstanceGroupManager",
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "gcp:compute/instance:Instance",
        "gcp:tpu/v2QueuedResource:V2QueuedResource",
    ):
        assert absent not in types
    assert len(a3.of_type(NETWORK)) == 9  # the host VPC and the 8 GPU VPCs the node pool attaches to


def test_builder_outputs_node_groups_and_a_secret_kubeconfig(catalog: Catalog) -> None:
    p = plan(parse_cluster(a3mega(), "test"), catalog)

    def program() -> None:
        parent = pulumi.ComponentResource("test:index:Parent", "parent")
        out = gcp_build(p, parent)
        pulumi.export("kubeconfig", out["kubeconfig"])
        pulumi.export("service", out["kubernetes"]["service"])
        pulumi.export("groups", {k: v["nodes"] for k, v in out["kubernetes"]["node_groups"].items()})

    cap = run(program, "aicluster", "test", {"gcp:project": "ml-proj"})
    assert cap.outputs["kubeconfig"] is SECRET_VALUE
    assert cap.outputs["service"] == "gke"
    assert cap.outputs["groups"] == {"h100-p0": 32}


def test_kubeconfig_uses_the_gke_auth_plugin() -> None:
    doc = yaml.safe_load(kubeconfig("c1", "10.0.0.2", "Q0EK"))
    assert doc["clusters"][0]["cluster"] == {"server": "https://10.0.0.2", "certificate-authority-data": "Q0EK"}
    assert doc["current-context"] == "c1"
    exec_ = doc["users"][0]["user"]["exec"]
    assert exec_["command"] == "gke-gcloud-auth-plugin"
    assert exec_["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert "token" not in doc["users"][0]["user"]  # no long-lived credential in the file


@pytest.mark.parametrize(
    ("scheduler", "channel", "private", "allowed"),
    [
        pytest.param({"version": "1.33"}, "EXTENDED", True, ["10.133.0.0/16"], id="extended-support"),
        pytest.param(
            {"endpoint": "public", "authorized_networks": ["192.168.10.0/24"]},
            "REGULAR",
            False,
            ["192.168.10.0/24"],
            id="public-endpoint",
        ),
    ],
)
def test_channel_and_endpoint_follow_the_plan(
    build: Build, scheduler: dict[str, Any], channel: str, private: bool, allowed: list[str]
) -> None:
    c = build(a3mega(**scheduler)).one(CLUSTER).inputs
    assert c["releaseChannel"] == {"channel": channel}
    assert c["privateClusterConfig"]["enablePrivateNodes"] is True
    assert c["privateClusterConfig"]["enablePrivateEndpoint"] is private
    assert [b["cidrBlock"] for b in c["masterAuthorizedNetworksConfig"]["cidrBlocks"]] == allowed


def test_master_range_steps_past_a_taken_block(catalog: Catalog) -> None:
    p: ClusterPlan = plan(parse_cluster(a3mega(), "test"), catalog)
    assert master_cidr(p, []) == "172.16.0.0/28"
    assert master_cidr(p, ["172.16.0.0/24"]) == "172.31.255.240/28"


def test_tpu_slices_become_node_pools_shaped_from_the_plan(catalog: Catalog, build: Build) -> None:
    """The v5p stack on GKE: one node pool per v5p-256 slice, a node per TPU VM, placed in the slice topology; the
    figures are the catalog's (v5p table: 4x4x8 = 128 chips on 32 hosts of ct5p-hightpu-4t)."""
    v5p = catalog.tpu_types["v5p"]
    assert v5p.topologies[128] == "4x4x8"
    assert v5p.gke_machine_type == "ct5p-hightpu-4t"
    b = build(tpu_on_gke())
    pools = {r.inputs["name"]: r.inputs for r in b.capture.resources if r.type == NODE_POOL}
    assert set(pools) == {"system", "v5p-s0", "v5p-s1"}
    for name in ("v5p-s0", "v5p-s1"):
        s = pools[name]
        assert s["nodeCount"] == 128 // v5p.chips_per_host == 32
        assert s["nodeLocations"] == ["us-east5-a"]
        assert s["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4x8"}
        assert s["nodeConfig"]["machineType"] == "ct5p-hightpu-4t"
        assert s["nodeConfig"]["taints"] == [{"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"}]
        assert s["nodeConfig"]["labels"] == {"aicluster.io/pool": "v5p", "aicluster.io/fabric-domain": name}
        assert "guestAccelerators" not in s["nodeConfig"]  # the machine type carries the chips
    cluster = next(r for r in b.capture.resources if r.type == CLUSTER).inputs
    assert cluster["enableMultiNetworking"] is False  # TPU pools have no GPU NIC VPCs
    assert not [r for r in b.capture.resources if r.type.startswith("gcp:tpu/")]  # GKE makes the TPU VMs


def test_single_host_tpu_slice_is_one_vm_without_a_placement_policy(build: Build) -> None:
    c = tpu_on_gke()
    c["pools"][0]["tpu"] = "v5p-8"
    pools = {r.inputs["name"]: r.inputs for r in build(c).capture.resources if r.type == NODE_POOL}
    s0 = pools["v5p-s0"]
    assert s0["nodeCount"] == 1
    assert s0["nodeConfig"]["machineType"] == "ct5p-hightpu-4t"
    assert "placementPolicy" not in s0


def test_a_plan_without_the_tpu_shape_is_refused(catalog: Catalog) -> None:
    """A plan made for Slurm of a slice size GKE has no documented topology for carries no shape."""
    c = stack("gcp-tpu-v5p")
    c["pools"][0]["tpu"] = "v5p-384"
    p = plan(parse_cluster(c, "test"), catalog)
    assert p.pools[0].tpu is not None
    assert p.pools[0].tpu.topology is None
    with pytest.raises(ValueError, match=r"pool v5p: the plan has no GKE machine type or topology for v5p-384"):
        tpu_shape(p.pools[0])


# ------------------------------------------------------------------------------------- A4X: NVLink domains (gke-a4x)


@pytest.fixture(scope="module")
def a4x(catalog: Catalog) -> Built:
    p = plan(parse_cluster(stack("gke-a4x"), "test"), catalog)
    from components import AiCluster

    return Built(p, run(lambda: AiCluster(p.name, {"plan": p}), "aicluster", "test", {"gcp:project": "ml-proj"}))


def test_each_nvlink_domain_is_a_node_pool_under_a_1x72_workload_policy(a4x: Built) -> None:
    assert [d.id for d in a4x.plan.nvlink_domains] == ["gb200-nvl0", "gb200-nvl1"]
    for domain in a4x.plan.nvlink_domains:
        pool = a4x.one(NODE_POOL, f"-{domain.id}")
        np = pool.inputs
        assert np["name"] == domain.id
        assert np["nodeCount"] == len(domain.nodes) == 18
        assert np["nodeLocations"] == ["us-east4-b"]
        assert np["placementPolicy"]["type"] == "COMPACT"
        policy = a4x.by_urn(pool.property_dependencies["placementPolicy"][0])
        assert policy.type == POLICY
        # GKE's way to ask for one sub-block (an NVL72 rack): Cluster Toolkit's gke-a4x workload policy
        assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"}
        assert "groupPlacementPolicy" not in policy.inputs
        cfg = np["nodeConfig"]
        assert cfg["labels"] == {
            "aicluster.io/pool": "gb200",
            "aicluster.io/fabric-domain": domain.id,
            "aicluster.io/nvlink-domain": domain.id,
        }
        assert cfg["guestAccelerators"][0]["type"] == "nvidia-gb200"
        assert cfg["guestAccelerators"][0]["count"] == 4
        assert cfg["imageType"] == "COS_CONTAINERD"  # the catalog's Arm image type for GKE
        # aicluster sets the GPU taint; GKE sets the Arm one itself
        assert cfg["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
        assert cfg["reservationAffinity"]["values"] == ["projects/ml-capacity/reservations/gb200-us-east4-b"]
        # the pool's 2 gVNIC + 4 MRDMA NICs: the second gVNIC and the RDMA NICs as extra node networks
        assert len(np["networkConfig"]["additionalNodeNetworkConfigs"]) == 5
    assert len(a4x.of_type(POLICY)) == 2


def test_a4x_cluster_installs_the_dra_driver_after_its_namespace_quota(a4x: Built) -> None:
    release = next(r for r in a4x.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "dra-driver-gpu")
    assert release.inputs["chart"] == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
    assert release.inputs["version"] == "0.4.0"
    assert release.inputs["createNamespace"] is False  # made first, with its quota
    (quota,) = a4x.of_type("kubernetes:core/v1:ResourceQuota")
    assert quota.urn in release.dependencies
    assert quota.inputs["metadata"]["namespace"] == "dra-driver-nvidia-gpu"
    namespace = next(
        r
        for r in a4x.of_type("kubernetes:core/v1:Namespace")
        if r.inputs["metadata"]["name"] == "dra-driver-nvidia-gpu"
    )
    assert namespace.urn in release.dependencies
    assert not [r for r in a4x.capture.resources if r.inputs.get("kind") == "ComputeDomain"]  # per workload
