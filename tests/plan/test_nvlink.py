"""Rack-scale pools are planned in whole multi-node NVLink domains (aicluster/plan/nvlink.py): the domains, the
counts that would split one, the markets and images such types take, and owned racks that must be liquid-cooled."""

from __future__ import annotations

import pytest

from aicluster.catalog import Catalog
from aicluster.catalog.models import NvlinkDomain
from tests.helpers import gcp_cluster, gcp_pool, onprem_cluster, onprem_pool, plan_of, site
from tests.helpers import plan_problems as located


def plan_problems(catalog: Catalog, data: dict[str, object]) -> list[str]:
    """The problems as the user reads them, less the stack file's name ("t: ")."""
    return [p.removeprefix("t: ") for p in located(catalog, data)]


A4X = {"instance_type": "a4x-highgpu-4g", "region": "us-east4", "zone": "us-east4-b", "market": "reserved"}


def a4x_cluster(nodes: int, **changes: object) -> dict[str, object]:
    return gcp_cluster(pools=[gcp_pool(name="gb200", nodes=nodes, **{**A4X, **changes})], storage=[])


def gb200_site_cluster(nodes: int = 36, **power: object) -> dict[str, object]:
    return onprem_cluster(
        sites=[site(power={"pue": 1.15, "usd_per_kwh": 0.08, "rack_kw": 20, "max_kw": 1500, **power})],
        pools=[onprem_pool(name="gb200", instance_type="dgx-gb200-nvl72", nodes=nodes)],
    )


@pytest.mark.parametrize(
    ("sizes", "nodes", "want"),
    [
        pytest.param((18,), 36, [18, 18], id="whole-domains"),
        pytest.param((18,), 20, None, id="splits-a-domain"),
        pytest.param((9, 18), 27, [18, 9], id="aws-x72-and-x36"),
        pytest.param((9, 18), 9, [9], id="one-x36"),
        pytest.param((9, 18), 12, None, id="no-x36-of-3"),
    ],
)
def test_a_count_is_bought_in_whole_domains_or_a_unit_the_vendor_sells(
    sizes: tuple[int, ...], nodes: int, want: list[int] | None
) -> None:
    domain = NvlinkDomain(nodes=sizes[-1], unit="ultraserver", sizes=sizes)
    assert domain.split(nodes) == (tuple(want) if want is not None else None)


def test_a4x_pool_is_two_sub_blocks_with_their_nodes_in_the_plan(catalog: Catalog) -> None:
    plan = plan_of(catalog, a4x_cluster(36))
    pool = plan.pools[0]
    assert pool.cpu_arch == "arm64"
    assert pool.nvlink is not None
    assert (pool.nvlink.nodes_per_domain, pool.nvlink.gpus_per_domain, pool.nvlink.unit) == (18, 72, "subblock")
    assert [d.id for d in plan.nvlink_domains] == ["gb200-nvl0", "gb200-nvl1"]
    assert plan.nvlink_domains[1].nodes == tuple(f"gb200-{i:03d}" for i in range(18, 36))
    assert all(d.gpus == 72 and d.whole and d.rack is None for d in plan.nvlink_domains)
    assert pool.racks == 2
    # each domain is one compact placement policy asking for its sub-block
    assert pool.gcp is not None
    assert [(g.name, g.nodes, g.gpu_topology) for g in pool.gcp.groups] == [
        ("gb200-nvl0", 18, "1x72"),
        ("gb200-nvl1", 18, "1x72"),
    ]
    assert pool.gcp.groups[0].max_distance is None
    assert "arm64" in pool.gcp.image


def test_8_gpu_pools_have_no_nvlink_domains(catalog: Catalog) -> None:
    plan = plan_of(catalog, gcp_cluster())
    assert plan.nvlink_domains == ()
    assert plan.pools[0].nvlink is None
    assert plan.pools[0].cpu_arch == "x86_64"


def test_a_count_that_splits_a_domain_names_the_counts_that_do_not(catalog: Catalog) -> None:
    assert plan_problems(catalog, a4x_cluster(20)) == [
        "pools[0].nodes: got 20; a4x-highgpu-4g is sold in whole NVLink domains of 18 nodes (72 GPUs: one "
        "sub-block); 20 nodes would split a domain, whose GPUs then share no NVLink with the rest: use 18 or 36"
    ]


def test_market_and_split_are_reported_together(catalog: Catalog) -> None:
    problems = plan_problems(catalog, a4x_cluster(19, market="on-demand"))
    assert problems[0] == (
        'pools[0].market: got "on-demand"; a4x-highgpu-4g is sold only as reserved; set market: reserved'
    )
    assert problems[1].startswith("pools[0].nodes: got 19; ")
    assert len(problems) == 2


def test_an_x86_catalog_image_on_grace_hosts_is_refused(catalog: Catalog) -> None:
    assert plan_problems(catalog, a4x_cluster(18, image="ubuntu-accelerator-2404-nvidia-580")) == [
        'pools[0].image: got "ubuntu-accelerator-2404-nvidia-580"; catalog image ubuntu-accelerator-2404-nvidia-580 '
        "is built for x86_64, and these hosts are arm64; use one of ubuntu-accelerator-2404-arm64-nvidia-580"
    ]


def test_owned_nvl72_racks_are_their_domains_in_liquid_cooled_positions(catalog: Catalog) -> None:
    plan = plan_of(catalog, gb200_site_cluster(36, liquid_rack_kw=140))
    assert [(d.id, d.rack, len(d.nodes)) for d in plan.nvlink_domains] == [
        ("gb200-nvl0", "gb200-r01", 18),
        ("gb200-nvl1", "gb200-r02", 18),
    ]
    racks = plan.sites[0].racks
    assert [(r.name, r.nodes, r.limit_kw, r.over_limit) for r in racks] == [
        ("gb200-r01", 18, 140, False),
        ("gb200-r02", 18, 140, False),
    ]
    assert plan.pools[0].racks == 2


def test_a_site_without_liquid_cooling_refuses_nvl72_racks(catalog: Catalog) -> None:
    problems = plan_problems(catalog, gb200_site_cluster(18))
    assert problems == [
        "sites[0].power.liquid_rack_kw: pools[0] (gb200) is dgx-gb200-nvl72 racks, which are liquid-cooled and draw "
        "up to 120 kW each; site fra1 has no liquid cooling: give the power of its liquid-cooled rack positions "
        "(liquid_rack_kw: 120 or more), or place the pool at a site that has them"
    ]


def test_a_liquid_rack_position_below_the_racks_draw_is_refused(catalog: Catalog) -> None:
    (problem,) = plan_problems(catalog, gb200_site_cluster(18, liquid_rack_kw=100))
    assert problem.startswith("sites[0].power.liquid_rack_kw: got 100.0; a dgx-gb200-nvl72 rack draws up to 120 kW")
    assert "raise liquid_rack_kw to at least 120" in problem


def test_hosts_of_one_domain_must_share_one_rack(catalog: Catalog) -> None:
    data = gb200_site_cluster(18, liquid_rack_kw=140)
    hosts = [{"name": f"gb-{i:02d}", "address": f"10.200.3.{10 + i}", "rack": "r1"} for i in range(18)]
    hosts[17]["rack"] = "r2"
    pool = data["pools"][0]  # type: ignore[index]
    del pool["nodes"]
    pool["hosts"] = hosts
    (problem,) = plan_problems(catalog, data)
    assert problem.startswith("pools[0].hosts[0]: hosts 0-17 are NVLink domain gb200-nvl0, one dgx-gb200-nvl72 rack")
