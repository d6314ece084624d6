"""What the sizing estimators return: pure data (frozen pydantic models), JSON-able with model_dump(mode="json").

Units are in the field names: bytes are bytes (never GB), times are seconds unless the name says hours or days,
bandwidths are GB/s (10^9 bytes per second, as nccl-tests prints them), FLOP/s are TFLOP/s (10^12).
The plan carries `WorkloadEstimate`s (ClusterPlan.workloads); the preview JSON's `workloads` section is their dump.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

CollectiveOp = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]
Recompute = Literal["none", "selective", "full"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# -- The collective model (aicluster/sizing/collective.py) ------------------------------------------------------


class CollectiveEstimate(_Model):
    """One collective on `nodes` nodes of one instance type, as nccl-tests would report it.

    algbw = bytes / time; busbw = algbw x the nccl-tests factor of `op` at n = gpus ranks
    (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n). For all_gather and
    reduce_scatter `bytes` is the whole array (count x dtype x n), as nccl-tests' size column is.
    """

    op: CollectiveOp
    provider: str
    instance_type: str
    nodes: int
    gpus_per_node: int
    gpus: int
    bytes: int
    algorithm: str  # e.g. "nvls", "ring", "tree", "collnet-sharp", "nvlink-ring", "pairwise"
    bottleneck: Literal["nvlink", "network"]
    algbw_gb_s: float
    busbw_gb_s: float
    time_s: float
    latency_s: float  # the alpha part of time_s
    bandwidth_gb_s: float  # the busbw ceiling the model used at this size (before the latency term)
    sources: tuple[str, ...]  # catalog source ids of the figures the estimate rests on
    notes: tuple[str, ...] = ()


# -- The workload estimate (aicluster/sizing/) ------------------------------------------------------------------


class Layout(_Model):
    """One way to lay a training job over GPUs: tensor x pipeline x data (x expert) parallel."""

    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int
    expert_parallel: int = 1  # MoE only; experts are split over this many data-parallel ranks
    zero_stage: Literal[0, 1, 2, 3]  # 0: plain DDP; 3: ZeRO-3 / FSDP full sharding
    recompute: Recompute
    micro_batch: int  # sequences per micro-batch
    micro_batches: int  # micro-batches per pipeline per step (gradient accumulation steps)
    gpus: int  # tensor x pipeline x data
    virtual_stages: int = 1  # model chunks per pipeline rank (interleaved 1F1B when > 1; Megatron's VP size)


class Memory(_Model):
    """Bytes per GPU at the peak of a step, by part; total = the sum; capacity = the GPU's HBM."""

    parameters: float
    gradients: float
    optimizer: float
    activations: float
    overhead: float  # CUDA context, NCCL buffers, fragmentation: the stated prior
    total: float
    capacity: float
    fits: bool


class StepTime(_Model):
    """Seconds per optimizer step, by part; total = compute + exposed communication + bubble."""

    flops_per_step: float  # model FLOPs (6 N tokens + attention), the MFU numerator
    compute_s: float  # at the utilisation prior
    tensor_parallel_s: float  # TP collectives that do not overlap
    data_parallel_s: float  # the part of the gradient/parameter collectives that does not overlap
    pipeline_bubble_s: float
    expert_parallel_s: float = 0.0  # MoE all-to-all
    total_s: float
    utilisation_prior: float  # the MFU prior compute_s assumes (catalog, sourced)
    mfu: float  # model FLOPs / (total_s x gpus x peak): what the whole step achieves
    tflops_per_gpu: float  # achieved model TFLOP/s per GPU


class Candidate(_Model):
    """A layout the search considered: the winner or a runner-up and why it lost."""

    layout: Layout
    memory: Memory
    step: StepTime | None  # None: it does not fit, so it was not timed
    why: str  # "chosen", or why it lost ("does not fit: 93.1 GB of 80 GB", "12% slower: ...")


class Reliability(_Model):
    """Failures, checkpoints and goodput of the run (Young/Daly)."""

    gpu_hours_per_interruption: float  # the prior (catalog, sourced)
    mtbf_h: float  # the job's mean time between interruptions: prior / GPUs
    interruptions: float  # expected over the run
    checkpoint_bytes: float  # the training state written at each checkpoint
    filesystems: tuple[str, ...]  # the parallel file systems the job writes to ([]: none)
    write_gb_s: float | None  # their combined write throughput; None: no parallel file system
    write_s: float | None  # one checkpoint's write time; None: nowhere to write
    interval_s: float | None  # the Young/Daly checkpoint interval
    restart_s: float  # prior: requeue, replace a node, read the checkpoint back
    goodput: float | None  # 1 - write_s/interval - interval/(2 mtbf) - restart/mtbf; None: no file system
    target_overhead: float  # the checkpoint overhead the throughput below keeps to
    required_write_gb_s: float  # the write throughput that keeps checkpoint overhead under target_overhead


class WorkloadEstimate(_Model):
    """One workload of the stack, sized on its pools."""

    name: str
    pools: tuple[str, ...]
    provider: str
    instance_type: str
    accelerator: str  # catalog id
    gpus_available: int  # the pools' GPUs (capped by targets.gpus when given)
    parameters: float  # total parameters
    active_parameters: float  # per token (MoE: less than parameters)
    tokens: float
    sequence_length: int
    global_batch_tokens: float  # as run: micro_batch x micro_batches x data_parallel x sequence_length
    fits: bool  # some layout fits in GPU memory
    reason: str | None  # when nothing fits: why, and what would (more GPUs, a larger GPU, recompute ...)
    chosen: Candidate | None
    runners_up: tuple[Candidate, ...]  # the next best layouts, best first (at most 5), with why they lost
    steps: int
    days: float | None  # wall clock: compute_days / goodput (failures, restarts, checkpoint writes) when known
    gpu_hours: float | None  # GPUs x wall-clock hours (the GPUs are held while they redo work and restart)
    cost_usd: float | None  # for the wall-clock hours; None: the pools are not priced
    energy_mwh: float | None  # facility energy (IT x PUE) over the wall-clock hours
    reliability: Reliability | None
    target_days: float | None
    target_gpus: int | None
    gpus_for_target_days: int | None  # GPUs whose wall-clock days meet target_days (None: no target, or none does)
    sources: tuple[str, ...]  # catalog source ids of every prior used
    notes: tuple[str, ...] = ()
    compute_days: float | None = None  # failure-free: steps x step time (days equals it when goodput is unknown)


# -- What the planner hands the estimator (sizing cannot import plan/: plan imports sizing) ----------------------


class PoolFacts(_Model):
    """One pool a workload runs on, as the plan has it."""

    name: str
    provider: str
    region: str
    instance_type: str
    nodes: int
    gpus_per_node: int
    usd_per_node_hour: float | None  # the plan's price (market and overrides applied); None: unpriced
    node_power_kw: float  # IT power per node at the plan's basis
    pue: float
    fabric_domain_nodes: tuple[int, ...]  # nodes per fabric domain (one entry: the whole pool)
    market: str = "on-demand"  # the pool's market ("spot": reclaims are not modelled, a note says so)
    # nodes of each multi-node NVLink domain of the pool (a GB200 NVL72 rack: 18); empty: NVLink ends at the node
    nvlink_domain_nodes: tuple[int, ...] = ()


class FilesystemFacts(_Model):
    """A file system the workload's pools mount (same cloud, region and network)."""

    name: str
    kind: Literal["lustre", "nfs"]
    parallel: bool  # lustre: checkpoints go here
    throughput_mb_s: float
