"""The utilisation prior against published training runs: calibration and checks.

The prior (data/sizing.yaml `utilisation`) is the share of peak the *compute part* of a step reaches; the estimator
adds exposed communication and the pipeline bubble on top (compute.py). Published figures are whole-step figures
(an MFU, a throughput, GPU-hours), so the prior is not one of them: for each calibration run (a published layout and
whole-step figure) the compute utilisation is solved for that makes this model, with its own communication and bubble
on that layout, reproduce the published figure (implied_utilisation). The prior of an accelerator is the median of
its runs' implied values. Check runs (published GPU-hours or throughput of whole training runs, layout left to the
search) are then set beside the model's estimate at the prior (check_run); benchmarks/published_runs.py prints both.
Published GPU-hours are wall-clock hours x GPUs, so the model's are too: the failure-free hours over the goodput of
the reliability model (failures at its prior rate, checkpoints to a parallel file system as fast as the estimator
says keeps checkpoint overhead under its 5% target); the failure-free figure is kept beside it.

A run is described in the catalog (data/sizing.yaml `published_runs`) with a catalog instance type standing in for
its nodes and fabric. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aicluster.catalog import Catalog
from aicluster.catalog.sizing import PublishedRun
from aicluster.spec.workload import Workload

from . import reliability as _reliability
from .layout import Hardware, Priors, layout_time
from .models import FilesystemFacts, Layout, PoolFacts, StepTime
from .shape import shape_of
from .workload import _hardware, estimate_workload, make_comm, nvlink_domains

Timer = Callable[[float], tuple[StepTime, Hardware]]  # compute utilisation -> (the step, the hardware it ran on)

LOW, HIGH = 0.05, 1.0  # the compute utilisations the solver searches between
STEPS = 40  # bisection steps: (HIGH - LOW) / 2^40, far below any figure's precision


@dataclass(frozen=True)
class RunCheck:
    """A published run beside the model. `estimated` and `published` are in the run's metric (MFU and HFU as
    shares, tokens per GPU-second, GPU-hours); `ratio` = estimated / published."""

    run: PublishedRun
    utilisation: float  # the compute utilisation the estimate used
    layout: Layout | None
    step: StepTime | None
    estimated: float | None  # None: no layout fits (the run's own layout is always timed)
    published: float
    failure_free: float | None = None  # GPU-hours without failures, restarts and checkpoint writes
    goodput: float | None = None  # the reliability model's, for GPU-hours

    @property
    def ratio(self) -> float | None:
        return None if self.estimated is None else self.estimated / self.published

    @property
    def within(self) -> bool:
        return self.ratio is not None and abs(self.ratio - 1) <= self.run.tolerance


def run_workload(run: PublishedRun) -> Workload:
    """The run as a workload of the spec (its layout's fixed degrees where published)."""
    model = {k: v for k, v in run.model.model_dump().items() if v is not None}
    training: dict[str, object] = {
        "tokens": int(run.tokens),
        "global_batch_tokens": int(run.global_batch_tokens),
    }
    if run.layout is not None:
        training.update(
            tensor_parallel=run.layout.tensor_parallel,
            pipeline_parallel=run.layout.pipeline_parallel,
            zero_stage=run.layout.zero_stage,
            recompute=run.layout.recompute,
        )
    return Workload.model_validate(
        {
            "name": "published-run",
            "pools": ["run"],
            "model": {**model, "parameters": int(model["parameters"])} if "parameters" in model else model,
            "training": training,
            "targets": {"gpus": run.gpus},
        }
    )


def run_pool(catalog: Catalog, run: PublishedRun) -> PoolFacts:
    """The run's GPUs as one pool of its stand-in instance type (its fabric reaches them all)."""
    it = catalog.instance_type(run.provider, run.instance_type)
    assert it is not None, f"published run {run.id}: {run.provider}/{run.instance_type} not in the catalog"
    nodes = run.gpus // it.accelerator_count
    domain = it.nvlink_domain.nodes if it.nvlink_domain is not None else 0
    return PoolFacts(
        name="run",
        provider=run.provider,
        region="published",
        instance_type=run.instance_type,
        nodes=nodes,
        gpus_per_node=it.accelerator_count,
        usd_per_node_hour=None,
        node_power_kw=it.node_power_kw,
        pue=1.0,
        fabric_domain_nodes=(nodes,),
        nvlink_domain_nodes=(domain,) * (nodes // domain) if domain else (),
    )


def _fixed_layout(run: PublishedRun) -> Layout:
    assert run.layout is not None
    lay = run.layout
    d = run.gpus // (lay.tensor_parallel * lay.pipeline_parallel)
    sequences = run.global_batch_tokens / run.model.sequence_length
    return Layout(
        tensor_parallel=lay.tensor_parallel,
        pipeline_parallel=lay.pipeline_parallel,
        data_parallel=d,
        zero_stage=lay.zero_stage,
        recompute=lay.recompute,
        micro_batch=lay.micro_batch,
        micro_batches=max(1, round(sequences / (d * lay.micro_batch))),
        gpus=run.gpus,
        virtual_stages=lay.virtual_stages,
    )


def _metric(run: PublishedRun, lay: Layout, step: StepTime, hw: Hardware) -> float:
    """The run's published metric as the model has it for one step (GPU-hours: failure-free)."""
    if run.metric == "mfu":
        return step.mfu
    if run.metric == "hfu":
        return hw.utilisation * step.compute_s / step.total_s
    tokens = lay.micro_batch * lay.micro_batches * lay.data_parallel * run.model.sequence_length
    if run.metric == "tokens_per_gpu_s":
        return tokens / step.total_s / lay.gpus
    steps = -(-run.tokens // tokens)
    return steps * step.total_s * lay.gpus / 3600


def wall_clock(catalog: Catalog, run: PublishedRun, gpus: int, gpu_hours: float) -> tuple[float, float]:
    """(wall-clock GPU-hours, goodput) of a run whose failure-free GPU-hours are `gpu_hours` on `gpus` GPUs: its
    checkpoints go to a parallel file system as fast as the reliability model requires for its overhead target."""
    parameters = run.model.parameters or 0.0
    if not parameters:
        parameters = shape_of(run_workload(run).model).parameters
    size = _reliability.checkpoint_bytes(catalog, parameters=parameters, optimizer="adamw", precision="bf16")
    hours = gpu_hours / gpus
    first = _reliability.reliability(catalog, gpus=gpus, checkpoint_bytes=size, filesystems=(), run_hours=hours)
    fs = FilesystemFacts(
        name="checkpoints", kind="lustre", parallel=True, throughput_mb_s=first.required_write_gb_s * 1000
    )
    rel = _reliability.reliability(catalog, gpus=gpus, checkpoint_bytes=size, filesystems=(fs,), run_hours=hours)
    goodput = rel.goodput or 1.0
    return gpu_hours / goodput, goodput


def _timer(catalog: Catalog, run: PublishedRun) -> tuple[Layout, Timer]:
    """The run's own layout and a function utilisation -> (step, hardware) that times it."""
    workload = run_workload(run)
    pool = run_pool(catalog, run)
    shape = shape_of(workload.model)
    assert catalog.sizing is not None
    sizing = catalog.sizing
    priors = Priors(
        optimizer=sizing.optimizer(workload.training.optimizer),
        overhead=sizing.overhead,
        dp_overlap=sizing.dp_overlap,
        tp_overlap=sizing.tp_overlap,
    )
    comm, _ = make_comm(catalog, pool, pool.nodes)
    lay = _fixed_layout(run)
    domains = nvlink_domains([pool], run.gpus)

    def time(utilisation: float) -> tuple[StepTime, Hardware]:
        hw, _, _ = _hardware(catalog, pool, run.gpus, workload.training.precision, domains, utilisation)
        return layout_time(shape, lay, workload.training, hw, priors, comm), hw

    return lay, time


def check_run(catalog: Catalog, run: PublishedRun, utilisation: float | None = None) -> RunCheck:
    """The model's figure for a published run at the catalog's prior (or at `utilisation`): on the run's own layout
    where it is published, else on the layout the estimator's search picks for the run's GPUs. GPU-hours are
    failure-free (no file system is given): published GPU-hours include downtime and restarts."""
    assert catalog.sizing is not None
    prior = catalog.sizing.utilisation_for(run.accelerator, "bf16").compute_utilisation
    share = prior if utilisation is None else utilisation
    if run.layout is not None:
        lay, time = _timer(catalog, run)
        step, hw = time(share)
    else:
        pool = run_pool(catalog, run)
        est = estimate_workload(run_workload(run), [pool], [], catalog, utilisation=share)
        if est.chosen is None or est.chosen.step is None:
            return RunCheck(run, share, None, None, None, run.published)
        lay, step = est.chosen.layout, est.chosen.step
        hw, _, _ = _hardware(catalog, pool, run.gpus, "bf16", nvlink_domains([pool], run.gpus), share)
    value = _metric(run, lay, step, hw)
    if run.metric != "gpu_hours":
        return RunCheck(run, share, lay, step, value, run.published)
    hours, goodput = wall_clock(catalog, run, lay.gpus, value)
    return RunCheck(run, share, lay, step, hours, run.published, failure_free=value, goodput=goodput)


def implied_utilisation(catalog: Catalog, run: PublishedRun) -> float:
    """The compute utilisation at which the model reproduces the run's published figure on its own layout
    (bisection: every metric grows with it). HIGH where even full utilisation falls short."""
    if run.layout is None:
        raise ValueError(f"published run {run.id}: no published layout to calibrate on")
    lay, time = _timer(catalog, run)

    def value(u: float) -> float:
        step, hw = time(u)
        return _metric(run, lay, step, hw)

    lower_is_better = run.metric == "gpu_hours"
    low, high = LOW, HIGH
    if (value(high) > run.published) == lower_is_better and value(high) != run.published:
        return high
    for _ in range(STEPS):
        mid = (low + high) / 2
        above = value(mid) > run.published
        if above != lower_is_better:
            high = mid
        else:
            low = mid
    return (low + high) / 2


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
