"""The preview JSON (docs/preview-json.md) read into typed, frozen records.

Every renderer reads these records, never the raw dict, so a document of the wrong shape fails
here, once, with a ValueError that names the key path (`pools[1].cost_usd_per_month`). The
`cluster` and `policy` sections are optional: previews written before they existed still render.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast, get_args

from ._levels import Enforcement, FindingEnforcement, Severity


@dataclass(frozen=True)
class Budgets:
    monthly_usd: float | None
    power_kw: float | None
    rack_kw: float | None


@dataclass(frozen=True)
class Cluster:
    name: str
    tags: Mapping[str, str]
    regions: tuple[str, ...]
    frameworks: tuple[str, ...]
    allowed_regions: tuple[str, ...]
    budgets: Budgets


@dataclass(frozen=True)
class Summary:
    nodes: int
    gpus: int
    cost_usd_per_hour: float
    cost_usd_per_month: float
    power_kw_it: float
    power_kw_facility: float
    carbon_t_per_month: float
    resources: int
    unpriced: tuple[str, ...] = ()  # items with no price: the costs above leave them out (a lower bound)


@dataclass(frozen=True)
class Pool:
    name: str
    provider: str
    region: str
    zone: str | None
    instance_type: str
    market: str
    nodes: int
    gpus: int
    cost_usd_per_hour: float | None  # None: nothing of the pool is priced (see `unpriced`)
    cost_usd_per_month: float | None
    power_kw_it: float
    power_kw_facility: float
    unpriced: tuple[str, ...] = ()  # parts with no price (root volumes): left out of the costs above


@dataclass(frozen=True)
class Filesystem:
    """A file system as the plan sizes and prices it."""

    name: str
    kind: str
    service: str
    provider: str
    region: str
    zone: str | None
    mount: str
    capacity_tib: float
    throughput_mb_s: float
    cost_usd_per_month: float | None  # None: no price (the stack's pricing.overrides can give one), never 0


@dataclass(frozen=True)
class Fabric:
    """One fat-tree fabric of a site (every tier of the same switch model), as the plan counts it."""

    name: str
    switch: str  # catalog switch id, e.g. qm9700
    fabric: str  # infiniband | roce
    radix: int
    link_gbps: int
    rails: int
    planes: str  # shared | per-rail
    nodes: int
    tiers: int
    leaf_switches: int
    spine_switches: int
    core_switches: int
    cables_node_leaf: int
    cables_leaf_spine: int
    cables_spine_core: int
    switch_transceivers: int
    node_transceivers: int
    ports_total: int
    ports_used: int
    ports_free: int
    oversubscription_wanted: float
    oversubscription_achieved: float
    switch_power_w: float | None  # None: the switch's maximum power is not published

    @property
    def switches(self) -> int:
        return self.leaf_switches + self.spine_switches + self.core_switches


@dataclass(frozen=True)
class Rack:
    name: str
    nodes: int
    power_kw: float  # the nodes' maximum power
    limit_kw: float
    pools: tuple[str, ...]
    named: bool  # True: the hosts name the rack; False: packed by the planner

    @property
    def over_limit(self) -> bool:
        return self.power_kw > self.limit_kw + 1e-9


@dataclass(frozen=True)
class Site:
    """An owned data centre: what its pools draw, cost and emit, against what it can deliver."""

    name: str
    pools: tuple[str, ...]
    nodes: int
    gpus: int
    pue: float
    rack_kw: float
    max_kw: float
    power_kw_it: float
    power_kw_facility: float
    hardware_usd_per_month: float | None  # None: the site gives no hardware cost
    energy_usd_per_month: float
    cost_usd_per_month: float
    co2e_t_per_month: float
    fabrics: tuple[Fabric, ...]
    racks: tuple[Rack, ...]


@dataclass(frozen=True)
class NodeGroup:
    """One Kubernetes node group (EKS) / node pool (GKE) / agent pool (AKS): one fabric domain of a pool."""

    name: str
    pool: str
    zone: str | None
    nodes: int
    taints: tuple[str, ...]  # key=value:effect
    resources: Mapping[str, str]  # what one node offers pods


@dataclass(frozen=True)
class Addon:
    name: str
    chart: str
    repository: str
    version: str
    namespace: str
    kind: str = "helm"  # or "manifest": `repository` is then the manifest's URL and `chart` its file

    @property
    def where(self) -> str:
        """A chart as its repository names it; a manifest by its file (its URL holds the pinned commit)."""
        return f"{self.repository}/{self.chart}" if self.kind == "helm" else f"{self.chart} (manifest)"


@dataclass(frozen=True)
class KueueTopology:
    name: str
    levels: tuple[str, ...]  # widest network domain first


@dataclass(frozen=True)
class Kubernetes:
    """A Kubernetes stack's managed control plane, node groups, add-ons and Kueue queue, as the plan has them."""

    service_name: str
    cluster_name: str
    version: str
    support: str
    endpoint: str
    region: str
    node_image: str
    system_instance_type: str
    system_nodes: int
    control_plane_usd_per_month: float
    system_usd_per_month: float | None  # None: the system type has no price
    cost_usd_per_month: float | None
    cluster_queue: str
    local_queue: str
    namespace: str
    node_groups: tuple[NodeGroup, ...]
    addons: tuple[Addon, ...]
    topologies: tuple[KueueTopology, ...]
    unpriced: tuple[str, ...] = ()
    system_volumes_usd_per_month: float | None = None  # the system nodes' root volumes; None: no price (or older)


@dataclass(frozen=True)
class Layout:
    """How a workload lays over GPUs: tensor x pipeline x data (x expert) parallel (aicluster.sizing.models)."""

    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int
    expert_parallel: int
    zero_stage: int
    recompute: str  # none | selective | full
    micro_batch: int  # sequences per micro-batch
    micro_batches: int  # micro-batches per pipeline per step
    gpus: int
    virtual_stages: int = 1  # > 1: an interleaved pipeline schedule, this many model chunks per stage

    @property
    def shape(self) -> str:
        """`TP 8 x PP 4 x DP 16` (and `x EP 8` for a mixture of experts, the chunks of an interleaved pipeline)."""
        ep = f" x EP {self.expert_parallel}" if self.expert_parallel > 1 else ""
        chunks = f" (interleaved, {self.virtual_stages} chunks per stage)" if self.virtual_stages > 1 else ""
        return f"TP {self.tensor_parallel} x PP {self.pipeline_parallel}{chunks} x DP {self.data_parallel}{ep}"


@dataclass(frozen=True)
class Memory:
    """Bytes per GPU at the peak of a step, by part, against the GPU's capacity."""

    parameters: float
    gradients: float
    optimizer: float
    activations: float
    overhead: float
    total: float
    capacity: float
    fits: bool


@dataclass(frozen=True)
class StepTime:
    """Seconds per optimizer step, by part."""

    flops_per_step: float
    compute_s: float
    tensor_parallel_s: float
    data_parallel_s: float
    pipeline_bubble_s: float
    expert_parallel_s: float
    total_s: float
    utilisation_prior: float
    mfu: float
    tflops_per_gpu: float


@dataclass(frozen=True)
class Candidate:
    layout: Layout
    memory: Memory
    step: StepTime | None  # None: it does not fit, so it was not timed
    why: str  # "chosen", or why it lost


@dataclass(frozen=True)
class Reliability:
    gpu_hours_per_interruption: float
    mtbf_h: float
    interruptions: float
    checkpoint_bytes: float
    filesystems: tuple[str, ...]
    write_gb_s: float | None  # None: no parallel file system
    write_s: float | None
    interval_s: float | None
    restart_s: float
    goodput: float | None  # None: nowhere to write checkpoints
    target_overhead: float
    required_write_gb_s: float


@dataclass(frozen=True)
class Workload:
    """One workload of the stack as the estimator sized it (the preview's `workloads[]`)."""

    name: str
    pools: tuple[str, ...]
    provider: str
    instance_type: str
    accelerator: str
    gpus_available: int
    parameters: float
    active_parameters: float
    tokens: float
    sequence_length: int
    global_batch_tokens: float
    fits: bool
    reason: str | None
    chosen: Candidate | None
    runners_up: tuple[Candidate, ...]
    steps: int
    days: float | None
    gpu_hours: float | None
    cost_usd: float | None  # None: the pools are not priced
    energy_mwh: float | None
    reliability: Reliability | None
    target_days: float | None
    target_gpus: int | None
    gpus_for_target_days: int | None
    sources: tuple[str, ...]
    notes: tuple[str, ...] = ()
    compute_days: float | None = None  # failure-free days; `days` are calendar days (divided by the goodput)


@dataclass(frozen=True)
class Resource:
    urn: str
    type: str
    name: str
    inputs: Mapping[str, Any]
    ignore_changes: tuple[str, ...] = ()  # inputs the engine does not diff (ResourceOptions.ignore_changes)


@dataclass(frozen=True)
class Pack:
    name: str
    version: str


@dataclass(frozen=True)
class Policy:
    name: str
    display_name: str
    description: str
    concern: str
    kind: str
    severity: Severity
    enforcement: Enforcement
    remediation: str
    frameworks: tuple[str, ...]
    controls: tuple[str, ...]


@dataclass(frozen=True)
class Violation:
    policy: str
    severity: Severity
    enforcement: FindingEnforcement
    resource: str
    type: str
    urn: str
    message: str
    stack_field: str | None = None  # the stack field the finding comes from (`pools[0].region`)
    stack_line: int | None = None  # that field's line in the stack file


@dataclass(frozen=True)
class Waived:
    policy: str
    severity: Severity
    resource: str
    type: str
    urn: str
    message: str
    reason: str
    expires: str
    stack_field: str | None = None
    stack_line: int | None = None


@dataclass(frozen=True)
class NotApplicable:
    policy: str
    reason: str


@dataclass(frozen=True)
class PolicyResults:
    pack: Pack
    policies: tuple[Policy, ...]
    violations: tuple[Violation, ...]
    waived: tuple[Waived, ...]
    passed: tuple[str, ...]
    not_applicable: tuple[NotApplicable, ...]

    def policy(self, name: str) -> Policy:
        return next(p for p in self.policies if p.name == name)


@dataclass(frozen=True)
class PreviewDoc:
    stack: str
    project: str
    cluster: Cluster | None
    summary: Summary
    pools: tuple[Pool, ...]
    resources: tuple[Resource, ...]
    warnings: tuple[str, ...]
    policy: PolicyResults | None
    given_stack_file: str | None = None  # relative to the project; previews before it existed lack it
    sites: tuple[Site, ...] = ()  # owned data centres; previews before sites existed lack the key
    kubernetes: Kubernetes | None = None  # a Kubernetes stack's; None for Slurm and previews before the key
    workloads: tuple[Workload, ...] = ()  # in stack order; previews written before workloads existed lack the key
    # `preview --base`: the steps from the base (aicluster.changes, as JSON); None for a preview without a base
    changes: Mapping[str, Any] | None = None
    filesystems: tuple[Filesystem, ...] = ()  # previews written before file systems were recorded lack the key

    @property
    def stack_file(self) -> str:
        return self.given_stack_file or f"stacks/Pulumi.{self.stack}.yaml"


class _Reader:
    """One JSON object at a known path; each accessor checks presence and type."""

    def __init__(self, data: object, path: str) -> None:
        if not isinstance(data, Mapping):
            where = f"'{path}'" if path else "the document"
            raise ValueError(f"preview JSON: {where} must be an object, got {_kind(data)}")
        self._data = data
        self._path = path

    def _at(self, key: str) -> str:
        return f"{self._path}.{key}" if self._path else key

    def _get(self, key: str) -> object:
        if key not in self._data:
            raise ValueError(f"preview JSON: missing key '{self._at(key)}'")
        return self._data[key]

    def nullable(self, key: str) -> bool:
        """True where the key holds null; a missing key is an error (the section's own keys are all required)."""
        return self._get(key) is None

    def has(self, key: str) -> bool:
        return self._data.get(key) is not None

    def text(self, key: str) -> str:
        return _string(self._get(key), self._at(key))

    def optional_text(self, key: str) -> str | None:
        return None if self._data.get(key) is None else self.text(key)

    def whole(self, key: str) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not float(value).is_integer():
            raise ValueError(f"preview JSON: '{self._at(key)}' must be a whole number, got {_show(value)}")
        return int(value)

    def number(self, key: str) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"preview JSON: '{self._at(key)}' must be a finite number, got {_show(value)}")
        return float(value)

    def optional_number(self, key: str) -> float | None:
        """A finite number, or None where the document has null (an unpriced cost); the key must be there."""
        return None if self._get(key) is None else self.number(key)

    def nullable_text(self, key: str) -> str | None:
        """A string, or None where the document has null; the key must be there."""
        return None if self._get(key) is None else self.text(key)

    def optional_whole(self, key: str) -> int | None:
        """A whole number, or None where the document has null (no target); the key must be there."""
        return None if self._get(key) is None else self.whole(key)

    def optional_line(self, key: str) -> int | None:
        if self._data.get(key) is None:
            return None
        value = self.whole(key)
        if value < 1:
            raise ValueError(f"preview JSON: '{self._at(key)}' must be a line number (1 or more), got {value}")
        return value

    def optional_positive(self, key: str) -> float | None:
        if self._data.get(key) is None:
            return None
        value = self.number(key)
        if value <= 0:
            raise ValueError(f"preview JSON: '{self._at(key)}' must be greater than 0, got {value:g}")
        return value

    def obj(self, key: str) -> _Reader:
        return _Reader(self._get(key), self._at(key))

    def objs(self, key: str) -> list[_Reader]:
        return [_Reader(item, f"{self._at(key)}[{i}]") for i, item in enumerate(self._list(key))]

    def texts(self, key: str) -> tuple[str, ...]:
        return tuple(_string(item, f"{self._at(key)}[{i}]") for i, item in enumerate(self._list(key)))

    def optional_texts(self, key: str) -> tuple[str, ...]:
        """A list of strings; empty when absent (previews written before the key existed)."""
        return () if self._data.get(key) is None else self.texts(key)

    def text_map(self, key: str) -> dict[str, str]:
        value = self.obj(key)._data
        return {str(k): _string(v, f"{self._at(key)}.{k}") for k, v in sorted(value.items())}

    def choice(self, key: str, allowed: object) -> str:
        choices = get_args(allowed)
        value = self.text(key)
        if value not in choices:
            raise ValueError(f"preview JSON: '{self._at(key)}' must be one of {', '.join(choices)}, got {_show(value)}")
        return value

    def flag(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise ValueError(f"preview JSON: '{self._at(key)}' must be true or false, got {_kind(value)}")
        return value

    def optional_objs(self, key: str) -> list[_Reader]:
        """A list of objects; empty when absent (previews written before the key existed)."""
        return [] if self._data.get(key) is None else self.objs(key)

    def raw(self, key: str) -> Mapping[str, Any]:
        return self.obj(key)._data

    def _list(self, key: str) -> Sequence[object]:
        value = self._get(key)
        if not isinstance(value, list | tuple):
            raise ValueError(f"preview JSON: '{self._at(key)}' must be an array, got {_kind(value)}")
        return value


def _show(value: object) -> str:
    """A value as the JSON it came from (never a Python repr), cut short."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def _kind(value: object) -> str:
    """A value's JSON type in the words a reader of the JSON knows (never a Python type name)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # null, true, false
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return "a value JSON does not have"


def _string(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"preview JSON: '{path}' must be a string, got {_kind(value)}")
    return value


def parse(doc: Mapping[str, Any]) -> PreviewDoc:
    """The preview JSON as records; ValueError naming the key path when its shape is wrong."""
    r = _Reader(doc, "")
    return PreviewDoc(
        stack=r.text("stack"),
        project=r.text("project"),
        cluster=_cluster(r.obj("cluster")) if r.has("cluster") else None,
        summary=_summary(r.obj("summary")),
        pools=tuple(_pool(p) for p in r.objs("pools")),
        resources=tuple(_resource(x) for x in r.objs("resources")),
        warnings=r.texts("warnings"),
        policy=_policy_results(r.obj("policy")) if r.has("policy") else None,
        given_stack_file=r.optional_text("stack_file"),
        sites=tuple(_site(x) for x in r.optional_objs("sites")),
        kubernetes=_kubernetes(r.obj("kubernetes")) if r.has("kubernetes") else None,
        workloads=tuple(_workload(w) for w in r.optional_objs("workloads")),
        changes=_changes(doc.get("changes")),
        filesystems=tuple(_filesystem(f) for f in r.optional_objs("filesystems")),
    )


def _changes(data: object) -> Mapping[str, Any] | None:
    """The `changes` of a `preview --base`, as the reports read it: the steps and counts, each checked for shape."""
    if data is None:
        return None
    r = _Reader(data, "changes")
    r.text("base")
    for step in r.objs("steps"):
        step.text("urn")
        step.text("op")
    r.obj("changeSummary")
    assert isinstance(data, Mapping)
    return data


def _kubernetes(r: _Reader) -> Kubernetes:
    return Kubernetes(
        service_name=r.text("service_name"),
        cluster_name=r.text("cluster_name"),
        version=r.text("version"),
        support=r.text("support"),
        endpoint=r.text("endpoint"),
        region=r.text("region"),
        node_image=r.text("node_image"),
        system_instance_type=r.text("system_instance_type"),
        system_nodes=r.whole("system_nodes"),
        control_plane_usd_per_month=r.number("control_plane_usd_per_month"),
        system_usd_per_month=r.optional_number("system_usd_per_month"),
        cost_usd_per_month=r.optional_number("cost_usd_per_month"),
        cluster_queue=r.text("cluster_queue"),
        local_queue=r.text("local_queue"),
        namespace=r.text("namespace"),
        node_groups=tuple(
            NodeGroup(
                name=g.text("name"),
                pool=g.text("pool"),
                zone=g.optional_text("zone"),
                nodes=g.whole("nodes"),
                taints=tuple(f"{t.text('key')}={t.text('value')}:{t.text('effect')}" for t in g.objs("taints")),
                resources=g.text_map("resources"),
            )
            for g in r.objs("node_groups")
        ),
        addons=tuple(
            Addon(
                name=a.text("name"),
                chart=a.text("chart"),
                repository=a.text("repository"),
                version=a.text("version"),
                namespace=a.text("namespace"),
                kind=a.optional_text("kind") or "helm",
            )
            for a in r.objs("addons")
        ),
        topologies=tuple(KueueTopology(name=t.text("name"), levels=t.texts("levels")) for t in r.objs("topologies")),
        unpriced=r.optional_texts("unpriced"),
        system_volumes_usd_per_month=r.optional_number("system_volumes_usd_per_month")
        if r.has("system_volumes_usd_per_month")
        else None,
    )


def _workload(r: _Reader) -> Workload:
    return Workload(
        name=r.text("name"),
        pools=r.texts("pools"),
        provider=r.text("provider"),
        instance_type=r.text("instance_type"),
        accelerator=r.text("accelerator"),
        gpus_available=r.whole("gpus_available"),
        parameters=r.number("parameters"),
        active_parameters=r.number("active_parameters"),
        tokens=r.number("tokens"),
        sequence_length=r.whole("sequence_length"),
        global_batch_tokens=r.number("global_batch_tokens"),
        fits=r.flag("fits"),
        reason=r.nullable_text("reason"),
        chosen=None if r.nullable("chosen") else _candidate(r.obj("chosen")),
        runners_up=tuple(_candidate(c) for c in r.objs("runners_up")),
        steps=r.whole("steps"),
        days=r.optional_number("days"),
        gpu_hours=r.optional_number("gpu_hours"),
        cost_usd=r.optional_number("cost_usd"),
        energy_mwh=r.optional_number("energy_mwh"),
        reliability=None if r.nullable("reliability") else _reliability(r.obj("reliability")),
        target_days=r.optional_number("target_days"),
        target_gpus=r.optional_whole("target_gpus"),
        gpus_for_target_days=r.optional_whole("gpus_for_target_days"),
        sources=r.texts("sources"),
        notes=r.optional_texts("notes"),
        compute_days=r.optional_number("compute_days") if r.has("compute_days") else None,
    )


def _candidate(r: _Reader) -> Candidate:
    return Candidate(
        layout=_layout(r.obj("layout")),
        memory=_memory(r.obj("memory")),
        step=None if r.nullable("step") else _step(r.obj("step")),
        why=r.text("why"),
    )


def _layout(r: _Reader) -> Layout:
    return Layout(
        tensor_parallel=r.whole("tensor_parallel"),
        pipeline_parallel=r.whole("pipeline_parallel"),
        data_parallel=r.whole("data_parallel"),
        expert_parallel=r.whole("expert_parallel") if r.has("expert_parallel") else 1,
        zero_stage=r.whole("zero_stage"),
        recompute=r.text("recompute"),
        micro_batch=r.whole("micro_batch"),
        micro_batches=r.whole("micro_batches"),
        gpus=r.whole("gpus"),
        virtual_stages=r.whole("virtual_stages") if r.has("virtual_stages") else 1,
    )


def _memory(r: _Reader) -> Memory:
    return Memory(
        parameters=r.number("parameters"),
        gradients=r.number("gradients"),
        optimizer=r.number("optimizer"),
        activations=r.number("activations"),
        overhead=r.number("overhead"),
        total=r.number("total"),
        capacity=r.number("capacity"),
        fits=r.flag("fits"),
    )


def _step(r: _Reader) -> StepTime:
    return StepTime(
        flops_per_step=r.number("flops_per_step"),
        compute_s=r.number("compute_s"),
        tensor_parallel_s=r.number("tensor_parallel_s"),
        data_parallel_s=r.number("data_parallel_s"),
        pipeline_bubble_s=r.number("pipeline_bubble_s"),
        expert_parallel_s=r.number("expert_parallel_s") if r.has("expert_parallel_s") else 0.0,
        total_s=r.number("total_s"),
        utilisation_prior=r.number("utilisation_prior"),
        mfu=r.number("mfu"),
        tflops_per_gpu=r.number("tflops_per_gpu"),
    )


def _reliability(r: _Reader) -> Reliability:
    return Reliability(
        gpu_hours_per_interruption=r.number("gpu_hours_per_interruption"),
        mtbf_h=r.number("mtbf_h"),
        interruptions=r.number("interruptions"),
        checkpoint_bytes=r.number("checkpoint_bytes"),
        filesystems=r.texts("filesystems"),
        write_gb_s=r.optional_number("write_gb_s"),
        write_s=r.optional_number("write_s"),
        interval_s=r.optional_number("interval_s"),
        restart_s=r.number("restart_s"),
        goodput=r.optional_number("goodput"),
        target_overhead=r.number("target_overhead"),
        required_write_gb_s=r.number("required_write_gb_s"),
    )


def _cluster(r: _Reader) -> Cluster:
    b = r.obj("budgets")
    return Cluster(
        name=r.text("name"),
        tags=r.text_map("tags"),
        regions=r.texts("regions"),
        frameworks=r.texts("frameworks"),
        allowed_regions=r.texts("allowed_regions"),
        budgets=Budgets(
            monthly_usd=b.optional_positive("monthly_usd"),
            power_kw=b.optional_positive("power_kw"),
            rack_kw=b.optional_positive("rack_kw"),
        ),
    )


def _summary(r: _Reader) -> Summary:
    return Summary(
        nodes=r.whole("nodes"),
        gpus=r.whole("gpus"),
        cost_usd_per_hour=r.number("cost_usd_per_hour"),
        cost_usd_per_month=r.number("cost_usd_per_month"),
        power_kw_it=r.number("power_kw_it"),
        power_kw_facility=r.number("power_kw_facility"),
        carbon_t_per_month=r.number("carbon_t_per_month"),
        resources=r.whole("resources"),
        unpriced=r.optional_texts("unpriced"),
    )


def _pool(r: _Reader) -> Pool:
    return Pool(
        name=r.text("name"),
        provider=r.text("provider"),
        region=r.text("region"),
        zone=r.optional_text("zone"),
        instance_type=r.text("instance_type"),
        market=r.text("market"),
        nodes=r.whole("nodes"),
        gpus=r.whole("gpus"),
        cost_usd_per_hour=r.optional_number("cost_usd_per_hour"),
        cost_usd_per_month=r.optional_number("cost_usd_per_month"),
        power_kw_it=r.number("power_kw_it"),
        power_kw_facility=r.number("power_kw_facility"),
        unpriced=r.optional_texts("unpriced"),
    )


def _filesystem(r: _Reader) -> Filesystem:
    return Filesystem(
        name=r.text("name"),
        kind=r.text("kind"),
        service=r.text("service"),
        provider=r.text("provider"),
        region=r.text("region"),
        zone=r.optional_text("zone"),
        mount=r.text("mount"),
        capacity_tib=r.number("capacity_tib"),
        throughput_mb_s=r.number("throughput_mb_s"),
        cost_usd_per_month=r.optional_number("cost_usd_per_month"),
    )


def _site(r: _Reader) -> Site:
    return Site(
        name=r.text("name"),
        pools=r.texts("pools"),
        nodes=r.whole("nodes"),
        gpus=r.whole("gpus"),
        pue=r.number("pue"),
        rack_kw=r.number("rack_kw"),
        max_kw=r.number("max_kw"),
        power_kw_it=r.number("power_kw_it"),
        power_kw_facility=r.number("power_kw_facility"),
        hardware_usd_per_month=r.optional_number("hardware_usd_per_month"),
        energy_usd_per_month=r.number("energy_usd_per_month"),
        cost_usd_per_month=r.number("cost_usd_per_month"),
        co2e_t_per_month=r.number("co2e_t_per_month"),
        fabrics=tuple(_fabric(f) for f in r.objs("fabrics")),
        racks=tuple(_rack(x) for x in r.objs("racks")),
    )


def _fabric(r: _Reader) -> Fabric:
    return Fabric(
        name=r.text("name"),
        switch=r.text("switch"),
        fabric=r.text("fabric"),
        radix=r.whole("radix"),
        link_gbps=r.whole("link_gbps"),
        rails=r.whole("rails"),
        planes=r.text("planes"),
        nodes=r.whole("nodes"),
        tiers=r.whole("tiers"),
        leaf_switches=r.whole("leaf_switches"),
        spine_switches=r.whole("spine_switches"),
        core_switches=r.whole("core_switches"),
        cables_node_leaf=r.whole("cables_node_leaf"),
        cables_leaf_spine=r.whole("cables_leaf_spine"),
        cables_spine_core=r.whole("cables_spine_core"),
        switch_transceivers=r.whole("switch_transceivers"),
        node_transceivers=r.whole("node_transceivers"),
        ports_total=r.whole("ports_total"),
        ports_used=r.whole("ports_used"),
        ports_free=r.whole("ports_free"),
        oversubscription_wanted=r.number("oversubscription_wanted"),
        oversubscription_achieved=r.number("oversubscription_achieved"),
        switch_power_w=r.optional_number("switch_power_w"),
    )


def _rack(r: _Reader) -> Rack:
    return Rack(
        name=r.text("name"),
        nodes=r.whole("nodes"),
        power_kw=r.number("power_kw"),
        limit_kw=r.number("limit_kw"),
        pools=r.texts("pools"),
        named=r.flag("named"),
    )


def _resource(r: _Reader) -> Resource:
    return Resource(
        urn=r.text("urn"),
        type=r.text("type"),
        name=r.text("name"),
        inputs=r.raw("inputs"),
        ignore_changes=r.optional_texts("ignoreChanges"),
    )


def _policy_results(r: _Reader) -> PolicyResults:
    pack = r.obj("pack")
    results = PolicyResults(
        pack=Pack(name=pack.text("name"), version=pack.text("version")),
        policies=tuple(_policy(p) for p in r.objs("policies")),
        violations=tuple(_violation(v) for v in r.objs("violations")),
        waived=tuple(_waived(w) for w in r.objs("waived")),
        passed=r.texts("passed"),
        not_applicable=tuple(
            NotApplicable(policy=n.text("policy"), reason=n.text("reason")) for n in r.objs("not_applicable")
        ),
    )
    _check_policy_names(results)
    return results


def _policy(r: _Reader) -> Policy:
    return Policy(
        name=r.text("name"),
        display_name=r.text("display_name"),
        description=r.text("description"),
        concern=r.text("concern"),
        kind=r.text("kind"),
        severity=cast(Severity, r.choice("severity", Severity)),
        enforcement=cast(Enforcement, r.choice("enforcement", Enforcement)),
        remediation=r.text("remediation"),
        frameworks=r.texts("frameworks"),
        controls=r.texts("controls"),
    )


def _violation(r: _Reader) -> Violation:
    return Violation(
        policy=r.text("policy"),
        severity=cast(Severity, r.choice("severity", Severity)),
        enforcement=cast(FindingEnforcement, r.choice("enforcement", FindingEnforcement)),
        resource=r.text("resource"),
        type=r.text("type"),
        urn=r.text("urn"),
        message=r.text("message"),
        stack_field=r.optional_text("stack_field"),
        stack_line=r.optional_line("stack_line"),
    )


def _waived(r: _Reader) -> Waived:
    return Waived(
        policy=r.text("policy"),
        severity=cast(Severity, r.choice("severity", Severity)),
        resource=r.text("resource"),
        type=r.text("type"),
        urn=r.text("urn"),
        message=r.text("message"),
        reason=r.text("reason"),
        expires=r.text("expires"),
        stack_field=r.optional_text("stack_field"),
        stack_line=r.optional_line("stack_line"),
    )


def _check_policy_names(results: PolicyResults) -> None:
    """Every finding, pass and n/a names a policy of the pack (SARIF and JUnit index by it)."""
    known = {p.name for p in results.policies}
    named = [
        *((f"policy.violations[{i}].policy", v.policy) for i, v in enumerate(results.violations)),
        *((f"policy.waived[{i}].policy", w.policy) for i, w in enumerate(results.waived)),
        *((f"policy.passed[{i}]", name) for i, name in enumerate(results.passed)),
        *((f"policy.not_applicable[{i}].policy", n.policy) for i, n in enumerate(results.not_applicable)),
    ]
    for path, name in named:
        if name not in known:
            raise ValueError(f"preview JSON: '{path}' names {_show(name)}, which is not in policy.policies")
