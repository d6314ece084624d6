"""Priors for workload sizing (data/sizing.yaml): utilisation, FP8 peaks, memory overhead, bytes of model state.

Every figure cites a source id of data/sources/sizing.yaml; a figure that is an assumption says so in its source.
Imports nothing of the project (the catalog is a leaf).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .models import Sourced, _Record


class UtilisationPrior(Sourced):
    """The share of peak the matmuls of a step reach (model FLOPs utilisation of the compute part)."""

    accelerators: Annotated[
        tuple[str, ...], Field(description="Accelerator ids it applies to; empty: the default for any other.")
    ]
    precision: Literal["bf16", "fp8"]
    mfu: Annotated[float, Field(gt=0, le=1, description="Model FLOPs / (time x peak), 0..1.")]


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

    def fp8_tflops(self, accelerator: str) -> Fp8Peak | None:
        return next((r for r in self.fp8 if r.accelerator == accelerator), None)

    def optimizer(self, name: str) -> OptimizerBytes:
        return next(r for r in self.optimizers if r.optimizer == name)

    def source_ids(self) -> set[str]:
        ids = {self.fp8_speedup_source, self.dp_overlap_source, self.tp_overlap_source}
        for rec in (*self.utilisation, *self.fp8, *self.optimizers, self.overhead, *self.memory_capacity):
            ids.update({rec.source, *rec.field_sources.values()})
        return ids
