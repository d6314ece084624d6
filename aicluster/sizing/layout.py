"""The layout search: tensor x pipeline x data (x expert) parallel, ZeRO stage, recomputation, micro-batch.

Tensor parallel: powers of two up to the GPUs of one NVLink domain (a node of an 8-GPU server; the 72 GPUs of a GB200
NVL72 rack, 18 nodes) that divide the heads; a tensor-parallel group never spans domains, so a domain holds
floor(its GPUs / t) groups (an NVL72 holds four TP16 groups and leaves 8 GPUs idle). Pipeline
parallel: divisors of the layer count (even stages) up to 128 stages. Data parallel: as many replicas as the GPUs
allow, at most one per sequence of the global batch. ZeRO 0..3, recomputation none/selective/full (selective
only without FlashAttention: with it, it saves and costs nothing), micro-batch 1, 2, 4 (sequences). Values the
workload gives instead of `auto` are kept fixed. Data-parallel degrees whose whole sequences per rank miss the
global batch by more than 10% are skipped. Pipeline stages are even (a given degree that does not divide the layers
puts floor(L / p) on the first stage: the short stages go first). Of the layouts that fit, the fastest per token
(time per sequence: the global batches as run differ) wins; ties go to fewer GPUs, then the lower ZeRO stage, then
less recomputation. Pipelines may interleave (v = 2 or 4 model chunks
per rank, Megatron-LM's virtual pipeline) when the layers split evenly into p v chunks and m is a multiple of p.
The work is bounded: at most 8 x 128 x 8 x 3 x 3 x 4 x 3 layouts, whatever the inputs (a 1,024-GPU search takes
well under 0.1 s; collective times are cached).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from aicluster.catalog.sizing import MemoryOverhead, OptimizerBytes
from aicluster.spec.workload import Training

from .compute import CommFn, step_time
from .memory import activations, memory, model_states
from .models import Candidate, Layout, Memory, Recompute, StepTime
from .shape import Shape, layer_parameters

MICRO_BATCHES = (1, 2, 4)
VIRTUAL_STAGES = (1, 2, 4)  # model chunks per pipeline rank (interleaved 1F1B)
# the global batch as run (whole sequences per data-parallel rank) may differ from the asked one by this share
BATCH_SLACK = 0.1
MAX_STAGES = 128
RECOMPUTE_ORDER: dict[str, int] = {"none": 0, "selective": 1, "full": 2}


@dataclass(frozen=True)
class Hardware:
    gpus: int  # available to the workload
    gpus_per_node: int
    capacity_bytes: float
    peak_tflops: float  # for MFU (the precision's peak)
    rate_tflops: float  # the achieved matmul rate: bf16 peak x utilisation prior (x FP8 speed-up)
    utilisation: float
    # GPUs of each multi-node NVLink domain available to the workload (an NVL72 pool: 72 each, the last one short
    # where targets.gpus caps the GPUs); empty: NVLink ends at the node, each node is a domain of gpus_per_node
    domains: tuple[int, ...] = ()

    @property
    def domain_gpus(self) -> int:
        """The GPUs of the largest NVLink domain: how wide a tensor-parallel group can be."""
        return max(self.domains) if self.domains else self.gpus_per_node

    def tensor_groups(self, t: int) -> int:
        """How many tensor-parallel groups of `t` GPUs the GPUs hold (a group never spans NVLink domains)."""
        if not self.domains:
            return self.gpus // t
        return sum(g // t for g in self.domains)


@dataclass(frozen=True)
class Priors:
    optimizer: OptimizerBytes
    overhead: MemoryOverhead
    dp_overlap: float
    tp_overlap: float


def _powers_of_two(limit: int) -> list[int]:
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


def _divisors(n: int, limit: int) -> list[int]:
    return [k for k in range(1, min(n, limit) + 1) if n % k == 0]


def layouts(shape: Shape, training: Training, hw: Hardware) -> Iterator[Layout]:
    """Every layout worth timing (bounded, see the module docstring)."""
    seqs = max(1, round(training.global_batch_tokens / shape.sequence))
    if training.tensor_parallel == "auto":
        tps = [t for t in _powers_of_two(hw.domain_gpus) if shape.heads % t == 0]
    else:
        tps = [training.tensor_parallel]
    pps = _divisors(shape.layers, MAX_STAGES) if training.pipeline_parallel == "auto" else [training.pipeline_parallel]
    zeros = [0, 1, 2, 3] if training.zero_stage == "auto" else [training.zero_stage]
    if training.recompute == "auto":
        recomputes: list[Recompute] = ["none", "full"] if training.flash_attention else ["none", "selective", "full"]
    else:
        recomputes = [training.recompute]
    for t in tps:
        for p in pps:
            d = min(hw.tensor_groups(t) // p, seqs)
            if d < 1:
                continue
            eps = [1]
            if shape.experts > 1:
                eps = [e for e in _powers_of_two(min(d, shape.experts)) if shape.experts % e == 0 and d % e == 0]
            per_rank = max(1, round(seqs / d))
            if abs(per_rank * d - seqs) > BATCH_SLACK * seqs:
                continue  # this many replicas cannot run the asked batch
            for e in eps:
                for b in MICRO_BATCHES:
                    if per_rank % b:
                        continue
                    m = per_rank // b
                    # interleaving needs even chunks and whole rounds of p micro-batches (Megatron-LM)
                    vs = [v for v in VIRTUAL_STAGES if v == 1 or (p > 1 and shape.layers % (p * v) == 0 and m % p == 0)]
                    for v in vs:
                        for z in zeros:
                            if d == 1 and z > 0:
                                continue  # nothing to shard over
                            for r in recomputes:
                                yield Layout(
                                    tensor_parallel=t,
                                    pipeline_parallel=p,
                                    data_parallel=d,
                                    expert_parallel=e,
                                    zero_stage=z,
                                    recompute=r,
                                    micro_batch=b,
                                    micro_batches=m,
                                    gpus=t * p * d,
                                    virtual_stages=v,
                                )


def largest_layer(shape: Shape, expert_parallel: int = 1) -> float:
    """Parameters of the largest module ZeRO-3 gathers at once: a transformer layer (its experts split over the
    expert-parallel ranks) or the V x h embedding."""
    attention, mlp = layer_parameters(shape.hidden, shape.heads, shape.kv_heads, shape.ffn, shape.mlp)
    layer = attention + mlp * max(1, shape.experts // expert_parallel)
    return max(layer, float(shape.vocabulary * shape.hidden))


def layout_memory(shape: Shape, layout: Layout, training: Training, hw: Hardware, priors: Priors) -> Memory:
    states = model_states(
        shape.parameters,
        priors.optimizer,
        zero_stage=layout.zero_stage,
        data_parallel=layout.data_parallel,
        model_parallel=layout.tensor_parallel * layout.pipeline_parallel,
        expert_parameters=shape.expert_parameters,
        expert_parallel=layout.expert_parallel,
        largest_layer=largest_layer(shape, layout.expert_parallel) / layout.tensor_parallel,
    )
    act = activations(
        shape,
        micro_batch=layout.micro_batch,
        micro_batches=layout.micro_batches,
        tensor_parallel=layout.tensor_parallel,
        pipeline_parallel=layout.pipeline_parallel,
        recompute=layout.recompute,
        flash_attention=training.flash_attention,
        first_stage_layers=_first_stage_layers(shape.layers, layout.pipeline_parallel),
        virtual_stages=layout.virtual_stages,
    )
    return memory(states, act, priors.overhead, hw.capacity_bytes)


def _first_stage_layers(layers: int, pipeline_parallel: int) -> int | None:
    """When the layers do not divide evenly over the stages, the short stages go first (and last): the first stage
    holds the most micro-batches in flight, so it gets floor(L / p) layers. Llama 3 405B (arXiv:2407.21783 section
    3.3.2) put one layer less on its first and last stage (7 + 14 x 8 + 7 = 126); Megatron-LM exposes the same
    choice (--decoder-first-pipeline-num-layers). None: the layers divide evenly."""
    if pipeline_parallel <= 1 or layers % pipeline_parallel == 0 or layers < pipeline_parallel:
        return None
    return layers // pipeline_parallel


def layout_time(
    shape: Shape, layout: Layout, training: Training, hw: Hardware, priors: Priors, comm: CommFn
) -> StepTime:
    return step_time(
        shape,
        layout,
        domain_gpus=hw.domain_gpus,
        peak_tflops=hw.peak_tflops,
        utilisation=hw.utilisation,
        rate_tflops=hw.rate_tflops,
        flash_attention=training.flash_attention,
        comm=comm,
        dp_overlap=priors.dp_overlap,
        tp_overlap=priors.tp_overlap,
    )


def seconds_per_sequence(lay: Layout, step: StepTime) -> float:
    return step.total_s / (lay.micro_batch * lay.micro_batches * lay.data_parallel)


def _rank(c: tuple[Layout, Memory, StepTime]) -> tuple[float, int, int, int, int, int, int]:
    lay, _mem, step = c
    return (
        round(seconds_per_sequence(lay, step), 12),
        lay.gpus,
        lay.zero_stage,
        RECOMPUTE_ORDER[lay.recompute],
        lay.virtual_stages,
        lay.pipeline_parallel,
        lay.tensor_parallel,
    )


TIE_BREAKS = ("fewer GPUs", "a lower ZeRO stage", "less recomputation", "fewer model chunks", "fewer stages")


def _lost(slower: float, loser: tuple[float, ...], winner: tuple[float, ...]) -> str:
    """Why a fitting layout lost: slower per token, or, as fast, the first tie-break of _rank that parts them."""
    if slower >= 0.005:
        return f"{slower:.0%} slower per token"
    if loser[0] != winner[0]:
        return f"{slower:.1%} slower per token"
    for key, a, b in zip(TIE_BREAKS, loser[1:], winner[1:], strict=False):
        if a != b:
            return f"as fast per token; the chosen has {key}"
    return "as fast per token; the chosen has narrower tensor parallelism"


def gb(x: float) -> str:
    return f"{x / 1e9:.1f} GB"


def tokens_text(n: float) -> str:
    """A token count to three significant figures: 16.8M, 524K, 2.1B."""
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:,.0f}"


def describe(lay: Layout) -> str:
    text = f"TP{lay.tensor_parallel} x PP{lay.pipeline_parallel} x DP{lay.data_parallel}"
    if lay.virtual_stages > 1:
        text += f" (interleaved, {lay.virtual_stages} chunks per stage)"
    if lay.expert_parallel > 1:
        text += f" (EP{lay.expert_parallel})"
    return text + f", ZeRO-{lay.zero_stage}, recompute {lay.recompute}, micro-batch {lay.micro_batch}"


@dataclass(frozen=True)
class SearchResult:
    chosen: Candidate | None
    runners_up: tuple[Candidate, ...]
    smallest: tuple[Layout, Memory] | None  # the layout needing the least memory (for the "nothing fits" reason)
    considered: int


def search(shape: Shape, training: Training, hw: Hardware, priors: Priors, comm: CommFn) -> SearchResult:
    fitting: list[tuple[Layout, Memory, StepTime]] = []
    too_big: list[tuple[Layout, Memory]] = []
    considered = 0
    for lay in layouts(shape, training, hw):
        considered += 1
        mem = layout_memory(shape, lay, training, hw, priors)
        if mem.fits:
            fitting.append((lay, mem, layout_time(shape, lay, training, hw, priors, comm)))
        else:
            too_big.append((lay, mem))
    too_big.sort(key=lambda c: c[1].total)
    smallest = too_big[0] if too_big and not fitting else None
    if not fitting:
        ups = tuple(
            Candidate(layout=lay, memory=mem, step=None, why=f"does not fit: {gb(mem.total)} of {gb(mem.capacity)}")
            for lay, mem in too_big[:5]
        )
        return SearchResult(None, ups, smallest, considered)
    fitting.sort(key=_rank)
    best_l, best_m, best_s = fitting[0]
    chosen = Candidate(layout=best_l, memory=best_m, step=best_s, why="chosen")
    runners: list[Candidate] = []
    for lay, mem, step in fitting[1:6]:
        # ranked per token: layouts differ in their global batch (whole sequences per data-parallel rank)
        slower = seconds_per_sequence(lay, step) / seconds_per_sequence(best_l, best_s) - 1
        tokens = lay.micro_batch * lay.micro_batches * lay.data_parallel * shape.sequence
        lead = _lost(slower, _rank((lay, mem, step)), _rank(fitting[0]))
        why = f"{lead} ({step.total_s:.2f} s per step of {tokens_text(tokens)} tokens)"
        runners.append(Candidate(layout=lay, memory=mem, step=step, why=why))
    for lay, mem in too_big[: 5 - len(runners)]:
        runners.append(
            Candidate(layout=lay, memory=mem, step=None, why=f"does not fit: {gb(mem.total)} of {gb(mem.capacity)}")
        )
    return SearchResult(chosen, tuple(runners), None, considered)
