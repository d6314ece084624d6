"""Rack packing: named racks group their hosts (across pools), unnamed hosts pack by the rack power limit."""

from __future__ import annotations

import pytest

from aicluster.plan.racks import PlannedRack, RackSlot, nodes_per_rack, plan_racks, plan_site_racks, racks_over_limit


def _summary(racks: list[PlannedRack]) -> list[tuple[str, int, float, tuple[str, ...], bool]]:
    return [(r.name, r.nodes, r.power_kw, r.pools, r.over_limit) for r in racks]


@pytest.mark.parametrize(
    ("nodes", "node_kw", "rack_kw", "per_rack"),
    [
        pytest.param(10, 10.2, 40, (3, 3, 3, 1), id="dgx-h100-40kw"),
        pytest.param(4, 14.3, 30, (2, 2), id="dgx-b200-30kw"),
        pytest.param(4, 10.2, 10.2, (1, 1, 1, 1), id="exactly-one-per-rack"),
        pytest.param(3, 10.2, 120, (3,), id="all-in-one"),
    ],
)
def test_unnamed_hosts_pack_floor_of_limit_over_node_power(
    nodes: int, node_kw: float, rack_kw: float, per_rack: tuple[int, ...]
) -> None:
    racks = plan_racks("gpu", nodes, node_kw, rack_kw)
    assert tuple(r.nodes for r in racks) == per_rack
    assert [r.name for r in racks] == [f"gpu-r{i:02d}" for i in range(1, len(per_rack) + 1)]
    assert all(r.nodes <= nodes_per_rack(node_kw, rack_kw) for r in racks)
    assert not racks_over_limit(racks)
    assert racks[0].power_kw == round(per_rack[0] * node_kw, 3)


def test_named_racks_group_their_hosts_and_report_the_one_over_its_limit() -> None:
    racks = plan_racks("gpu", 5, 10.2, 25, ["a1", "a1", "a2", "a2", "a2"])
    assert _summary(racks) == [
        ("a1", 2, 20.4, ("gpu",), False),
        ("a2", 3, 30.6, ("gpu",), True),
    ]
    assert [r.name for r in racks_over_limit(racks)] == ["a2"]
    assert all(r.named for r in racks)


def test_pools_of_one_site_share_a_named_rack_and_pack_the_rest_apart() -> None:
    slots = [
        RackSlot("h100", "row1-r7", 10.2),
        RackSlot("h100", None, 10.2),
        RackSlot("h100", None, 10.2),
        RackSlot("b200", "row1-r7", 14.3),
        RackSlot("b200", None, 14.3),
    ]
    racks = plan_site_racks(slots, 40)
    assert _summary(racks) == [
        ("row1-r7", 2, 24.5, ("h100", "b200"), False),
        ("h100-r01", 2, 20.4, ("h100",), False),
        ("b200-r01", 1, 14.3, ("b200",), False),
    ]


def test_packed_names_skip_a_rack_name_a_host_already_uses() -> None:
    racks = plan_racks("gpu", 3, 10.2, 10.2, ["gpu-r01", None, None])
    assert [r.name for r in racks] == ["gpu-r01", "gpu-r02", "gpu-r03"]
    assert [r.named for r in racks] == [True, False, False]


def test_a_node_above_the_rack_limit_gets_a_rack_of_its_own_and_is_reported() -> None:
    racks = plan_racks("gpu", 2, 14.3, 12)
    assert nodes_per_rack(14.3, 12) == 0
    assert [(r.nodes, r.over_limit) for r in racks] == [(1, True), (1, True)]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        pytest.param(lambda: plan_racks("gpu", 0, 10.2, 40), "needs at least one node", id="no-nodes"),
        pytest.param(lambda: plan_racks("gpu", 2, 10.2, 40, ["a"]), "1 host racks for 2 nodes", id="short-list"),
        pytest.param(lambda: plan_racks("gpu", 2, 10.2, 0), "rack_kw must be positive", id="zero-limit"),
        pytest.param(lambda: plan_racks("gpu", 2, 0, 40), "node_kw must be positive", id="zero-node"),
    ],
)
def test_bad_arguments_are_refused(call: object, match: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=match):
        call()
