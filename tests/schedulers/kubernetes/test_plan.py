"""Planning a Kubernetes stack: node groups from the pools' fabric domains, the control plane's cost, refusals."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.spec import SpecError, parse_cluster
from tests.helpers import azure_cluster, azure_pool, cluster, gcp_cluster, plan_of, plan_problems, pool, tpu_pool

K8S: dict[str, Any] = {"kind": "kubernetes", "version": "1.35"}


def _spec_problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_cluster(data, "t")
    return [p.render("t") for p in err.value.problems]


def test_eks_node_group_carries_the_pool_fabric(catalog: Catalog) -> None:
    p = plan_of(catalog, cluster(storage=[], scheduler=K8S))
    k = p.kubernetes
    assert k is not None
    assert p.controller is None
    assert (k.service, k.provider, k.region, k.version, k.support) == ("eks", "aws", "us-east-1", "1.35", "standard")
    (g,) = k.node_groups
    assert (g.name, g.pool, g.nodes, g.zone, g.accelerator_kind) == ("h100", "h100", 4, "us-east-1a", "gpu")
    assert g.resources == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "5120Mi"}
    assert [(t.key, t.value, t.effect) for t in g.taints] == [("nvidia.com/gpu", "present", "NoSchedule")]
    assert g.labels == {"aicluster.io/pool": "h100", "aicluster.io/fabric-domain": "h100"}
    assert [a.id for a in k.addons] == [
        "gpu-operator",
        "efa-device-plugin",
        "node-problem-detector",
        "gpu-quarantine",
        "node-exporter",  # the `node` job, scraped by the Prometheus below
        "kube-prometheus-stack",  # monitoring.prometheus self-hosted (the default): a Prometheus in the cluster
        "kueue",
        "jobset",
    ]
    assert k.topologies[0].levels[-1] == "kubernetes.io/hostname"
    # EKS needs subnets in two zones: the system node group spreads over the pool's zone and another one
    assert k.system_zones[0] == "us-east-1a"
    assert len(k.system_zones) == 2
    assert {s.zone for s in p.network(k.network).subnets if s.role == "compute"} == set(k.system_zones)
    assert k.pod_cidr is None  # the VPC CNI: pods take VPC addresses


def test_control_plane_and_system_nodes_are_costed(catalog: Catalog) -> None:
    p = plan_of(catalog, cluster(storage=[], scheduler=K8S))
    k = p.kubernetes
    assert k is not None
    hours = catalog.hours_per_month
    assert k.control_plane_usd_per_month == pytest.approx(0.10 * hours)
    it = catalog.instance_type("aws", "m7i.2xlarge")
    assert it is not None
    assert k.system_price is not None
    assert k.system_usd_per_month == pytest.approx(k.system_price.usd * 2 * hours, abs=0.01)
    pools_and_network = sum(x.cost_usd_per_month or 0 for x in p.pools) + sum(
        n.cost_usd_per_month or 0 for n in p.networks
    )
    assert p.totals.cost_usd_per_month == pytest.approx(pools_and_network + (k.cost_usd_per_month or 0), abs=0.05)
    assert p.totals.power_kw_it == pytest.approx(sum(x.power_kw_it for x in p.pools) + k.system_power_kw_it, abs=0.02)


def test_an_odd_system_pool_stays_on_eks_and_rounds_up_per_zone_on_gke_with_a_warning(catalog: Catalog) -> None:
    """Issue 30 #8: EKS's system pool of 3 became 4 silently; the rounding is for services that size a regional pool
    per zone (catalog system_pool_per_zone: GKE, AKS), and says so there."""
    eks = plan_of(catalog, cluster(storage=[], scheduler={**K8S, "system_pool": {"nodes": 3}}))
    assert eks.kubernetes is not None
    assert eks.kubernetes.system_nodes == 3
    assert not any("system_pool.nodes" in w for w in eks.warnings)
    gke = plan_of(catalog, gcp_cluster(storage=[], scheduler={**K8S, "system_pool": {"nodes": 3}}))
    assert gke.kubernetes is not None
    assert gke.kubernetes.system_nodes == 4
    assert any(w.startswith("scheduler.system_pool.nodes: 3 becomes 4: Google Kubernetes Engine") for w in gke.warnings)


def test_extended_support_costs_more_and_warns(catalog: Catalog) -> None:
    p = plan_of(catalog, cluster(storage=[], scheduler={**K8S, "version": "1.33"}))
    assert p.kubernetes is not None
    assert p.kubernetes.support == "extended"
    assert p.kubernetes.control_plane_usd_per_month == pytest.approx(0.60 * catalog.hours_per_month)
    assert any("extended support" in w and "1.36" in w for w in p.warnings)


def test_a_large_pool_is_split_into_node_groups_of_the_service_limit(catalog: Catalog) -> None:
    p = plan_of(catalog, cluster(storage=[], scheduler=K8S, pools=[pool(nodes=1000)]))
    assert p.kubernetes is not None
    groups = p.kubernetes.node_groups
    assert [(g.name, g.nodes, g.first_node) for g in groups] == [
        ("h100-0", 450, 0),
        ("h100-1", 450, 450),
        ("h100-2", 100, 900),
    ]
    assert {g.zone for g in groups} == {"us-east-1a"}


def test_aks_agent_pool_per_infiniband_domain(catalog: Catalog) -> None:
    p = plan_of(catalog, azure_cluster(storage=[], scheduler=K8S, pools=[azure_pool(nodes=250)]))
    k = p.kubernetes
    assert k is not None
    assert k.service == "aks"
    assert [(g.name, g.nodes, g.index) for g in k.node_groups] == [
        ("h100ib0", 100, 0),
        ("h100ib1", 100, 1),
        ("h100ib2", 50, 2),
    ]
    assert k.node_groups[0].resources["rdma/shared_ib"] == "1"
    assert "network-operator" in [a.id for a in k.addons]
    assert k.topologies[0].levels == ("kubernetes.azure.com/agentpool", "kubernetes.io/hostname")
    assert k.pod_cidr is not None
    assert k.service_cidr is not None
    taken = [ipaddress.ip_network(n.cidr) for n in p.networks]
    for cidr in (k.pod_cidr, k.service_cidr):
        assert not any(ipaddress.ip_network(cidr).overlaps(t) for t in taken)


def test_pod_range_does_not_follow_the_node_count(catalog: Catalog) -> None:
    """A new pod range replaces the cluster (clusterIpv4CidrBlock is ForceNew), so growing the cluster must keep it:
    the catalog's fixed size (GKE's default /14), with a /24 per node for every node (1,002 here)."""
    small = plan_of(catalog, gcp_cluster(storage=[], scheduler=K8S))
    big = plan_of(catalog, gcp_cluster(storage=[], scheduler=K8S, pools=[{**gcp_cluster()["pools"][0], "nodes": 1000}]))
    assert small.kubernetes is not None
    assert big.kubernetes is not None
    assert small.kubernetes.pod_cidr == big.kubernetes.pod_cidr == "100.64.0.0/14"
    assert catalog.kubernetes["gcp"].pod_cidr_prefix == 14
    assert ipaddress.ip_network(big.kubernetes.pod_cidr).num_addresses >= 256 * 1002


def test_gke_tpu_slices_are_node_pools_with_their_own_topology(catalog: Catalog) -> None:
    p = plan_of(catalog, gcp_cluster(storage=[], scheduler=K8S, pools=[tpu_pool()]))
    k = p.kubernetes
    assert k is not None
    assert [(g.name, g.accelerator_kind, g.topology) for g in k.node_groups] == [
        ("v5p-s0", "tpu", "tpu"),
        ("v5p-s1", "tpu", "tpu"),
    ]
    assert k.node_groups[0].taints[0].key == "google.com/tpu"
    assert k.node_groups[0].resources == {"google.com/tpu": "4"}
    assert [t.name for t in k.topologies] == ["tpu"]
    assert "gpu-operator" not in [a.id for a in k.addons]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"scheduler": {**K8S, "version": "1.28"}},
            't: scheduler.version: got "1.28"; Amazon EKS offers Kubernetes 1.34, 1.35, 1.36 in standard support and '
            "1.32, 1.33 in extended support",
        ),
        (
            {"pools": [pool(), pool(name="b", region="us-west-2", zone="us-west-2a")]},
            't: pools[1].region: got "us-west-2"; an Amazon EKS cluster lives in one region, us-east-1',
        ),
        (
            {"pools": [pool(instance_type="trn1.32xlarge")]},
            "Trainium needs the Neuron device plugin",
        ),
        (
            {"scheduler": {**K8S, "system_pool": {"instance_type": "m9z.huge"}}},
            "scheduler.system_pool.instance_type",
        ),
    ],
)
def test_plan_refusals_name_field_and_fix(catalog: Catalog, changes: dict[str, Any], expected: str) -> None:
    data = cluster(storage=[], scheduler=K8S)
    data.update(changes)
    found = plan_problems(catalog, data)
    assert any(expected in f for f in found), found


def test_aks_names_longer_than_twelve_characters_are_refused(catalog: Catalog) -> None:
    found = plan_problems(catalog, azure_cluster(storage=[], scheduler=K8S, pools=[azure_pool(name="h100-training")]))
    assert any("pools[0].name" in f and "12" in f and "shorter name" in f for f in found), found


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"scheduler": {**K8S, "endpoint": "public"}}, "scheduler.authorized_networks: a public API endpoint needs"),
        (
            {"scheduler": {**K8S, "authorized_networks": ["203.0.113.0/24"]}},
            "scheduler.authorized_networks: got",
        ),
        (
            {"scheduler": {**K8S, "endpoint": "public", "authorized_networks": ["0.0.0.0/0"]}},
            "scheduler.authorized_networks[0]: got",
        ),
        ({"pools": [pool(image="ami-0123456789abcdef0")]}, "pools[0].image: got"),
    ],
)
def test_spec_refusals(changes: dict[str, Any], expected: str) -> None:
    data = cluster(storage=[], scheduler=K8S)
    data.update(changes)
    found = _spec_problems(data)
    assert any(expected in f for f in found), found


def test_several_clouds_are_refused_with_the_reason() -> None:
    data = cluster(storage=[], scheduler=K8S)
    data["pools"].append(gcp_cluster()["pools"][0])
    found = _spec_problems(data)
    assert any("pools[1].provider" in f and "MultiKueue" in f and "one stack per cloud" in f for f in found), found


def test_storage_in_a_kubernetes_stack_warns_about_csi(catalog: Catalog) -> None:
    p = plan_of(catalog, cluster(scheduler=K8S))
    assert any("CSI driver" in w for w in p.warnings)


@pytest.mark.parametrize("namespace", ["default", "kube-system", "kueue-system", "gpu-operator"])
def test_system_namespaces_are_refused_for_the_jobs(catalog: Catalog, namespace: str) -> None:
    found = plan_problems(catalog, cluster(storage=[], scheduler={**K8S, "namespace": namespace}))
    assert any(f'scheduler.namespace: got "{namespace}"' in f and "pick your own name" in f for f in found), found


def test_the_slurm_paths_fabric_checks_hold_for_node_groups(catalog: Catalog) -> None:
    """Node groups come from the same planned pools: an EFA pool without a zone is refused on Kubernetes too."""
    slurm = plan_problems(catalog, cluster(storage=[], pools=[pool(zone=None)]))
    kube = plan_problems(catalog, cluster(storage=[], scheduler=K8S, pools=[pool(zone=None)]))
    efa = [p for p in slurm if "pools[0].zone" in p and "EFA" in p]
    assert efa
    assert efa == [p for p in kube if "pools[0].zone" in p and "EFA" in p]
