"""Workload sizing on rack-scale pools (GB200 NVL72: 18 nodes x 4 GPUs share one NVLink domain): tensor and expert
parallelism may span a domain's nodes and are priced with the in-domain NVLink collective; pipeline and data
parallelism cross domains over the scale-out network; a run holds the whole domains it touches."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.sizing.collective import estimate_on_domains
from aicluster.sizing.layout import layouts
from aicluster.sizing.models import PoolFacts
from aicluster.sizing.shape import shape_of
from aicluster.sizing.workload import WorkloadError, _hardware, estimate_workload, nvlink_domains
from aicluster.spec.workload import Workload
from tests.sizing.test_workload import LLAMA3_70B


def _gb200(domains: int, *, provider: str = "onprem", instance_type: str = "dgx-gb200-nvl72") -> PoolFacts:
    return PoolFacts(
        name="gb200",
        provider=provider,
        region="dfw1",
        instance_type=instance_type,
        nodes=18 * domains,
        gpus_per_node=4,
        usd_per_node_hour=40.0,
        node_power_kw=6.67,
        pue=1.15,
        fabric_domain_nodes=(18 * domains,),
        nvlink_domain_nodes=(18,) * domains,
    )


def _wl(training: dict[str, Any] | None = None, **extra: Any) -> Workload:
    return Workload.model_validate(
        {
            "name": "w",
            "pools": ["gb200"],
            "model": LLAMA3_70B,
            "training": {"tokens": "1T", "global_batch_tokens": "16Mi", **(training or {})},
            **extra,
        }
    )


def test_tensor_parallel_groups_may_span_the_nodes_of_a_domain(catalog: Catalog) -> None:
    """The search offers TP up to the domain's 72 GPUs (powers of two that divide the heads: 1..64), where an 8-GPU
    server stops at 8; a domain holds floor(72 / t) groups, so TP16 uses 64 GPUs of each rack."""
    pool = _gb200(2)
    shape = shape_of(_wl().model)
    hw, _, _ = _hardware(catalog, pool, 144, "bf16", nvlink_domains([pool], 144))
    assert hw.domain_gpus == 72
    assert {lay.tensor_parallel for lay in layouts(shape, _wl().training, hw)} == {1, 2, 4, 8, 16, 32, 64}
    assert hw.tensor_groups(16) == 8  # 4 per rack
    assert hw.tensor_groups(64) == 2
    fixed = _wl({"tensor_parallel": 16})
    assert {lay.data_parallel for lay in layouts(shape, fixed.training, hw) if lay.pipeline_parallel == 1} == {8}


def test_a_tensor_parallel_group_in_one_domain_is_priced_on_nvlink(catalog: Catalog) -> None:
    """TP16 on GB200: four all-reduces of 2 b s h bytes per layer per micro-batch over 16 ranks of one rack, on
    NVLink (the multi-node NVLS of the NVL72 record), as the collective model prices them."""
    est = estimate_workload(
        _wl({"tensor_parallel": 16, "pipeline_parallel": 1, "recompute": "none"}), [_gb200(2)], [], catalog
    )
    assert est.chosen is not None
    step, lay = est.chosen.step, est.chosen.layout
    assert step is not None
    one = estimate_on_domains(
        catalog,
        "dgx-gb200-nvl72",
        "all_reduce",
        2 * lay.micro_batch * 8192 * 8192,
        domains=1,
        ranks_per_domain=16,
        provider="onprem",
    )
    assert one.bottleneck == "nvlink"
    assert one.algorithm == "nvls"
    assert step.tensor_parallel_s == pytest.approx(lay.micro_batches * 80 * 4 * one.time_s)
    assert any("NVLink domains: 2 of up to 72 GPUs" in n for n in est.notes)


def test_data_parallel_groups_cross_domains_with_their_ranks_per_domain_as_g(catalog: Catalog) -> None:
    """TP16 on two racks: each rack holds 4 replicas, so every data-parallel group has 4 ranks in each of the 2
    domains, each on its own NIC: the scale-out network carries 4 GPUs' worth (two-domain tree: algbw <= G x NIC);
    with TP8 (9 ranks a rack) the NVLink side bounds it instead."""
    per_gpu = 400 / 8 * 0.986
    four = estimate_on_domains(catalog, "dgx-gb200-nvl72", "all_reduce", 2**34, domains=2, ranks_per_domain=4)
    assert four.gpus == 8
    assert four.bottleneck == "network"
    assert four.bandwidth_gb_s == pytest.approx(4 * per_gpu * 2 * 7 / 8)
    nine = estimate_on_domains(catalog, "dgx-gb200-nvl72", "all_reduce", 2**34, domains=2, ranks_per_domain=9)
    assert nine.bottleneck == "nvlink"
    assert nine.bandwidth_gb_s == pytest.approx(398.5 * 2 * 17 / 18)


def test_a_tensor_parallel_degree_beyond_the_domain_is_refused_with_the_domain_size(catalog: Catalog) -> None:
    wide = Workload.model_validate(
        {
            "name": "w",
            "pools": ["gb200"],
            "model": {**LLAMA3_70B, "heads": 128},
            "training": {"tokens": "1T", "global_batch_tokens": "16Mi", "tensor_parallel": 128},
        }
    )
    with pytest.raises(WorkloadError, match=r"tensor_parallel 128 is more than the 72 GPUs of one NVLink domain"):
        estimate_workload(wide, [_gb200(2)], [], catalog)


def test_a_run_holds_the_whole_domains_it_touches(catalog: Catalog) -> None:
    """TP16 x DP8 uses 128 of the 144 GPUs (32 of 36 nodes): an NVL72 is sold and powered whole, so cost and energy
    count both racks' 36 nodes, and a note says so."""
    est = estimate_workload(
        _wl({"tensor_parallel": 16, "pipeline_parallel": 1, "recompute": "none"}), [_gb200(2)], [], catalog
    )
    assert est.chosen is not None
    assert est.chosen.layout.gpus == 128
    assert est.days is not None
    assert est.cost_usd == pytest.approx(40.0 * 36 * est.days * 24)
    assert any("held whole" in n and "36 nodes of the 2 domains" in n for n in est.notes)


def test_a_gpu_budget_cuts_the_last_domain(catalog: Catalog) -> None:
    pool = _gb200(2)
    assert nvlink_domains([pool], 100) == (72, 28)
    est = estimate_workload(_wl(targets={"gpus": 100}), [pool], [], catalog)
    assert est.gpus_available == 100
    assert est.chosen is not None
    assert est.chosen.layout.gpus <= 100


@pytest.mark.parametrize(("provider", "instance_type"), [("gcp", "a4x-highgpu-4g"), ("onprem", "dgx-gb200-nvl72")])
def test_every_rack_scale_type_of_the_catalog_sizes(catalog: Catalog, provider: str, instance_type: str) -> None:
    est = estimate_workload(_wl(), [_gb200(2, provider=provider, instance_type=instance_type)], [], catalog)
    assert est.fits
    assert est.chosen is not None
    assert est.chosen.step is not None
    assert est.chosen.step.mfu > 0
    assert "sz-compute-prior" in est.sources
    assert any("borrowed: no published run of this GPU" in n for n in est.notes)


def test_an_eight_gpu_server_keeps_tensor_parallelism_inside_the_node(catalog: Catalog) -> None:
    pool = PoolFacts(
        name="gb200",
        provider="aws",
        region="us-east-1",
        instance_type="p5.48xlarge",
        nodes=16,
        gpus_per_node=8,
        usd_per_node_hour=None,
        node_power_kw=10.2,
        pue=1.2,
        fabric_domain_nodes=(16,),
    )
    with pytest.raises(WorkloadError, match=r"more than the 8 GPUs of one p5.48xlarge node \(its NVLink domain\)"):
        estimate_workload(_wl({"tensor_parallel": 16}), [pool], [], catalog)
