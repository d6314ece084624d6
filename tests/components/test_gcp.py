"""GCP components: the NIC/VPC layout each machine type needs, placement policies, TPU slices, storage in the
private services range, no way in from the internet, and labels that follow GCP's rules."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from aicluster.catalog import Catalog
from aicluster.plan import plan
from aicluster.preview.engine import UNKNOWN, run
from aicluster.spec import parse_cluster
from components import AiCluster
from components.gcp.filesystems import short_name
from components.gcp.gpu_pool import network_interfaces
from components.gcp.identity import account_id
from tests.components.conftest import Built
from tests.helpers import a4x_max_pool, gcp_cluster, gcp_pool, tpu_pool

Build = Callable[[dict[str, Any]], Built]

NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
RESIZE = "gcp:compute/resizeRequest:ResizeRequest"
NAT = "gcp:compute/routerNat:RouterNat"
QUEUED = "gcp:tpu/v2QueuedResource:V2QueuedResource"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
LUSTRE = "gcp:lustre/instance:Instance"
FILESTORE = "gcp:filestore/instance:Instance"
ADDRESS = "gcp:compute/globalAddress:GlobalAddress"
PEERING = "gcp:servicenetworking/connection:Connection"
INSTANCE = "gcp:compute/instance:Instance"
AUDIT = "gcp:projects/iAMAuditConfig:IAMAuditConfig"
ULTRA_PRICE = {"overrides": [{"sku": "a3-ultragpu-8g", "usd_per_hour": 61.0}]}


def build_with_project(catalog: Catalog, cluster: dict[str, Any]) -> Built:
    """As the program runs with `gcp:project` in the stack config (the provider fills in the project), and
    with the cluster's outputs exported as the stack output `cluster`."""
    p = plan(parse_cluster(cluster, "test"), catalog)

    def program() -> None:
        pulumi.export("cluster", AiCluster(p.name, {"plan": p}).outputs)

    return Built(p, run(program, "aicluster", "test", {"gcp:project": "ml-proj"}))


def ultra(**changes: Any) -> dict[str, Any]:
    pool = gcp_pool(
        name="h200",
        instance_type="a3-ultragpu-8g",
        zone="us-central1-b",
        market="reserved",
        reservation="h200-res/reservationBlocks/block-1",
        **changes,
    )
    return gcp_cluster(pools=[pool], storage=[], pricing=ULTRA_PRICE)


def test_a3_mega_networks_mtus_and_firewalls(build: Build) -> None:
    b = build(gcp_cluster(storage=[]))
    nets = sorted((r.name, r.inputs["mtu"], r.inputs["autoCreateSubnetworks"]) for r in b.of_type(NETWORK))
    assert nets == sorted(
        [("a3mega-us-central1-vpc", 8244, False)] + [(f"a3mega-us-central1-gpu-{k}", 8244, False) for k in range(8)]
    )
    subnets = {r.name: r.inputs["ipCidrRange"] for r in b.of_type(SUBNET)}
    assert subnets["a3mega-us-central1-nodes"] == "10.133.0.0/19"
    assert [subnets[f"a3mega-us-central1-gpu-{k}"] for k in range(8)] == [
        f"10.133.{128 + 8 * k}.0/21" for k in range(8)
    ]
    walls = {r.name: r.inputs for r in b.of_type(FIREWALL)}
    assert set(walls) == {
        "a3mega-us-central1-allow-internal",
        "a3mega-us-central1-allow-ssh-iap",
        *(f"a3mega-us-central1-gpu-{k}-allow-internal" for k in range(8)),
    }
    assert walls["a3mega-us-central1-gpu-3-allow-internal"]["sourceRanges"] == ["10.133.152.0/21"]
    for rule in walls.values():  # nothing is open to the internet
        assert "0.0.0.0/0" not in rule["sourceRanges"]
    assert walls["a3mega-us-central1-allow-ssh-iap"]["sourceRanges"] == ["35.235.240.0/20"]
    assert walls["a3mega-us-central1-allow-ssh-iap"]["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    nat = b.one(NAT).inputs
    assert nat["natIpAllocateOption"] == "AUTO_ONLY"
    assert nat["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"


def test_a3_mega_template_declares_nine_gvnics_and_no_external_ip(build: Build) -> None:
    b = build(gcp_cluster(storage=[]))
    t = b.one(TEMPLATE).inputs
    assert t["machineType"] == "a3-megagpu-8g"
    nics = t["networkInterfaces"]
    assert [n["nicType"] for n in nics] == ["GVNIC"] * 9
    assert all("accessConfigs" not in n for n in nics)
    assert t["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert t["scheduling"]["provisioningModel"] == "STANDARD"
    assert t["scheduling"]["automaticRestart"] is True
    assert t["reservationAffinity"] == {"type": "ANY_RESERVATION"}
    assert t["shieldedInstanceConfig"] == {
        "enableSecureBoot": False,
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
    }
    assert t["metadata"]["enable-oslogin"] == "TRUE"
    assert t["metadata"]["user-data"].startswith("#cloud-config\n")
    assert '"gpu_nics": 8' in t["metadata"]["user-data"]
    (disk,) = t["disks"]
    assert (disk["boot"], disk["diskSizeGb"], disk["diskType"]) == (True, 500, "pd-balanced")
    assert disk["sourceImage"].endswith("/family/ubuntu-accelerator-2204-amd64-with-nvidia-580")
    assert t["serviceAccount"]["scopes"] == ["https://www.googleapis.com/auth/cloud-platform"]


def test_nics_are_wired_to_their_own_networks_in_order(catalog: Catalog) -> None:
    """The template's NIC list follows the plan's order: nic0 in the host VPC, then GPU NIC k in VPC gpu-k."""
    p = plan(parse_cluster(gcp_cluster(storage=[]), "t"), catalog)
    d = p.pools[0].gcp
    assert d is not None
    vpcs: dict[str, Any] = {"": "host", **{f"gpu-{k}": f"net-{k}" for k in range(8)}}
    subnets: dict[tuple[str, int], Any] = {("compute", 0): "nodes", **{("gpu", k): f"sub-{k}" for k in range(8)}}
    args: Any = {"vpc_ids": vpcs, "subnet_ids": subnets}
    wired = [(n.network, n.subnetwork, n.nic_type) for n in network_interfaces(d.nics, args)]
    assert wired == [("host", "nodes", "GVNIC")] + [(f"net-{k}", f"sub-{k}", "GVNIC") for k in range(8)]


def test_a3_mega_placement_policy_and_mig(build: Build) -> None:
    b = build(gcp_cluster(storage=[]))
    policy = b.one(POLICY).inputs
    assert policy["groupPlacementPolicy"] == {"collocation": "COLLOCATED", "maxDistance": 1}
    assert policy["region"] == "us-central1"
    template = b.one(TEMPLATE)
    assert b.by_urn(template.property_dependencies["resourcePolicies"][0]).type == POLICY
    mig = b.one(MIG).inputs
    assert (mig["zone"], mig["targetSize"], mig["baseInstanceName"]) == ("us-central1-a", 16, "h100-p0")
    assert mig["waitForInstances"] is False


def test_pool_over_1500_vms_becomes_several_placement_groups(catalog: Catalog) -> None:
    b = build_with_project(
        catalog,
        gcp_cluster(pools=[gcp_pool(nodes=1600)], storage=[], network={"cidrs": {"gcp/us-central1": "10.128.0.0/14"}}),
    )
    migs = sorted((r.inputs["baseInstanceName"], r.inputs["targetSize"]) for r in b.of_type(MIG))
    assert migs == [("h100-p0", 1500), ("h100-p1", 100)]
    distances = sorted(r.inputs["groupPlacementPolicy"]["maxDistance"] for r in b.of_type(POLICY))
    assert distances == [2, 3]
    assert len(b.of_type(TEMPLATE)) == 2
    groups = b.capture.outputs["cluster"]["pools"]["h100"]["placement_groups"]
    assert [(g["name"], g["nodes"], g["first_node"]) for g in groups] == [("h100-p0", 1500, 0), ("h100-p1", 100, 1500)]


def test_a3_ultra_roce_vpc_mrdma_nics_and_no_placement_policy(catalog: Catalog) -> None:
    b = build_with_project(catalog, ultra())
    nets = {r.name: r.inputs for r in b.of_type(NETWORK)}
    assert nets["a3mega-us-central1-vpc"]["mtu"] == 8896
    assert nets["a3mega-us-central1-gvnic-1"]["mtu"] == 8896
    roce = nets["a3mega-us-central1-rdma"]
    assert roce["mtu"] == 8896
    assert roce["networkProfile"] == "projects/ml-proj/global/networkProfiles/us-central1-b-vpc-roce"
    rdma_subnets = [r for r in b.of_type(SUBNET) if "-rdma-" in r.name]
    assert len(rdma_subnets) == 8
    # no firewall rule on the RoCE VPC (it accepts none); host and second gVNIC VPC have theirs
    assert sorted(r.name for r in b.of_type(FIREWALL)) == [
        "a3mega-us-central1-allow-internal",
        "a3mega-us-central1-allow-ssh-iap",
        "a3mega-us-central1-gvnic-1-allow-internal",
    ]
    t = b.one(TEMPLATE).inputs
    assert [n["nicType"] for n in t["networkInterfaces"]] == ["GVNIC", "GVNIC"] + ["MRDMA"] * 8
    assert t["disks"][0]["diskType"] == "hyperdisk-balanced"
    assert t["reservationAffinity"] == {
        "type": "SPECIFIC_RESERVATION",
        "specificReservation": {
            "key": "compute.googleapis.com/reservation-name",
            "values": ["h200-res/reservationBlocks/block-1"],
        },
    }
    assert "resourcePolicies" not in t
    assert b.of_type(POLICY) == []


def test_a4x_max_bare_metal_idpf_nics_and_an_ipv6_roce_vpc_on_the_metal_profile(catalog: Catalog) -> None:
    """A4X Max (bare metal): IDPF host NICs, 8 IPv6-only MRDMA NICs on the one subnet the vpc-roce-metal profile
    makes (none created here), one workload policy per NVLink sub-block with acceleratorTopology 1x72, on its MIG."""
    pool = a4x_max_pool(nodes=36, reservation="gb300-res")
    pricing = {"overrides": [{"sku": "a4x-maxgpu-4g-metal", "usd_per_hour": 40.0}]}
    b = build_with_project(catalog, gcp_cluster(name="a4xmax", pools=[pool], storage=[], pricing=pricing))
    nets = {r.name: r.inputs for r in b.of_type(NETWORK)}
    roce = nets["a4xmax-us-east5-rdma"]
    assert roce["networkProfile"] == "projects/ml-proj/global/networkProfiles/us-east5-b-vpc-roce-metal"
    assert sorted(r.name for r in b.of_type(SUBNET)) == ["a4xmax-us-east5-gvnic-1", "a4xmax-us-east5-nodes"]
    templates = b.of_type(TEMPLATE)
    assert len(templates) == 2
    nics = templates[0].inputs["networkInterfaces"]
    assert [n["nicType"] for n in nics] == ["IDPF", "IDPF"] + ["MRDMA"] * 8
    assert [n.get("stackType") for n in nics] == [None, None] + ["IPV6_ONLY"] * 8
    assert len({n["subnetwork"] for n in nics[2:]}) == 1  # the profile's one subnet (its name is computed)
    assert templates[0].inputs["scheduling"]["provisioningModel"] == "RESERVATION_BOUND"
    policies = b.of_type(POLICY)
    assert [p.inputs["workloadPolicy"] for p in policies] == [
        {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"}
    ] * 2
    assert all("groupPlacementPolicy" not in p.inputs for p in policies)
    assert all("resourcePolicies" not in t.inputs for t in templates)  # a MIG's workload policy, not the template's
    migs = b.of_type("gcp:compute/instanceGroupManager:InstanceGroupManager")
    assert all("workloadPolicy" in m.inputs["resourcePolicies"] for m in migs)


def test_spot_and_flex_start_provisioning(build: Build) -> None:
    spot = build(gcp_cluster(pools=[gcp_pool(market="spot")], storage=[])).one(TEMPLATE).inputs["scheduling"]
    assert spot["provisioningModel"] == "SPOT"
    assert spot["preemptible"] is True
    assert spot["instanceTerminationAction"] == "DELETE"
    assert spot["automaticRestart"] is False
    b = build(gcp_cluster(pools=[gcp_pool(market="flex-start", max_run_hours=24)], storage=[]))
    flex = b.one(TEMPLATE).inputs
    assert flex["scheduling"]["provisioningModel"] == "FLEX_START"
    assert flex["reservationAffinity"] == {"type": "NO_RESERVATION"}
    assert b.of_type(POLICY) == []
    assert b.one(MIG).inputs["targetSize"] == 0
    request = b.one(RESIZE).inputs
    assert request["resizeBy"] == 16
    assert request["requestedRunDuration"] == {"seconds": "86400"}


def test_labels_follow_gcp_rules(build: Build) -> None:
    b = build(gcp_cluster(tags={"owner": "ML-Platform", "cost-center": "4711"}))
    labels = b.one(TEMPLATE).inputs["labels"]
    assert labels == {
        "owner": "ml-platform",
        "cost-center": "4711",
        "aicluster_cluster": "a3mega",
        "aicluster_pool": "h100",
    }
    assert b.one(LUSTRE).inputs["labels"]["aicluster_storage"] == "scratch"
    assert "labels" not in b.one(FIREWALL, "allow-ssh-iap").inputs  # firewalls take no labels
    for r in b.capture.custom():
        for key, value in (r.inputs.get("labels") or {}).items():
            assert len(key) <= 63
            assert len(value) <= 63
            assert key == key.lower()
            assert value == value.lower()


@pytest.mark.parametrize(
    ("market", "kind"),
    [pytest.param("on-demand", QUEUED, id="on-demand-queued"), pytest.param("spot", TPU_VM, id="spot-tpu-vm")],
)
def test_tpu_slices(catalog: Catalog, market: str, kind: str) -> None:
    b = build_with_project(catalog, gcp_cluster(pools=[tpu_pool(market=market)], storage=[]))
    slices = sorted(b.of_type(kind), key=lambda r: r.name)
    assert len(slices) == 2
    if kind == QUEUED:
        specs = [s.inputs["tpu"]["nodeSpecs"][0] for s in slices]
        assert [s["nodeId"] for s in specs] == ["v5p-s0", "v5p-s1"]
        assert all(s["parent"] == "projects/ml-proj/locations/us-east5-a" for s in specs)
        node = specs[0]["node"]
        assert (node["acceleratorType"], node["runtimeVersion"]) == ("v5p-256", "v2-alpha-tpuv5")
        assert node["networkConfig"]["enableExternalIps"] is False
    else:
        vm = slices[0].inputs
        assert (vm["name"], vm["acceleratorType"], vm["zone"]) == ("v5p-s0", "v5p-256", "us-east5-a")
        assert vm["schedulingConfig"] == {"spot": True, "reserved": False}
        assert vm["networkConfig"]["enableExternalIps"] is False
        assert vm["labels"]["aicluster_pool"] == "v5p"
    assert b.of_type(TEMPLATE) == []
    out = b.capture.outputs["cluster"]["pools"]["v5p"]
    assert out["accelerator_type"] == "v5p-256"
    assert [(s["name"], s["hosts"], s["first_node"]) for s in out["slices"]] == [("v5p-s0", 32, 0), ("v5p-s1", 32, 32)]


def test_file_systems_use_the_private_services_range(catalog: Catalog) -> None:
    home = {"name": "home", "kind": "nfs", "capacity_tib": 2.5, "mount": "/shared"}
    b = build_with_project(catalog, gcp_cluster(storage=[*gcp_cluster()["storage"], home]))
    address = b.one(ADDRESS).inputs
    assert (address["purpose"], address["address"], address["prefixLength"]) == ("VPC_PEERING", "10.133.64.0", 19)
    peering = b.one(PEERING)
    assert peering.inputs["service"] == "servicenetworking.googleapis.com"
    lustre = b.one(LUSTRE)
    assert lustre.inputs["capacityGib"] == "18000"
    assert lustre.inputs["perUnitStorageThroughput"] == "1000"
    assert lustre.inputs["location"] == "us-central1-a"
    assert lustre.inputs["filesystem"] == "scratch"
    assert peering.urn in lustre.dependencies
    nfs = b.one(FILESTORE)
    assert nfs.inputs["tier"] == "ZONAL"
    assert nfs.inputs["fileShares"] == {"name": "home", "capacityGb": 2560}
    assert nfs.inputs["networks"][0]["connectMode"] == "PRIVATE_SERVICE_ACCESS"
    assert peering.urn in nfs.dependencies
    fs = b.capture.outputs["cluster"]["filesystems"]
    assert fs["home"]["export_path"] == "/home"
    assert fs["scratch"]["mount_command"] == UNKNOWN  # the mount point is known after creation


def test_controller_is_private_and_audit_logging_follows_compliance(build: Build) -> None:
    b = build(gcp_cluster(storage=[], compliance={"frameworks": ["soc2"]}))
    vm = b.one(INSTANCE).inputs
    assert vm["machineType"] == "n2-standard-8"
    assert vm["zone"] == "us-central1-a"
    assert all("accessConfigs" not in n for n in vm["networkInterfaces"])
    assert vm["bootDisk"]["initializeParams"]["type"] == "pd-balanced"
    audit = b.one(AUDIT).inputs
    assert audit["service"] == "allServices"
    assert sorted(c["logType"] for c in audit["auditLogConfigs"]) == ["ADMIN_READ", "DATA_READ", "DATA_WRITE"]
    assert build(gcp_cluster(storage=[])).of_type(AUDIT) == []


def test_small_helpers() -> None:
    assert short_name("gcp-lustre", 8) == "gcplustr"
    assert short_name("9lives", 8) == "f9lives"
    assert short_name("home-dirs", 16, "_") == "home_dirs"
    assert account_id("a3mega") == "a3mega-nodes"
    long = account_id("a-very-long-cluster-name-for-testing")
    assert len(long) <= 30
    assert long.endswith("-nodes")


def test_networks_stay_inside_their_block(build: Build) -> None:
    b = build(gcp_cluster(pools=[gcp_pool(), tpu_pool(region="us-central1", zone="us-central1-a")], storage=[]))
    block = ipaddress.IPv4Network("10.133.0.0/16")
    assert all(ipaddress.IPv4Network(r.inputs["ipCidrRange"]).subnet_of(block) for r in b.of_type(SUBNET))
