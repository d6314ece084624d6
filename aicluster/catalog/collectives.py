"""Typed records of data/collectives.yaml: what the collective model (aicluster.sizing.collective) needs to know
about each GPU instance type's scale-up (NVLink/NVSwitch) and scale-out (NIC rails) fabric, and the published
nccl-tests results it is checked against.

Three kinds of record:
- ``NvlinkDomain``: one NVSwitch generation as nccl-tests sees it on one NVLink domain (one 8-GPU node, or a
  multi-node domain such as a GB200 NVL72 rack of 18 nodes): the all_reduce bus bandwidth ceiling (NVLink SHARP,
  "NVLS", where the switch has it), the ring ceiling the other collectives reach, the NVLink side's algorithm
  bandwidth in the two-domain tree regime, an effective latency, and for multi-node domains how latency grows with
  the ranks in the domain and what a ring across domains reaches;
- ``CollectiveNetwork``: the NICs NCCL uses on a set of instance types of one provider (rails x link rate),
  the share of line rate a ring reaches, whether the fabric reduces in the network (SHARP), a per-hop latency;
- ``CalibrationPoint``: one published nccl-tests figure {op, nodes, GPUs per node, bytes, busbw}.

Every figure cites a source; derived figures say "derived" with the arithmetic in their note. This module imports
nothing of the project beyond the catalog's models (layering rule: the catalog is a leaf).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field, model_validator

from .models import Accelerator, InstanceType, Provider, Sourced, _Record

CollectiveOpName = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]


class NvlinkDomain(Sourced):
    """One NVSwitch generation as nccl-tests measures it on one NVLink domain of `gpus` GPUs: one node for 8-GPU
    servers, a rack of 18 nodes for GB200/GB300 NVL72 (the instance type's `nvlink_domain` says how many nodes)."""

    id: Annotated[str, Field(description="Id the network records cite (e.g. `nvswitch3-hopper`).")]
    generation: Annotated[str, Field(description="NVLink and NVSwitch generation (e.g. `NVLink 4, NVSwitch gen 3`).")]
    accelerators: Annotated[
        tuple[str, ...], Field(min_length=1, description="Accelerator ids (accelerators.yaml) on this NVSwitch.")
    ]
    gpus: Annotated[int, Field(ge=2, description="GPUs per NVSwitch domain the figures were measured on.")]
    nvls: Annotated[bool, Field(description="The NVSwitch reduces in the switch (NVLink SHARP): all_reduce uses it.")]
    all_reduce_busbw_gb_s: Annotated[
        float, Field(gt=0, description="all_reduce busbw ceiling on `gpus` GPUs, large messages (NVLS if nvls), GB/s.")
    ]
    ring_busbw_gb_s: Annotated[
        float,
        Field(gt=0, description="busbw ceiling of ring collectives (all_gather, reduce_scatter, ring), GB/s."),
    ]
    hierarchical_algbw_gb_s: Annotated[
        float,
        Field(gt=0, description="NVLink-side algbw ceiling of the two-node tree / NVLS-tree all_reduce, GB/s."),
    ]
    latency_us: Annotated[
        float,
        Field(
            gt=0, description="Effective fixed time of one collective on 8 GPUs of the domain (alpha), microseconds."
        ),
    ]
    note: Annotated[str, Field(description="What was measured and what is derived (with the arithmetic).")]
    domain_latency_us: Annotated[
        float | None,
        Field(
            gt=0,
            description="Multi-node domains: alpha of an all_reduce over all `gpus` GPUs of the domain, microseconds; "
            "between 8 and `gpus` ranks the model interpolates linearly (None: latency_us at any rank count).",
        ),
    ] = None
    cross_domain_ring_busbw_gb_s: Annotated[
        float | None,
        Field(
            gt=0,
            description="Multi-node domains: the busbw ceiling a ring across domains reached (whatever the NICs "
            "could carry), GB/s (None: only the NICs and NVLink bound it).",
        ),
    ] = None
    nvlink_ring_step_us: Annotated[
        float | None,
        Field(
            gt=0,
            description="Multi-node domains: latency of one ring step over NVLink inside a domain, added for each such "
            "step of a ring across domains, microseconds (None: the fitted latencies hold them).",
        ),
    ] = None

    def latency_at(self, ranks: int) -> float:
        """alpha in microseconds of a collective over `ranks` GPUs of one domain: latency_us up to 8 ranks, then
        linear up to domain_latency_us at the whole domain (derived: the two published sweeps' alphas joined)."""
        if self.domain_latency_us is None or ranks <= 8 or self.gpus <= 8:
            return self.latency_us
        share = (min(ranks, self.gpus) - 8) / (self.gpus - 8)
        return self.latency_us + share * (self.domain_latency_us - self.latency_us)


class CollectiveNetwork(Sourced):
    """The scale-out fabric of some GPU instance types of one provider, as NCCL uses it."""

    provider: Provider
    instance_types: Annotated[tuple[str, ...], Field(min_length=1, description="Instance types this record covers.")]
    nvlink: Annotated[str, Field(description="NvlinkDomain id of these types.")]
    rails: Annotated[int, Field(ge=1, description="NICs NCCL spreads a node's traffic over (EFA devices, IB HCAs).")]
    nic_gbps: Annotated[float, Field(gt=0, description="Line rate of one of those NICs, Gb/s.")]
    efficiency: Annotated[
        float,
        Field(gt=0, le=1, description="Share of line rate a ring's busbw reaches over the network (calibrated)."),
    ]
    calibrated: Annotated[
        bool,
        Field(description="The efficiency comes from a figure of this fabric (false: borrowed or line rate)."),
    ]
    sharp: Annotated[bool, Field(description="The fabric reduces in the network (InfiniBand SHARP): NCCL CollNet.")]
    network_latency_us: Annotated[
        float,
        Field(gt=0, description="Effective latency two nodes add over one (fitted at 16 MiB), microseconds."),
    ]
    note: Annotated[str, Field(description="How the figures were read or derived.")]
    borrowed: Annotated[
        str | None,
        Field(description="Which figures come from another type or fabric, and from which (None: all its own)."),
    ] = None
    max_nodes: Annotated[
        int | None,
        Field(ge=2, description="Nodes one fabric domain holds; beyond it this fabric has no path (None: no limit)."),
    ] = None
    switch_radix: Annotated[
        int | None,
        Field(ge=4, description="Ports per switch of a SHARP fabric: sets its fat tree's levels (None: no SHARP)."),
    ] = None

    @property
    def node_gb_s(self) -> float:
        """Line rate of the node's rails, GB/s (10^9 bytes per second)."""
        return self.rails * self.nic_gbps / 8.0


class CalibrationPoint(Sourced):
    """One published nccl-tests result (out-of-place unless the note says otherwise)."""

    provider: Provider
    instance_type: str
    op: CollectiveOpName
    nodes: Annotated[int, Field(ge=1)]
    gpus_per_node: Annotated[int, Field(ge=1, description="Ranks per node of the run.")]
    bytes: Annotated[int, Field(ge=1, description="nccl-tests size column, bytes.")]
    busbw_gb_s: Annotated[float, Field(gt=0, description="Published busbw, GB/s.")]
    algorithm: Annotated[str | None, Field(description="NCCL algorithm, where the source states or implies it.")] = None
    nodes_per_domain: Annotated[
        int | None,
        Field(ge=1, description="Multi-node NVLink domains: the run's nodes in each domain (None: whole domains)."),
    ] = None
    sharp: Annotated[
        bool | None,
        Field(
            description="False: the run had no in-network reduction (NCCL's CollNet plugin not loaded) though the "
            "fabric record has SHARP; None: as the fabric record."
        ),
    ] = None
    tolerance: Annotated[
        float | None,
        Field(
            gt=0,
            le=1,
            description="The model / published ratio this point is checked within, 1 +/- tolerance, where it differs "
            "from the size's default (the note says why); None: the default.",
        ),
    ] = None
    kind: Annotated[
        Literal["measured", "maintainer", "minimum"],
        Field(
            description="measured: a published run; maintainer: an NCCL maintainer's stated expectation; "
            "minimum: an acceptance threshold (the model must reach it)."
        ),
    ] = "measured"
    note: Annotated[str, Field(description="Where in the source the figure is, and any caveat.")]


class ScaleOut(Sourced):
    """How latency and the tree's bandwidth grow beyond two nodes (the same for every fabric)."""

    tree_bandwidth_share: Annotated[
        float, Field(gt=0, le=1, description="Tree busbw as a share of the ring's at 3+ nodes (large messages).")
    ]
    ring_step_us: Annotated[
        float, Field(gt=0, description="Latency NCCL's own model gives one inter-node ring step, microseconds.")
    ]
    tree_step_us: Annotated[
        float, Field(gt=0, description="Latency NCCL's own model gives one tree level, microseconds.")
    ]
    nvls_tree_step_us: Annotated[
        float, Field(gt=0, description="Latency NCCL's own model gives one NVLS-tree level, microseconds.")
    ]
    collnet_step_us: Annotated[
        float, Field(gt=0, description="Latency NCCL's own model gives one CollNet network step, microseconds.")
    ]
    nvls_tree_bandwidth_share: Annotated[
        float, Field(gt=0, le=1, description="NVLS-tree busbw as a share of the ring's at 3+ nodes (NCCL's model).")
    ]
    note: Annotated[str, Field(description="What was measured and the arithmetic.")]


class CollectivesData(_Record):
    """Everything in data/collectives.yaml."""

    scale_out: ScaleOut | None = None
    nvlink: tuple[NvlinkDomain, ...] = ()
    networks: tuple[CollectiveNetwork, ...] = ()
    calibration: tuple[CalibrationPoint, ...] = ()

    @model_validator(mode="after")
    def _unique(self) -> CollectivesData:
        ids = [d.id for d in self.nvlink]
        if len(ids) != len(set(ids)):
            raise ValueError(f"duplicate nvlink ids: {sorted({i for i in ids if ids.count(i) > 1})}")
        return self

    def network_of(self, provider: str, instance_type: str) -> CollectiveNetwork | None:
        return next((n for n in self.networks if n.provider == provider and instance_type in n.instance_types), None)

    def domain(self, domain_id: str) -> NvlinkDomain | None:
        return next((d for d in self.nvlink if d.id == domain_id), None)


def collective_problems(
    data: CollectivesData,
    instance_types: Mapping[tuple[str, str], InstanceType],
    accelerators: Mapping[str, Accelerator],
    sources: Mapping[str, object],
) -> list[str]:
    """Cross-checks: sources exist; every GPU instance type has exactly one network record whose NVLink domain
    carries its accelerator; rails x link rate fit the type's published GPU bandwidth; calibration points name
    real types with that many GPUs."""
    problems: list[str] = []

    def cited(rec: Sourced, what: str) -> None:
        for sid in sorted({rec.source, *rec.field_sources.values()}):
            if sid not in sources:
                problems.append(f"collectives {what}: unknown source id {sid!r}")

    if data.scale_out is None:
        problems.append("collectives: no scale_out record (latency steps and tree bandwidth beyond two nodes)")
    else:
        cited(data.scale_out, "scale_out")
    for dom in data.nvlink:
        cited(dom, f"nvlink {dom.id}")
        for acc_id in dom.accelerators:
            if acc_id not in accelerators:
                problems.append(f"collectives nvlink {dom.id}: unknown accelerator {acc_id!r}")
        if dom.ring_busbw_gb_s > dom.all_reduce_busbw_gb_s:
            problems.append(f"collectives nvlink {dom.id}: ring busbw above the all_reduce ceiling")
    covered: dict[tuple[str, str], int] = {}
    for net in data.networks:
        what = f"network {net.provider}/{','.join(net.instance_types)}"
        cited(net, what)
        if not net.calibrated and not net.borrowed:
            problems.append(f"collectives {what}: calibrated is false: say in borrowed which figures come from where")
        if net.sharp and net.switch_radix is None:
            problems.append(f"collectives {what}: sharp needs switch_radix (the fat tree's levels set its latency)")
        domain = data.domain(net.nvlink)
        if domain is None:
            problems.append(f"collectives {what}: unknown nvlink domain {net.nvlink!r}")
        for name in net.instance_types:
            covered[(net.provider, name)] = covered.get((net.provider, name), 0) + 1
            it = instance_types.get((net.provider, name))
            if it is None:
                problems.append(f"collectives {what}: unknown instance type {net.provider}/{name}")
                continue
            if domain is not None and it.accelerator not in domain.accelerators:
                problems.append(f"collectives {what}: {name} has {it.accelerator}, not a GPU of nvlink {domain.id}")
            if domain is not None:
                # the NVLink record's figures were measured on one whole domain of the type: a node, or a rack
                nodes = it.nvlink_domain.nodes if it.nvlink_domain is not None else 1
                if domain.gpus != nodes * it.accelerator_count:
                    problems.append(
                        f"collectives {what}: nvlink {domain.id} has {domain.gpus} GPUs per domain but {name}'s NVLink "
                        f"domain has {nodes} x {it.accelerator_count}"
                    )
            if net.rails * net.nic_gbps > it.network.bandwidth_gbps + 1e-6:
                problems.append(
                    f"collectives {what}: {net.rails} x {net.nic_gbps:g} Gb/s exceeds {name}'s "
                    f"{it.network.bandwidth_gbps:g} Gb/s"
                )
            if it.network.gpu_nics and net.rails != it.network.gpu_nics:
                problems.append(f"collectives {what}: rails {net.rails} but {name} has {it.network.gpu_nics} GPU NICs")
            if it.network.aws is not None and net.rails != len(it.network.aws.efa_layout()):
                problems.append(
                    f"collectives {what}: rails {net.rails} but {name} has {len(it.network.aws.efa_layout())} EFA "
                    "interfaces"
                )
    for (prov, name), it in sorted(instance_types.items()):
        acc = accelerators.get(it.accelerator) if it.accelerator else None
        if acc is None or acc.kind != "gpu":
            continue
        count = covered.get((prov, name), 0)
        if count != 1:
            problems.append(
                f"collectives: GPU instance type {prov}/{name} has {count} network records in collectives.yaml "
                "(exactly one needed)"
            )
    for dom in data.nvlink:
        multi = (dom.domain_latency_us, dom.cross_domain_ring_busbw_gb_s, dom.nvlink_ring_step_us)
        if dom.gpus <= 8 and any(v is not None for v in multi):
            problems.append(f"collectives nvlink {dom.id}: multi-node domain figures on a domain of {dom.gpus} GPUs")
    for pt in data.calibration:
        what = f"calibration {pt.op} {pt.instance_type} x{pt.nodes}"
        cited(pt, what)
        it = instance_types.get((pt.provider, pt.instance_type))
        if it is not None and pt.nodes_per_domain is not None:
            whole = it.nvlink_domain.nodes if it.nvlink_domain is not None else 1
            if pt.nodes_per_domain > whole:
                problems.append(f"collectives {what}: {pt.nodes_per_domain} nodes per domain, a domain holds {whole}")
        if it is None:
            problems.append(f"collectives {what}: unknown instance type {pt.provider}/{pt.instance_type}")
        elif pt.gpus_per_node > it.accelerator_count:
            problems.append(
                f"collectives {what}: {pt.gpus_per_node} GPUs per node, {it.name} has {it.accelerator_count}"
            )
    return problems
