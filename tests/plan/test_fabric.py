"""The fat-tree planner against the published DGX SuperPOD reference architectures and the radix limits.

Published figures: the hybrid reference, section 1.5 (NVIDIA DGX SuperPOD RAs for H100, B200, B300, B300-XDR).
"""

from __future__ import annotations

import pytest

from aicluster.catalog import Catalog, Switch
from aicluster.plan.fabric import FabricRefused, PlannedFabric, fabric_reach, plan_fabric

# H100 RA: SU = 32 DGX slots, one slot of the fabric holds the UFM appliance (4 leaf ports).
H100_UFM_PORTS = 4


def _qm9700(catalog: Catalog) -> Switch:
    sw = catalog.switch("qm9700")
    assert sw is not None
    return sw


def _counts(f: PlannedFabric) -> tuple[int, int, int, int, int, int]:
    return (
        f.leaf_switches,
        f.spine_switches,
        f.core_switches,
        f.cables_node_leaf,
        f.cables_leaf_spine,
        f.cables_spine_core,
    )


@pytest.mark.parametrize(
    ("su", "nodes", "published"),
    [
        pytest.param(1, 31, (8, 4, 0, 252, 256, 0), id="h100-1su"),
        pytest.param(2, 63, (16, 8, 0, 508, 512, 0), id="h100-2su"),
        pytest.param(3, 95, (24, 16, 0, 764, 768, 0), id="h100-3su"),
        pytest.param(4, 127, (32, 16, 0, 1020, 1024, 0), id="h100-4su"),
    ],
)
def test_h100_superpod_leaves_spines_and_cables_are_the_published_ones(
    catalog: Catalog, su: int, nodes: int, published: tuple[int, ...]
) -> None:
    """31 DGX per SU because one slot of the fabric is UFM's; its 4 ports are the +4 node-leaf cables."""
    f = plan_fabric(f"h100-{su}su", nodes, 8, _qm9700(catalog), reserved_ports=H100_UFM_PORTS)
    assert _counts(f) == published
    assert f.tiers == 2
    assert f.leaf_groups == su
    assert nodes * 8 == {1: 248, 2: 504, 3: 760, 4: 1016}[su]  # the RA's GPU column


def test_h100_4su_spines_take_two_links_per_leaf(catalog: Catalog) -> None:
    """RA consistency check: 32 leaves x 32 uplinks = 1,024 = 16 spines x 64 ports, 2 links per leaf-spine pair."""
    f = plan_fabric("h100-4su", 127, 8, _qm9700(catalog), reserved_ports=H100_UFM_PORTS)
    assert f.links_per_leaf_spine == 2
    assert f.leaf_switches * f.leaf_up_ports == f.spine_switches * f.radix == 1024


def test_h100_3su_builds_16_spines_because_12_do_not_divide_a_leafs_uplinks(catalog: Catalog) -> None:
    """The RA gives 16 spines at 3 SU, not the 12 that 768 uplinks / 64 ports would need: balanced uplinks."""
    f = plan_fabric("h100-3su", 95, 8, _qm9700(catalog), reserved_ports=H100_UFM_PORTS)
    assert f.spine_switches == 16
    assert f.leaf_up_ports % f.spine_switches == 0
    assert f.ports_free == 16 * 64 - 768 + 4  # spare spine ports + the empty half of UFM's slot


@pytest.mark.parametrize(
    ("su", "published", "tiers"),
    [
        pytest.param(2, (16, 8, 0, 512, 512, 0), 2, id="b200-2su"),
        pytest.param(4, (32, 16, 0, 1024, 1024, 0), 2, id="b200-4su"),
        pytest.param(8, (64, 32, 0, 2048, 2048, 0), 2, id="b200-8su"),
        pytest.param(16, (128, 128, 64, 4096, 4096, 4096), 3, id="b200-16su-core-tier"),
        pytest.param(64, (512, 512, 256, 16384, 16384, 16384), 3, id="b200-64su"),
    ],
)
def test_b200_superpod_counts_are_the_published_ones(
    catalog: Catalog, su: int, published: tuple[int, ...], tiers: int
) -> None:
    f = plan_fabric(f"b200-{su}su", su * 32, 8, _qm9700(catalog))
    assert _counts(f) == published
    assert f.tiers == tiers
    assert f.ports_free == 0  # full SUs of a non-blocking tree use every port


def test_b200_8su_is_exactly_the_two_tier_limit_and_16su_the_first_that_needs_a_core(catalog: Catalog) -> None:
    sw = _qm9700(catalog)
    at_8 = plan_fabric("b200-8su", 256, 8, sw)
    assert at_8.endpoints == at_8.max_endpoints == 2048 == 64**2 // 2
    with pytest.raises(FabricRefused):
        plan_fabric("b200-8su+1", 257, 8, sw, tiers=2)
    assert plan_fabric("b200-16su", 512, 8, sw).tiers == 3


@pytest.mark.parametrize(
    ("nodes", "leaves", "spines"),
    [
        pytest.param(72, 8, 4, id="1su"),
        pytest.param(576, 64, 36, id="8su"),
        pytest.param(1296, 144, 72, id="18su"),
    ],
)
def test_b300_xdr_superpod_counts_are_the_published_ones(
    catalog: Catalog, nodes: int, leaves: int, spines: int
) -> None:
    """B300-XDR (SU = 72 DGX, radix 144 XDR): 36 spines at 8 SU because 32 do not divide 72 uplinks."""
    sw = catalog.switch("q3400")
    assert sw is not None
    f = plan_fabric("b300-xdr", nodes, 8, sw)
    assert (f.leaf_switches, f.spine_switches, f.core_switches) == (leaves, spines, 0)
    assert f.cables_node_leaf == f.cables_leaf_spine == nodes * 8  # "= GPU count"


def test_b300_xdr_18su_is_the_two_tier_limit_at_radix_144(catalog: Catalog) -> None:
    sw = catalog.switch("q3400")
    assert sw is not None
    assert plan_fabric("b300-xdr", 1296, 8, sw).max_endpoints == 10368 == 144**2 // 2


@pytest.mark.parametrize(
    ("nodes", "leaves", "spines"),
    [
        pytest.param(64, 16, 8, id="1su"),
        pytest.param(256, 64, 32, id="4su"),
        pytest.param(1024, 256, 128, id="16su"),
    ],
)
def test_b300_superpod_counts_fit_radix_64_only_as_separate_rail_planes(
    catalog: Catalog, nodes: int, leaves: int, spines: int
) -> None:
    """INFERENCE, not a published statement: the B300 RA (SU = 64 DGX) lists 256 leaves and 128 spines at 16 SU
    without a core tier. With radix-64 switches that only fits as 8 separate rail planes of 32 leaves + 16 spines
    (1,024 GPUs each); a shared-spine fabric needs a core tier there. The RA's switch model is not in the
    reference table, so radix 64 is an assumption of this test."""
    sw = _qm9700(catalog)
    f = plan_fabric("b300", nodes, 8, sw, planes="per-rail")
    assert (f.leaf_switches, f.spine_switches, f.core_switches) == (leaves, spines, 0)
    assert f.cables_node_leaf == nodes * 8
    if nodes == 1024:
        assert plan_fabric("b300-shared", nodes, 8, sw).tiers == 3


@pytest.mark.parametrize(
    ("radix", "two", "three"),
    [
        pytest.param(40, 800, 16000, id="k40-hdr"),
        pytest.param(64, 2048, 65536, id="k64-ndr"),
        pytest.param(144, 10368, 746496, id="k144-xdr"),
    ],
)
def test_reach_is_k2_over_2_and_k3_over_4(radix: int, two: int, three: int) -> None:
    assert fabric_reach(radix, 1, 2) == fabric_reach(radix, 8, 2) == two
    assert fabric_reach(radix, 1, 3) == fabric_reach(radix, 8, 3) == three
    assert fabric_reach(radix, 8, 2, planes="per-rail") == 8 * two


def test_k64_two_tiers_take_256_eight_nic_nodes_and_refuse_the_257th(catalog: Catalog) -> None:
    sw = _qm9700(catalog)
    f = plan_fabric("k64", 256, 8, sw, tiers=2)
    assert (f.max_nodes, f.max_endpoints) == (256, 2048)
    with pytest.raises(FabricRefused) as caught:
        plan_fabric("k64", 257, 8, sw, tiers=2, alternatives=catalog.switches.values())
    msg = caught.value.message
    assert msg.startswith("fabric k64: 257 nodes x 8 rails = 2056 endpoints do not fit 2 tiers of qm9700")
    assert "they reach 2048 endpoints (256 nodes)" in msg
    assert "at most 256 nodes" in msg
    assert "oversubscription 2:1 at the leaves" in msg
    assert "separate rail planes" in msg
    assert "three tiers (a core layer)" in msg


def test_a_refusal_names_a_bigger_catalog_switch_that_fits(catalog: Catalog) -> None:
    """HDR: 101 nodes of 8 NICs exceed two tiers of QM8700 (k=40: 100 nodes); QM9700 has 128 ports at 200G."""
    hdr = catalog.switch("qm8700")
    assert hdr is not None
    assert plan_fabric("hdr", 100, 8, hdr).tiers == 2
    with pytest.raises(FabricRefused) as caught:
        plan_fabric("hdr", 101, 8, hdr, tiers=2, alternatives=catalog.switches.values())
    assert "a bigger switch (qm9700, radix 128 at 200G)" in caught.value.message
    assert "sn5600" not in caught.value.message  # RoCE is not a drop-in for an InfiniBand fabric


def test_three_tiers_refuse_beyond_k3_over_4(catalog: Catalog) -> None:
    with pytest.raises(FabricRefused, match=r"reach 65536 endpoints \(8192 nodes\)"):
        plan_fabric("too-big", 8193, 8, _qm9700(catalog))


def test_oversubscription_moves_ports_up_to_down_and_never_exceeds_the_ask(catalog: Catalog) -> None:
    sw = _qm9700(catalog)
    f = plan_fabric("3to1", 300, 8, sw, oversubscription=3)
    assert (f.leaf_down_ports, f.leaf_up_ports) == (48, 16)
    assert f.oversubscription_achieved == 3.0
    assert f.tiers == 2
    assert f.max_endpoints == 64 * 48
    odd = plan_fabric("1.5to1", 10, 8, sw, oversubscription=1.5)
    assert odd.oversubscription_achieved <= 1.5
    assert odd.leaf_down_ports + odd.leaf_up_ports == 64


def test_the_sn5600_plans_400g_roce_nics_on_its_128_port_breakout(catalog: Catalog) -> None:
    sw = catalog.switch("sn5600")
    assert sw is not None
    f = plan_fabric("roce", 1024, 8, sw, link_gbps=400)
    assert (f.radix, f.fabric, f.tiers) == (128, "roce", 2)
    assert f.max_endpoints == 128**2 // 2
    assert f.switch_transceivers == f.ports_used // 2  # twin-port cages, every port used
    native = plan_fabric("roce-800", 16, 8, sw)
    assert (native.radix, native.link_gbps) == (64, 800)


def test_a_link_speed_the_switch_lacks_is_refused_with_its_modes(catalog: Catalog) -> None:
    with pytest.raises(FabricRefused, match=r"switch qm8700 has no 400 Gb/s ports \(40 x 200G\)"):
        plan_fabric("x", 4, 8, catalog.switch("qm8700") or _qm9700(catalog), link_gbps=400)


def test_transceivers_count_twin_port_cages_on_switches_and_nodes(catalog: Catalog) -> None:
    """B200 2 SU: every leaf and spine port is used; NDR twin-port OSFP = 2 ports per switch transceiver; DGX
    nodes carry 4 twin-port cages for 8 NICs."""
    f = plan_fabric("b200-2su", 64, 8, _qm9700(catalog), node_ports_per_cage=2)
    assert f.ports_used == (16 + 8) * 64
    assert f.switch_transceivers == (16 + 8) * 32
    assert f.node_transceivers == 64 * 4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param({"nodes": 0}, "needs at least 1 node", id="no-nodes"),
        pytest.param({"oversubscription": 0.5}, "oversubscription 0.5 is below 1", id="under-1"),
        pytest.param({"rails": 0}, "needs at least 1 node and 1 rail", id="no-rails"),
    ],
)
def test_bad_arguments_are_refused_with_the_value_and_the_fix(
    catalog: Catalog, kwargs: dict[str, float], match: str
) -> None:
    args: dict[str, float] = {"nodes": 4, "rails": 8, "oversubscription": 1, **kwargs}
    with pytest.raises(FabricRefused, match=match):
        plan_fabric(
            "bad", int(args["nodes"]), int(args["rails"]), _qm9700(catalog), oversubscription=args["oversubscription"]
        )
