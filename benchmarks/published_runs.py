"""The workload estimator beside published training runs: the utilisation prior's calibration and the GPU-hours of
well-known A100 and H100 runs (data/sizing.yaml `published_runs`, aicluster/sizing/calibration.py).

Prints three Markdown tables:
- calibration runs (a published layout and whole-step MFU/HFU): the compute utilisation at which the model
  reproduces each, and the model's figure at the prior (the median of those);
- the priors per accelerator;
- whole runs (published GPU-hours or throughput): published, the model's estimate at the prior (wall-clock GPU-hours:
  failure-free over the reliability model's goodput), the failure-free figure, the ratio, and the ratio the previous
  prior gave (a whole-step MFU used as the compute prior: A100 0.39, H100 0.43, which counted communication and the
  pipeline bubble twice).

Usage: python benchmarks/published_runs.py
Prints figures; asserts nothing (tests/sizing/test_calibration.py checks them within the stated tolerances).
"""

from __future__ import annotations

from aicluster.catalog import load_catalog
from aicluster.catalog.sizing import PublishedRun
from aicluster.sizing.calibration import RunCheck, check_run, implied_utilisation
from aicluster.sizing.models import Layout

# the prior before the compute-only calibration: whole-step MFU (sz-megatron-sc21 for A100, sz-llama3-paper for H100)
WHOLE_STEP_PRIOR = {"a100-sxm-40gb": 0.39, "a100-sxm-80gb": 0.39, "h100-sxm-80gb": 0.43, "h200-sxm-141gb": 0.43}


def layout_text(lay: Layout | None) -> str:
    if lay is None:
        return "none fits"
    text = f"TP{lay.tensor_parallel} PP{lay.pipeline_parallel} DP{lay.data_parallel}"
    if lay.virtual_stages > 1:
        text += f" v{lay.virtual_stages}"
    return text + f" ZeRO-{lay.zero_stage} {lay.recompute}"


def value_text(run: PublishedRun, value: float | None) -> str:
    if value is None:
        return "-"
    if run.metric in ("mfu", "hfu"):
        return f"{value:.1%} {run.metric.upper()}"
    if run.metric == "tokens_per_gpu_s":
        return f"{value:,.0f} tok/s/GPU"
    return f"{value:,.0f}"


def ratio_text(check: RunCheck) -> str:
    return "-" if check.ratio is None else f"{check.ratio:.2f}"


def main() -> None:
    catalog = load_catalog()
    sizing = catalog.sizing
    assert sizing is not None
    accelerators = catalog.accelerators

    print("## Calibration runs: the compute utilisation that reproduces each published figure\n")
    print("| run | GPUs | layout | published | implied compute utilisation | model at the prior | ratio |")
    print("|---|---:|---|---:|---:|---:|---:|")
    implied: dict[str, float] = {}
    for run in sizing.published_runs:
        if run.role != "calibration":
            continue
        implied[run.id] = implied_utilisation(catalog, run)
        check = check_run(catalog, run)
        print(
            f"| {run.name} | {run.gpus:,} | {layout_text(check.layout)} | {value_text(run, run.published)} | "
            f"{implied[run.id]:.1%} | {value_text(run, check.estimated)} | {ratio_text(check)} |"
        )

    print("\n## The priors (compute part of a step, hardware FLOPs / (compute time x peak))\n")
    print("| accelerators | prior | median of | source |")
    print("|---|---:|---|---|")
    for prior in sizing.utilisation:
        names = ", ".join(accelerators[a].name for a in prior.accelerators) or "any other (borrowed)"
        of = ", ".join(f"{implied[r]:.1%}" for r in prior.runs if r in implied) or "-"
        print(f"| {names} | {prior.compute_utilisation:.1%} | {of} | {prior.source} |")

    print("\n## Whole runs: published beside the model\n")
    print(
        "| run | role | GPUs | layout (searched unless published) | published | estimated | failure-free | goodput "
        "| ratio | ratio, whole-step prior |"
    )
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for run in sizing.published_runs:
        if run.role == "calibration":
            continue
        check = check_run(catalog, run)
        old = WHOLE_STEP_PRIOR.get(run.accelerator)
        before = ratio_text(check_run(catalog, run, old)) if old is not None else "-"
        gpus = f"{run.gpus:,}" + ("" if run.gpus_stated else " (assumed)")
        free = value_text(run, check.failure_free) if check.failure_free is not None else "-"
        goodput = f"{check.goodput:.1%}" if check.goodput is not None else "-"
        print(
            f"| {run.name} | {run.role} | {gpus} | {layout_text(check.layout)} | {value_text(run, run.published)} | "
            f"{value_text(run, check.estimated)} | {free} | {goodput} | {ratio_text(check)} | {before} |"
        )
    print(
        "\nratio = estimated / published. GPU-hours: the model's wall-clock hours (failure-free hours over the goodput "
        "of its reliability prior, checkpoints written as fast as its 5% overhead target needs); published hours also "
        "hold evaluation, restarts beyond the prior and, for Llama 3.1, long-context training (role reference: not "
        "checked). Instance types stand in for the runs' clusters (see data/sizing.yaml)."
    )


if __name__ == "__main__":
    main()
