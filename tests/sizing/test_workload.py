"""estimate_workload end to end: the chosen layout, what it says when nothing fits, MoE, derived shapes."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import load_catalog
from aicluster.sizing.models import PoolFacts
from aicluster.sizing.workload import WorkloadError, estimate_workload
from aicluster.spec.workload import Workload


def _pool(nodes: int, instance_type: str = "p5.48xlarge", price: float | None = 98.32) -> PoolFacts:
    return PoolFacts(
        name="h100",
        provider="aws",
        region="us-east-1",
        instance_type=instance_type,
        nodes=nodes,
        gpus_per_node=8,
        usd_per_node_hour=price,
        node_power_kw=10.2,
        pue=1.2,
        fabric_domain_nodes=(nodes,),
    )


def _wl(model: dict[str, Any], training: dict[str, Any] | None = None, **extra: Any) -> Workload:
    return Workload.model_validate(
        {
            "name": "w",
            "pools": ["h100"],
            "model": model,
            "training": {"tokens": "2T", "global_batch_tokens": "4Mi", **(training or {})},
            **extra,
        }
    )


LLAMA3_70B = {
    "layers": 80,
    "hidden_size": 8192,
    "heads": 64,
    "kv_heads": 8,
    "ffn_size": 28672,
    "vocabulary": 128256,
    "sequence_length": 8192,
}


def test_a_70b_run_on_1024_h100_gets_a_layout_days_cost_and_energy() -> None:
    est = estimate_workload(_wl(LLAMA3_70B, targets={"days": 30}), [_pool(128)], [], load_catalog())
    assert est.fits
    assert est.chosen is not None
    assert est.chosen.step is not None
    lay = est.chosen.layout
    assert lay.tensor_parallel <= 8  # inside one node's NVLink
    assert est.chosen.memory.total <= 80e9
    assert est.parameters == pytest.approx(70.6e9, rel=0.01)  # Llama 3 70B, from its shape
    assert est.days is not None
    assert est.gpu_hours is not None
    assert est.cost_usd is not None
    hours = est.days * 24
    assert est.gpu_hours == pytest.approx(hours * lay.gpus)
    assert est.cost_usd == pytest.approx(98.32 * (lay.gpus // 8) * hours)
    assert est.energy_mwh == pytest.approx(10.2 * 1.2 * (lay.gpus // 8) * hours / 1000)
    assert est.gpus_for_target_days is not None
    assert est.gpus_for_target_days % (lay.tensor_parallel * lay.pipeline_parallel) == 0
    assert 0 < len(est.runners_up) <= 5
    assert all(c.why.endswith("per step") or c.why.startswith("does not fit") for c in est.runners_up)
    assert "sz-llama3-paper" in est.sources


def test_nothing_fits_names_the_shortfall_and_what_would_fit() -> None:
    # a 70B model on one node cannot hold 16 bytes per parameter of states: 1,130 GB over 8 x 80 GB
    est = estimate_workload(_wl(LLAMA3_70B, {"global_batch_tokens": "64Ki"}), [_pool(1)], [], load_catalog())
    assert not est.fits
    assert est.chosen is None
    assert est.days is None
    assert est.reason is not None
    assert est.reason.startswith("nothing fits: the smallest layout")
    assert "GB short" in est.reason
    assert "would fit with:" in est.reason
    assert all(c.step is None and c.why.startswith("does not fit") for c in est.runners_up)


def test_given_values_are_honoured() -> None:
    est = estimate_workload(
        _wl(LLAMA3_70B, {"tensor_parallel": 4, "pipeline_parallel": 4, "zero_stage": 1, "recompute": "full"}),
        [_pool(128)],
        [],
        load_catalog(),
    )
    assert est.chosen is not None
    lay = est.chosen.layout
    assert (lay.tensor_parallel, lay.pipeline_parallel, lay.zero_stage, lay.recompute) == (4, 4, 1, "full")


def test_parameters_alone_derive_a_stated_shape() -> None:
    est = estimate_workload(_wl({"parameters": "70B", "sequence_length": 4096}), [_pool(64)], [], load_catalog())
    assert est.parameters == 70e9
    assert any(n.startswith("shape derived from parameters alone") for n in est.notes)


def test_moe_uses_active_parameters_for_flops_and_shards_experts() -> None:
    # Mixtral 8x7B (arXiv:2401.04088): 46.7B parameters, 12.9B active; 32 layers, 4096 hidden, 32 heads, 8 KV
    # heads, FFN 14336, 8 experts, top-2, vocabulary 32000
    mixtral = {
        "layers": 32,
        "hidden_size": 4096,
        "heads": 32,
        "kv_heads": 8,
        "ffn_size": 14336,
        "vocabulary": 32000,
        "sequence_length": 4096,
        "kind": "moe",
        "experts": 8,
        "experts_per_token": 2,
    }
    est = estimate_workload(_wl(mixtral), [_pool(32)], [], load_catalog())
    assert est.parameters == pytest.approx(46.7e9, rel=0.01)
    assert est.active_parameters == pytest.approx(12.9e9, rel=0.01)
    assert est.fits
    assert est.chosen is not None


def test_search_is_bounded_on_huge_inputs() -> None:
    # 1e15 parameters, 1e17 tokens on 80,000 GPUs: still a bounded number of layouts, and a clear answer
    huge = {"parameters": "1000T", "sequence_length": 8192}
    est = estimate_workload(_wl(huge, {"tokens": "100000T"}), [_pool(10_000)], [], load_catalog())
    considered = next(n for n in est.notes if n.startswith("searched"))
    assert int(considered.split()[1]) <= 8 * 128 * 8 * 3 * 3 * 4 * 3


def test_a_cpu_pool_is_refused_with_a_message() -> None:
    with pytest.raises(WorkloadError, match="is not a GPU instance type"):
        estimate_workload(_wl(LLAMA3_70B), [_pool(4, instance_type="m7i.2xlarge")], [], load_catalog())


def test_tensor_parallel_beyond_one_node_is_refused() -> None:
    with pytest.raises(WorkloadError, match=r"tensor_parallel 16 is more than the 8 GPUs of one p5.48xlarge node"):
        estimate_workload(_wl(LLAMA3_70B, {"tensor_parallel": 16}), [_pool(16)], [], load_catalog())


def test_a_gpu_target_caps_the_layout() -> None:
    est = estimate_workload(_wl(LLAMA3_70B, targets={"gpus": 256}), [_pool(128)], [], load_catalog())
    assert est.gpus_available == 256
    assert est.chosen is not None
    assert est.chosen.layout.gpus <= 256
