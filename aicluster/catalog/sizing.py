"""Priors for workload sizing (data/sizing.yaml): utilisation, FP8 peaks, memory overhead, bytes of model state, and
the published training runs the utilisation prior is calibrated and checked on.

Every figure cites a source id of data/sources/sizing.yaml; a figure that is an assumption says so in its source.
Imports nothing of the project (the catalog is a leaf).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .models import Provider, Sourced, _Record


class UtilisationPrior(Sourced):
    """The share of peak the compute part of a step reaches: hardware FLOPs (recomputation included) / (compute
    time x peak). Not a whole-step MFU: the estimator adds exposed communication and the pipeline bubble on top, so
    a whole-step figure here would count them twice. Calibrated by inverting the model on published runs."""

    accelerators: Annotated[
        tuple[str, ...], Field(description="Accelerator ids it applies to; empty: the default for any other.")
    ]
    precision: Literal["bf16", "fp8"]
    compute_utilisation: Annotated[
        float, Field(gt=0, le=1, description="Hardware FLOPs / (compute time x peak) of a step's compute, 0..1.")
    ]
    runs: Annotated[
        tuple[str, ...],
        Field(
            description="Ids of the published runs (published_runs, role calibration) whose implied compute "
            "utilisation it is the median of; empty: borrowed, the source says from where."
        ),
    ] = ()


class RunModel(_Record):
    """A published run's model, as the workload spec's `model` has it (plain numbers: the catalog imports no spec)."""

    parameters: Annotated[float | None, Field(gt=0, description="Total parameters; None: counted from the shape.")] = (
        None
    )
    layers: Annotated[int, Field(ge=1)]
    hidden_size: Annotated[int, Field(ge=1)]
    heads: Annotated[int, Field(ge=1)]
    kv_heads: Annotated[int | None, Field(ge=1)] = None
    ffn_size: Annotated[int | None, Field(ge=1)] = None
    mlp: Literal["swiglu", "gelu"] = "swiglu"
    vocabulary: Annotated[int, Field(ge=1)]
    sequence_length: Annotated[int, Field(ge=1)]


class RunLayout(_Record):
    """The layout a run published (data parallel follows: GPUs / (tensor x pipeline))."""

    tensor_parallel: Annotated[int, Field(ge=1)]
    pipeline_parallel: Annotated[int, Field(ge=1)]
    zero_stage: Literal[0, 1, 2, 3]
    recompute: Literal["none", "selective", "full"]
    micro_batch: Annotated[int, Field(ge=1, description="Sequences per micro-batch.")]
    virtual_stages: Annotated[int, Field(ge=1, description="Model chunks per pipeline rank (interleaved 1F1B).")] = 1


class PublishedRun(Sourced):
    """A published training run: what the utilisation prior is calibrated on (role calibration: the run's own layout
    and throughput; the prior is the median of the compute utilisations that reproduce them), checked against (role
    check: published GPU-hours or throughput beside the model's estimate, within the tolerance), or only shown (role
    reference: the published hours hold work the model does not size; the note says what)."""

    id: Annotated[str, Field(description="Short id (e.g. `llama2-70b`).")]
    name: Annotated[str, Field(description="What the run is (e.g. `Llama 2 70B pre-training`).")]
    role: Literal["calibration", "check", "reference"]
    accelerator: Annotated[str, Field(description="Accelerator id of accelerators.yaml.")]
    provider: Provider
    instance_type: Annotated[
        str, Field(description="The catalog type standing in for the run's nodes and fabric (the note says why).")
    ]
    gpus: Annotated[int, Field(ge=1)]
    gpus_stated: Annotated[bool, Field(description="False: the source gives no GPU count; this one is assumed.")]
    model: RunModel
    tokens: Annotated[float, Field(gt=0, description="Training tokens.")]
    global_batch_tokens: Annotated[float, Field(gt=0, description="Tokens per optimizer step.")]
    layout: Annotated[RunLayout | None, Field(description="The published layout; None: the estimator searches.")] = None
    metric: Literal["mfu", "hfu", "tokens_per_gpu_s", "gpu_hours"]
    published: Annotated[float, Field(gt=0, description="The published figure, in the metric's unit (MFU 0..1).")]
    tolerance: Annotated[
        float,
        Field(gt=0, le=1, description="The model's estimate / published is checked within 1 +/- tolerance."),
    ]
    note: Annotated[str, Field(description="What was published and what is assumed.")]

    @model_validator(mode="after")
    def _layout_fits(self) -> PublishedRun:
        if self.layout is not None and self.gpus % (self.layout.tensor_parallel * self.layout.pipeline_parallel):
            raise ValueError(f"published run {self.id}: {self.gpus} GPUs do not split into tensor x pipeline groups")
        return self


class Fp8Peak(Sourced):
    """Dense FP8 tensor-core TFLOP/s of an accelerator (no sparsity)."""

    accelerator: str
    fp8_tflops: Annotated[float, Field(gt=0)]


class OptimizerBytes(Sourced):
    """Bytes per parameter of model states in mixed precision: weights, gradients, optimizer (ZeRO paper's K)."""

    optimizer: Literal["adam", "adamw", "sgd"]
    weight_bytes: Annotated[float, Field(gt=0, description="The 16-bit working copy of the weights.")]
    gradient_bytes: Annotated[float, Field(gt=0, description="The 16-bit gradients.")]
    optimizer_bytes: Annotated[float, Field(ge=0, description="K: fp32 master weights + optimizer moments.")]


class MemoryOverhead(Sourced):
    """What a training process holds beyond model states and activations."""

    fixed_bytes: Annotated[float, Field(ge=0, description="CUDA context, cuBLAS workspace, NCCL buffers, per GPU.")]
    fragmentation: Annotated[
        float, Field(ge=0, le=1, description="Allocator fragmentation, a fraction of states + activations.")
    ]


class MemoryCapacity(Sourced):
    """The device memory a process can address, as nvidia-smi reports its total (MiB = 2^20 bytes).

    The marketing figure (accelerators.yaml memory_gb, e.g. "80 GB" for H100 SXM) is a rounded name, not the
    capacity: an H100 SXM has 80 GiB of HBM3 and nvidia-smi reports 81,559 MiB total (85.5e9 bytes)."""

    accelerator: str
    total_mib: Annotated[float, Field(gt=0, description="nvidia-smi's memory.total, MiB (2^20 bytes).")]

    @property
    def total_bytes(self) -> float:
        return self.total_mib * 2**20


class SizingPriors(_Record):
    """data/sizing.yaml."""

    utilisation: tuple[UtilisationPrior, ...]
    fp8: tuple[Fp8Peak, ...]
    fp8_speedup: Annotated[
        float,
        Field(gt=0, description="Matmul speed-up of FP8 over BF16 that a training step sees (not the 2x of peaks)."),
    ]
    fp8_speedup_source: str
    optimizers: tuple[OptimizerBytes, ...]
    overhead: MemoryOverhead
    dp_overlap: Annotated[
        float, Field(ge=0, le=1, description="Share of data-parallel communication hidden behind backward compute.")
    ]
    dp_overlap_source: str
    tp_overlap: Annotated[
        float, Field(ge=0, le=1, description="Share of tensor-parallel communication hidden behind compute.")
    ]
    tp_overlap_source: str
    memory_capacity: tuple[MemoryCapacity, ...] = ()
    published_runs: tuple[PublishedRun, ...] = ()

    def capacity(self, accelerator: str) -> MemoryCapacity | None:
        """The accelerator's usable memory as nvidia-smi reports it; None: not in the catalog (use memory_gb)."""
        return next((r for r in self.memory_capacity if r.accelerator == accelerator), None)

    def utilisation_for(self, accelerator: str, precision: str) -> UtilisationPrior:
        """The prior for an accelerator and precision: its own, else the default (empty accelerators) of bf16."""
        for want in (precision, "bf16"):
            for rec in self.utilisation:
                if rec.precision == want and accelerator in rec.accelerators:
                    return rec
            for rec in self.utilisation:
                if rec.precision == want and not rec.accelerators:
                    return rec
        raise KeyError(f"no utilisation prior for {accelerator} {precision}")

    def run(self, run_id: str) -> PublishedRun:
        return next(r for r in self.published_runs if r.id == run_id)

    def fp8_tflops(self, accelerator: str) -> Fp8Peak | None:
        return next((r for r in self.fp8 if r.accelerator == accelerator), None)

    def optimizer(self, name: str) -> OptimizerBytes:
        return next(r for r in self.optimizers if r.optimizer == name)

    def source_ids(self) -> set[str]:
        ids = {self.fp8_speedup_source, self.dp_overlap_source, self.tp_overlap_source}
        for rec in (
            *self.utilisation,
            *self.fp8,
            *self.optimizers,
            self.overhead,
            *self.memory_capacity,
            *self.published_runs,
        ):
            ids.update({rec.source, *rec.field_sources.values()})
        return ids
