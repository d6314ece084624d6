"""The collective model against published nccl-tests figures, the nccl-tests busbw identities, its shape in message
size and node count, NIC sharing by concurrent groups, and its errors."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest

from aicluster.catalog import DATA_DIR, Catalog, CatalogError, load_catalog
from aicluster.sizing.collective import (
    MAX_BYTES,
    MAX_NODES,
    OPS,
    CollectiveError,
    FabricDomainError,
    busbw_factor,
    estimate_collective,
    gpu_instance_types,
)

GIB, MIB, KIB = 2**30, 2**20, 2**10

# Published figures: (op, provider, instance type, nodes, GPUs per node, bytes, busbw GB/s, source id, kind).
# kind: "calibration" (the figure set a catalog value, so the check guards the arithmetic), "validation" (no catalog
# value was set from it), "minimum" (an acceptance threshold the model must reach).
PUBLISHED = [
    pytest.param(
        "all_reduce",
        "aws",
        "p5.48xlarge",
        2,
        8,
        16 * GIB,
        487.09,
        "nccl-aws-nccl-tests",
        "calibration",
        id="p5-2n-16GiB",
    ),
    pytest.param(
        "all_reduce",
        "aws",
        "p5.48xlarge",
        2,
        8,
        16 * MIB,
        105.52,
        "nccl-aws-nccl-tests",
        "calibration",
        id="p5-2n-16MiB",
    ),
    pytest.param(
        "all_reduce",
        "aws",
        "p5.48xlarge",
        2,
        8,
        1 * MIB,
        15.95,
        "nccl-aws-nccl-tests",
        "validation",
        id="p5-2n-1MiB-latency",
    ),
    pytest.param(
        "all_reduce",
        "aws",
        "p4de.24xlarge",
        2,
        8,
        2 * GIB,
        78.33,
        "nccl-aws-nccl-tests",
        "calibration",
        id="p4de-2n-2GiB",
    ),
    pytest.param(
        "all_reduce",
        "aws",
        "p4de.24xlarge",
        2,
        8,
        16 * MIB,
        26.39,
        "nccl-aws-nccl-tests",
        "calibration",
        id="p4de-2n-16MiB",
    ),
    pytest.param(
        "all_reduce",
        "azure",
        "Standard_ND96isr_H200_v5",
        1,
        8,
        8 * GIB,
        479.98,
        "coll-azure-bench-h200",
        "validation",
        id="ndh200v5-1n-8GiB",
    ),
    pytest.param(
        "all_reduce",
        "azure",
        "Standard_ND96isr_H200_v5",
        1,
        8,
        128 * MIB,
        412.45,
        "coll-azure-bench-h200",
        "validation",
        id="ndh200v5-1n-128MiB",
    ),
    pytest.param(
        "all_reduce",
        "azure",
        "Standard_ND96isr_H200_v5",
        1,
        8,
        1 * KIB,
        0.06,
        "coll-azure-bench-h200",
        "validation",
        id="ndh200v5-1n-1KiB-latency",
    ),
    pytest.param(
        "all_reduce",
        "azure",
        "Standard_ND96isr_H100_v5",
        1,
        8,
        8 * GIB,
        478.87,
        "coll-azure-bench-h100",
        "validation",
        id="ndh100v5-1n-8GiB",
    ),
    pytest.param(
        "all_reduce",
        "azure",
        "Standard_ND96isr_H100_v5",
        1,
        8,
        16 * GIB,
        460.0,
        "nccl-aznhc-ndv5",
        "minimum",
        id="ndh100v5-aznhc-minimum",
    ),
    pytest.param(
        "all_reduce",
        "azure",
        "Standard_ND96isr_H200_v5",
        1,
        8,
        16 * GIB,
        431.0,
        "nccl-aznhc-ndv5",
        "minimum",
        id="ndh200v5-aznhc-minimum",
    ),
    pytest.param(
        "all_reduce",
        "azure",
        "Standard_ND96amsr_A100_v4",
        1,
        8,
        8 * GIB,
        231.58,
        "coll-azure-bench-a100",
        "calibration",
        id="ndma100v4-1n-8GiB",
    ),
    pytest.param(
        "all_reduce",
        "azure",
        "Standard_ND96amsr_A100_v4",
        1,
        8,
        256 * MIB,
        213.87,
        "coll-azure-bench-a100",
        "validation",
        id="ndma100v4-1n-256MiB",
    ),
    pytest.param(
        "all_gather",
        "gcp",
        "a4-highgpu-8g",
        2,
        8,
        16 * GIB,
        377.38,
        "nccl-gcp-gib-vms",
        "calibration",
        id="a4-2n-allgather-16GiB",
    ),
    pytest.param(
        "all_gather",
        "gcp",
        "a3-megagpu-8g",
        2,
        8,
        8 * GIB,
        188.82,
        "nccl-tcpxo-mgcafe-report",
        "calibration",
        id="a3mega-2n-allgather-8GiB",
    ),
    pytest.param(
        "all_reduce",
        "gcp",
        "a3-megagpu-8g",
        2,
        8,
        8 * GIB,
        338.82,
        "coll-a3mega-allreduce",
        "calibration",
        id="a3mega-2n-8GiB",
    ),
    pytest.param(
        "all_reduce",
        "gcp",
        "a3-megagpu-8g",
        2,
        8,
        1 * GIB,
        297.86,
        "coll-a3mega-allreduce",
        "validation",
        id="a3mega-2n-1GiB",
    ),
    pytest.param(
        "all_reduce",
        "onprem",
        "dgx-h100",
        1,
        8,
        8 * GIB,
        480.0,
        "coll-nccl-tests-212",
        "calibration",
        id="dgxh100-1n-nvls-maintainer",
    ),
    pytest.param(
        "all_gather",
        "onprem",
        "dgx-h100",
        1,
        8,
        8 * GIB,
        370.0,
        "coll-nccl-tests-212",
        "calibration",
        id="dgxh100-1n-ring-maintainer",
    ),
    pytest.param(
        "all_gather",
        "onprem",
        "dgx-h100",
        16,
        8,
        8 * GIB,
        376.0,
        "coll-nccl-tests-290",
        "calibration",
        id="dgxh100-16n-ndr-maintainer",
    ),
    pytest.param(
        "all_to_all",
        "onprem",
        "dgx-h100",
        16,
        8,
        8 * GIB,
        48.0,
        "coll-nccl-tests-267",
        "validation",
        id="dgxh100-16n-alltoall-maintainer",
    ),
    pytest.param(
        "all_reduce",
        "onprem",
        "hgx-h100-8gpu",
        2,
        8,
        8 * GIB,
        470.0,
        "coll-nccl-2409",
        "validation",
        id="hgxh100-2n-ndr",
    ),
    pytest.param(
        "all_reduce",
        "onprem",
        "dgx-h200",
        1,
        8,
        4 * GIB,
        475.0,
        "coll-nccl-tests-272",
        "validation",
        id="dgxh200-1n-4GiB",
    ),
    pytest.param(
        "all_reduce", "onprem", "dgx-h100", 1, 2, 2 * GIB, 367.0, "coll-nccl-1455", "validation", id="h100-tp2"
    ),
    pytest.param(
        "all_reduce", "onprem", "dgx-h100", 1, 4, 2 * GIB, 370.0, "coll-nccl-1455", "validation", id="h100-tp4"
    ),
    pytest.param(
        "all_reduce", "onprem", "dgx-h100", 1, 6, 2 * GIB, 440.0, "coll-nccl-1455", "validation", id="h100-tp6"
    ),
    pytest.param(
        "all_reduce", "onprem", "dgx-b200", 1, 8, 8 * GIB, 830.0, "coll-nccl-1807", "calibration", id="dgxb200-1n"
    ),
]


def tolerance(nbytes: int, kind: str) -> tuple[float, float]:
    """Allowed model / published ratio. Large messages (>= 1 GiB): within 12%; mid-size (>= 16 MiB): 15% (the
    latency is fitted at 16 MiB); latency-bound (< 16 MiB): within a factor of 2.5 (the alpha fitted at 16 MiB
    makes tiny messages ~2x slow); a minimum: at least the threshold, at most 15% above it."""
    if kind == "minimum":
        return 1.0, 1.15
    if nbytes >= GIB:
        return 0.88, 1.12
    if nbytes >= 16 * MIB:
        return 0.85, 1.15
    return 1 / 2.5, 2.5


@pytest.mark.parametrize(
    ("op", "provider", "instance_type", "nodes", "gpn", "nbytes", "published", "source", "kind"), PUBLISHED
)
def test_the_model_is_near_the_published_figure(
    catalog: Catalog,
    op: str,
    provider: str,
    instance_type: str,
    nodes: int,
    gpn: int,
    nbytes: int,
    published: float,
    source: str,
    kind: str,
) -> None:
    assert source in catalog.sources
    est = estimate_collective(catalog, instance_type, nodes, op, nbytes, ranks_per_node=gpn, provider=provider)
    low, high = tolerance(nbytes, kind)
    ratio = est.busbw_gb_s / published
    assert low <= ratio <= high, f"model {est.busbw_gb_s:.2f} GB/s vs published {published} ({ratio:.2f}x)"


# GB200 NVL72 (multi-node NVLink domains): (nodes, GPUs per node, nodes per domain, bytes, busbw, source, tolerance).
# The runs had no in-network reduction (no CollNet plugin), so the estimate leaves SHARP out; dgx-gb200-nvl72 stands
# in for the InfiniBand NVL72 racks measured (same 4 x 400 Gb/s ConnectX-7 per tray).
NVL72 = [
    pytest.param(18, 4, None, 8 * GIB, 834.57, "coll-coreweave-gb200-racks", 0.05, id="nvl72-1rack-8GiB"),
    pytest.param(18, 4, None, 2 * GIB, 757.78, "coll-coreweave-gb200-racks", 0.05, id="nvl72-1rack-2GiB"),
    pytest.param(18, 4, None, 512 * MIB, 586.06, "coll-coreweave-gb200-racks", 0.05, id="nvl72-1rack-512MiB"),
    pytest.param(36, 4, None, 16 * GIB, 810.41, "coll-coreweave-gb200-racks", 0.05, id="nvl72-2racks-16GiB"),
    pytest.param(36, 4, None, 1 * GIB, 596.10, "coll-coreweave-gb200-racks", 0.06, id="nvl72-2racks-1GiB"),
    pytest.param(360, 4, None, 16 * GIB, 405.74, "coll-coreweave-gb200-racks", 0.03, id="nvl72-20racks-16GiB"),
    pytest.param(360, 4, None, 512 * MIB, 150.95, "coll-coreweave-gb200-racks", 0.03, id="nvl72-20racks-512MiB"),
    pytest.param(3, 4, 1, 16 * GIB, 196.72, "coll-nccl-1801", 0.02, id="nccl1801-3x4"),
    pytest.param(6, 4, 2, 16 * GIB, 393.66, "coll-nccl-1801", 0.02, id="nccl1801-3x8"),
]


@pytest.mark.parametrize(("nodes", "gpn", "per_domain", "nbytes", "published", "source", "tol"), NVL72)
def test_the_model_is_near_the_published_nvl72_figure(
    catalog: Catalog,
    nodes: int,
    gpn: int,
    per_domain: int | None,
    nbytes: int,
    published: float,
    source: str,
    tol: float,
) -> None:
    """In one rack (MNNVL), across two racks (NVLS-tree regime) and across 20 racks (ring), and across three partial
    domains (nccl#1801): the fitted figures reproduce each published row within the stated tolerance."""
    assert source in catalog.sources
    est = estimate_collective(
        catalog,
        "dgx-gb200-nvl72",
        nodes,
        "all_reduce",
        nbytes,
        ranks_per_node=gpn,
        nodes_per_domain=per_domain,
        sharp=False,
    )
    ratio = est.busbw_gb_s / published
    assert abs(ratio - 1) <= tol, f"model {est.busbw_gb_s:.2f} GB/s vs published {published} ({ratio:.3f}x)"


def test_the_catalog_calibration_points_are_the_published_figures_above(catalog: Catalog) -> None:
    tested = {
        (p.values[0], p.values[1], p.values[2], p.values[3], p.values[4], p.values[5], p.values[6], p.values[7])
        for p in PUBLISHED
    }
    tested |= {
        ("all_reduce", "onprem", "dgx-gb200-nvl72", p.values[0], p.values[1], p.values[3], p.values[4], p.values[5])
        for p in NVL72
    }
    domains = {(c.nodes, c.bytes): c.nodes_per_domain for c in catalog.collectives.calibration if c.nodes_per_domain}
    assert domains == {(p.values[0], p.values[3]): p.values[2] for p in NVL72 if p.values[2]}
    listed = {
        (c.op, c.provider, c.instance_type, c.nodes, c.gpus_per_node, c.bytes, c.busbw_gb_s, c.source)
        for c in catalog.collectives.calibration
    }
    # the catalog's 134M row of the H200 sweep is 134217728 bytes, as is the 128 MiB above; 268M is 256 MiB
    assert listed == tested


def test_every_cloud_and_on_prem_has_a_published_check() -> None:
    providers = {p.values[1] for p in PUBLISHED if p.values[8] != "minimum"}
    assert providers == {"aws", "azure", "gcp", "onprem"}
    assert any(p.values[3] == 1 for p in PUBLISHED), "an intra-node figure"


# -- nccl-tests' definitions -----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("nodes", "gpn"), [(1, 8), (1, 2), (2, 8), (16, 8), (64, 1)])
def test_busbw_is_algbw_times_the_nccl_tests_factor(catalog: Catalog, op: str, nodes: int, gpn: int) -> None:
    est = estimate_collective(catalog, "p5.48xlarge", nodes, op, 256 * MIB, ranks_per_node=gpn)
    n = nodes * gpn
    factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
    assert est.gpus == n
    assert est.algbw_gb_s == pytest.approx(est.bytes / est.time_s / 1e9, rel=1e-12)
    assert est.busbw_gb_s == pytest.approx(est.algbw_gb_s * factor, rel=1e-12)
    assert est.time_s == pytest.approx(est.latency_s + est.bytes * factor / (est.bandwidth_gb_s * 1e9), rel=1e-12)


def test_busbw_factors() -> None:
    assert busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    assert busbw_factor("all_reduce", 16) == pytest.approx(1.875)
    for op in ("all_gather", "reduce_scatter", "all_to_all"):
        assert busbw_factor(op, 8) == pytest.approx(0.875)
    assert busbw_factor("all_reduce", 1) == 0.0


def test_one_rank_communicates_nothing(catalog: Catalog) -> None:
    est = estimate_collective(catalog, "dgx-h100", 1, "all_reduce", GIB, ranks_per_node=1)
    assert (est.time_s, est.busbw_gb_s, est.algorithm) == (0.0, 0.0, "none")


# -- shape: message size, node count ---------------------------------------------------------------------------

SIZES = [2**k for k in range(3, 36)]  # 8 B .. 32 GiB


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(
    ("instance_type", "nodes"),
    [("dgx-h100", 1), ("p5.48xlarge", 2), ("Standard_ND96isr_H100_v5", 32), ("a3-megagpu-8g", 300)],
)
def test_time_and_busbw_grow_with_message_size(catalog: Catalog, op: str, instance_type: str, nodes: int) -> None:
    ests = [estimate_collective(catalog, instance_type, nodes, op, s) for s in SIZES]
    times = [e.time_s for e in ests]
    busbw = [e.busbw_gb_s for e in ests]
    assert times == sorted(times)
    assert len(set(times)) == len(times)
    assert busbw == sorted(busbw)


@pytest.mark.parametrize("instance_type", ["dgx-h100", "p4d.24xlarge", "a4-highgpu-8g"])
def test_small_messages_are_latency_bound_and_large_ones_reach_the_ceiling(
    catalog: Catalog, instance_type: str
) -> None:
    for nodes in (1, 2, 8):
        small = estimate_collective(catalog, instance_type, nodes, "all_reduce", 8)
        assert small.time_s == pytest.approx(small.latency_s, rel=1e-3)
        assert small.busbw_gb_s < 0.001 * small.bandwidth_gb_s
        large = estimate_collective(catalog, instance_type, nodes, "all_reduce", 32 * GIB)
        assert large.busbw_gb_s > 0.95 * large.bandwidth_gb_s


def test_the_algorithm_follows_the_node_count(catalog: Catalog) -> None:
    def algo(t: str, nodes: int, op: str = "all_reduce", size: int = 8 * GIB) -> str:
        return estimate_collective(catalog, t, nodes, op, size).algorithm

    assert algo("dgx-h100", 1) == "nvls"
    assert algo("Standard_ND96amsr_A100_v4", 1) == "nvlink-ring"  # A100's NVSwitch has no NVLink SHARP
    assert algo("p5.48xlarge", 2) == "nvls-tree"
    assert algo("p4de.24xlarge", 2) == "tree"
    assert algo("p5.48xlarge", 16) == "ring"
    # NCCL's model: beyond two nodes NVLS-tree keeps 5/6 of the ring's bandwidth at 2 x log2(nodes) levels of 14 us:
    # latency-bound sizes and very large node counts go to it; p4de (no NVLink SHARP) has the plain tree
    assert algo("p5.48xlarge", 1024, size=MIB) == "nvls-tree"
    assert algo("p5.48xlarge", 1000) == "nvls-tree"
    assert algo("p4de.24xlarge", 1024, size=MIB) == "tree"
    assert algo("dgx-h100", 16) == "collnet-sharp"  # Quantum-2 SHARP
    assert algo("Standard_ND96isr_H100_v5", 16) == "collnet-sharp"  # Azure's ND v5 fabric runs CollNet
    assert algo("a4-highgpu-8g", 16) == "ring"  # no in-network reduction on GCP's RoCE
    assert algo("dgx-h100", 16, "all_to_all") == "pairwise"
    assert algo("dgx-h100", 1, "all_to_all") == "nvlink-pairwise"


def test_two_nodes_exceed_the_network_rate_and_more_nodes_do_not(catalog: Catalog) -> None:
    """Two nodes: NVLink carries part of the reduction (busbw above the node's NIC line rate); beyond, a ring is
    bounded by rails x per-NIC effective rate."""
    line = 3200 / 8  # p5: 32 x 100 Gb/s = 400 GB/s
    two = estimate_collective(catalog, "p5.48xlarge", 2, "all_reduce", 16 * GIB)
    many = estimate_collective(catalog, "p5.48xlarge", 16, "all_reduce", 16 * GIB)
    assert two.busbw_gb_s > line
    assert many.busbw_gb_s < line
    assert many.bottleneck == "network"


def test_all_to_all_is_bounded_by_the_traffic_that_leaves_the_node(catalog: Catalog) -> None:
    one = estimate_collective(catalog, "dgx-h100", 1, "all_to_all", 8 * GIB)
    many = estimate_collective(catalog, "dgx-h100", 64, "all_to_all", 8 * GIB)
    assert many.busbw_gb_s < one.busbw_gb_s / 5  # NVLink vs one NIC per GPU
    assert many.bottleneck == "network"


# -- ranks per node: concurrent groups share the NICs -----------------------------------------------------------


def test_groups_of_one_gpu_per_node_share_the_nics_evenly(catalog: Catalog) -> None:
    full = estimate_collective(catalog, "p5.48xlarge", 16, "all_reduce", 8 * GIB)
    one = estimate_collective(catalog, "p5.48xlarge", 16, "all_reduce", 8 * GIB, ranks_per_node=1)
    two = estimate_collective(catalog, "p5.48xlarge", 16, "all_reduce", 8 * GIB, ranks_per_node=2)
    assert one.gpus == 16
    assert two.gpus == 32
    assert one.bandwidth_gb_s == pytest.approx(full.bandwidth_gb_s / 8)
    assert two.bandwidth_gb_s == pytest.approx(full.bandwidth_gb_s / 4)
    assert any("8 groups of this shape share" in n for n in one.notes)


def test_a_tensor_parallel_group_on_one_node_is_not_slowed_by_its_neighbours(catalog: Catalog) -> None:
    tp2 = estimate_collective(catalog, "dgx-h100", 1, "all_reduce", 2 * GIB, ranks_per_node=2)
    tp8 = estimate_collective(catalog, "dgx-h100", 1, "all_reduce", 2 * GIB)
    assert tp2.algorithm == "nvlink-ring"
    assert tp8.algorithm == "nvls"
    assert tp2.bandwidth_gb_s == pytest.approx(370.0)  # the ring ceiling, not an eighth of the switch


def test_every_gpu_type_has_an_estimate(catalog: Catalog) -> None:
    covered = gpu_instance_types(catalog)
    gpu_types = sorted(
        key for key, it in catalog.instance_types.items() if (a := catalog.accelerator_of(it)) and a.kind == "gpu"
    )
    assert covered == gpu_types
    for provider, name in covered:
        for op in OPS:
            est = estimate_collective(catalog, name, 4, op, 64 * MIB, provider=provider)
            assert est.time_s > 0
            assert est.busbw_gb_s > 0
            assert set(est.sources) <= set(catalog.sources)


# -- errors ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"instance_type": "p5.48xlarg"}, "not in the catalog; did you mean p5.48xlarge (aws)", id="typo"),
        pytest.param({"instance_type": "trn1.32xlarge"}, "(NeuronLink) are not modelled", id="trainium"),
        pytest.param({"instance_type": "m7i.2xlarge"}, "has no GPUs", id="cpu-only"),
        pytest.param({"instance_type": "p5.48xlarge", "provider": "gcp"}, "not a gcp type", id="wrong-provider"),
        pytest.param({"provider": "ibm"}, "not a provider of the catalog", id="unknown-provider"),
        pytest.param({"nodes": 0}, "nodes 0: out of range; give 1 to 100,000", id="no-nodes"),
        pytest.param({"nodes": MAX_NODES + 1}, "out of range", id="too-many-nodes"),
        pytest.param({"nodes": True}, "expected a whole number", id="bool-nodes"),
        pytest.param({"nbytes": 0}, "bytes 0: out of range", id="no-bytes"),
        pytest.param({"nbytes": MAX_BYTES + 1}, "1 PiB", id="absurd-bytes"),
        pytest.param({"op": "allreduce"}, "did you mean all_reduce?", id="op"),
        pytest.param({"ranks_per_node": 9}, "has 8 GPUs per node: give 1 to 8", id="ranks-per-node"),
        pytest.param({"ranks_per_node": 0}, "ranks_per_node 0", id="zero-ranks"),
    ],
)
def test_bad_input_is_one_clear_line(catalog: Catalog, kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"instance_type": "p5.48xlarge", "nodes": 2, "op": "all_reduce", "nbytes": GIB}
    args.update(kwargs)
    extra = {k: args.pop(k) for k in ("ranks_per_node", "provider") if k in args}
    with pytest.raises(CollectiveError, match=re.escape(message)) as info:
        estimate_collective(catalog, *args.values(), **extra)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_a_name_of_two_providers_needs_the_provider(catalog: Catalog) -> None:
    it = catalog.instance_types[("aws", "p5.48xlarge")]
    twin = dataclasses.replace(
        catalog, instance_types={**catalog.instance_types, ("onprem", "p5.48xlarge"): it.model_copy()}
    )
    with pytest.raises(CollectiveError, match=re.escape("exists for aws and onprem: give --provider")):
        estimate_collective(twin, "p5.48xlarge", 2, "all_reduce", GIB)
    assert estimate_collective(twin, "p5.48xlarge", 2, "all_reduce", GIB, provider="aws").provider == "aws"


def _refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    """A copy of the catalog with `old` replaced by `new` in collectives.yaml fails to load with `message`."""
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    path = data / "collectives.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(CatalogError, match=re.escape(message)):
        load_catalog(data)


def test_the_catalog_refuses_a_gpu_type_without_a_collectives_record(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        "instance_types: [p4d.24xlarge, p4de.24xlarge]",
        "instance_types: [p4de.24xlarge]",
        "aws/p4d.24xlarge has 0 network records",
    )


def test_the_catalog_refuses_rails_that_disagree_with_the_instance_type(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        "rails: 16                 # 16 EFA interfaces, 3,200 Gb/s in all",
        "rails: 8",
        "rails 8 but p5en.48xlarge has 16 EFA interfaces",
    )


def test_an_azure_infiniband_domain_holds_100_vms(catalog: Catalog) -> None:
    """Azure: InfiniBand only inside one scale set of one placement group, 100 VMs by default (azure-vmss-infiniband):
    beyond, no NCCL path on the fabric, so the estimate is refused and names the largest node count."""
    assert estimate_collective(catalog, "Standard_ND96isr_H100_v5", 100, "all_reduce", 8 * GIB).nodes == 100
    with pytest.raises(FabricDomainError, match=r"nodes 1000: .* at most 100 VMs .* use 1 to 100 nodes") as info:
        estimate_collective(catalog, "Standard_ND96isr_H100_v5", 1000, "all_reduce", 8 * GIB)
    assert info.value.max_nodes == 100
    with pytest.raises(CollectiveError, match=r"nodes 101: "):
        estimate_collective(catalog, "Standard_ND96amsr_A100_v4", 101, "all_gather", 8 * GIB)
    # a pool whose scale sets Azure support raised (ib_domain_max_vms up to 300)
    assert estimate_collective(catalog, "Standard_ND96isr_H100_v5", 250, "all_reduce", GIB, max_nodes=300).nodes == 250
    # a fabric without domains ignores a pool's domain size
    assert estimate_collective(catalog, "p5.48xlarge", 250, "all_reduce", GIB, max_nodes=100).nodes == 250


def test_latency_grows_with_node_count_for_every_algorithm(catalog: Catalog) -> None:
    """NCCL's tuning model (coll-nccl-tuning): ring 2 (nodes - 1) steps of 14 us, tree and NVLS-tree 2 log2i(nodes)
    levels of 28 / 14 us; SHARP one CollNet step (31 us) up and down per fat-tree level beyond the first (Quantum-2,
    64 ports: one level to 64 nodes per rail, two to 2,048)."""

    def lat(t: str, nodes: int, size: int = 8 * GIB) -> tuple[str, float]:
        e = estimate_collective(catalog, t, nodes, "all_reduce", size)
        return e.algorithm, e.latency_s * 1e6

    two_nodes = 61 + 172.5  # fitted NVSwitch + network latency, us
    assert lat("dgx-h100", 16) == ("collnet-sharp", pytest.approx(two_nodes))
    assert lat("dgx-h100", 1000) == ("collnet-sharp", pytest.approx(two_nodes + 2 * 31))
    assert lat("dgx-h100", 4096) == ("collnet-sharp", pytest.approx(two_nodes + 4 * 31))
    assert lat("p5.48xlarge", 16) == ("ring", pytest.approx(two_nodes + 2 * 14 * 14))
    assert lat("p5.48xlarge", 1000) == ("nvls-tree", pytest.approx(two_nodes + 2 * 8 * 14))
    assert lat("p4de.24xlarge", 1024, MIB)[1] == pytest.approx(142 + 648 + 2 * 9 * 28)


def test_notes_name_what_was_borrowed_and_sources_only_what_was_used(catalog: Catalog) -> None:
    p5 = estimate_collective(catalog, "p5.48xlarge", 16, "all_reduce", 8 * GIB)
    assert any("ring efficiency 0.835 from p4de.24xlarge" in n for n in p5.notes)
    assert not any("sibling fabric" in n for n in p5.notes)
    assert "coll-sharp-3130" not in p5.sources
    assert "nccl-azure-hopper-conf" not in p5.sources
    assert "nccl-aws-nccl-tests" in p5.sources  # the p4de efficiency and the p5 latency
    one = estimate_collective(catalog, "p5.48xlarge", 1, "all_gather", 8 * GIB)
    assert set(one.sources) == {"coll-nccl-tests-212", "coll-azure-bench-h200"}  # NVLink only
    a4 = estimate_collective(catalog, "a4-highgpu-8g", 2, "all_gather", 16 * GIB)
    assert not any("borrowed" in n and "efficiency" in n for n in a4.notes)  # its own efficiency


def test_an_before_vowel_providers(catalog: Catalog) -> None:
    with pytest.raises(CollectiveError) as info:
        estimate_collective(catalog, "p5.48xlarge", 2, "all_reduce", GIB, provider="azure")
    assert "not an azure type of the catalog (it is an aws type)" in str(info.value)
    with pytest.raises(CollectiveError) as info:
        estimate_collective(catalog, "p5.48xlarge", 2, "all_reduce", GIB, provider="gcp")
    assert "not a gcp type" in str(info.value)


def test_the_catalog_refuses_an_uncalibrated_network_that_does_not_say_what_it_borrowed(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        (
            '    borrowed: "ring efficiency 0.835 from p4de.24xlarge, network latency 172.5 us from p5.48xlarge '
            '(both EFA)"\n'
        ),
        "",
        "calibrated is false: say in borrowed which figures",
    )


# -- multi-node NVLink domains (GB200 NVL72), driven by the catalog's nvlink_domain ------------------------------


@pytest.mark.parametrize("instance_type", ["a4x-highgpu-4g", "dgx-gb200-nvl72"])
def test_a_collective_inside_one_nvl72_runs_on_nvlink(catalog: Catalog, instance_type: str) -> None:
    """18 nodes x 4 GPUs are one NVLink domain: all_reduce runs as NVLS over multi-node NVLink, no NIC in the path
    (no network source), at the published 72-GPU ceiling for large messages."""
    est = estimate_collective(catalog, instance_type, 18, "all_reduce", 8 * GIB)
    assert (est.algorithm, est.bottleneck, est.gpus) == ("nvls", "nvlink", 72)
    assert est.busbw_gb_s == pytest.approx(834.57, rel=0.05)
    assert not {"gcp-ct-a4x", "onprem-dgx-gb200-guide", "nccl-aws-nccl-tests"} & set(est.sources)
    assert any("one NVLink domain (" in n and "no NIC in the path" in n for n in est.notes)
    assert any(n.startswith("published beside it: all_reduce on 72 GPUs") for n in est.notes)
    # a tensor-parallel group of 16 on four nodes of the rack: NVLink too, and slower to start than 8 GPUs
    tp16 = estimate_collective(catalog, instance_type, 4, "all_reduce", 64 * MIB)
    tp8 = estimate_collective(catalog, instance_type, 2, "all_reduce", 64 * MIB)
    assert tp16.bottleneck == tp8.bottleneck == "nvlink"
    assert tp8.latency_s == pytest.approx(61e-6)  # the 8-rank alpha
    assert tp16.latency_s == pytest.approx((61 + (542 - 61) * 8 / 64) * 1e-6)  # interpolated towards 72 ranks


def test_across_domains_the_bound_is_the_smaller_of_nvlink_and_g_times_the_nic(catalog: Catalog) -> None:
    """rack-scale.md section 5: across domains a ring tracks G x the per-GPU NIC rate (G = the job's GPUs per domain,
    nccl#1801), under NVLink and, for whole racks, under what CoreWeave's 20-rack ring reached."""
    per_gpu = 400 / 8 * 0.986  # one 400 Gb/s ConnectX-7 per GPU at the calibrated efficiency
    for per_domain in (1, 2, 4, 18):
        est = estimate_collective(
            catalog,
            "dgx-gb200-nvl72",
            3 * per_domain,
            "all_reduce",
            16 * GIB,
            nodes_per_domain=per_domain,
            sharp=False,
        )
        g = 4 * per_domain
        assert est.algorithm == "ring"
        assert est.bandwidth_gb_s == pytest.approx(min(g * per_gpu, 740, 425.6))
    # two domains: the tree regime, NVLink-bound with whole racks
    two = estimate_collective(catalog, "dgx-gb200-nvl72", 36, "all_reduce", 16 * GIB, sharp=False)
    assert (two.algorithm, two.bottleneck) == ("nvls-tree", "nvlink")


def test_a_split_domain_is_allowed_and_the_notes_say_what_it_costs(catalog: Catalog) -> None:
    """20 nodes = one whole rack + 2 nodes of another: the 8 GPUs of the partial rack carry the cross-domain traffic;
    the notes set it beside 18 nodes in one rack and 36 in two whole racks. Spreading 16 nodes over two racks (8 + 8)
    costs against keeping them in one."""
    est = estimate_collective(catalog, "a4x-highgpu-4g", 20, "all_reduce", GIB)
    assert est.nodes == 20
    assert est.gpus == 80
    assert any("spans 2 NVLink domains (18 + 2 nodes" in n for n in est.notes)
    assert any("split domains: across domains the job's 8 GPUs" in n for n in est.notes)
    costs = [n for n in est.notes if n.startswith("what the split costs:")]
    assert any("18 nodes in 1 whole domain" in n for n in costs)
    assert any("36 nodes in 2 whole domains" in n for n in costs)
    spread = estimate_collective(catalog, "a4x-highgpu-4g", 16, "all_reduce", GIB, nodes_per_domain=8)
    packed = estimate_collective(catalog, "a4x-highgpu-4g", 16, "all_reduce", GIB)
    assert spread.busbw_gb_s < packed.busbw_gb_s
    assert packed.algorithm == "nvls"
    assert spread.algorithm != "nvls"
    assert any("all 16 nodes in one domain reach busbw" in n for n in spread.notes)
    many = estimate_collective(catalog, "a4x-highgpu-4g", 100, "all_reduce", GIB)
    assert any("spans 6 NVLink domains (5 x 18 + 10 nodes" in n for n in many.notes)


def test_nodes_per_domain_is_checked_against_the_catalog(catalog: Catalog) -> None:
    with pytest.raises(CollectiveError, match=r"nodes_per_domain 19: out of range; one a4x-highgpu-4g NVLink domain"):
        estimate_collective(catalog, "a4x-highgpu-4g", 36, "all_reduce", GIB, nodes_per_domain=19)
    with pytest.raises(CollectiveError, match=r"p5.48xlarge's NVLink ends at the node"):
        estimate_collective(catalog, "p5.48xlarge", 4, "all_reduce", GIB, nodes_per_domain=2)


def test_the_domain_comes_from_the_catalog_not_from_type_names(catalog: Catalog) -> None:
    """A type sold in 9-node domains (as AWS's u-p6e-gb200x36 UltraServer): 9 nodes stay on NVLink, 10 cross the
    network; nothing in the model names a type."""
    from aicluster.catalog.models import NvlinkDomain as SoldDomain

    key = ("gcp", "a4x-highgpu-4g")
    it = catalog.instance_types[key]
    half = it.model_copy(update={"nvlink_domain": SoldDomain(nodes=9, unit="ultraserver", sizes=(9,))})
    other = dataclasses.replace(catalog, instance_types={**catalog.instance_types, key: half})
    assert estimate_collective(other, "a4x-highgpu-4g", 9, "all_reduce", GIB).algorithm == "nvls"
    ten = estimate_collective(other, "a4x-highgpu-4g", 10, "all_reduce", GIB)
    assert ten.algorithm != "nvls"
    assert any("9 + 1 nodes of the 9 an ultraserver holds" in n for n in ten.notes)


def test_every_estimate_names_the_published_figure_beside_it(catalog: Catalog) -> None:
    for provider, name in gpu_instance_types(catalog):
        for nodes in (1, 4):
            est = estimate_collective(catalog, name, nodes, "all_reduce", 256 * MIB, provider=provider)
            beside = [n for n in est.notes if n.startswith(("published beside it:", "no published figure"))]
            assert len(beside) == 1, (name, nodes, est.notes)


def test_the_catalog_checks_the_nvlink_record_against_the_domain(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        "    gpus: 72\n",
        "    gpus: 64\n",
        "has 64 GPUs per domain but a4x-highgpu-4g's NVLink domain has 18 x 4",
    )
