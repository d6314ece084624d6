"""AWS and Azure rack-scale types in the plan: p6e-gb200 UltraServers bought one Capacity Block each in the Dallas
Local Zone, p6-b300's ENA-only card 0, and ND GB200/GB300 v6 racks as scale sets whose InfiniBand spans them."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.plan.network import aws_subnets
from tests.helpers import azure_cluster, azure_pool, cluster, plan_of, pool
from tests.helpers import plan_problems as located

BLOCKS = ["cr-0a1b2c3d4e5f60001", "cr-0a1b2c3d4e5f60002", "cr-0a1b2c3d4e5f60003"]
P6E: dict[str, Any] = {
    "name": "gb200",
    "instance_type": "p6e-gb200.36xlarge",
    "zone": "us-east-1-dfw-2a",
    "market": "capacity-block",
}
OVERRIDE = {"sku": "p6e-gb200.36xlarge", "market": "capacity-block", "usd_per_hour": 42.328}


def p6e_cluster(nodes: int = 36, **changes: Any) -> dict[str, Any]:
    """A Slurm cluster of p6e-gb200 UltraServers: one Capacity Block per 18 (or 9) instances."""
    blocks = BLOCKS[: -(-nodes // 18)]
    return cluster(
        pools=[pool(**{**P6E, "nodes": nodes, "reservations": blocks, **changes})],
        storage=[],
        pricing={"overrides": [OVERRIDE]},
    )


def plan_problems(catalog: Catalog, data: dict[str, Any]) -> list[str]:
    return [p.removeprefix("t: ") for p in located(catalog, data)]


def test_p6e_pool_is_one_capacity_block_per_ultraserver_in_the_local_zone(catalog: Catalog) -> None:
    plan = plan_of(catalog, p6e_cluster(36))
    p = plan.pools[0]
    assert (p.zone, p.cpu_arch, p.gpus, p.racks) == ("us-east-1-dfw-2a", "arm64", 144, 2)
    assert p.nvlink is not None
    assert p.nvlink.unit == "ultraserver"
    assert p.aws is not None
    assert [(g.name, g.first_node, g.nodes, g.capacity_reservation_id, g.ultraserver_type) for g in p.aws.groups] == [
        ("gb200-nvl0", 0, 18, BLOCKS[0], "u-p6e-gb200x72"),
        ("gb200-nvl1", 18, 18, BLOCKS[1], "u-p6e-gb200x72"),
    ]
    # the block is the placement: no placement group, and the pool-wide reservation is each group's own
    assert (p.aws.placement_group, p.aws.capacity_reservation_id, p.aws.market_type) == (
        "none",
        None,
        "capacity-block",
    )
    assert p.fabric_domains() == [("gb200-nvl0", range(0, 18)), ("gb200-nvl1", range(18, 36))]
    assert [(d.id, d.unit, d.gpus, d.whole) for d in plan.nvlink_domains] == [
        ("gb200-nvl0", "ultraserver", 72, True),
        ("gb200-nvl1", "ultraserver", 72, True),
    ]
    assert "/arm64/" in p.aws.image
    assert p.price is not None
    assert (p.price.usd, p.price.basis) == (42.328, "pricing.overrides[0]")


def test_p6e_nodes_get_the_ena_primary_and_one_efa_per_gpu(catalog: Catalog) -> None:
    p = plan_of(catalog, p6e_cluster(18)).pools[0]
    assert p.aws is not None
    layout = [(n.network_card_index, n.device_index, n.interface_type) for n in p.aws.nics]
    assert layout == [
        (0, 0, "interface"),
        (1, 0, "efa-only"),
        (5, 0, "efa-only"),
        (9, 0, "efa-only"),
        (13, 0, "efa-only"),
    ]
    assert p.aws.efa_devices == 4
    assert p.network_bandwidth_gbps == 1600


def test_a_half_ultraserver_is_its_own_x36_block(catalog: Catalog) -> None:
    plan = plan_of(catalog, p6e_cluster(27))
    aws = plan.pools[0].aws
    assert aws is not None
    assert [(g.nodes, g.ultraserver_type, g.capacity_reservation_id) for g in aws.groups] == [
        (18, "u-p6e-gb200x72", BLOCKS[0]),
        (9, "u-p6e-gb200x36", BLOCKS[1]),
    ]
    assert [d.whole for d in plan.nvlink_domains] == [True, False]


def test_one_ultraserver_may_name_its_block_as_reservation(catalog: Catalog) -> None:
    data = p6e_cluster(18, reservations=None, reservation=BLOCKS[0])
    aws = plan_of(catalog, data).pools[0].aws
    assert aws is not None
    assert [g.capacity_reservation_id for g in aws.groups] == [BLOCKS[0]]


def test_the_local_zone_routes_through_the_nat_gateway_of_the_regions_first_zone(catalog: Catalog) -> None:
    plan = plan_of(catalog, p6e_cluster(36))
    net = plan.networks[0]
    subnets = [(s.zone, s.role, s.cidr, s.nat_zone) for s in net.subnets]
    # the controller is in us-east-1a (a Local Zone hosts only the types offered there)
    assert plan.controller is not None
    assert plan.controller.zone == "us-east-1a"
    assert subnets == [
        ("us-east-1a", "compute", "10.8.0.0/19", None),
        ("us-east-1a", "public", "10.8.224.0/26", None),
        ("us-east-1-dfw-2a", "compute", "10.8.192.0/19", "us-east-1a"),  # after the region's 6 zones
    ]
    assert net.nat_gateways == 1
    assert any("us-east-1-dfw-2a, a Local Zone of us-east-1: opt the account into" in w for w in plan.warnings)


def test_a_regions_local_zones_leave_its_zones_subnets_where_they_were() -> None:
    zones = ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f")
    without = aws_subnets("10.8.0.0/16", zones, {"us-east-1c": 10})
    with_local = aws_subnets("10.8.0.0/16", zones, {"us-east-1c": 10}, ("us-east-1-dfw-2a",))
    assert with_local == without  # a Local Zone no pool uses changes nothing


def test_p6_b300_has_an_ena_only_card_0_and_16_efa_cards(catalog: Catalog) -> None:
    p = plan_of(catalog, cluster(pools=[pool(instance_type="p6-b300.48xlarge", nodes=2)], storage=[])).pools[0]
    assert p.aws is not None
    layout = [(n.network_card_index, n.device_index, n.interface_type) for n in p.aws.nics]
    assert layout == [(0, 0, "interface")] + [(c, 0, "efa-only") for c in range(1, 17)]
    assert (p.cpu_arch, p.nvlink, p.aws.placement_group) == ("x86_64", None, "create")
    assert p.price is not None
    assert (p.price.usd, p.price.source) == (142.416, "aws-karpenter-b300")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            p6e_cluster(20, reservations=BLOCKS[:2]),
            "pools[0].nodes: got 20; p6e-gb200.36xlarge is sold in whole NVLink domains of 18 nodes (72 GPUs: one "
            "UltraServer), or one 9-node UltraServer beside them; 20 nodes would split a domain, whose GPUs then share "
            "no NVLink with the rest: use 18 or 27",
            id="count-splits-an-ultraserver",
        ),
        pytest.param(
            cluster(pools=[pool(**{**P6E, "nodes": 18, "market": "on-demand"})], storage=[]),
            'pools[0].market: got "on-demand"; p6e-gb200.36xlarge is sold only as capacity-block; set market: '
            "capacity-block",
            id="market-other-than-capacity-block",
        ),
        pytest.param(
            p6e_cluster(36, reservations=BLOCKS),
            "pools[0].reservations: got 3; 36 p6e-gb200.36xlarge nodes are 2 UltraServers (2 x u-p6e-gb200x72 (18 "
            "instances each)), each bought as its own Capacity Block, but the pool names 3: list 2 block ids under "
            "reservations, one per UltraServer in that order, or change nodes to match the blocks you bought",
            id="more-blocks-than-ultraservers",
        ),
        pytest.param(
            p6e_cluster(27, reservations=None, reservation=BLOCKS[0]),
            'pools[0].reservation: got "cr-0a1b2c3d4e5f60001"; 27 p6e-gb200.36xlarge nodes are 2 UltraServers (1 x '
            "u-p6e-gb200x72 (18 instances) and 1 x u-p6e-gb200x36 (9 instances)), each bought as its own Capacity "
            "Block, but the pool names 1: list 2 block ids under reservations",
            id="one-block-for-two-ultraservers",
        ),
        pytest.param(
            p6e_cluster(18, reservations=[BLOCKS[0], BLOCKS[0]]),
            'pools[0].reservations[1]: got "cr-0a1b2c3d4e5f60001"; named twice: each UltraServer is its own Capacity '
            "Block, with its own id",
            id="a-block-named-twice",
        ),
        pytest.param(
            p6e_cluster(18, reservation=BLOCKS[1]),
            "pools[0].reservations: give the pool's Capacity Blocks once: reservation (one block) or reservations "
            "(one per UltraServer), not both",
            id="reservation-and-reservations",
        ),
        pytest.param(
            cluster(pools=[pool(market="reserved", reservations=BLOCKS[:1])], storage=[]),
            "pools[0].reservations: reservations names one Capacity Block per UltraServer, which only market "
            "capacity-block buys",
            id="reservations-on-another-market",
        ),
        pytest.param(
            cluster(pools=[pool(market="capacity-block", reservations=BLOCKS[:2])], storage=[]),
            "pools[0].reservations: one Capacity Block per UltraServer is for UltraServer types "
            "(p6e-gb200.36xlarge); p5.48xlarge is bought as one block: give it as reservation",
            id="reservations-for-a-type-without-ultraservers",
        ),
        pytest.param(
            p6e_cluster(18, zone="us-east-1a"),
            'pools[0].zone: got "us-east-1a"; p6e-gb200.36xlarge is not offered in us-east-1a per the catalog; '
            "offered in: us-east-1-dfw-2a",
            id="zone-without-the-type",
        ),
        pytest.param(
            p6e_cluster(18, zone=None),
            "pools[0].zone: p6e-gb200.36xlarge uses EFA, which does not cross Availability Zones: set the zone the "
            "pool runs in; zones of us-east-1: us-east-1-dfw-2a",
            id="no-zone",
        ),
        pytest.param(
            {**p6e_cluster(18, region="us-west-2", zone="us-west-2a"), "pricing": {}},
            'pools[0].region: got "us-west-2"; p6e-gb200.36xlarge is not offered in us-west-2 per the catalog; '
            "offered in: us-east-1",
            id="region-without-the-type",
        ),
        pytest.param(
            cluster(pools=[pool(zone="us-east-1-dfw-2a")], storage=[]),
            'pools[0].zone: got "us-east-1-dfw-2a"; p5.48xlarge is not offered in us-east-1-dfw-2a per the catalog; '
            "offered in: us-east-1a",
            id="local-zone-without-the-type",
        ),
        pytest.param(
            cluster(pools=[pool(zone="us-east-1-dfw-9a")], storage=[]),
            'pools[0].zone: got "us-east-1-dfw-9a"; not a zone of us-east-1; zones: us-east-1a, us-east-1b, '
            "us-east-1c, us-east-1d, us-east-1e, us-east-1f; Local Zones: us-east-1-dfw-2a",
            id="unknown-local-zone",
        ),
        pytest.param(
            p6e_cluster(18, image="dlami-base-gpu-ubuntu22"),
            'pools[0].image: got "dlami-base-gpu-ubuntu22"; catalog image dlami-base-gpu-ubuntu22 is built for '
            "x86_64, and these hosts are arm64; use one of dlami-base-gpu-arm64-ubuntu24",
            id="x86-image-on-grace",
        ),
    ],
)
def test_bad_rack_scale_input_names_the_field_and_the_fix(
    catalog: Catalog, data: dict[str, Any], expected: str
) -> None:
    found = plan_problems(catalog, data)
    assert any(p.startswith(expected) for p in found), found


def offered_in_eastus(sku: str, usd_per_hour: float) -> dict[str, object]:
    """The catalog lists no region for the ND GB200/GB300 v6 types: a stack says where it has them."""
    return {"sku": sku, "region": "eastus", "offered": True, "reason": "quota granted", "usd_per_hour": usd_per_hour}


def test_nd_gb200_racks_are_scale_sets_whose_infiniband_spans_them(catalog: Catalog) -> None:
    data = azure_cluster(
        pools=[azure_pool(name="gb200", instance_type="Standard_ND128isr_NDR_GB200_v6", nodes=36)],
        pricing={"overrides": [offered_in_eastus("Standard_ND128isr_NDR_GB200_v6", 48.0)]},
    )
    plan = plan_of(catalog, data)
    p = plan.pools[0]
    assert p.azure is not None
    assert [(s.name, s.first_node, s.nodes) for s in p.azure.scale_sets] == [
        ("gb200-nvl0", 0, 18),
        ("gb200-nvl1", 18, 18),
    ]
    assert (p.azure.infiniband, p.azure.infiniband_across_scale_sets, p.azure.single_placement_group) == (
        True,
        True,
        True,
    )
    assert p.ib_domains() == [("gb200", range(36))]  # one InfiniBand fabric across the racks
    assert p.fabric_domains() == [("gb200-nvl0", range(18)), ("gb200-nvl1", range(18, 36))]
    assert p.azure.image == "Canonical:ubuntu-24_04-lts:server-arm64:latest"
    assert (p.cpu_arch, p.network_bandwidth_gbps, p.racks) == ("arm64", 1600, 2)
    assert [d.unit for d in plan.nvlink_domains] == ["rack", "rack"]
    assert any("does not list Standard_ND128isr_NDR_GB200_v6 in eastus" in w for w in plan.warnings)


def test_nd_gb300_has_800_gb_per_gpu(catalog: Catalog) -> None:
    data = azure_cluster(
        pools=[azure_pool(name="gb300", instance_type="Standard_ND128isr_GB300_v6", nodes=18)],
        pricing={"overrides": [offered_in_eastus("Standard_ND128isr_GB300_v6", 60.0)]},
    )
    p = plan_of(catalog, data).pools[0]
    assert (p.network_bandwidth_gbps, p.accelerator, p.gpus) == (3200, "gb300", 72)
    assert p.azure is not None
    assert [s.nodes for s in p.azure.scale_sets] == [18]


def test_nd_gb200_without_a_rate_is_refused_with_the_override_to_add(catalog: Catalog) -> None:
    data = azure_cluster(pools=[azure_pool(name="gb200", instance_type="Standard_ND128isr_NDR_GB200_v6", nodes=18)])
    assert plan_problems(catalog, data) == [
        'pools[0].region: got "eastus"; Standard_ND128isr_NDR_GB200_v6 is not offered in eastus per the catalog; '
        "offered in: no region the catalog has a source for; if it is offered there to you, say so under "
        "pricing.overrides (sku: Standard_ND128isr_NDR_GB200_v6, region: eastus, offered: true, reason: ..., "
        "usd_per_hour: ...)"
    ]


def test_nd_gb200_in_a_count_that_splits_a_rack_is_refused(catalog: Catalog) -> None:
    data = azure_cluster(
        pools=[azure_pool(name="gb200", instance_type="Standard_ND128isr_NDR_GB200_v6", nodes=20)],
        pricing={"overrides": [offered_in_eastus("Standard_ND128isr_NDR_GB200_v6", 48.0)]},
    )
    assert plan_problems(catalog, data) == [
        "pools[0].nodes: got 20; Standard_ND128isr_NDR_GB200_v6 is sold in whole NVLink domains of 18 nodes (72 "
        "GPUs: one rack); 20 nodes would split a domain, whose GPUs then share no NVLink with the rest: use 18 or 36"
    ]
