"""Plan arithmetic against hand-computed figures.

Catalog figures used by hand: p5.48xlarge us-east-1 on-demand $55.04/h, spot $14.246/h, node power
10.2 kW (DGX H100 max); p4d.24xlarge spot $6.289/h, 6.5 kW; us-east-1 PUE 1.14, 379.069 gCO2e/kWh;
m7i.2xlarge $0.4032/h, 0.042 kW; FSx PERSISTENT_2 250 MB/s/TiB $0.21/GiB-month; gp3 $0.08/GiB-month;
NAT gateway $0.045/h; public IPv4 $0.005/h.
"""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from tests.helpers import cluster, gcp_cluster, gcp_pool, plan_of, plan_problems, pool, tpu_pool


def planned(catalog: Catalog, **changes: Any) -> ClusterPlan:
    return plan_of(catalog, cluster(**changes))


def problems(catalog: Catalog, **changes: Any) -> list[str]:
    return plan_problems(catalog, cluster(**changes))


# --- cost ----------------------------------------------------------------------------------------


def test_on_demand_cost_per_pool_hour_and_month(catalog: Catalog) -> None:
    p = planned(catalog, storage=[]).pools[0]
    assert p.price.usd == 55.04
    assert p.instances_usd_per_month == 160716.8  # 4 x 55.04 x 730
    assert p.volumes_usd_per_month == 160.0  # 4 x 500 GiB gp3 x 0.08
    assert p.cost_usd_per_month == 160876.8
    assert p.cost_usd_per_hour == round(4 * 55.04 + 160 / 730, 2)


def test_totals_add_pools_storage_controller_and_network(catalog: Catalog) -> None:
    cp = planned(catalog)
    fsx_month = 48000 * 0.21  # "48 TiB" is FSx's 48,000 GiB size
    ctl_month = 0.4032 * 730 + 100 * 0.08  # instance + 100 GiB root volume
    net_month = (0.045 + 0.005) * 730  # one NAT gateway and its public IPv4 address
    assert cp.networks[0].cost_usd_per_month == round(net_month, 2)
    expected = 160876.8 + fsx_month + ctl_month + net_month
    assert cp.totals.cost_usd_per_month == pytest.approx(expected, abs=0.02)
    assert cp.totals.cost_usd_per_hour == pytest.approx(expected / 730, abs=0.02)


def test_spot_pools_use_the_spot_rate(catalog: Catalog) -> None:
    p = planned(catalog, pools=[pool(instance_type="p4d.24xlarge", nodes=10, market="spot")]).pools[0]
    assert p.price.basis == "catalog spot us-east-1"
    assert p.instances_usd_per_month == round(10 * 6.289 * 730, 2)


@pytest.mark.parametrize(
    ("data", "sku", "region", "market"),
    [
        pytest.param(
            cluster(pools=[pool(market="capacity-block", reservation="cr-0123abcd")]),
            "p5.48xlarge",
            "us-east-1",
            "capacity-block",
            id="aws-capacity-block",
        ),
        pytest.param(
            gcp_cluster(pools=[gcp_pool(market="spot")], storage=[]),
            "a3-megagpu-8g",
            "us-central1",
            "spot",
            id="gcp-spot",
        ),
        pytest.param(
            gcp_cluster(pools=[gcp_pool(market="flex-start")], storage=[]),
            "a3-megagpu-8g",
            "us-central1",
            "flex-start",
            id="gcp-flex-start",
        ),
    ],
)
def test_a_market_without_its_own_catalog_rate_is_unpriced_never_costed_at_on_demand(
    catalog: Catalog, data: dict[str, Any], sku: str, region: str, market: str
) -> None:
    """One rule for every market: no catalog rate of its own means unpriced and named, with the override line."""
    cp = plan_of(catalog, data)
    p = cp.pools[0]
    assert p.price is None
    assert p.instances_usd_per_month is None
    assert f"pool {p.name}: {p.nodes} x {sku} {market}" in cp.totals.unpriced
    assert not any("costed at the on-demand rate" in w for w in cp.warnings)
    (warning,) = [w for w in cp.warnings if f"no {market} price for {sku}" in w]
    assert warning.endswith(
        f"add your rate under pricing.overrides (sku: {sku}, region: {region}, market: {market}, usd_per_hour: ...)"
    )


@pytest.mark.parametrize(
    ("overrides", "market", "expected"),
    [
        pytest.param([{"sku": "p5.48xlarge", "usd_per_hour": 40.0}], "on-demand", 40.0, id="any-market"),
        pytest.param(
            [
                {"sku": "p5.48xlarge", "usd_per_hour": 40.0},
                {"sku": "p5.48xlarge", "market": "reserved", "usd_per_hour": 30.0},
            ],
            "reserved",
            30.0,
            id="most-specific-wins",
        ),
        pytest.param(
            [{"sku": "p5.48xlarge", "region": "us-west-2", "usd_per_hour": 1.0}], "on-demand", 55.04, id="other-region"
        ),
    ],
)
def test_negotiated_rates_override_list_prices(
    catalog: Catalog, overrides: list[dict[str, Any]], market: str, expected: float
) -> None:
    p = planned(catalog, pools=[pool(market=market)], pricing={"overrides": overrides}).pools[0]
    assert p.price.usd == expected


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        pytest.param(
            {"sku": "p5.48xlarge", "usd_per_gib_month": 1.0},
            "pricing.overrides[0].usd_per_gib_month: got 1.0; p5.48xlarge is an instance type: give usd_per_hour",
            id="unit-for-instance",
        ),
        pytest.param(
            {"sku": "fsx-lustre/PERSISTENT_2/250", "usd_per_hour": 1.0},
            "pricing.overrides[0].usd_per_hour: got 1.0; fsx-lustre/PERSISTENT_2/250 is a storage tier: give "
            "usd_per_gib_month",
            id="unit-for-storage",
        ),
        pytest.param(
            {"sku": "fsx-lustre/PERSISTENT_2/250", "market": "spot", "usd_per_gib_month": 0.1},
            'pricing.overrides[0].market: got "spot"; storage has no market; drop it',
            id="market-for-storage",
        ),
        pytest.param(
            {"sku": "p5.48xlarge", "region": "us-east1", "usd_per_hour": 1.0},
            'pricing.overrides[0].region: got "us-east1"; the catalog has no aws region of that name '
            '(did you mean "us-east-1"?)',
            id="bad-region",
        ),
    ],
)
def test_overrides_that_could_never_apply_are_errors(catalog: Catalog, override: dict[str, Any], expected: str) -> None:
    assert problems(catalog, pricing={"overrides": [override]}) == [f"t: {expected}"]


def test_override_that_matches_nothing_is_warned(catalog: Catalog) -> None:
    cp = planned(catalog, pricing={"overrides": [{"sku": "p4d.24xlarge", "usd_per_hour": 10.0}]})
    assert (
        "pricing.overrides[0] matches no pool, file system, controller, disk or network charge of this cluster"
        in cp.warnings
    )


def test_storage_price_override(catalog: Catalog) -> None:
    fs = planned(
        catalog, pricing={"overrides": [{"sku": "fsx-lustre/PERSISTENT_2/250", "usd_per_gib_month": 0.1}]}
    ).filesystems[0]
    assert fs.cost_usd_per_month == 4800.0  # 48,000 GiB x 0.1


# --- power, carbon, racks -------------------------------------------------------------------------


def test_pools_carry_the_catalogs_cpu_topology(catalog: Catalog) -> None:
    cp = planned(catalog, pools=[pool(), pool(name="sweep", instance_type="p4d.24xlarge", zone="us-east-1b")])
    p5, p4d = cp.pools
    assert p5.cpu_topology == catalog.instance_types[("aws", "p5.48xlarge")].cpu_topology
    assert (p5.cpu_topology.sockets, p5.cpu_topology.threads_per_core) == (None, 2)  # sockets unpublished
    t = p4d.cpu_topology
    assert (t.sockets, t.cores_per_socket, t.threads_per_core) == (2, 24, 2)
    assert p4d.vcpus_per_node == 96


def test_power_it_facility_and_carbon(catalog: Catalog) -> None:
    p = planned(catalog).pools[0]
    assert p.power_kw_it == 40.8  # 4 x 10.2
    assert p.power_kw_facility == 46.51  # x PUE 1.14
    assert p.co2e_t_per_month == round(40.8 * 1.14 * 730 * 379.069 / 1e6, 2)


def test_racks_at_rack_kw(catalog: Catalog) -> None:
    p = planned(catalog, budgets={"rack_kw": 40}, pools=[pool(nodes=384)]).pools[0]
    assert p.nodes_per_rack == 3  # floor(40 / 10.2)
    assert p.racks == 128


def test_no_racks_without_rack_kw(catalog: Catalog) -> None:
    assert planned(catalog).totals.racks is None


def test_rack_too_small_for_one_node(catalog: Catalog) -> None:
    assert problems(catalog, budgets={"rack_kw": 8}) == [
        "t: budgets.rack_kw: got 8.0; one p5.48xlarge node draws up to 10.2 kW, more than a whole rack; "
        "raise rack_kw to at least 10.2"
    ]


def test_bf16_peak(catalog: Catalog) -> None:
    assert planned(catalog).pools[0].bf16_pflops == 31.65  # 32 x 989 TFLOP/s


# --- storage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tib", "gib"),
    [
        pytest.param(1, 1200, id="one-tib-rounds-up"),
        pytest.param(1.17, 1200, id="just-under-first"),
        pytest.param(1.2, 1200, id="fsx-1.2-tib"),
        pytest.param(2, 2400, id="two-tib-rounds-up"),
        pytest.param(2.4, 2400, id="fsx-2.4-tib"),
        pytest.param(48, 48000, id="fsx-48-tib"),
        pytest.param(50, 52800, id="50-tib-rounds-up"),
        pytest.param(1024, 1048800, id="1-pib"),
    ],
)
def test_lustre_capacity_rounds_up_to_valid_fsx_sizes(catalog: Catalog, tib: float, gib: int) -> None:
    st = {"name": "s", "kind": "lustre", "capacity_tib": tib, "throughput_mb_s_per_tib": 250, "mount": "/fsx"}
    fs = planned(catalog, storage=[st]).filesystems[0]
    assert fs.capacity_gib == gib
    assert fs.rounding is not None


def test_rounding_is_explained_and_throughput_follows_capacity(catalog: Catalog) -> None:
    fs = planned(catalog).filesystems[0]
    assert fs.rounding == (
        "48 TiB taken as the 48000 GiB size, which fsx-lustre calls 48 TiB (1152 GiB less than 48 x 1,024)"
    )
    assert fs.throughput_mb_s == round(48000 / 1024 * 250, 1)
    other = planned(
        catalog, storage=[{"name": "s", "kind": "lustre", "capacity_tib": 50, "mount": "/fsx"}]
    ).filesystems[0]
    assert other.rounding == (
        "50 TiB (51200 GiB) rounded up to 52800 GiB: fsx-lustre PERSISTENT_2 sizes are 1200 GiB or "
        "multiples of 2400 GiB"
    )
    assert fs.zone == "us-east-1a"


def test_lustre_throughput_must_be_a_tier(catalog: Catalog) -> None:
    st = {"name": "s", "kind": "lustre", "capacity_tib": 10, "throughput_mb_s_per_tib": 300, "mount": "/fsx"}
    assert problems(catalog, storage=[st]) == [
        "t: storage[0].throughput_mb_s_per_tib: got 300; not a fsx-lustre throughput tier; allowed: 125, 250, 500, 1000"
    ]


def test_nfs_maps_to_efs(catalog: Catalog) -> None:
    fs = planned(catalog, storage=[{"name": "home", "kind": "nfs", "capacity_tib": 2, "mount": "/shared"}]).filesystems[
        0
    ]
    assert (fs.service, fs.capacity_gib) == ("efs", 2048)


# --- catalog checks ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"pools": [pool(instance_type="p5.48xlarg")]},
            'pools[0].instance_type: got "p5.48xlarg"; the catalog has no aws instance type of that name',
            id="unknown-instance-type",
        ),
        pytest.param(
            {"pools": [pool(region="us-east-9", zone="us-east-9a")]},
            'pools[0].region: got "us-east-9"; the catalog has no aws region of that name',
            id="unknown-region",
        ),
        pytest.param(
            {"pools": [pool(region="eu-west-1", zone="eu-west-1a")]},
            'pools[0].region: got "eu-west-1"; p5.48xlarge is not offered in eu-west-1 per the catalog; offered in: '
            "us-east-1, us-east-2",
            id="not-offered-in-region",
        ),
        pytest.param(
            {"pools": [pool(zone="us-east-1q")]},
            'pools[0].zone: got "us-east-1q"; not a zone of us-east-1; zones: us-east-1a',
            id="unknown-zone",
        ),
        pytest.param(
            {"pools": [pool(zone=None)]},
            "pools[0].zone: p5.48xlarge uses EFA, which does not cross Availability Zones: set the zone the pool runs "
            "in; zones of us-east-1: us-east-1a",
            id="efa-without-zone",
        ),
        pytest.param(
            {"pools": [pool(instance_type="trn1.32xlarge")]},
            "pools[0].image: the catalog has no default image for trn1.32xlarge (trainium)",
            id="trainium-needs-an-image",
        ),
        pytest.param(
            {"pricing": {"overrides": [{"sku": "p5.48xlage", "usd_per_hour": 1}]}},
            'pricing.overrides[0].sku: got "p5.48xlage"; not an instance type, storage tier or service (disk, NAT '
            'gateway, public address) in the catalog (did you mean "p5.48xlarge"?)',
            id="unknown-override-sku",
        ),
        pytest.param(
            {"scheduler": {"kind": "kubernetes", "version": "1.30"}},
            'scheduler.version: got "1.30"; Amazon EKS offers Kubernetes 1.34, 1.35, 1.36 in standard support',
            id="kubernetes-version-not-offered",
        ),
    ],
)
def test_catalog_rules_name_field_value_and_fix(catalog: Catalog, changes: dict[str, Any], expected: str) -> None:
    found = problems(catalog, **changes)
    assert any(expected in f for f in found), found


# --- AWS: NICs and placement ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instance_type", "efa"),
    [
        pytest.param("p5.48xlarge", 32, id="p5"),
        pytest.param("p5en.48xlarge", 16, id="p5en"),
        pytest.param("p4d.24xlarge", 4, id="p4d"),
    ],
)
def test_every_efa_card_gets_an_interface(catalog: Catalog, instance_type: str, efa: int) -> None:
    p = planned(catalog, pools=[pool(instance_type=instance_type, market="spot")], storage=[]).pools[0]
    assert p.aws is not None
    nics = [(n.network_card_index, n.device_index, n.interface_type) for n in p.aws.nics]
    assert nics[0] == (0, 0, "interface")
    assert nics[1] == (0, 1, "efa-only")
    assert nics[2:] == [(card, 0, "efa-only") for card in range(1, efa)]
    assert sum(1 for n in nics if n[2] == "efa-only") == efa


@pytest.mark.parametrize(
    ("changes", "mode"),
    [
        pytest.param({}, "create", id="on-demand"),
        pytest.param({"market": "spot"}, "create", id="spot"),
        pytest.param({"market": "capacity-block", "reservation": "cr-0123abcd"}, "none", id="capacity-block"),
        pytest.param({"market": "reserved", "reservation": "cr-0123abcd"}, "none", id="targeted-reservation"),
        pytest.param({"market": "reserved"}, "create", id="open-reservation"),
        pytest.param({"placement_group": "my-pg"}, "existing", id="existing"),
    ],
)
def test_placement_group_rules(catalog: Catalog, changes: dict[str, Any], mode: str) -> None:
    p = planned(catalog, pools=[pool(**changes)]).pools[0]
    assert p.aws is not None
    assert p.aws.placement_group == mode


def test_reservation_targeting(catalog: Catalog) -> None:
    a = planned(catalog, pools=[pool(market="reserved", reservation="cr-0123abcd")]).pools[0].aws
    b = planned(catalog, pools=[pool(market="reserved")]).pools[0].aws
    assert a is not None
    assert b is not None
    assert (a.capacity_reservation_id, a.capacity_reservation_preference) == ("cr-0123abcd", None)
    assert (b.capacity_reservation_id, b.capacity_reservation_preference) == (None, "open")


# --- networks ------------------------------------------------------------------------------------


def test_networks_take_their_region_slot(catalog: Catalog) -> None:
    net = planned(catalog).networks[0]
    assert catalog.network_slot("aws", "us-east-1") == 8
    assert net.cidr == "10.8.0.0/16"
    # us-east-1a is zone 0: compute /19 at block 0, public /26 at the start of the last /19
    assert [(s.role, s.zone, s.cidr) for s in net.subnets] == [
        ("compute", "us-east-1a", "10.8.0.0/19"),
        ("public", "us-east-1a", "10.8.224.0/26"),
    ]


def cidrs(cp: ClusterPlan) -> dict[tuple[str, str, str], str]:
    return {(n.key, s.role, s.zone): s.cidr for n in cp.networks for s in n.subnets} | {
        (n.key, "vpc", ""): n.cidr for n in cp.networks
    }


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"pools": [pool(nodes=4000)]}, id="more-nodes"),
        pytest.param({"pools": [pool(name="a", zone="us-east-1c"), pool()]}, id="pool-prepended-in-another-zone"),
        pytest.param({"pools": [pool(), pool(name="b", zone="us-east-1b", market="spot")]}, id="pool-appended"),
        pytest.param(
            {"storage": [{"name": "s", "kind": "lustre", "zone": "us-east-1f", "capacity_tib": 1, "mount": "/s"}]},
            id="storage-in-another-zone",
        ),
    ],
)
def test_growing_a_stack_never_moves_an_existing_subnet(catalog: Catalog, change: dict[str, Any]) -> None:
    before = cidrs(planned(catalog, storage=[]))
    after = cidrs(planned(catalog, **change))
    assert before.items() <= after.items()


def test_pinned_network_block(catalog: Catalog) -> None:
    net = planned(catalog, network={"cidrs": {"aws/us-east-1": "172.20.0.0/16"}}).networks[0]
    assert net.cidr == "172.20.0.0/16"
    assert net.subnet("us-east-1a").cidr == "172.20.0.0/19"


def test_excluded_range_overlapping_the_slot_asks_for_a_pin(catalog: Catalog) -> None:
    found = problems(catalog, network={"exclude": ["10.8.0.0/16"]})
    assert found == [
        't: network.supernet: got "10.8.0.0/16"; the aws/us-east-1 network 10.8.0.0/16 (its default block of '
        "network.supernet) overlaps network.exclude[0] (10.8.0.0/16), a range you marked as in use; pin another "
        "block, clear of network.exclude, under network.cidrs (aws/us-east-1: <cidr>)"
    ]


def test_pinned_block_overlapping_an_excluded_range_names_both(catalog: Catalog) -> None:
    found = problems(
        catalog, network={"exclude": ["192.168.0.0/16", "172.20.8.0/24"], "cidrs": {"aws/us-east-1": "172.20.0.0/16"}}
    )
    assert found == [
        't: network.cidrs.aws/us-east-1: got "172.20.0.0/16"; the aws/us-east-1 network 172.20.0.0/16 (pinned '
        "under network.cidrs) overlaps network.exclude[1] (172.20.8.0/24), a range you marked as in use; pin "
        "another block, clear of network.exclude, under network.cidrs (aws/us-east-1: <cidr>)"
    ]


def test_small_supernet_without_the_slot_asks_for_a_pin(catalog: Catalog) -> None:
    found = problems(catalog, network={"supernet": "10.0.0.0/14"})
    assert any("no fixed block for aws/us-east-1" in f and "network.cidrs" in f for f in found), found


def test_a_zone_that_outgrows_its_subnet_is_an_error_not_a_move(catalog: Catalog) -> None:
    found = problems(catalog, pools=[pool(nodes=7000)])
    assert any(
        "zone us-east-1a needs 8,821 addresses" in f and f.endswith("spread the pools over more zones") for f in found
    ), found


def test_one_region_per_provider_until_peering_exists(catalog: Catalog) -> None:
    found = problems(catalog, pools=[pool(), pool(name="west", region="us-west-2", zone="us-west-2a")], storage=[])
    assert found == [
        't: pools[1].region: got "us-west-2"; the cluster already has its aws network in us-east-1 (pools[0].region); '
        "networks in several regions of one provider need peering, which aicluster does not build yet: keep the "
        "aws pools, storage and controller in one region, or split the cluster into two stacks"
    ]


def test_pin_for_an_unused_network(catalog: Catalog) -> None:
    found = problems(catalog, network={"cidrs": {"aws/us-west-2": "10.50.0.0/16"}})
    assert any("network.cidrs.aws/us-west-2" in f and "no pool, file system or controller uses" in f for f in found)


# --- purity ---------------------------------------------------------------------------------------


def test_plan_is_deterministic_and_json_round_trips(catalog: Catalog) -> None:
    a, b = planned(catalog), planned(catalog)
    assert a == b
    assert ClusterPlan.model_validate_json(a.model_dump_json()) == a


def test_tags_carry_cluster_and_pool(catalog: Catalog) -> None:
    cp = planned(catalog)
    assert cp.tags == {"owner": "ml-platform", "cost-center": "4711", "aicluster:cluster": "llm-train"}
    assert cp.pools[0].tags["aicluster:pool"] == "h100"


def test_lustre_away_from_a_pool_is_warned(catalog: Catalog) -> None:
    st = {"name": "s", "kind": "lustre", "zone": "us-east-1b", "capacity_tib": 1, "mount": "/s"}
    cp = planned(catalog, storage=[st])
    assert any(w.startswith("s (fsx-lustre) is in us-east-1b; pool(s) h100 reach it across zones") for w in cp.warnings)
    assert cp.filesystems[0].client_zones == ("us-east-1a", "us-east-1b")


@pytest.mark.parametrize(
    ("image", "pinned"),
    [
        pytest.param(None, False, id="default-latest-ssm"),
        pytest.param("ami-0123456789abcdef0", True, id="ami"),
        pytest.param("resolve:ssm:/aws/service/x/ami-id:42", True, id="versioned-ssm"),
    ],
)
def test_image_pinning_is_reported(catalog: Catalog, image: str | None, pinned: bool) -> None:
    aws = planned(catalog, pools=[pool(image=image)]).pools[0].aws
    assert aws is not None
    assert aws.image_pinned is pinned


def test_bad_ami_id_is_refused(catalog: Catalog) -> None:
    found = problems(catalog, pools=[pool(image="ami-zz")])
    assert any('pools[0].image: got "ami-zz"; not an AMI id' in f for f in found), found


def test_carbon_total_includes_the_controller(catalog: Catalog) -> None:
    cp = planned(catalog, storage=[])
    assert cp.controller is not None
    assert cp.totals.co2e_t_per_month == round(cp.pools[0].co2e_t_per_month + cp.controller.co2e_t_per_month, 2)


# Issue 30 #2: an override prices what the catalog lacks; only an explicit `offered: true` (with its reason) says a
# type is offered where the catalog does not list it, and the plan warns that it took the stack's word for it.
P5_IN_FRANKFURT = pool(region="eu-central-1", zone="eu-central-1a")
NOT_IN_FRANKFURT = 't: pools[0].region: got "eu-central-1"; p5.48xlarge is not offered in eu-central-1 per the catalog'


@pytest.mark.parametrize(
    "override",
    [
        pytest.param({"sku": "p5.48xlarge", "usd_per_hour": 40.0}, id="every-region"),
        pytest.param({"sku": "p5.48xlarge", "region": "eu-central-1", "usd_per_hour": 40.0}, id="this-region"),
    ],
)
def test_a_price_override_does_not_make_a_type_offered(catalog: Catalog, override: dict[str, Any]) -> None:
    (problem,) = plan_problems(catalog, cluster(pools=[P5_IN_FRANKFURT], pricing={"overrides": [override]}))
    assert problem.startswith(NOT_IN_FRANKFURT)
    assert problem.endswith(
        "if it is offered there to you, say so under pricing.overrides (sku: p5.48xlarge, region: eu-central-1, "
        "offered: true, reason: ..., usd_per_hour: ...)"
    )


def test_offered_true_plans_a_type_the_catalog_does_not_list_and_says_whose_word_it_is(catalog: Catalog) -> None:
    said = {
        "sku": "p5.48xlarge",
        "region": "eu-central-1",
        "offered": True,
        "reason": "account team confirmed capacity",
        "usd_per_hour": 40.0,
    }
    cp = plan_of(catalog, cluster(pools=[P5_IN_FRANKFURT], pricing={"overrides": [said]}))
    assert cp.pools[0].instances_usd_per_month == round(cp.pools[0].nodes * 40.0 * 730, 2)
    assert (
        "pools[0] (h100): the catalog does not list p5.48xlarge in eu-central-1; planned as offered because "
        "pricing.overrides[0] says offered: true (account team confirmed capacity)"
    ) in cp.warnings


def test_offered_true_adds_a_zone_the_catalog_snapshot_lacks(catalog: Catalog) -> None:
    data = gcp_cluster(pools=[gcp_pool(zone="us-central1-f")], storage=[])
    (problem,) = plan_problems(catalog, data)
    assert "a3-megagpu-8g is not offered in us-central1-f per the catalog" in problem
    said = {
        "sku": "a3-megagpu-8g",
        "region": "us-central1",
        "offered": True,
        "zones": ["us-central1-f"],
        "reason": "reservation in us-central1-f",
    }
    cp = plan_of(catalog, {**data, "pricing": {"overrides": [said]}})
    assert cp.pools[0].zone == "us-central1-f"
    assert cp.pools[0].price is not None
    assert cp.pools[0].price.basis == "catalog on-demand us-central1"
    assert (
        "pools[0] (h100): the catalog does not list a3-megagpu-8g in us-central1-f; planned as offered because "
        "pricing.overrides[0] says offered: true (reservation in us-central1-f)"
    ) in cp.warnings


def test_a_tpu_price_override_does_not_make_the_generation_offered(catalog: Catalog) -> None:
    data = gcp_cluster(
        pools=[tpu_pool(region="us-west1", zone="us-west1-a")],
        storage=[],
        pricing={"overrides": [{"sku": "tpu-v5p", "usd_per_hour": 3.0}]},
    )
    assert any("TPU v5p is not offered in us-west1" in p for p in plan_problems(catalog, data))


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        pytest.param(
            {"sku": "p5.48xlarge", "offered": True, "reason": "r", "usd_per_hour": 1.0},
            "offered: true needs the region it is offered in",
            id="offered-without-region",
        ),
        pytest.param(
            {"sku": "p5.48xlarge", "region": "eu-central-1", "offered": True, "usd_per_hour": 1.0},
            "offered: true needs a reason",
            id="offered-without-reason",
        ),
        pytest.param(
            {"sku": "a3-megagpu-8g", "region": "us-central1", "zones": ["us-central1-f"], "usd_per_hour": 1.0},
            "zones and reason go with offered: true",
            id="zones-without-offered",
        ),
        pytest.param(
            {"sku": "ebs-gp3", "region": "us-east-1", "offered": True, "reason": "r", "usd_per_gib_month": 0.1},
            "ebs-gp3 is not an instance type or TPU generation: only those are offered per region; drop offered",
            id="offered-for-a-service",
        ),
    ],
)
def test_availability_needs_offered_true_with_region_and_reason(
    catalog: Catalog, override: dict[str, Any], expected: str
) -> None:
    problems = plan_problems(catalog, cluster(pricing={"overrides": [override]}))
    assert any(expected in p for p in problems), problems
