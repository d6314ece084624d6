"""The utilisation prior against published training runs (data/sizing.yaml published_runs): the prior is the
compute part's utilisation, calibrated by inverting the model on runs with a published layout; whole runs' published
GPU-hours and throughput are checked against the estimate at the prior, within each run's stated tolerance."""

from __future__ import annotations

import pytest

from aicluster.catalog import Catalog, load_catalog
from aicluster.catalog.sizing import PublishedRun
from aicluster.sizing.calibration import check_run, implied_utilisation, median

_SIZING = load_catalog().sizing
assert _SIZING is not None
RUNS = {r.id: r for r in _SIZING.published_runs}


def _runs(*roles: str) -> list[PublishedRun]:
    return [r for r in RUNS.values() if r.role in roles]


@pytest.mark.parametrize("run", _runs("calibration"), ids=lambda r: r.id)
def test_at_the_prior_the_model_reproduces_each_calibration_run(catalog: Catalog, run: PublishedRun) -> None:
    """The run's own layout, timed at the prior (the median over its accelerator's runs): within the stated spread."""
    check = check_run(catalog, run)
    assert check.ratio is not None
    assert check.within, f"{run.id}: model {check.estimated:.4f} vs published {run.published} ({check.ratio:.3f}x)"


@pytest.mark.parametrize("run", _runs("calibration"), ids=lambda r: r.id)
def test_the_implied_utilisation_reproduces_the_published_figure(catalog: Catalog, run: PublishedRun) -> None:
    """Solving for the compute utilisation and timing the run at it gives the published figure back."""
    implied = implied_utilisation(catalog, run)
    assert 0.3 < implied < 0.9  # a compute utilisation, not a whole-step one nor a ceiling hit
    assert check_run(catalog, run, implied).ratio == pytest.approx(1.0, abs=1e-6)


def test_each_prior_is_the_median_of_its_runs(catalog: Catalog) -> None:
    assert catalog.sizing is not None
    calibrated = [p for p in catalog.sizing.utilisation if p.runs]
    assert {a for p in calibrated for a in p.accelerators} >= {"a100-sxm-80gb", "h100-sxm-80gb"}
    for prior in calibrated:
        values = [implied_utilisation(catalog, RUNS[r]) for r in prior.runs]
        assert prior.compute_utilisation == pytest.approx(median(values), abs=0.005), prior.accelerators
        assert prior.source == "sz-compute-prior"


def test_gpus_without_a_published_run_borrow_the_h100_prior(catalog: Catalog) -> None:
    """B200, GB200, GB300, B300: no published breakdown; the default borrows H100's (said in the source and the
    estimate's note)."""
    assert catalog.sizing is not None
    h100 = catalog.sizing.utilisation_for("h100-sxm-80gb", "bf16")
    for acc in ("b200-sxm-180gb", "gb200", "gb300", "b300-sxm"):
        prior = catalog.sizing.utilisation_for(acc, "bf16")
        assert prior.runs == ()
        assert prior.compute_utilisation == h100.compute_utilisation
    assert "borrow the H100 value" in (catalog.sources["sz-compute-prior"].note or "")


@pytest.mark.parametrize("run", _runs("check"), ids=lambda r: r.id)
def test_whole_runs_are_within_their_tolerance_at_the_prior(catalog: Catalog, run: PublishedRun) -> None:
    """Published GPU-hours (wall clock, downtime included) and throughput of whole A100/H100 runs beside the
    estimate at the prior: the layout searched on the run's GPUs unless published; GPU-hours over the reliability
    model's goodput."""
    check = check_run(catalog, run)
    assert check.ratio is not None
    assert check.within, f"{run.id}: estimated {check.estimated:,.0f} vs published {run.published:,.0f}"
    if run.metric == "gpu_hours":
        assert check.failure_free is not None
        assert check.goodput is not None
        assert 0.85 < check.goodput < 1.0
        assert check.estimated == pytest.approx(check.failure_free / check.goodput)


def test_a_whole_step_mfu_as_the_compute_prior_overestimated_a100_runs(catalog: Catalog) -> None:
    """The bug this prior fixes: Megatron's whole-step 39% applied to compute alone (communication and the bubble
    then counted twice) put every A100 GPU-hours estimate 20-60% above the published hours."""
    for run in _runs("check"):
        if run.accelerator != "a100-sxm-80gb" or run.metric != "gpu_hours":
            continue
        before = check_run(catalog, run, 0.39).ratio
        now = check_run(catalog, run).ratio
        assert before is not None
        assert now is not None
        assert 1.15 < before < 1.6, run.id
        assert abs(now - 1) < abs(before - 1), run.id


def test_reference_runs_are_shown_and_say_why_they_are_not_checked(catalog: Catalog) -> None:
    for run in _runs("reference"):
        assert check_run(catalog, run).estimated is not None
        assert "leaves out" in run.note or "caveats" in run.note


def test_every_run_cites_a_source_and_says_what_is_assumed(catalog: Catalog) -> None:
    for run in RUNS.values():
        assert run.source in catalog.sources
        if not run.gpus_stated:
            assert "assumed" in run.note, run.id
