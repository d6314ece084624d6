"""DGX SuperPOD shapes at an owned site: NVL72 racks (GB200, GB300) and DGX B300 on the planner's fat tree, with
one rail per compute NIC of the node, checked against the reference architectures' published counts where there are
some; a pool that is not a whole number of scalable units is advised, never refused."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import Catalog
from tests.helpers import onprem_cluster, onprem_pool, plan_of, plan_problems, site

NDR = {"kind": "infiniband", "link_gbps": 400, "switch_radix": 64}  # Quantum-2 QM9700
XDR = {"kind": "infiniband", "link_gbps": 800, "switch_radix": 144}  # Quantum-X800 Q3400


def superpod(instance_type: str, nodes: int, fabric: dict[str, Any], **power: Any) -> dict[str, Any]:
    return onprem_cluster(
        sites=[
            site(
                network={"cidrs": ["10.192.0.0/12"], "vpn_endpoint": "203.0.113.10", "bgp_asn": 65010},
                power={"pue": 1.15, "usd_per_kwh": 0.08, "rack_kw": 60, "max_kw": 100_000, **power},
                fabric=fabric,
            )
        ],
        pools=[onprem_pool(name="gb", instance_type=instance_type, nodes=nodes)],
    )


@pytest.mark.parametrize(
    ("instance_type", "nodes", "fabric", "power", "shape"),
    [
        # GB200 SU: 8 racks x 18 trays x 4 ConnectX-7 rails = 576 NDR endpoints; the RA publishes no leaf/spine
        # counts, so these are the planner's (leaf groups of 32 trays, 5 groups for 144)
        pytest.param("dgx-gb200-nvl72", 144, NDR, {"liquid_rack_kw": 140}, (4, 2, 20, 16, 0, 576), id="gb200-1su"),
        # GB300: 4 ConnectX-8 rails at 800G on Quantum-X800: 2 SUs fill 4 leaf groups of 72 trays exactly
        pytest.param("gb300-nvl72", 288, XDR, {"liquid_rack_kw": 150}, (4, 2, 16, 8, 0, 1152), id="gb300-2su"),
        # DGX B300 on XDR: the B300-XDR SuperPOD RA's table (1 SU = 72 DGX: 8 leaf, 4 spine; 4 SU: 32, 18; 8 SU:
        # 64, 36; node-leaf cables = GPUs)
        pytest.param("dgx-b300", 72, XDR, {}, (8, 2, 8, 4, 0, 576), id="b300-xdr-1su"),
        pytest.param("dgx-b300", 288, XDR, {}, (8, 2, 32, 18, 0, 2304), id="b300-xdr-4su"),
        pytest.param("dgx-b300", 576, XDR, {}, (8, 2, 64, 36, 0, 4608), id="b300-xdr-8su"),
        # 64 GB200 racks (4,608 GPUs) outgrow two tiers of radix 64 (2,048 endpoints): a core layer
        pytest.param(
            "dgx-gb200-nvl72", 1152, NDR, {"liquid_rack_kw": 140}, (4, 3, 144, 160, 128, 4608), id="gb200-8su"
        ),
    ],
)
def test_the_fabric_has_a_rail_per_compute_nic_of_the_node(
    catalog: Catalog,
    instance_type: str,
    nodes: int,
    fabric: dict[str, Any],
    power: dict[str, Any],
    shape: tuple[int, ...],
) -> None:
    plan = plan_of(catalog, superpod(instance_type, nodes, fabric, **power))
    (f,) = plan.sites[0].fabrics
    assert (f.rails, f.tiers, f.leaf_switches, f.spine_switches, f.core_switches, f.cables_node_leaf) == shape
    assert f.kind == "rail-optimized"
    assert f.node_transceivers == nodes * f.rails  # single-port OSFP NICs: one transceiver per rail
    assert plan.warnings == ()


def test_nvl72_racks_come_from_the_rack_record_in_liquid_cooled_positions(catalog: Catalog) -> None:
    plan = plan_of(catalog, superpod("gb300-nvl72", 144, XDR, liquid_rack_kw=150))
    racks = plan.sites[0].racks
    assert len(racks) == 8
    assert {(r.nodes, r.limit_kw) for r in racks} == {(18, 150)}
    assert all(r.power_kw <= 142.02 for r in racks)  # 18 x 7.89 kW: the rack's 142 kW maximum, rounded per tray
    assert [d.rack for d in plan.nvlink_domains] == [f"gb-r{k:02d}" for k in range(1, 9)]
    assert plan.pools[0].nvlink is not None
    assert plan.pools[0].nvlink.scalable_units == 1


def test_a_gb300_rack_needs_a_liquid_position_for_its_142_kw(catalog: Catalog) -> None:
    (problem,) = plan_problems(catalog, superpod("gb300-nvl72", 18, XDR, liquid_rack_kw=140))
    assert problem == (
        "t: sites[0].power.liquid_rack_kw: got 140.0; a gb300-nvl72 rack draws up to 142 kW (pools[0] gb), more than "
        "the 140 kW site fra1 can deliver and cool per liquid-cooled rack: raise liquid_rack_kw to at least 142, or "
        "place the pool at a site that can"
    )


def test_a_pool_that_is_not_whole_scalable_units_is_advised_not_refused(catalog: Catalog) -> None:
    plan = plan_of(catalog, superpod("dgx-gb200-nvl72", 180, NDR, liquid_rack_kw=140))
    assert plan.pools[0].nvlink is not None
    assert plan.pools[0].nvlink.scalable_units == 1.25
    assert plan.warnings == (
        "pools[0] (gb): 10 dgx-gb200-nvl72 racks are 1.25 DGX SuperPOD scalable units of 8 racks (576 GPUs); the "
        "SuperPOD reference architecture builds a partial SU's fabric as a whole one (leaf switches and leaf-spine "
        "cables, the missing racks' ports left free), while the fabric planned here is sized for these 10 racks: 6 "
        "more make 2 whole SUs",
    )


def test_a_rack_short_of_one_su_says_one_su(catalog: Catalog) -> None:
    plan = plan_of(catalog, superpod("gb300-nvl72", 126, XDR, liquid_rack_kw=150))
    (warning,) = plan.warnings
    assert warning.endswith("sized for these 7 racks: 1 more make 1 whole SU")


def test_a_gb300_fabric_on_ndr_links_is_allowed_below_the_nics_speed(catalog: Catalog) -> None:
    """An 800G ConnectX-8 links at 400G to a Quantum-2 fabric: slower links are what a site may build."""
    plan = plan_of(catalog, superpod("gb300-nvl72", 144, NDR, liquid_rack_kw=150))
    assert plan.sites[0].fabrics[0].link_gbps == 400


def test_nvl72_links_faster_than_the_trays_nics_are_refused(catalog: Catalog) -> None:
    (problem,) = plan_problems(catalog, superpod("dgx-gb200-nvl72", 144, XDR, liquid_rack_kw=140))
    assert problem.startswith("t: sites[0].fabric.link_gbps: got 800; faster than the compute NICs of dgx-gb200-nvl72")
