"""The reliability model against published figures: MLPerf Storage's checkpoint sizes, Llama 3's job MTBF, the
reference's derived checkpoint-interval and waste table (Young/Daly), and Daly's correction against Young."""

from __future__ import annotations

import pytest

from aicluster.catalog import load_catalog
from aicluster.sizing.models import FilesystemFacts
from aicluster.sizing.reliability import (
    ReliabilityError,
    checkpoint_bytes,
    checkpoint_waste,
    daly_interval,
    mtbf_hours,
    reliability,
    required_write_gb_s,
    young_interval,
)

CAT = load_catalog()
GIB = 2**30
LLAMA3_VOCAB = 128_256  # Llama 3 tokenizer (MLPerf Storage's DLIO configs use it)


def llama_parameters(h: int, layers: int, ffn: int, heads: int, kv_heads: int, vocab: int = LLAMA3_VOCAB) -> int:
    """Parameters of a Llama-style decoder: embeddings and LM head (untied), per layer two RMSNorms, Q and O (h x h),
    K and V with grouped-query attention (h x kv_heads x head_dim each), a gated MLP (3 x h x ffn); a final norm."""
    head_dim = h // heads
    per_layer = 2 * h + 2 * h * h + 2 * h * kv_heads * head_dim + 3 * h * ffn
    return 2 * vocab * h + layers * per_layer + h


# MLPerf Storage v2.0 Submission_guidelines.md section 2.2.1 Table 2 (source id mlperf-storage-checkpointing):
# the model configuration and the published checkpoint size, which DLIO computes in GiB and labels "GB".
MLPERF_TABLE_2 = [
    pytest.param(4096, 32, 14336, 32, 8, 105, id="llama3-8b-105GB"),
    pytest.param(8192, 80, 28672, 128, 8, 912, id="llama3-70b-912GB"),
    pytest.param(16384, 126, 53248, 128, 8, 5290, id="llama3-405b-5.29TB"),
]


@pytest.mark.parametrize(("h", "layers", "ffn", "heads", "kv", "published_gib"), MLPERF_TABLE_2)
def test_checkpoint_size_matches_mlperf_storage_within_1_percent(
    h: int, layers: int, ffn: int, heads: int, kv: int, published_gib: float
) -> None:
    params = llama_parameters(h, layers, ffn, heads, kv)
    model = checkpoint_bytes(CAT, parameters=params, optimizer="adam", precision="bf16")
    assert model / GIB == pytest.approx(published_gib, rel=0.01)
    # and the table is binary: read as decimal GB the same figures would be about 7% off
    assert abs(model / 1e9 - published_gib) / published_gib > 0.05


def test_llama3_70b_real_parameter_count_checkpoint() -> None:
    """Llama 3 70B has 70.6e9 parameters (64 heads of 128): 14 B/param = 988e9 B = 920 GiB, within 1% of 912."""
    model = checkpoint_bytes(CAT, parameters=70.6e9, optimizer="adam", precision="bf16")
    assert model == pytest.approx(988.4e9, rel=1e-3)
    assert model / GIB == pytest.approx(912, rel=0.01)


def test_weights_only_checkpoint_is_two_bytes_per_parameter() -> None:
    assert checkpoint_bytes(CAT, parameters=1e9, optimizer="none", precision="bf16") == pytest.approx(2e9)


def test_unknown_optimizer_precision_says_what_the_catalog_knows() -> None:
    with pytest.raises(ReliabilityError, match=r"no checkpoint size for optimizer 'lion' in 'bf16'.*adam/bf16"):
        checkpoint_bytes(CAT, parameters=1e9, optimizer="lion", precision="bf16")


def test_llama3_job_mtbf_at_16384_gpus() -> None:
    """Llama 3 405B: 419 unexpected interruptions in 54 days (1,296 h) on 16,384 H100s: MTBF 3.09 h."""
    published_h = 54 * 24 / 419
    assert published_h == pytest.approx(3.09, abs=0.005)
    assert mtbf_hours(CAT, 16_384) == pytest.approx(published_h, rel=0.005)


def test_prior_matches_the_storage_policy_rate() -> None:
    """policies/storage/checkpoint_throughput.py uses 50,700 GPU-hours per interruption; the catalog derives 50,677
    from the counts."""
    assert CAT.reliability is not None
    assert CAT.reliability.prior.gpu_hours_per_interruption == pytest.approx(50_700, rel=0.001)


def _fs(gb_s: float) -> list[FilesystemFacts]:
    return [FilesystemFacts(name="lustre", kind="lustre", parallel=True, throughput_mb_s=gb_s * 1000.0)]


# Reference sizing.md 3.5 "Bandwidth -> interval -> waste (D)": model, GPUs, checkpoint bytes, write GB/s, and the
# published delta (s), M (h), tau* (min, "Young ~ Daly") and waste (%). Tolerances: delta and M 2% (the table rounds
# to 2-3 digits), tau 3% for both Young and Daly (the table gives one figure for both; they differ by up to 2.4%
# at 405B), waste 0.15 percentage points (the table rounds to 0.1).
WASTE_TABLE = [
    pytest.param(64, 105e9, 5, 21, 792, 180, 0.4, id="8B-64gpu-5GBps"),
    pytest.param(1024, 912e9, 10, 91, 49.5, 95, 3.2, id="70B-1024gpu-10GBps"),
    pytest.param(1024, 912e9, 50, 18, 49.5, 42, 1.4, id="70B-1024gpu-50GBps"),
    pytest.param(16_384, 5.29e12, 200, 26, 3.09, 12.5, 6.9, id="405B-16384gpu-200GBps"),
    pytest.param(16_384, 5.29e12, 2000, 2.6, 3.09, 4.0, 2.2, id="405B-16384gpu-2TBps"),
]


@pytest.mark.parametrize(("gpus", "nbytes", "gb_s", "delta_s", "mtbf_h", "tau_min", "waste_pct"), WASTE_TABLE)
def test_checkpoint_interval_and_waste_match_reference_table(
    gpus: int, nbytes: float, gb_s: float, delta_s: float, mtbf_h: float, tau_min: float, waste_pct: float
) -> None:
    rel = reliability(CAT, gpus=gpus, checkpoint_bytes=nbytes, filesystems=_fs(gb_s), run_hours=24 * 30)
    assert rel.write_s is not None
    assert rel.interval_s is not None
    assert rel.goodput is not None
    assert rel.write_s == pytest.approx(delta_s, rel=0.02)
    assert rel.mtbf_h == pytest.approx(mtbf_h, rel=0.02)
    mtbf_s = rel.mtbf_h * 3600
    assert rel.interval_s / 60 == pytest.approx(tau_min, rel=0.03)  # Daly
    assert young_interval(rel.write_s, mtbf_s) / 60 == pytest.approx(tau_min, rel=0.03)
    waste = checkpoint_waste(rel.write_s, rel.interval_s, mtbf_s)
    assert waste * 100 == pytest.approx(waste_pct, abs=0.15)
    # goodput takes the restarts off as well (requeue prior + reading the checkpoint back)
    assert rel.restart_s == pytest.approx(600 + rel.write_s)
    assert rel.goodput == pytest.approx(1 - waste - rel.restart_s / mtbf_s)
    assert rel.interruptions == pytest.approx(24 * 30 / rel.mtbf_h)


@pytest.mark.parametrize(
    ("delta_min", "young_min", "daly_min"),
    [pytest.param(1, 19.3, 18.6, id="delta-1min"), pytest.param(5, 43, 40, id="delta-5min")],
)
def test_daly_against_young_at_the_llama3_rate(delta_min: float, young_min: float, daly_min: float) -> None:
    """Reference policy-cost-power.md (d): at M = 3.09 h, Young 19.3 / Daly 18.6 min (delta 1 min) and 43 / 40 min
    (delta 5 min). Daly is shorter: the first-order formula ignores the write time inside the interval."""
    mtbf_s = 3.09 * 3600
    young = young_interval(delta_min * 60, mtbf_s) / 60
    daly = daly_interval(delta_min * 60, mtbf_s) / 60
    assert young == pytest.approx(young_min, rel=0.01)
    assert daly == pytest.approx(daly_min, rel=0.01)
    assert daly < young


def test_daly_interval_is_the_mtbf_when_a_write_takes_longer_than_two_mtbfs() -> None:
    assert daly_interval(3 * 3600, 1 * 3600) == 3600


def test_no_parallel_file_system_gives_no_interval_but_still_a_required_throughput() -> None:
    nfs = [FilesystemFacts(name="home", kind="nfs", parallel=False, throughput_mb_s=500)]
    rel = reliability(CAT, gpus=1024, checkpoint_bytes=912e9, filesystems=nfs, run_hours=100)
    assert rel.filesystems == ()
    assert rel.write_gb_s is None
    assert rel.write_s is None
    assert rel.interval_s is None
    assert rel.goodput is None
    assert rel.restart_s == 600
    assert rel.required_write_gb_s > 0


def test_required_throughput_keeps_youngs_overhead_at_the_target() -> None:
    """At the required throughput, writes plus rework at Young's interval, sqrt(2 delta / M), equal the target (5%)
    — the storage policy's own formula (policies/storage/checkpoint_throughput.py young_overhead)."""
    rel = reliability(CAT, gpus=1024, checkpoint_bytes=912e9, filesystems=_fs(10), run_hours=100)
    assert rel.target_overhead == 0.05
    mtbf_s = rel.mtbf_h * 3600
    delta = 912e9 / (rel.required_write_gb_s * 1e9)
    assert (2 * delta / mtbf_s) ** 0.5 == pytest.approx(0.05, rel=1e-9)
    assert required_write_gb_s(912e9, mtbf_s, 0.05) == pytest.approx(rel.required_write_gb_s)
    # 70B on 1,024 GPUs: 912 GB every ~0.9 h of MTBF budget -> about 4.1 GB/s keeps it under 5%
    assert rel.required_write_gb_s == pytest.approx(4.09, rel=0.01)


def test_two_parallel_file_systems_add_their_throughput() -> None:
    two = [*_fs(10), FilesystemFacts(name="b", kind="lustre", parallel=True, throughput_mb_s=5000)]
    rel = reliability(CAT, gpus=64, checkpoint_bytes=105e9, filesystems=two, run_hours=10)
    assert rel.write_gb_s == pytest.approx(15)
    assert rel.filesystems == ("lustre", "b")


def test_zero_gpus_is_refused() -> None:
    with pytest.raises(ReliabilityError, match="gpus must be positive"):
        mtbf_hours(CAT, 0)
