"""Typed records of data/reliability.yaml: failure rates, checkpoint bytes per parameter, restart time, the
checkpoint-overhead target. The sizing package (aicluster/sizing/reliability.py) turns them into a job's
failure rate, checkpoint interval and goodput.

Published counts are stored as published (GPUs, hours, interruptions); the rate the estimator uses is derived
from them in code, so the arithmetic is checked by tests rather than copied by hand.

This module imports nothing of the project (layering rule: the catalog is a leaf).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .models import Sourced, _Record


class FailureRate(Sourced):
    """Interruptions of synchronous training jobs as a source reports them.

    `gpu_hours_per_interruption` = gpus x hours / interruptions when the counts are given; a source that gives a
    rate per node-day fills `failures_per_1000_node_days` and `gpus_per_node` instead.
    """

    id: Annotated[str, Field(description="Short id (e.g. `llama3-405b`).")]
    role: Annotated[
        Literal["prior", "secondary"],
        Field(description="`prior`: the rate the estimator uses (exactly one); `secondary`: shown for comparison."),
    ]
    accelerator: Annotated[str, Field(description="What the fleet ran (e.g. `NVIDIA H100 80GB`).")]
    gpus: Annotated[int | None, Field(gt=0, description="GPUs of the job the counts are for.")] = None
    hours: Annotated[float | None, Field(gt=0, description="Wall-clock hours the counts cover.")] = None
    interruptions: Annotated[
        int | None, Field(gt=0, description="Unexpected interruptions in those hours (planned ones excluded).")
    ] = None
    failures_per_1000_node_days: Annotated[float | None, Field(gt=0, description="Rate per 1000 node-days.")] = None
    gpus_per_node: Annotated[int | None, Field(gt=0, description="GPUs per node of that fleet.")] = None
    note: Annotated[str, Field(description="What the figure counts and why it is (or is not) the prior.")]

    @model_validator(mode="after")
    def _one_form(self) -> FailureRate:
        counts = (self.gpus, self.hours, self.interruptions)
        rate = (self.failures_per_1000_node_days, self.gpus_per_node)
        if all(v is not None for v in counts) == all(v is not None for v in rate):
            raise ValueError(
                f"failure rate {self.id}: give either gpus, hours and interruptions, "
                "or failures_per_1000_node_days and gpus_per_node"
            )
        return self

    @property
    def gpu_hours_per_interruption(self) -> float:
        if self.gpus is not None and self.hours is not None and self.interruptions is not None:
            return self.gpus * self.hours / self.interruptions
        assert self.failures_per_1000_node_days is not None
        assert self.gpus_per_node is not None
        return self.gpus_per_node * 24.0 * 1000.0 / self.failures_per_1000_node_days


class CheckpointState(Sourced):
    """Bytes per parameter a training-state checkpoint holds for one optimizer and training precision.

    weights (the model parameters at their stored precision) + master (an fp32 copy when the weights are lower
    precision) + optimizer (its state per parameter). Gradients are not saved.
    """

    optimizer: Annotated[str, Field(description="Optimizer (e.g. `adam`), or `none` for a weights-only checkpoint.")]
    precision: Annotated[str, Field(description="Training precision (e.g. `bf16`).")]
    weights: Annotated[float, Field(ge=0, description="Bytes per parameter of the stored weights.")]
    master: Annotated[float, Field(ge=0, description="Bytes per parameter of an fp32 master copy (0: none).")]
    optimizer_state: Annotated[float, Field(ge=0, description="Bytes per parameter of optimizer state.")]
    note: Annotated[str, Field(description="Why these bytes.")]

    @property
    def bytes_per_parameter(self) -> float:
        return self.weights + self.master + self.optimizer_state


class SourcedValue(Sourced):
    """One sourced (or assumed) number with the reason for it."""

    value: float
    assumption: Annotated[bool, Field(description="True: no source measures it; the note says what it stands for.")] = (
        False
    )
    note: str


class ReliabilityData(_Record):
    """Everything in data/reliability.yaml."""

    failure_rates: tuple[FailureRate, ...]
    checkpoint_states: tuple[CheckpointState, ...]
    restart_s: Annotated[
        SourcedValue, Field(description="Seconds to requeue the job and replace a node, before the checkpoint read.")
    ]
    target_checkpoint_overhead: Annotated[
        SourcedValue, Field(description="Fraction of run time checkpoint writes and rework may cost (e.g. 0.05).")
    ]

    @model_validator(mode="after")
    def _one_prior(self) -> ReliabilityData:
        priors = [r.id for r in self.failure_rates if r.role == "prior"]
        if len(priors) != 1:
            raise ValueError(f"reliability: exactly one failure rate must be the prior, got {priors}")
        keys = [(c.optimizer, c.precision) for c in self.checkpoint_states]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"reliability: duplicate checkpoint states {dup}")
        if not 0 < self.target_checkpoint_overhead.value < 1:
            raise ValueError("reliability: target_checkpoint_overhead must be a fraction between 0 and 1")
        return self

    @property
    def prior(self) -> FailureRate:
        return next(r for r in self.failure_rates if r.role == "prior")

    def checkpoint_state(self, optimizer: str, precision: str) -> CheckpointState | None:
        return next(
            (c for c in self.checkpoint_states if (c.optimizer, c.precision) == (optimizer, precision)),
            None,
        )
