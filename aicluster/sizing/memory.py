"""Memory per GPU at the peak of a training step: model states (ZeRO paper) and activations (Korthikanti et al.).

Model states (Rajbhandari et al., arXiv:1910.02054, section 3.1), per parameter: 2 bytes of 16-bit weights, 2 of
16-bit gradients, K of optimizer state (12 for mixed-precision Adam). ZeRO-1 shards the optimizer state over the
data-parallel degree d, ZeRO-2 also the gradients, ZeRO-3 also the weights. Tensor and pipeline parallelism split
every part by t x p first. MoE expert weights are further split over the expert-parallel degree e, and only the
remaining d / e data-parallel ranks share (ZeRO-shard) them.

Activations (Korthikanti et al., arXiv:2205.05198, section 4), bytes per layer per micro-batch, 16-bit, for a
GPT layer (multi-head attention, 4h GELU MLP, dropout):
    no parallelism            s b h (34 + 5 a s / h)
    tensor parallel t         s b h (10 + 24 / t + 5 a s / (h t))
    TP + sequence parallel    s b h (34 + 5 a s / h) / t
    selective recompute       drops the 5 a s / h term (the attention scores)
    full recompute            2 s b h (the layer input only)
Generalised here to grouped-query attention (K and V are kv/a of h wide), a SwiGLU MLP of width f (its two
inputs and the product are stored: 6 s b f instead of GELU's 4 s b f) and no dropout (Llama has none: the 2 s b h
of dropout masks go away). FlashAttention never stores the s x s scores, so with it the 5 a s / h term is gone and
selective recomputation saves nothing more. Sequence parallelism is assumed whenever t > 1 (Megatron-LM's default
with TP). Pipeline 1F1B: the first stage holds min(p, m) micro-batches of L/p layers in flight (the worst stage).
Interleaved 1F1B with v model chunks per rank (Megatron-LM's virtual pipeline): the first rank runs
(p - 1) x 2 + (v - 1) x p warm-up forwards (megatron/core/pipeline_parallel/schedules.py) and so holds that plus one
chunk-micro-batch of L / (p v) layers: L (1 + (p - 1) / (p v)) layers' worth when m is large.
Full recompute keeps one layer's full activations as the working set of the recomputed layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aicluster.catalog.sizing import MemoryOverhead, OptimizerBytes

from .models import Memory, Recompute
from .shape import Shape


@dataclass(frozen=True)
class States:
    parameters: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer


def model_states(
    parameters: float,
    opt: OptimizerBytes,
    *,
    zero_stage: int,
    data_parallel: int,
    model_parallel: int = 1,
    expert_parameters: float = 0.0,
    expert_parallel: int = 1,
    largest_layer: float = 0.0,
) -> States:
    """Bytes per GPU of weights, gradients and optimizer state (ZeRO paper, section 5).

    ZeRO-3 gathers each layer's full 16-bit weights (and produces its full 16-bit gradients) before sharding them
    again: `largest_layer` parameters (on this GPU: split by tensor parallelism) x (weight + gradient bytes) are live
    on top, as
    DeepSpeed's estimate_zero3_model_states_mem_needs counts them (4 x largest_layer)."""
    dense = (parameters - expert_parameters) / model_parallel
    experts = expert_parameters / (model_parallel * expert_parallel)
    d_dense = data_parallel
    d_expert = max(1, data_parallel // expert_parallel)

    def part(bytes_per: float, sharded: bool) -> float:
        if not sharded:
            return bytes_per * (dense + experts)
        return bytes_per * (dense / d_dense + experts / d_expert)

    gathered = largest_layer if zero_stage >= 3 else 0.0
    return States(
        parameters=part(opt.weight_bytes, zero_stage >= 3) + opt.weight_bytes * gathered,
        gradients=part(opt.gradient_bytes, zero_stage >= 2) + opt.gradient_bytes * gathered,
        optimizer=part(opt.optimizer_bytes, zero_stage >= 1),
    )


def layer_activation_coefficients(shape: Shape, *, dropout: bool = False) -> tuple[float, float, float]:
    """(unsplit, split, scores) with bytes per layer = s b h (unsplit + split / t + scores x a s / (h t)) under
    plain tensor parallelism (Korthikanti eq. 2 generalised); with sequence parallelism all three divide by t.

    For GPT (MHA, GELU 4h, dropout): unsplit 10, split 24, scores 5."""
    h = shape.hidden
    r = shape.kv_heads / shape.heads
    # Unsplit: 2 norm inputs (2+2), the QKV input (2) and the MLP input (2); dropout masks (1+1).
    unsplit = 8.0 + (2.0 if dropout else 0.0)
    # Split: Q (2), K and V (2r each), the attention output projection's input (2); MLP: GELU stores the
    # activation's input and the second matmul's input (2 + 2 per f); SwiGLU stores gate, up and product (6 per f).
    mlp = (6.0 if shape.mlp == "swiglu" else 4.0) * shape.ffn / h
    split = 2.0 + 4.0 * r + 2.0 + mlp
    # Scores: softmax output (2), its dropout mask (1) and dropout output (2) per a s^2 b; without dropout only 2.
    scores = 5.0 if dropout else 2.0
    return unsplit, split, scores


def activation_bytes_per_layer(
    shape: Shape,
    *,
    micro_batch: int,
    tensor_parallel: int,
    recompute: Recompute,
    flash_attention: bool,
    sequence_parallel: bool = True,
    dropout: bool = False,
) -> float:
    """Bytes one layer keeps for backward, per micro-batch, on one GPU."""
    s, b, h, a, t = shape.sequence, micro_batch, shape.hidden, shape.heads, tensor_parallel
    sbh = s * b * h
    if recompute == "full":
        return 2.0 * sbh / (t if sequence_parallel else 1)
    unsplit, split, scores = layer_activation_coefficients(shape, dropout=dropout)
    score_term = 0.0 if (flash_attention or recompute == "selective") else scores * a * s / h
    if sequence_parallel:
        return sbh * (unsplit + split + score_term) / t
    return sbh * (unsplit + split / t + score_term / t)


def in_flight(pipeline_parallel: int, micro_batches: int, virtual_stages: int = 1) -> int:
    """Micro-batches (chunk-micro-batches when interleaved) the first stage holds under 1F1B."""
    p, m, v = pipeline_parallel, micro_batches, virtual_stages
    if v <= 1 or p <= 1:
        return max(1, min(p, m))
    return max(1, min((p - 1) * 2 + (v - 1) * p + 1, v * m))


def activations(
    shape: Shape,
    *,
    micro_batch: int,
    micro_batches: int,
    tensor_parallel: int,
    pipeline_parallel: int,
    recompute: Recompute,
    flash_attention: bool,
    first_stage_layers: int | None = None,
    virtual_stages: int = 1,
) -> float:
    """Activation bytes of the first pipeline stage at its peak (it holds the most micro-batches in flight).

    `first_stage_layers`: the layers of that stage when stages are uneven (Llama 3 405B put one layer less on the
    first and last of its 16 stages: 7 + 14 x 8 + 7 = 126); default: ceil(L / p)."""
    if virtual_stages > 1 and pipeline_parallel > 1:
        layers_per_stage = math.ceil(shape.layers / (pipeline_parallel * virtual_stages))  # one chunk
    else:
        layers_per_stage = first_stage_layers or math.ceil(shape.layers / pipeline_parallel)
    held = in_flight(pipeline_parallel, micro_batches, virtual_stages)
    per_layer = activation_bytes_per_layer(
        shape,
        micro_batch=micro_batch,
        tensor_parallel=tensor_parallel,
        recompute=recompute,
        flash_attention=flash_attention,
    )
    if shape.experts > 1 and recompute != "full":
        # each token passes through k experts: the MLP's stored activations are k times a dense layer's
        mlp_coeff = (6.0 if shape.mlp == "swiglu" else 4.0) * shape.ffn / shape.hidden
        sbh = shape.sequence * micro_batch * shape.hidden
        per_layer += sbh * mlp_coeff * (shape.experts_per_token - 1) / tensor_parallel
    total = per_layer * layers_per_stage * held
    if recompute == "full":
        # the recomputed layer's full activations are live while its backward runs
        total += activation_bytes_per_layer(
            shape,
            micro_batch=micro_batch,
            tensor_parallel=tensor_parallel,
            recompute="none",
            flash_attention=flash_attention,
        )
    return total


def memory(
    states: States,
    activation_bytes: float,
    overhead: MemoryOverhead,
    capacity: float,
) -> Memory:
    """The breakdown, with the stated overhead (fixed + a fragmentation share), and whether it fits."""
    used = states.total + activation_bytes
    extra = overhead.fixed_bytes + overhead.fragmentation * used
    total = used + extra
    return Memory(
        parameters=states.parameters,
        gradients=states.gradients,
        optimizer=states.optimizer,
        activations=activation_bytes,
        overhead=extra,
        total=total,
        capacity=capacity,
        fits=total <= capacity,
    )
