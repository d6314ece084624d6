"""GCP in the plan: NIC layouts per machine type, placement groups, TPU slice shapes, GCP subnets and MTUs,
file-system rounding, and the cost arithmetic, checked against hand-computed figures."""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from aicluster.plan.network import usable
from tests.helpers import a4x_max_pool, gcp_cluster, gcp_pool, plan_of, plan_problems, pool, tpu_pool


def one_pool(catalog: Catalog, **changes: object) -> ClusterPlan:
    return plan_of(catalog, gcp_cluster(pools=[gcp_pool(**changes)], storage=[]))


@pytest.mark.parametrize(
    ("machine", "zone", "layout"),
    [
        pytest.param(
            "a3-highgpu-8g",
            "us-central1-a",
            [("compute", 0, "", "GVNIC")] + [("gpu", k, f"gpu-{k}", "GVNIC") for k in range(4)],
            id="a3-high-tcpx-4-gpu-nics",
        ),
        pytest.param(
            "a3-megagpu-8g",
            "us-central1-a",
            [("compute", 0, "", "GVNIC")] + [("gpu", k, f"gpu-{k}", "GVNIC") for k in range(8)],
            id="a3-mega-tcpxo-8-gpu-nics",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            "us-central1-b",
            [("compute", 0, "", "GVNIC"), ("gvnic", 0, "gvnic-1", "GVNIC")]
            + [("rdma", k, "rdma", "MRDMA") for k in range(8)],
            id="a3-ultra-2-gvnic-8-mrdma",
        ),
        pytest.param(
            "a4-highgpu-8g",
            "us-central1-b",
            [("compute", 0, "", "GVNIC"), ("gvnic", 0, "gvnic-1", "GVNIC")]
            + [("rdma", k, "rdma", "MRDMA") for k in range(8)],
            id="a4-2-gvnic-8-mrdma",
        ),
        pytest.param("a2-ultragpu-8g", "us-central1-a", [("compute", 0, "", "GVNIC")], id="a2-one-nic"),
    ],
)
def test_every_nic_of_the_machine_type_in_order(
    catalog: Catalog, machine: str, zone: str, layout: list[tuple[str, int, str, str]]
) -> None:
    p = plan_of(
        catalog,
        gcp_cluster(
            pools=[gcp_pool(instance_type=machine, zone=zone)],
            storage=[],
            pricing={"overrides": [{"sku": machine, "usd_per_hour": 80.0}]},
        ),
    )
    d = p.pools[0].gcp
    assert d is not None
    assert [(n.subnet_role, n.subnet_index, n.vpc, n.nic_type) for n in d.nics] == layout
    assert [n.index for n in d.nics] == list(range(len(layout)))
    assert d.on_host_maintenance == "TERMINATE"
    assert d.shielded_vm
    assert d.os_login


def test_a3_mega_network_has_eight_gpu_vpcs_at_mtu_8244(catalog: Catalog) -> None:
    (net,) = one_pool(catalog).networks
    assert net.cidr == "10.133.0.0/16"  # us-central1's fixed slot 133
    assert net.mtu == 8244
    assert [(v.name, v.mtu, v.subnets, v.firewall_internal) for v in net.vpcs] == [
        (f"gpu-{k}", 8244, (k,), True) for k in range(8)
    ]
    cidrs = {(s.role, s.index): s.cidr for s in net.subnets}
    assert cidrs[("compute", 0)] == "10.133.0.0/19"
    assert [cidrs[("gpu", k)] for k in range(8)] == [f"10.133.{128 + 8 * k}.0/21" for k in range(8)]
    nets = [ipaddress.IPv4Network(c) for c in cidrs.values()]
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])


def test_a3_ultra_gets_two_gvnic_vpcs_and_one_roce_vpc_in_its_zone(catalog: Catalog) -> None:
    p = plan_of(
        catalog,
        gcp_cluster(
            pools=[gcp_pool(instance_type="a3-ultragpu-8g", zone="us-central1-b", market="reserved", reservation="r1")],
            storage=[],
            pricing={"overrides": [{"sku": "a3-ultragpu-8g", "usd_per_hour": 61.0}]},
        ),
    )
    (net,) = p.networks
    assert net.mtu == 8896
    gvnic, rdma = net.vpcs
    assert (gvnic.name, gvnic.mtu, gvnic.firewall_internal) == ("gvnic-1", 8896, True)
    assert (rdma.name, rdma.mtu, rdma.subnets) == ("rdma", 8896, tuple(range(8)))
    assert rdma.network_profile_zone == "us-central1-b"
    assert rdma.firewall_internal is False  # a RoCE VPC accepts no firewall rules
    assert [net.role("rdma", k).cidr for k in range(8)] == [f"10.133.{192 + 8 * k}.0/21" for k in range(8)]  # type: ignore[union-attr]
    assert net.role("gvnic").cidr == "10.133.32.0/19"  # type: ignore[union-attr]


def test_a3_ultra_pools_of_one_region_share_the_roce_zone(catalog: Catalog) -> None:
    # The catalog lists A3 Ultra in one zone per region today; offer it in two to reach the rule.
    it = catalog.instance_types[("gcp", "a3-ultragpu-8g")]
    offerings = tuple(
        o.model_copy(update={"zones": ("us-central1-a", "us-central1-b")}) if o.region == "us-central1" else o
        for o in it.offerings
    )
    wider = dataclasses.replace(
        catalog,
        instance_types={**catalog.instance_types, ("gcp", it.name): it.model_copy(update={"offerings": offerings})},
    )
    ultra = {"instance_type": "a3-ultragpu-8g", "market": "reserved"}
    problems = plan_problems(
        wider,
        gcp_cluster(
            pools=[
                gcp_pool(name="a", zone="us-central1-b", reservation="r1", **ultra),
                gcp_pool(name="b", zone="us-central1-a", **ultra),
            ],
            storage=[],
            pricing={"overrides": [{"sku": "a3-ultragpu-8g", "usd_per_hour": 61.0}]},
        ),
    )
    assert any(
        p.startswith('t: pools[1].zone: got "us-central1-a"; pools[0] already puts the us-central1 RoCE')
        for p in problems
    ), problems


@pytest.mark.parametrize(
    ("nodes", "sizes", "distances"),
    [
        pytest.param(16, [16], [1], id="16-one-rack"),
        pytest.param(22, [22], [1], id="22-still-distance-1"),
        pytest.param(23, [23], [2], id="23-distance-2"),
        pytest.param(300, [300], [3], id="300-distance-3"),
        pytest.param(1500, [1500], [3], id="1500-one-policy"),
        pytest.param(3200, [1500, 1500, 200], [3, 3, 2], id="3200-split-at-1500"),
    ],
)
def test_compact_placement_groups_hold_at_most_1500_vms(
    catalog: Catalog, nodes: int, sizes: list[int], distances: list[int]
) -> None:
    # a /14 (pinned) so that 3,200 nodes fit the GPU NIC subnets (a /19 each)
    network = {"cidrs": {"gcp/us-central1": "10.128.0.0/14"}}
    p = plan_of(catalog, gcp_cluster(pools=[gcp_pool(nodes=nodes)], storage=[], network=network))
    d = p.pools[0].gcp
    assert d is not None
    assert d.placement == "compact"
    assert [g.nodes for g in d.groups] == sizes
    assert [g.max_distance for g in d.groups] == distances
    assert [g.first_node for g in d.groups] == [sum(sizes[:k]) for k in range(len(sizes))]
    assert [g.hostname_prefix for g in d.groups] == [f"h100-p{k}" for k in range(len(sizes))]
    assert [(name, len(r)) for name, r in p.pools[0].fabric_domains()] == [
        (f"h100-p{k}", s) for k, s in enumerate(sizes)
    ]
    if len(sizes) > 1:
        assert any("exceed one compact placement policy" in w for w in p.warnings)


def test_a2_uses_the_smaller_distance_2_limit(catalog: Catalog) -> None:
    p = one_pool(catalog, instance_type="a2-highgpu-8g", nodes=200)
    assert p.pools[0].gcp.groups[0].max_distance == 3  # type: ignore[union-attr]  # 150 at distance 2 off A3


def test_a3_ultra_on_a_reservation_relies_on_the_reservations_placement(catalog: Catalog) -> None:
    p = plan_of(
        catalog,
        gcp_cluster(
            pools=[
                gcp_pool(
                    instance_type="a3-ultragpu-8g",
                    zone="us-central1-b",
                    market="reserved",
                    reservation="h200/reservationBlocks/block-1",
                )
            ],
            storage=[],
            pricing={"overrides": [{"sku": "a3-ultragpu-8g", "usd_per_hour": 61.0}]},
        ),
    )
    d = p.pools[0].gcp
    assert d is not None
    assert d.placement == "reservation"
    assert all(g.max_distance is None for g in d.groups)
    assert d.reservation_affinity == "SPECIFIC_RESERVATION"
    assert d.reservation == "h200/reservationBlocks/block-1"
    assert d.boot_disk_type == "hyperdisk-balanced"


def test_reservations_take_compact_placement_without_max_distance(catalog: Catalog) -> None:
    d = one_pool(catalog, market="reserved", reservation="mega-res").pools[0].gcp
    assert d is not None
    assert d.placement == "compact"
    assert [g.max_distance for g in d.groups] == [None]
    assert "no max distance" in d.placement_reason


@pytest.mark.parametrize(
    ("changes", "model", "affinity", "placement"),
    [
        pytest.param({}, "STANDARD", "ANY_RESERVATION", "compact", id="on-demand"),
        pytest.param({"market": "spot"}, "SPOT", "NO_RESERVATION", "compact", id="spot"),
        pytest.param({"market": "flex-start"}, "FLEX_START", "NO_RESERVATION", "none", id="flex-start"),
        pytest.param({"market": "reserved"}, "STANDARD", "ANY_RESERVATION", "compact", id="reserved-any"),
        pytest.param({"compact_placement": False}, "STANDARD", "ANY_RESERVATION", "none", id="placement-off"),
    ],
)
def test_how_capacity_is_bought(
    catalog: Catalog, changes: dict[str, object], model: str, affinity: str, placement: str
) -> None:
    d = one_pool(catalog, **changes).pools[0].gcp
    assert d is not None
    assert (d.provisioning_model, d.reservation_affinity, d.placement) == (model, affinity, placement)


def test_flex_start_runs_for_at_most_its_hours(catalog: Catalog) -> None:
    assert one_pool(catalog, market="flex-start").pools[0].gcp.max_run_duration_s == 7 * 24 * 3600  # type: ignore[union-attr]
    assert one_pool(catalog, market="flex-start", max_run_hours=24).pools[0].gcp.max_run_duration_s == 86400  # type: ignore[union-attr]
    assert one_pool(catalog).pools[0].gcp.max_run_duration_s is None  # type: ignore[union-attr]


def test_a3_mega_cost_by_hand(catalog: Catalog) -> None:
    p = one_pool(catalog)
    pl = p.pools[0]
    # 16 x $92.8718/h (us-central1, derived on-demand rate) x 730 h + 16 x 500 GiB pd-balanced x $0.10
    assert pl.instances_usd_per_month == pytest.approx(16 * 92.8718 * 730, abs=0.01)
    assert pl.volumes_usd_per_month == pytest.approx(800.0)
    assert pl.cost_usd_per_month == pytest.approx(1_084_742.62 + 800.0, abs=0.01)
    assert pl.power_kw_it == pytest.approx(163.2)  # 16 x 10.2 kW
    assert pl.gpus == 128
    # controller: n2-standard-8 $0.38847/h x 730 + 100 GiB pd-balanced x $0.10; one Cloud NAT and its address
    assert p.controller is not None
    assert p.controller.cost_usd_per_month == pytest.approx(0.38847 * 730 + 10.0, abs=0.01)
    assert p.networks[0].cost_usd_per_month == pytest.approx((0.044 + 0.005) * 730, abs=0.01)


@pytest.mark.parametrize(
    ("accelerator_type", "chips", "hosts", "chips_per_host"),
    [
        pytest.param("v5p-8", 4, 1, 4, id="v5p-8-one-host"),
        pytest.param("v5p-32", 16, 4, 4, id="v5p-32-sixteen-chips-four-hosts"),
        pytest.param("v5p-256", 128, 32, 4, id="v5p-256-32-hosts"),
        pytest.param("v5p-1280", 640, 160, 4, id="v5p-ten-cubes"),
        pytest.param("v5litepod-8", 8, 1, 8, id="v5e-8-one-vm"),
        pytest.param("v5litepod-16", 16, 4, 4, id="v5e-16-four-vms"),
        pytest.param("v5litepod-256", 256, 64, 4, id="v5e-256"),
        pytest.param("v6e-64", 64, 16, 4, id="v6e-64"),
    ],
)
def test_tpu_slice_topology(
    catalog: Catalog, accelerator_type: str, chips: int, hosts: int, chips_per_host: int
) -> None:
    region, zone = ("us-east5", "us-east5-a")
    if accelerator_type.startswith("v6e"):
        region, zone = ("us-east5", "us-east5-b")
    p = plan_of(catalog, gcp_cluster(pools=[tpu_pool(tpu=accelerator_type, region=region, zone=zone)], storage=[]))
    t = p.pools[0].tpu
    assert t is not None
    assert (t.chips_per_slice, t.hosts_per_slice, t.chips_per_host) == (chips, hosts, chips_per_host)
    assert [(s.name, s.hosts, s.first_node) for s in t.slices] == [("v5p-s0", hosts, 0), ("v5p-s1", hosts, hosts)]
    assert p.pools[0].nodes == 2 * hosts
    assert p.pools[0].gpus == 2 * chips


def test_tpu_cost_per_chip_hour_by_hand(catalog: Catalog) -> None:
    p = plan_of(catalog, gcp_cluster(pools=[tpu_pool()], storage=[]))
    pl = p.pools[0]
    assert pl.price.unit == "chip-hour"
    assert pl.cost_usd_per_month == pytest.approx(2 * 128 * 4.2 * 730)  # $784,896
    assert pl.power_kw_it == 0
    assert pl.power_basis == "unpublished"
    assert any("no power figure for TPU v5p" in w for w in p.warnings)
    assert pl.tpu is not None
    assert (pl.tpu.api, pl.tpu.runtime_version) == ("queued-resource", "v2-alpha-tpuv5")
    spot = plan_of(catalog, gcp_cluster(pools=[tpu_pool(market="spot")], storage=[])).pools[0]
    assert spot.cost_usd_per_month == pytest.approx(2 * 128 * 1.68 * 730)
    assert spot.tpu is not None
    assert (spot.tpu.api, spot.tpu.spot) == ("tpu-vm", True)


def test_tpu_price_override_is_per_chip_hour(catalog: Catalog) -> None:
    data = gcp_cluster(pools=[tpu_pool()], storage=[], pricing={"overrides": [{"sku": "tpu-v5p", "usd_per_hour": 3.0}]})
    assert plan_of(catalog, data).pools[0].cost_usd_per_month == pytest.approx(256 * 3.0 * 730)


@pytest.mark.parametrize(
    ("accelerator_type", "expected"),
    [
        pytest.param("v5p-10", 'pools[0].tpu: got "v5p-10"; not a v5p slice size', id="v5p-five-chips"),
        pytest.param("v5p-7", 'pools[0].tpu: got "v5p-7"; v5p sizes count TensorCores', id="v5p-odd"),
        pytest.param("v5litepod-512", 'pools[0].tpu: got "v5litepod-512"; not a v5e slice size', id="v5e-too-big"),
    ],
)
def test_invalid_tpu_slices_are_refused(catalog: Catalog, accelerator_type: str, expected: str) -> None:
    problems = plan_problems(catalog, gcp_cluster(pools=[tpu_pool(tpu=accelerator_type)], storage=[]))
    assert any(p.startswith(f"t: {expected}") for p in problems), problems


def test_tpu_outside_its_zones_is_refused(catalog: Catalog) -> None:
    problems = plan_problems(catalog, gcp_cluster(pools=[tpu_pool(region="us-west1", zone="us-west1-a")], storage=[]))
    assert any("TPU v5p is not offered in us-west1" in p for p in problems), problems


@pytest.mark.parametrize(
    ("storage", "service", "deployment", "capacity_gib"),
    [
        pytest.param(
            {"kind": "lustre", "capacity_tib": 100, "throughput_mb_s_per_tib": 500},
            "gcp-managed-lustre",
            "numbered-tier",
            108000,
            id="lustre-500-rounds-to-18000-steps",
        ),
        pytest.param(
            {"kind": "lustre", "capacity_tib": 18, "throughput_mb_s_per_tib": 1000},
            "gcp-managed-lustre",
            "numbered-tier",
            18000,
            id="lustre-18-tib-as-named",
        ),
        pytest.param(
            {"kind": "lustre", "capacity_tib": 1, "throughput_mb_s_per_tib": 125},
            "gcp-managed-lustre",
            "numbered-tier",
            72000,
            id="lustre-125-minimum",
        ),
        pytest.param({"kind": "nfs", "capacity_tib": 2.5}, "filestore", "ZONAL", 2560, id="filestore-low-range"),
        pytest.param(
            {"kind": "nfs", "capacity_tib": 12}, "filestore", "ZONAL-10-100TiB", 12800, id="filestore-high-range"
        ),
    ],
)
def test_file_systems_round_to_valid_sizes(
    catalog: Catalog, storage: dict[str, object], service: str, deployment: str, capacity_gib: int
) -> None:
    st = {"name": "fs", "mount": "/data", **storage}
    (fs,) = plan_of(catalog, gcp_cluster(storage=[st])).filesystems
    assert (fs.service, fs.deployment, fs.capacity_gib) == (service, deployment, capacity_gib)
    assert fs.zone == "us-central1-a"
    assert fs.price is None  # no citable list price: unpriced, with a warning
    (net,) = plan_of(catalog, gcp_cluster(storage=[st])).networks
    assert net.role("services").cidr == "10.133.64.0/19"  # type: ignore[union-attr]


def test_lustre_tier_that_gcp_does_not_sell(catalog: Catalog) -> None:
    st = {"name": "fs", "kind": "lustre", "capacity_tib": 20, "throughput_mb_s_per_tib": 200, "mount": "/data"}
    problems = plan_problems(catalog, gcp_cluster(storage=[st]))
    assert any("not a gcp-managed-lustre throughput tier; allowed: 25, 125, 250, 500, 1000" in p for p in problems), (
        problems
    )


def test_gpu_nic_subnets_are_checked_for_room(catalog: Catalog) -> None:
    problems = plan_problems(
        catalog, gcp_cluster(pools=[gcp_pool(nodes=200)], storage=[], network={"network_prefix": 20})
    )
    gpu = [p for p in problems if "gpu subnet" in p]
    assert len(gpu) == 1, problems  # one message, not one per GPU NIC subnet
    assert "the us-central1 gpu subnet 0 needs 319 addresses" in gpu[0]
    assert "pin a larger block under network.cidrs (gcp/us-central1: <cidr>)" in gpu[0]


def test_aws_and_gcp_networks_never_overlap(catalog: Catalog) -> None:
    p = plan_of(
        catalog, gcp_cluster(pools=[pool(), gcp_pool(name="a3", region="us-east5", zone="us-east5-a")], storage=[])
    )
    blocks = {n.key: n.cidr for n in p.networks}
    assert blocks == {"aws-us-east-1": "10.8.0.0/16", "gcp-us-east5": "10.136.0.0/16"}
    subnets = [ipaddress.IPv4Network(s.cidr) for n in p.networks for s in n.subnets]
    assert not any(a.overlaps(b) for i, a in enumerate(subnets) for b in subnets[i + 1 :])


def test_gpu_subnet_holds_what_it_says(catalog: Catalog) -> None:
    (net,) = one_pool(catalog, nodes=64).networks
    gpu0 = net.role("gpu", 0)
    assert gpu0 is not None
    assert gpu0.addresses_available == usable("10.133.128.0/21") == 2043
    assert gpu0.addresses_needed == 64 * 5 // 4 + 64 + 5  # nodes x 1.25 headroom + 64 + 5 reserved


K8S = {"kind": "kubernetes", "version": "1.35"}


@pytest.mark.parametrize(
    ("accelerator_type", "zone", "machine_type", "topology", "hosts"),
    [
        pytest.param("v5p-8", "us-east5-a", "ct5p-hightpu-4t", "2x2x1", 1, id="v5p-one-host"),
        pytest.param("v5p-256", "us-east5-a", "ct5p-hightpu-4t", "4x4x8", 32, id="v5p-two-cubes"),
        pytest.param("v5p-12288", "us-east5-a", "ct5p-hightpu-4t", "16x16x24", 1536, id="v5p-largest"),
        pytest.param("v5litepod-1", "us-east5-a", "ct5lp-hightpu-1t", "1x1", 1, id="v5e-one-chip"),
        pytest.param("v5litepod-8", "us-east5-a", "ct5lp-hightpu-8t", "2x4", 1, id="v5e-one-8-chip-vm"),
        pytest.param("v5litepod-256", "us-east5-a", "ct5lp-hightpu-4t", "16x16", 64, id="v5e-pod"),
        pytest.param("v6e-8", "us-east5-b", "ct6e-standard-8t", "2x4", 1, id="v6e-one-8-chip-vm"),
        pytest.param("v6e-16", "us-east5-b", "ct6e-standard-4t", "4x4", 4, id="v6e-four-vms"),
    ],
)
def test_tpu_slices_carry_the_gke_machine_type_and_documented_topology(
    catalog: Catalog, accelerator_type: str, zone: str, machine_type: str, topology: str, hosts: int
) -> None:
    p = plan_of(
        catalog,
        gcp_cluster(pools=[tpu_pool(tpu=accelerator_type, zone=zone)], storage=[], scheduler=K8S),
    )
    t = p.pools[0].tpu
    assert t is not None
    assert (t.gke_machine_type, t.topology, t.hosts_per_slice) == (machine_type, topology, hosts)
    dims = [int(d) for d in topology.split("x")]
    assert dims[0] * dims[1] * (dims[2] if len(dims) == 3 else 1) == t.chips_per_slice


@pytest.mark.parametrize(
    "accelerator_type",
    [
        pytest.param("v5p-384", id="three-cubes-not-in-the-table"),
        pytest.param("v5p-32", id="sixteen-chips-not-in-the-table"),
    ],
)
def test_gke_refuses_a_tpu_slice_without_a_documented_topology(catalog: Catalog, accelerator_type: str) -> None:
    problems = plan_problems(catalog, gcp_cluster(pools=[tpu_pool(tpu=accelerator_type)], storage=[], scheduler=K8S))
    assert problems == [
        f't: pools[0].tpu: got "{accelerator_type}"; a GKE TPU node pool needs the slice topology, and the catalog '
        f"has no documented topology for {int(accelerator_type.split('-')[1]) // 2} v5p chips; use a size with one "
        "(v5p-8, v5p-16, v5p-64, v5p-128, v5p-256, v5p-512, v5p-1024, v5p-2048, v5p-4096, v5p-8192, v5p-12288), "
        "or scheduler kind slurm"
    ]
    # Slurm runs the same slice through the TPU API, which takes only the accelerator type
    t = plan_of(catalog, gcp_cluster(pools=[tpu_pool(tpu=accelerator_type)], storage=[])).pools[0].tpu
    assert t is not None
    assert (t.gke_machine_type, t.topology) == (None, None)


A4X_MAX_PRICE = {"overrides": [{"sku": "a4x-maxgpu-4g-metal", "usd_per_hour": 40.0}]}


def test_a4x_max_is_bare_metal_with_idpf_host_nics_and_an_ipv6_roce_vpc_of_its_profile(catalog: Catalog) -> None:
    """A4X Max (catalog network.gcp): IDPF host NICs, then 8 IPv6-only MRDMA NICs that share the one subnet the
    vpc-roce-metal profile makes, so the plan carves no address block for them."""
    p = plan_of(
        catalog,
        gcp_cluster(pools=[a4x_max_pool()], storage=[], pricing=A4X_MAX_PRICE),
    )
    d = p.pools[0].gcp
    assert d is not None
    assert [(n.subnet_role, n.subnet_index, n.vpc, n.nic_type, n.stack_type) for n in d.nics] == [
        ("compute", 0, "", "IDPF", None),
        ("gvnic", 0, "gvnic-1", "IDPF", None),
    ] + [("rdma", 0, "rdma", "MRDMA", "IPV6_ONLY")] * 8
    (net,) = p.networks
    gvnic, rdma = net.vpcs
    assert gvnic.name == "gvnic-1"
    assert (rdma.name, rdma.subnets, rdma.network_profile, rdma.network_profile_zone) == (
        "rdma",
        (),
        "vpc-roce-metal",
        "us-east5-b",
    )
    assert [s.role for s in net.subnets if s.role == "rdma"] == []
    assert p.pools[0].cpu_arch == "arm64"
    assert [g.gpu_topology for g in d.groups] == ["1x72"]
    assert d.provisioning_model == "RESERVATION_BOUND"  # sold only from reservations: GCP takes no other model


def test_a4x_max_and_a4_cannot_share_a_regions_roce_vpc(catalog: Catalog) -> None:
    """A region has one RoCE VPC, made with one profile: vpc-roce (A4) and vpc-roce-metal (A4X Max) do not mix."""
    problems = plan_problems(
        catalog,
        gcp_cluster(
            pools=[
                gcp_pool(name="b200", instance_type="a4-highgpu-8g", region="us-east4", zone="us-east4-b"),
                a4x_max_pool(region="us-east4", zone="us-east4-b"),
            ],
            storage=[],
            pricing={"overrides": [{"sku": "a4-highgpu-8g", "usd_per_hour": 80.0}, *A4X_MAX_PRICE["overrides"]]},
        ),
    )
    assert problems == [
        't: pools[1].region: got "us-east4"; pools[0] (a4-highgpu-8g) makes the us-east4 RoCE network with the '
        "profile us-east4-b-vpc-roce, and a4x-maxgpu-4g-metal needs us-east4-b-vpc-roce-metal; a region has one RoCE "
        "VPC, so put this pool in another region"
    ]
