"""Step time: compute at the utilisation prior, plus communication that does not overlap, plus the pipeline bubble.

FLOPs per token (PaLM, arXiv:2204.02311, appendix B): 6 N + 12 L H Q s, with N the (active) parameters, H heads,
Q the head width, s the sequence length. These are model FLOPs (the MFU numerator). Hardware FLOPs add what
recomputation repeats: full recompute runs the forward again (8 N + 16 L H Q s, +33%); selective recompute
without FlashAttention repeats the attention core's forward (4 L H Q s).

Communication per step, through the collective model (aicluster/sizing/collective.py), placed on NVLink domains (a
node of an 8-GPU server; a GB200 NVL72 rack of 18 nodes): groups inside a domain run on NVLink, groups across domains
use the scale-out network with their ranks in each domain as G:
- tensor parallel (Megatron): 2 all-reduces forward and 2 backward per layer per micro-batch, each of 2 b s h bytes
  (with sequence parallelism: all-gather + reduce-scatter of the same volume), inside one NVLink domain; full
  recompute repeats the forward's 2;
- data parallel: ZeRO 0/1/2 reduce-scatter the gradients and all-gather the weights once per step, 2 bytes x Psi /
  (t p) each (an all-reduce's volume); ZeRO-3 gathers the weights twice (forward and backward) and reduce-scatters
  the gradients in every micro-batch: 1.5x that, times the micro-batches. The overlap prior hides a share of it
  behind compute, at most the step's compute time;
- MoE: 2 all-to-alls forward and 2 backward per MoE layer per micro-batch of b s h 2 k bytes over the experts;
- pipeline: the 1F1B bubble (p - 1) / m of the compute, (p - 1) / (v m) interleaved with v chunks per rank
  (Narayanan et al. SC'21 section 2.2; Llama 3 section 3.3.2); point-to-point activation sends between stages are
  small next to it and left out.
"""

from __future__ import annotations

from collections.abc import Callable

from .models import CollectiveOp, Layout, StepTime
from .shape import Shape

# (op, NVLink domains, ranks per domain, bytes) -> seconds: the collective model bound to one pool's instance type
# (for an 8-GPU server a domain is a node)
CommFn = Callable[[CollectiveOp, int, int, float], float]


def model_flops_per_token(shape: Shape) -> float:
    """6 N_active + 12 L H Q s (PaLM appendix B); H x Q = the hidden size."""
    return 6.0 * shape.active_parameters + 12.0 * shape.layers * shape.hidden * shape.sequence


def hardware_flops_per_token(shape: Shape, recompute: str, flash_attention: bool) -> float:
    base = model_flops_per_token(shape)
    if recompute == "full":
        return base * 4.0 / 3.0
    if recompute == "selective" and not flash_attention:
        return base + 4.0 * shape.layers * shape.hidden * shape.sequence
    return base


def step_time(
    shape: Shape,
    layout: Layout,
    *,
    domain_gpus: int,
    peak_tflops: float,
    utilisation: float,
    rate_tflops: float,
    flash_attention: bool,
    comm: CommFn,
    dp_overlap: float,
    tp_overlap: float,
) -> StepTime:
    t, p, d, e = layout.tensor_parallel, layout.pipeline_parallel, layout.data_parallel, layout.expert_parallel
    b, m = layout.micro_batch, layout.micro_batches
    tokens = b * m * d * shape.sequence
    flops = model_flops_per_token(shape) * tokens
    hw = hardware_flops_per_token(shape, layout.recompute, flash_attention) * tokens
    compute_s = hw / (layout.gpus * rate_tflops * 1e12)

    layers_per_stage = -(-shape.layers // p)
    tp_s = 0.0
    if t > 1:
        per_op = comm("all_reduce", 1, t, 2.0 * b * shape.sequence * shape.hidden)
        ops = 6 if layout.recompute == "full" else 4
        tp_s = (1.0 - tp_overlap) * m * layers_per_stage * ops * per_op

    dp_s = 0.0
    if d > 1:
        # an NVLink domain holds domain_gpus / (t p) data-parallel ranks of the same model shard when t p < its GPUs
        per_domain = max(1, domain_gpus // (t * p))
        per_domain = min(per_domain, d)
        domains = -(-d // per_domain)
        used = -(-layout.gpus // domain_gpus)
        if domains > used:  # t x p does not divide a domain: it holds ranks of two replicas, so the group spans fewer
            domains = used
            per_domain = -(-d // domains)
        shard = 2.0 * (shape.parameters - shape.expert_parameters) / (t * p)
        volume = comm("all_reduce", domains, per_domain, shard)
        if shape.expert_parameters and d // e > 1:
            expert_shard = 2.0 * shape.expert_parameters / (t * p * e)
            ranks = d // e
            per_domain_e = min(per_domain, ranks)
            volume += comm("all_reduce", -(-ranks // per_domain_e), per_domain_e, expert_shard)
        if layout.zero_stage == 3:
            # ZeRO-3 / FSDP frees the gathered weights after each use, so every micro-batch gathers them again for
            # its forward and its backward and reduce-scatters its gradients: 1.5x the all-reduce volume, m times
            volume *= 1.5 * m
        # overlap hides communication behind compute, never behind more compute than the step has
        dp_s = volume - min(dp_overlap * volume, compute_s)

    ep_s = 0.0
    if shape.experts > 1 and e > 1:
        per_domain = max(1, min(e, domain_gpus // t))
        domains = -(-e // per_domain)
        nbytes = 2.0 * b * shape.sequence * shape.hidden * shape.experts_per_token / t
        ep_s = m * layers_per_stage * 4 * comm("all_to_all", domains, per_domain, nbytes)

    bubble_s = (p - 1) / (layout.virtual_stages * m) * (compute_s + tp_s + ep_s) if p > 1 else 0.0
    total = compute_s + tp_s + dp_s + bubble_s + ep_s
    peak_all = layout.gpus * peak_tflops * 1e12
    return StepTime(
        flops_per_step=flops,
        compute_s=compute_s,
        tensor_parallel_s=tp_s,
        data_parallel_s=dp_s,
        pipeline_bubble_s=bubble_s,
        expert_parallel_s=ep_s,
        total_s=total,
        utilisation_prior=utilisation,
        mfu=flops / (total * peak_all),
        tflops_per_gpu=flops / total / layout.gpus / 1e12,
    )
