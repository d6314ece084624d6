"""estimate_workload end to end: the chosen layout, what it says when nothing fits, MoE, derived shapes."""

from __future__ import annotations

import re
from typing import Any

import pytest

from aicluster.catalog import load_catalog
from aicluster.sizing import reliability as rel
from aicluster.sizing.layout import tokens_text
from aicluster.sizing.models import FilesystemFacts, PoolFacts
from aicluster.sizing.workload import WorkloadError, estimate_workload
from aicluster.spec.workload import Workload


def _pool(
    nodes: int, instance_type: str = "p5.48xlarge", price: float | None = 98.32, market: str = "on-demand"
) -> PoolFacts:
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
        market=market,
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


# Mixtral 8x7B (arXiv:2401.04088): 46.7B parameters, 12.9B active; 32 layers, 4096 hidden, 32 heads, 8 KV heads,
# FFN 14336, 8 experts, top-2, vocabulary 32000
MIXTRAL_8X7B: dict[str, Any] = {
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
    for c in est.runners_up:
        if c.step is None:
            assert c.why.startswith("does not fit")
            continue
        # ranked per token: the global batches differ, so the text names the step's tokens beside its time
        tokens = c.layout.micro_batch * c.layout.micro_batches * c.layout.data_parallel * 8192
        assert c.why.endswith(f"s per step of {tokens_text(tokens)} tokens)"), c.why
        assert re.match(r"(\d+% slower per token|\d\.\d% slower per token|as fast per token; the chosen has) ", c.why)
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
    mixtral = MIXTRAL_8X7B
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


LUSTRE = FilesystemFacts(name="scratch", kind="lustre", parallel=True, throughput_mb_s=10_000)


def test_days_are_wall_clock_failure_free_days_over_goodput() -> None:
    """Calendar days (what users plan by) = failure-free days / goodput; GPU-hours, cost and energy follow them."""
    cat = load_catalog()
    est = estimate_workload(_wl(LLAMA3_70B, targets={"days": 30}), [_pool(128)], [LUSTRE], cat)
    assert est.chosen is not None
    assert est.chosen.step is not None
    assert est.reliability is not None
    assert est.reliability.goodput is not None
    lay = est.chosen.layout
    goodput = est.reliability.goodput
    assert 0.9 < goodput < 1.0
    assert est.compute_days == pytest.approx(est.steps * est.chosen.step.total_s / 86400)
    assert est.days == pytest.approx(est.compute_days / goodput)
    assert est.days > est.compute_days
    hours = est.days * 24
    assert est.gpu_hours == pytest.approx(hours * lay.gpus)
    assert est.cost_usd == pytest.approx(98.32 * (lay.gpus // 8) * hours)
    assert est.energy_mwh == pytest.approx(10.2 * 1.2 * (lay.gpus // 8) * hours / 1000)
    # the interruptions are those of the wall-clock run
    assert est.reliability.interruptions == pytest.approx(hours / est.reliability.mtbf_h)


def test_gpus_for_target_days_meet_the_target_in_wall_clock_days() -> None:
    """The GPUs named for the target give wall-clock days within it at their own goodput (more GPUs fail more
    often), and one TP x PP group fewer would not."""
    cat = load_catalog()
    est = estimate_workload(_wl(LLAMA3_70B, targets={"days": 10}), [_pool(128)], [LUSTRE], cat)
    assert est.chosen is not None
    assert est.compute_days is not None
    assert est.days is not None
    assert est.days > 10  # 1,024 GPUs miss 10 days
    lay = est.chosen.layout
    group = lay.tensor_parallel * lay.pipeline_parallel
    need = est.gpus_for_target_days
    assert need is not None
    assert need % group == 0
    size = rel.checkpoint_bytes(cat, parameters=est.parameters, optimizer="adamw", precision="bf16")

    def wall_days(n: int) -> float:
        failure_free = est.compute_days * lay.gpus / n  # type: ignore[operator]
        r = rel.reliability(cat, gpus=n, checkpoint_bytes=size, filesystems=[LUSTRE], run_hours=failure_free * 24)
        assert r.goodput is not None
        return failure_free / r.goodput

    assert wall_days(need) <= 10
    assert wall_days(need - group) > 10
    # failure-free scaling alone would name fewer GPUs: goodput is part of the answer
    assert need > est.compute_days * lay.gpus / 10
    note = next(n for n in est.notes if n.startswith("GPUs for 10 days"))
    assert f"{need:,}" in note
    assert "goodput" in note


def test_a_target_beyond_any_gpu_budget_is_said_not_computed() -> None:
    """A target that would need more GPUs than any budget (issue 30 #14: a near-zero target overflowed to infinity
    in the rounding to whole TP x PP groups) is reported, never an OverflowError."""
    from aicluster.sizing.workload import MAX_TARGET_GPUS, _gpus_for_target

    est = estimate_workload(_wl(LLAMA3_70B, targets={"days": 0.0417}), [_pool(128)], [LUSTRE], load_catalog())
    assert est.chosen is not None
    assert est.gpus_for_target_days is None or est.gpus_for_target_days <= MAX_TARGET_GPUS
    assert any(n.startswith("GPUs for 0.0417 days") for n in est.notes)
    gpus, note = _gpus_for_target(est.chosen.layout, 1e300, 5e-324, None)
    assert gpus is None
    assert f"days: more than {MAX_TARGET_GPUS:,} at" in note


def test_gpu_memory_is_the_nvidia_smi_total_not_the_marketing_figure() -> None:
    # NVIDIA/nccl issue #1264 (nvidia-smi, H100 80GB HBM3): 81,559 MiB total; modal-client PR #2797: "85.52 GB"
    est = estimate_workload(_wl(LLAMA3_70B), [_pool(128)], [], load_catalog())
    assert est.chosen is not None
    assert est.chosen.memory.capacity == pytest.approx(85.52e9, rel=1e-3)
    assert est.chosen.memory.capacity == 81_559 * 2**20
    assert "sz-nvidia-smi-h100" in est.sources
    assert any(n.startswith("GPU memory: 81,559 MiB = 85.5 GB") for n in est.notes)


def test_nothing_fits_names_only_fixes_that_change_something() -> None:
    """targets.gpus 16 on a 32-GPU pool with ZeRO-3 and full recompute given: raise targets.gpus (to the GPUs that
    fit), or a GPU with more memory; never ZeRO or recompute (already at the maximum); the shortfall once."""
    model = {"parameters": "100B", "sequence_length": 8192}
    training = {"zero_stage": 3, "recompute": "full", "global_batch_tokens": "1Mi"}
    est = estimate_workload(_wl(model, training, targets={"gpus": 16}), [_pool(4)], [], load_catalog())
    assert not est.fits
    assert est.reason is not None
    assert "raise targets.gpus to 32 (the pools have 32;" in est.reason
    assert "NVIDIA H200 SXM 141GB" in est.reason
    assert "zero_stage" not in est.reason
    assert "recompute: full" not in est.reason
    assert "add nodes" not in est.reason  # the pools already have the GPUs
    assert est.reason.count("short") == 1
    # ZeRO-1 without recompute, no GPU budget: more nodes, or the settings the workload fixed, on the same GPUs
    training = {"zero_stage": 1, "recompute": "none", "global_batch_tokens": "1Mi"}
    est = estimate_workload(_wl(model, training), [_pool(4)], [], load_catalog())
    assert est.reason is not None
    assert "add nodes (pools[].nodes;" in est.reason
    assert "targets.gpus" not in est.reason
    assert "zero_stage: 3 (not 1) and recompute: full (not none) on the same GPUs" in est.reason


def test_a_spot_pool_says_reclaims_are_not_modelled() -> None:
    spot = estimate_workload(_wl(LLAMA3_70B), [_pool(128, market="spot")], [LUSTRE], load_catalog())
    assert any("pool h100 is on the spot market: reclaims are not modelled" in n for n in spot.notes)
    plain = estimate_workload(_wl(LLAMA3_70B), [_pool(128)], [LUSTRE], load_catalog())
    assert not any("spot" in n for n in plain.notes)


def test_notes_name_the_pipeline_schedule_of_the_chosen_layout() -> None:
    est = estimate_workload(
        _wl(LLAMA3_70B, {"tensor_parallel": 8, "pipeline_parallel": 4}), [_pool(128)], [], load_catalog()
    )
    assert est.chosen is not None
    assert est.chosen.layout.virtual_stages == 4  # 80 layers = 4 stages x 4 chunks x 5 layers: interleaved wins
    note = next(n for n in est.notes if n.startswith("searched"))
    assert "(interleaved 1F1B, 4 model chunks per stage)" in note
    assert "(1F1B)" not in note


def test_a_runner_up_as_fast_per_token_names_the_tie_break_it_lost() -> None:
    """Two layouts with the same time per token (ZeRO-1 and ZeRO-2 on TP8 x DP384 with 5 micro-batches: the same
    data-parallel volume, so the same exposed part) are a tie: the runner-up says so and names the tie-break
    (the lower ZeRO stage), not "0% slower"."""
    est = estimate_workload(
        _wl(
            LLAMA3_70B,
            {"tensor_parallel": 8, "pipeline_parallel": 1, "recompute": "none", "global_batch_tokens": "16Mi"},
        ),
        [_pool(384)],
        [],
        load_catalog(),
    )
    assert est.chosen is not None
    assert est.chosen.step is not None
    ties = [c for c in est.runners_up if c.why.startswith("as fast per token")]
    assert ties
    for c in ties:
        assert c.step is not None
        assert c.step.total_s == pytest.approx(est.chosen.step.total_s, rel=1e-9)
        assert c.why.startswith("as fast per token; the chosen has a lower ZeRO stage")
        assert c.layout.zero_stage > est.chosen.layout.zero_stage
    assert not any(c.why.startswith("0% slower") for c in est.runners_up)


def _azure_pool(nodes: int, domains: tuple[int, ...]) -> PoolFacts:
    return PoolFacts(
        name="h100",
        provider="azure",
        region="eastus",
        instance_type="Standard_ND96isr_H100_v5",
        nodes=nodes,
        gpus_per_node=8,
        usd_per_node_hour=98.32,
        node_power_kw=10.2,
        pue=1.2,
        fabric_domain_nodes=domains,
    )


def test_an_azure_job_stays_inside_one_infiniband_scale_set() -> None:
    """An Azure ND InfiniBand domain is one scale set (100 VMs by default) and NCCL has no InfiniBand path between
    them: a 256-node pool in scale sets of 100, 100 and 56 runs one job on at most 100 nodes."""
    est = estimate_workload(_wl(LLAMA3_70B), [_azure_pool(256, (100, 100, 56))], [], load_catalog())
    assert est.fits
    assert est.gpus_available == 800
    assert est.chosen is not None
    assert est.chosen.layout.gpus <= 800
    assert any("one job stays inside one InfiniBand domain" in n and "800 GPUs" in n for n in est.notes)


def test_a_raised_scale_set_is_one_larger_domain() -> None:
    """Azure support can raise a scale set to 300 VMs (the pool's ib_domain_max_vms): the plan's domain size is the
    limit, and the collective model is told so instead of refusing beyond 100 nodes."""
    est = estimate_workload(_wl(LLAMA3_70B), [_azure_pool(250, (250,))], [], load_catalog())
    assert est.fits
    assert est.gpus_available == 2000
    assert not any("InfiniBand domain" in n for n in est.notes)


def test_an_aws_pool_has_no_domain_cap() -> None:
    est = estimate_workload(_wl(LLAMA3_70B), [_pool(256)], [], load_catalog())
    assert est.gpus_available == 2048
