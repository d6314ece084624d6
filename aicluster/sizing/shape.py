"""The model's shape as the estimators need it: from the spec's Model, with defaults and derived values stated.

Imports only aicluster.spec (and itself).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aicluster.spec.workload import Model

HEAD_DIM = 128  # the head width of Llama 3 8B/70B/405B (4096/32, 8192/64, 16384/128)
ASPECT = 128  # hidden = 128 x layers: Llama 3 8B 4096/32, 70B 8192/80 (102), 405B 16384/126 (130)


@dataclass(frozen=True)
class Shape:
    """Everything the memory and compute models read about the model."""

    parameters: float  # total
    active_parameters: float  # per token
    expert_parameters: float  # the part living in experts (0 for dense); sharded over expert parallelism
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    mlp: str  # swiglu | gelu
    vocabulary: int
    sequence: int
    experts: int  # 1 for dense
    experts_per_token: int  # 1 for dense
    derived: bool  # the shape was derived from parameters alone
    notes: tuple[str, ...] = ()


def default_ffn(hidden: int, mlp: str) -> int:
    """4h for GELU; for SwiGLU 2/3 of 4h rounded up to a multiple of 256 (LLaMA, arXiv:2302.13971 section 2)."""
    if mlp == "gelu":
        return 4 * hidden
    return 256 * math.ceil(8 * hidden / 3 / 256)


def layer_parameters(hidden: int, heads: int, kv_heads: int, ffn: int, mlp: str) -> tuple[float, float]:
    """(attention, one expert's MLP) weights of one layer: Q and O are h x h, K and V h x (kv_heads x head dim);
    the MLP has 3 (SwiGLU) or 2 (GELU) h x ffn matrices. Norms and biases are left out (under 0.01%)."""
    head_dim = hidden // heads
    attention = 2 * hidden * hidden + 2 * hidden * kv_heads * head_dim
    mlp_weights = (3 if mlp == "swiglu" else 2) * hidden * ffn
    return float(attention), float(mlp_weights)


def count_parameters(
    layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, mlp: str, vocabulary: int, experts: int, top_k: int
) -> tuple[float, float, float]:
    """(total, active per token, in experts): untied input and output embeddings (V x h each, as Llama 3)."""
    attention, mlp_weights = layer_parameters(hidden, heads, kv_heads, ffn, mlp)
    embeddings = 2.0 * vocabulary * hidden
    total = embeddings + layers * (attention + experts * mlp_weights)
    active = embeddings + layers * (attention + top_k * mlp_weights)
    in_experts = layers * experts * mlp_weights if experts > 1 else 0.0
    return total, active, in_experts


def shape_of(model: Model) -> Shape:
    """The shape, with every default and derivation applied (and named in `notes`)."""
    notes: list[str] = []
    experts = model.experts or 1
    top_k = model.experts_per_token or 1
    derived = model.layers is None or model.hidden_size is None or model.heads is None
    if derived:
        assert model.parameters is not None  # the spec requires parameters when the shape is missing
        # N ~ 12 L h^2 (attention 4h^2 + MLP 8h^2 per layer) with h = 128 L: L = (N / (12 x 128^2))^(1/3)
        raw = (model.parameters / (12 * ASPECT * ASPECT)) ** (1 / 3)
        layers = max(8, 8 * round(raw / 8))
        hidden = ASPECT * layers
        heads = hidden // HEAD_DIM
        kv_heads = heads
        mlp = "gelu" if model.mlp == "gelu" else model.mlp
        ffn = model.ffn_size or default_ffn(hidden, mlp)
        notes.append(
            f"shape derived from parameters alone (for activation memory only): {layers} layers, hidden {hidden}, "
            f"{heads} heads of {HEAD_DIM} (hidden = 128 x layers, the aspect of Llama 3 8B/70B/405B; layers "
            "rounded to a multiple of 8); give layers, hidden_size and heads for a better estimate"
        )
    else:
        layers, hidden, heads = int(model.layers or 0), int(model.hidden_size or 0), int(model.heads or 0)
        kv_heads = model.kv_heads or heads
        ffn = model.ffn_size or default_ffn(hidden, model.mlp)
    mlp = model.mlp
    vocabulary = model.vocabulary or 0
    total, active, in_experts = count_parameters(layers, hidden, heads, kv_heads, ffn, mlp, vocabulary, experts, top_k)
    if model.parameters is not None:
        if not derived and vocabulary and abs(total - model.parameters) > 0.1 * model.parameters:
            notes.append(
                f"parameters {model.parameters:.4g} differ from the {total:.4g} the shape gives by "
                f"{abs(total - model.parameters) / model.parameters:.0%}; the given count is used for FLOPs and states"
            )
        scale = model.parameters / total if total > 0 else 1.0
        in_experts *= scale
        active = active * scale
        total = float(model.parameters)
    if model.active_parameters is not None:
        active = float(model.active_parameters)
    if experts == 1:
        active = total
    return Shape(
        parameters=total,
        active_parameters=min(active, total),
        expert_parameters=min(in_experts, total),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn=ffn,
        mlp=mlp,
        vocabulary=vocabulary,
        sequence=model.sequence_length,
        experts=experts,
        experts_per_token=top_k,
        derived=derived,
        notes=tuple(notes),
    )
