"""The on-prem plan against hand-computed figures and the published DGX SuperPOD H100 4-SU fabric.

By hand: DGX H100 10.2 kW (datasheet); 128 nodes = 1,305.6 kW IT, x PUE 1.25 = 1,632 kW; energy 1,632 kW x
$0.12 x 730 h = $142,963.20/month; hardware $380,000 / (4 x 8,760 h) = $10.8447/node-hour, x 128 x 730 h =
$1,013,333.33/month; carbon 1,632 kW x 730 h x 380 g = 452.72 t/month; racks of 41 kW hold 4 nodes: 32 racks.
"""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from tests.helpers import onprem_cluster, onprem_pool, plan_of, plan_problems, pool, site


def planned(catalog: Catalog, **changes: Any) -> ClusterPlan:
    return plan_of(catalog, onprem_cluster(**changes))


def test_owned_pool_cost_is_amortised_hardware_plus_energy(catalog: Catalog) -> None:
    p = planned(catalog).pools[0]
    assert p.onprem is not None
    assert (p.provider, p.region, p.market, p.network) == ("onprem", "fra1", "owned", "onprem-fra1")
    assert p.price is not None
    assert p.price.usd == pytest.approx(380000 / (4 * 8760))
    assert p.instances_usd_per_month == 1013333.33
    assert p.energy_usd_per_month == 142963.2
    assert p.cost_usd_per_month == 1156296.53
    assert (p.power_kw_it, p.power_kw_facility, p.co2e_t_per_month) == (1305.6, 1632.0, 452.72)


def test_a_node_hour_rate_replaces_the_purchase(catalog: Catalog) -> None:
    p = planned(catalog, sites=[site(hardware_cost={"usd_per_node_hour": 12.5})]).pools[0]
    assert p.instances_usd_per_month == 12.5 * 128 * 730
    assert p.price is not None
    assert p.price.basis == "site fra1 hardware_cost.usd_per_node_hour"


def test_no_hardware_cost_is_unpriced_never_zero(catalog: Catalog) -> None:
    plan = planned(catalog, sites=[site(hardware_cost=None)])
    p = plan.pools[0]
    assert p.instances_usd_per_month is None
    assert p.unpriced == ("instances",)
    assert plan.sites[0].hardware_usd_per_month is None
    assert plan.sites[0].cost_usd_per_month == 142963.2  # the energy, which is priced
    assert any("site fra1 gives no hardware_cost" in w for w in plan.warnings)


def test_the_site_carries_power_cost_carbon_racks_and_the_superpod_fabric(catalog: Catalog) -> None:
    s = planned(catalog).sites[0]
    assert (s.nodes, s.gpus, s.power_kw_it, s.power_kw_facility) == (128, 1024, 1305.6, 1632.0)
    assert (s.hardware_usd_per_month, s.energy_usd_per_month, s.cost_usd_per_month) == (
        1013333.33,
        142963.2,
        1156296.53,
    )
    assert s.controller_host == "slurm01"
    assert len(s.racks) == 32
    assert {(r.nodes, r.power_kw, r.limit_kw) for r in s.racks} == {(4, 40.8, 41.0)}
    (f,) = s.fabrics
    # DGX SuperPOD H100 RA, 4 SU: 32 leaves, 16 spines, 1,024 node-leaf and 1,024 leaf-spine cables (with no
    # slot kept for UFM; the RA's 127 nodes + UFM give 1,020 node-leaf cables)
    assert (f.switch, f.tiers, f.leaf_switches, f.spine_switches, f.core_switches) == ("qm9700", 2, 32, 16, 0)
    assert (f.cables_node_leaf, f.cables_leaf_spine, f.oversubscription_achieved) == (1024, 1024, 1.0)


def test_hosts_name_the_nodes_and_their_racks(catalog: Catalog) -> None:
    hosts = [{"name": f"dgx{i}", "address": f"10.200.1.{i + 1}", "rack": f"r{i // 2}"} for i in range(6)]
    plan = planned(catalog, pools=[onprem_pool(nodes=None, hosts=hosts)])
    assert plan.pools[0].node_names() == [f"dgx{i}" for i in range(6)]
    assert [(r.name, r.nodes) for r in plan.sites[0].racks] == [("r0", 2), ("r1", 2), ("r2", 2)]


def test_the_controller_runs_on_the_named_site_host(catalog: Catalog) -> None:
    plan = planned(catalog)
    c = plan.controller
    assert c is not None
    assert (c.provider, c.region, c.host, c.address, c.network) == (
        "onprem",
        "fra1",
        "slurm01",
        "10.200.0.5",
        "onprem-fra1",
    )
    assert plan.controller_host() == "slurm01"
    assert plan.networks == ()  # nothing of a cloud


def test_a_fabric_the_radix_cannot_reach_is_refused_with_what_would(catalog: Catalog) -> None:
    found = plan_problems(catalog, onprem_cluster(pools=[onprem_pool(nodes=9000)]))
    assert found == [
        "t: sites[0].fabric: fabric fra1: 9000 nodes x 8 rails = 72000 endpoints do not fit 3 tiers of qm9700 "
        "(radix 64 at 400G, shared rail planes, 1:1): they reach 65536 endpoints (8192 nodes); use at most 8192 "
        "nodes, or oversubscription 2:1 at the leaves, or separate rail planes (planes: per-rail; NIC r then "
        "reaches only NIC r of other nodes)"
    ]


def test_a_radix_the_catalog_has_no_switch_for_is_named(catalog: Catalog) -> None:
    found = plan_problems(
        catalog, onprem_cluster(sites=[site(fabric={"kind": "infiniband", "link_gbps": 400, "switch_radix": 48})])
    )
    assert found == [
        "t: sites[0].fabric.switch_radix: got 48; the catalog has no infiniband switch with 48 ports at 400 Gb/s; "
        "at that speed it has: qm9700 (64 x 400G); set switch_radix to one of those, or name a catalog switch "
        "under switch"
    ]


def test_a_cloud_network_block_may_not_overlap_a_site(catalog: Catalog) -> None:
    data = onprem_cluster(
        pools=[onprem_pool(), pool(name="p5")],
        sites=[site(network={"cidrs": ["10.8.0.0/16"], "vpn_endpoint": "203.0.113.10", "bgp_asn": 65010})],
        scheduler={"kind": "slurm", "controller": {"host": "slurm01", "address": "10.8.0.5"}},
    )
    found = plan_problems(catalog, data)
    assert (
        't: sites[0].network.cidrs[0]: got "10.8.0.0/16"; overlaps the aws/us-east-1 network 10.8.0.0/16 (its default '
        "block of network.supernet); give the site a range no cloud network uses, or pin the cloud network elsewhere "
        "under network.cidrs (aws/us-east-1: <cidr>)" in found
    ), found


# --- found by a new user's trial -----------------------------------------------------------------------------


def test_a_switch_of_the_other_kind_is_refused(catalog: Catalog) -> None:
    fabric = {"kind": "infiniband", "link_gbps": 400, "switch_radix": 64, "switch": "sn5600"}
    found = plan_problems(catalog, onprem_cluster(sites=[site(fabric=fabric)]))
    assert len(found) == 1
    assert found[0].startswith('t: sites[0].fabric.switch: got "sn5600"; '), found
    assert "is a roce switch but the fabric's kind is infiniband" in found[0]


def test_links_faster_than_the_nodes_nics_are_refused(catalog: Catalog) -> None:
    fabric = {"kind": "roce", "link_gbps": 800, "switch_radix": 64}
    found = plan_problems(catalog, onprem_cluster(sites=[site(fabric=fabric)], pools=[onprem_pool(nodes=64)]))
    assert found == [
        "t: sites[0].fabric.link_gbps: got 800; faster than the compute NICs of dgx-h100 (pool h100): 8 x 400 Gb/s "
        "per the catalog; set link_gbps to 400 or less"
    ]


def test_two_sites_say_the_wan_between_them_is_the_users(catalog: Catalog) -> None:
    ams = site(
        name="ams1",
        network={"cidrs": ["10.201.0.0/16"], "vpn_endpoint": "203.0.113.20", "bgp_asn": 65020},
    )
    plan = planned(
        catalog,
        sites=[site(), ams],
        pools=[
            onprem_pool(),
            onprem_pool(name="b200", site="ams1", instance_type="dgx-b200", nodes=16),
            pool(name="p5"),
        ],
    )
    assert {v.name for v in plan.vpns} == {"aws-us-east-1--fra1", "aws-us-east-1--ams1"}
    assert any("sites fra1, ams1 are not joined by aicluster" in w for w in plan.warnings)


def test_a_vpn_charge_takes_a_negotiated_rate(catalog: Catalog) -> None:
    overrides = {"overrides": [{"sku": "vpn-connection", "region": "us-east-1", "usd_per_hour": 0.04}]}
    plan = planned(catalog, pools=[onprem_pool(), pool(name="p5")], pricing=overrides)
    (vpn,) = plan.vpns
    (charge,) = vpn.charges
    assert (charge.usd_per_month, charge.basis) == (29.2, "pricing.overrides[0]")  # 0.04 x 730
    assert not any("pricing.overrides[0] matches no" in w for w in plan.warnings)
