"""The catalog: accelerators, instance types, TPU types, regions, storage tiers, images, prices, switches.

Data lives in YAML files under ``data/`` with a source (URL + date read) for every figure, and is
loaded into the typed, frozen records of :mod:`aicluster.catalog.models`. The catalog is the single
source of truth for the planner, the components and the policy pack.

This package imports nothing else of the project.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError

from . import cache as _cache
from .changes import RISKS, ChangeRule, ConditionalReplace, Guard, PlatformEffect, RolloutCase, UpdatePolicy
from .collectives import CollectivesData, collective_problems
from .health import NO_DRAIN_ACTIONS, HealthData, NodeThresholds, Xid, XidAction, XidList
from .models import (
    Accelerator,
    Constants,
    CpuTopology,
    GcpNicLayout,
    Image,
    InstanceType,
    KubernetesAddon,
    KubernetesData,
    KubernetesService,
    MaintenanceWindowRule,
    NcclData,
    NcclProfile,
    NodeTaint,
    NvlinkDomain,
    Offering,
    PortMode,
    Provider,
    ProviderDefaults,
    Region,
    ServicePrice,
    SlurmCloudTimes,
    Source,
    Sourced,
    StorageTier,
    Switch,
    TpuType,
    version_in_range,
)
from .monitoring import Collector, ManagedCost, MonitoringData, managed_cost
from .reliability import CheckpointState, FailureRate, ReliabilityData
from .sizing import SizingPriors

__all__ = [
    "DATA_DIR",
    "REQUIRED_TAGS",
    "RISKS",
    "Accelerator",
    "Catalog",
    "CatalogError",
    "ChangeRule",
    "CheckpointState",
    "CollectivesData",
    "ConditionalReplace",
    "Constants",
    "CpuTopology",
    "FailureRate",
    "GcpNicLayout",
    "Guard",
    "HealthData",
    "Image",
    "InstanceType",
    "KubernetesAddon",
    "KubernetesService",
    "MaintenanceWindowRule",
    "MonitoringData",
    "NcclData",
    "NcclProfile",
    "NodeTaint",
    "NodeThresholds",
    "NvlinkDomain",
    "Offering",
    "PlatformEffect",
    "PortMode",
    "Provider",
    "ProviderDefaults",
    "Region",
    "ReliabilityData",
    "RolloutCase",
    "ServicePrice",
    "SizingPriors",
    "SlurmCloudTimes",
    "Source",
    "StorageTier",
    "Switch",
    "TpuType",
    "UpdatePolicy",
    "Xid",
    "load_catalog",
]

DATA_DIR = Path(__file__).parent / "data"

# Tag keys every resource must carry (cost allocation: who owns it, who pays). The policy pack enforces them
# (its `required_tags` setting can change the list) and `aicluster validate` checks the stack's tags for them.
REQUIRED_TAGS: tuple[str, ...] = ("owner", "cost-center")

T = TypeVar("T", bound=BaseModel)


class CatalogError(ValueError):
    """The catalog data is inconsistent. This is a bug in the shipped data, not user input."""


@dataclass(frozen=True)
class Catalog:
    sources: dict[str, Source]
    accelerators: dict[str, Accelerator]
    instance_types: dict[tuple[str, str], InstanceType]
    tpu_types: dict[str, TpuType]
    regions: dict[tuple[str, str], Region]
    storage_tiers: tuple[StorageTier, ...]
    images: dict[tuple[str, str], Image]
    services: dict[tuple[str, str], ServicePrice]
    constants: Constants
    _by_provider: dict[str, list[str]] = field(default_factory=dict, repr=False)
    # NCCL profiles, default library versions, guest NIC names, expected bus bandwidth (data/nccl.yaml)
    nccl: NcclData = field(
        default_factory=lambda: NcclData(default_versions=(), guest_nic_names=(), profiles=(), busbw=())
    )
    # fabric switches for on-prem fat trees (data/switches.yaml)
    switches: dict[str, Switch] = field(default_factory=dict)
    # managed Kubernetes per provider, and the cluster add-ons (data/kubernetes.yaml)
    kubernetes: dict[str, KubernetesService] = field(default_factory=dict)
    addons: dict[str, KubernetesAddon] = field(default_factory=dict)
    # failure rates, checkpoint bytes per parameter, restart time, checkpoint-overhead target (data/reliability.yaml)
    reliability: ReliabilityData | None = None
    # what `aicluster monitoring` scrapes and its alert thresholds (data/monitoring.yaml)
    monitoring: MonitoringData | None = None
    # workload sizing priors: utilisation, FP8 peaks, overhead, model-state bytes (data/sizing.yaml)
    sizing: SizingPriors | None = None
    # the collective model's NVLink and network figures and its calibration points (data/collectives.yaml)
    collectives: CollectivesData = field(default_factory=CollectivesData)
    # per resource type: what replaces it, what rolls its nodes, what a replace or delete costs (data/changes/)
    change_rules: dict[str, ChangeRule] = field(default_factory=dict)
    # what changing a stack field does per platform, observed with those rules (data/update_policies.yaml)
    update_policies: tuple[UpdatePolicy, ...] = ()
    # the XID catalog, node health thresholds per instance type, check rules (data/health.yaml)
    health: HealthData | None = None

    # -- lookups ---------------------------------------------------------------------------------
    def accelerator_regions(self) -> dict[str, set[str]]:
        """Provider -> the regions where the catalog offers an accelerated instance type or a TPU generation."""
        out: dict[str, set[str]] = {}
        for (provider, _), it in self.instance_types.items():
            if it.accelerator:
                out.setdefault(provider, set()).update(o.region for o in it.offerings)
        for tpu in self.tpu_types.values():
            out.setdefault("gcp", set()).update(o.region for o in tpu.offerings)
        return out

    def instance_type(self, provider: str, name: str) -> InstanceType | None:
        return self.instance_types.get((provider, name))

    def instance_type_names(self, provider: str) -> list[str]:
        return sorted(n for (p, n) in self.instance_types if p == provider)

    def accelerator_of(self, it: InstanceType) -> Accelerator | None:
        return self.accelerators.get(it.accelerator) if it.accelerator else None

    def managed_prometheus_cost(
        self, provider: str, region: str | None, collector: Collector | None, nodes: Iterable[tuple[InstanceType, int]]
    ) -> ManagedCost | None:
        """What the managed Prometheus of `provider` bills a month for the nodes it scrapes, `nodes` being (instance
        type, count) of each fleet; dcgm-exporter runs on GPU nodes only. The planner and the policy pack both cost
        with this, so the figures agree to the cent. None: the catalog has no monitoring data or no such service."""
        if self.monitoring is None:
            return None
        counted = []
        for it, n in nodes:
            acc = self.accelerator_of(it)
            counted.append((it, n, it.accelerator_count if acc is not None and acc.kind == "gpu" else 0))
        return managed_cost(self.monitoring, provider, region, collector, counted, self.hours_per_month)

    def switch(self, switch_id: str) -> Switch | None:
        return self.switches.get(switch_id)

    def region(self, provider: str, name: str) -> Region | None:
        return self.regions.get((provider, name))

    def network_slot(self, provider: str, region: str) -> int:
        return self.constants.network_slots[provider][region]

    def region_names(self, provider: str) -> list[str]:
        return sorted(n for (p, n) in self.regions if p == provider)

    def storage_tiers_for(self, provider: str, kind: str) -> list[StorageTier]:
        return [t for t in self.storage_tiers if t.provider == provider and t.kind == kind]

    def image(self, provider: str, image_id: str) -> Image | None:
        return self.images.get((provider, image_id))

    def service_price(self, provider: str, service: str, region: str) -> float | None:
        rec = self.services.get((provider, service))
        return rec.prices_usd.get(region) if rec else None

    def service_unit(self, provider: str, service: str) -> str | None:
        """What a service is charged per (`gib-month`, `hour`); None: not in the catalog."""
        rec = self.services.get((provider, service))
        return rec.unit if rec else None

    def service_source(self, provider: str, service: str) -> str | None:
        """The source id of a service's list prices; None: not in the catalog."""
        rec = self.services.get((provider, service))
        return rec.source_of("prices_usd") if rec else None

    def cite(self, record: Sourced, figure: str) -> Source:
        return self.sources[record.source_of(figure)]

    @property
    def hours_per_month(self) -> float:
        return self.constants.hours_per_month

    def slurm_cloud(self, provider: str) -> SlurmCloudTimes | None:
        """Slurm power-saving times for `provider`'s nodes bursting from another site; None: none recorded."""
        return self.constants.slurm_cloud.get(provider)


def _read(path: Path) -> Any:
    # yaml is imported here, not at the top: a cached catalog needs no YAML at all. The C loader (libyaml) parses
    # the catalog about 4x faster than the pure-Python one and builds the same data (same SafeConstructor).
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as fh:
        return yaml.load(fh, Loader=loader)  # a safe loader: plain data only


@functools.cache
def _list_adapter(model: type[T]) -> TypeAdapter[list[T]]:
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def _records(model: type[T], raw: Iterable[Any], where: Path) -> list[T]:
    try:
        return _list_adapter(model).validate_python(list(raw))
    except ValidationError as exc:
        raise CatalogError(f"{where}: {exc}") from exc


def _load_dir(model: type[T], folder: Path) -> list[T]:
    out: list[T] = []
    for path in sorted(folder.glob("*.yaml")):
        out.extend(_records(model, _read(path) or [], path))
    return out


def _check(cat: Catalog) -> None:
    problems: list[str] = []

    def cited(rec: Sourced, what: str) -> None:
        for sid in {rec.source, *rec.field_sources.values()}:
            if sid not in cat.sources:
                problems.append(f"{what}: unknown source id {sid!r}")

    for rule in cat.change_rules.values():
        cited(rule, f"change rule {rule.type}")
        problems.extend(
            f"change rule {rule.type} rollout case {case.path}: unknown source id {case.source!r}"
            for case in rule.rollout_cases
            if case.source not in cat.sources
        )
        problems.extend(
            f"change rule {rule.type} guard {g.loses!r}: unknown source id {g.source!r}"
            for g in rule.guards
            if g.source not in cat.sources
        )
    for policy in cat.update_policies:
        for platform, eff in policy.effects.items():
            problems.extend(
                f"update policy {policy.field} ({policy.change}) on {platform}: unknown source id {sid!r}"
                for sid in eff.sources
                if sid not in cat.sources
            )

    for acc in cat.accelerators.values():
        cited(acc, f"accelerator {acc.id}")
    for (prov, name), it in cat.instance_types.items():
        what = f"instance type {prov}/{name}"
        cited(it, what)
        if it.accelerator and it.accelerator not in cat.accelerators:
            problems.append(f"{what}: unknown accelerator {it.accelerator!r}")
        if bool(it.accelerator) != (it.accelerator_count > 0):
            problems.append(f"{what}: accelerator and accelerator_count disagree")
        for off in it.offerings:
            cited(off, f"{what} offering {off.region}")
            reg = cat.region(prov, off.region)
            if reg is None:
                problems.append(f"{what}: offering in unknown region {off.region!r}")
            elif not set(off.zones) <= {*reg.zones, *reg.local_zones}:
                unknown = sorted(set(off.zones) - {*reg.zones, *reg.local_zones})
                problems.append(f"{what}: zones {unknown} not in {off.region}")
    for tpu in cat.tpu_types.values():
        cited(tpu, f"tpu {tpu.name}")
        if tpu.accelerator not in cat.accelerators:
            problems.append(f"tpu {tpu.name}: unknown accelerator {tpu.accelerator!r}")
        for off in tpu.offerings:
            cited(off, f"tpu {tpu.name} offering {off.region}")
            if cat.region("gcp", off.region) is None:
                problems.append(f"tpu {tpu.name}: offering in unknown region {off.region!r}")
    for reg in cat.regions.values():
        cited(reg, f"region {reg.provider}/{reg.name}")
    for tier in cat.storage_tiers:
        cited(tier, f"storage {tier.service}/{tier.deployment}/{tier.throughput_mb_s_per_tib}")
        for rname in tier.prices_usd_per_gib_month:
            if cat.region(tier.provider, rname) is None:
                problems.append(f"storage {tier.service}: price for unknown region {rname!r}")
    for img in cat.images.values():
        cited(img, f"image {img.provider}/{img.id}")
    for svc in cat.services.values():
        cited(svc, f"service {svc.provider}/{svc.service}")
        for rname in svc.prices_usd:
            if cat.region(svc.provider, rname) is None:
                problems.append(f"service {svc.service}: price for unknown region {rname!r}")
    for prov, d in cat.constants.defaults.items():
        for image_id in (d.gpu_image, d.controller_image):
            if cat.image(prov, image_id) is None:
                problems.append(f"defaults.{prov}: unknown image {image_id!r}")
        if d.gpu_image_arm64 is not None:
            arm = cat.image(prov, d.gpu_image_arm64)
            if arm is None or arm.architecture != "arm64":
                problems.append(f"defaults.{prov}: gpu_image_arm64 {d.gpu_image_arm64!r} is not an arm64 image")
        if cat.instance_type(prov, d.controller_instance_type) is None:
            problems.append(f"defaults.{prov}: unknown instance type {d.controller_instance_type!r}")
        if (prov, d.root_disk_service) not in cat.services:
            problems.append(f"defaults.{prov}: unknown root disk service {d.root_disk_service!r}")
    slots: dict[int, str] = {}
    for prov, regions in cat.constants.network_slots.items():
        for rname, slot in regions.items():
            if cat.region(prov, rname) is None:
                problems.append(f"network_slots.{prov}: unknown region {rname!r}")
            if slot in slots:
                problems.append(f"network_slots: slot {slot} used by {slots[slot]} and {prov}/{rname}")
            slots[slot] = f"{prov}/{rname}"
    for prov, rname in cat.regions:
        if rname not in cat.constants.network_slots.get(prov, {}):
            problems.append(f"region {prov}/{rname} has no network slot in constants.yaml")
    for sid in cat.constants.sources.values():
        if sid not in cat.sources:
            problems.append(f"constants: unknown source id {sid!r}")
    for prov, times in cat.constants.slurm_cloud.items():
        for sid in {times.source, *times.field_sources.values()}:
            if sid not in cat.sources:
                problems.append(f"constants slurm_cloud.{prov}: unknown source id {sid!r}")
    for sw in cat.switches.values():
        cited(sw, f"switch {sw.id}")
    for k in cat.kubernetes.values():
        cited(k, f"kubernetes {k.service}")
        nh = k.node_health
        if nh is not None:
            cited(nh, f"kubernetes {k.service} node_health")
            for bucket in sorted(set(nh.repair_actions) - set(get_args(XidAction))):
                problems.append(f"kubernetes {k.service} node_health: {bucket!r} is not an XID action bucket")
            for bucket, action in nh.repair_actions.items():
                if (bucket in NO_DRAIN_ACTIONS) != (action == "NoAction"):
                    problems.append(
                        f"kubernetes {k.service} node_health: {bucket} -> {action} disagrees with the XID catalog, "
                        "whose buckets other than the application's drain the node"
                    )
            if nh.xid_list is not None and nh.xid_list not in get_args(XidList):
                problems.append(f"kubernetes {k.service} node_health: xid_list {nh.xid_list!r} is not a health tool")
            if (nh.xid_reason is None) != (nh.xid_list is None) or (
                nh.xid_reason is not None and "{xid}" not in nh.xid_reason
            ):
                problems.append(f"kubernetes {k.service} node_health: xid_reason needs xid_list and an {{xid}} field")
            if nh.repair_actions and (nh.xid_reason is None or nh.repair_wait_minutes is None):
                problems.append(f"kubernetes {k.service} node_health: repair_actions need xid_reason and a wait")
        if not all(levels and levels[-1] == "kubernetes.io/hostname" for levels in k.topology.values()):
            problems.append(f"kubernetes {k.service}: every topology must end with kubernetes.io/hostname")
        if ("nvlink" in k.topology) != (k.nvlink_level is not None) or (
            k.nvlink_level is not None and k.nvlink_level not in k.topology["nvlink"]
        ):
            problems.append(f"kubernetes {k.service}: nvlink_level must be a level of topology nvlink, and both set")
        if k.dra_min_version is not None and "nvlink" not in k.topology:
            problems.append(f"kubernetes {k.service}: a DRA version without an nvlink topology plans nothing")
        system = cat.constants.defaults.get(k.provider)
        if system is None or system.kubernetes_system_instance_type is None:
            problems.append(f"kubernetes {k.service}: constants has no {k.provider} kubernetes_system_instance_type")
        elif (k.provider, system.kubernetes_system_instance_type) not in cat.instance_types:
            problems.append(
                f"constants {k.provider}: kubernetes_system_instance_type {system.kubernetes_system_instance_type!r} "
                "is not in the catalog"
            )
    for a in cat.addons.values():
        cited(a, f"kubernetes add-on {a.id}")
    _check_nccl(cat, problems)
    if cat.reliability is not None:
        rel = cat.reliability
        for rate in rel.failure_rates:
            cited(rate, f"reliability failure rate {rate.id}")
        for state in rel.checkpoint_states:
            cited(state, f"reliability checkpoint state {state.optimizer}/{state.precision}")
        cited(rel.restart_s, "reliability restart_s")
        cited(rel.target_checkpoint_overhead, "reliability target_checkpoint_overhead")
    if cat.health is not None:
        for x in cat.health.xids:
            cited(x, f"health xid {x.xid}")
        for t in cat.health.thresholds:
            cited(t, f"health thresholds {t.provider}/{t.instance_type}")
            typ = cat.instance_types.get((t.provider, t.instance_type))
            if typ is None:
                problems.append(f"health thresholds: unknown instance type {t.provider}/{t.instance_type}")
            elif typ.accelerator_count != t.gpus:
                problems.append(
                    f"health thresholds {t.provider}/{t.instance_type}: {t.gpus} GPUs, the instance type has "
                    f"{typ.accelerator_count}"
                )
        cited(cat.health.rules, "health rules")
        if cat.health.repair is not None:
            for r in cat.health.repair.actions:
                cited(r, f"health repair {r.kind} {r.code}")
            cited(cat.health.repair.limits, "health repair limits")
    if cat.monitoring is not None:
        for key, rec in cat.monitoring.records().items():
            cited(rec, f"monitoring {key}")
    if cat.sizing is not None:
        for sid in sorted(cat.sizing.source_ids() - set(cat.sources)):
            problems.append(f"sizing: unknown source id {sid!r}")
        for peak in cat.sizing.fp8:
            if peak.accelerator not in cat.accelerators:
                problems.append(f"sizing fp8: unknown accelerator {peak.accelerator!r}")
        runs = {r.id: r for r in cat.sizing.published_runs}
        if len(runs) != len(cat.sizing.published_runs):
            problems.append("sizing published_runs: duplicate ids")
        for prior in cat.sizing.utilisation:
            for acc_id in prior.accelerators:
                if acc_id not in cat.accelerators:
                    problems.append(f"sizing utilisation: unknown accelerator {acc_id!r}")
            for run_id in prior.runs:
                run = runs.get(run_id)
                if run is None or run.role != "calibration" or run.accelerator not in prior.accelerators:
                    problems.append(
                        f"sizing utilisation {'/'.join(prior.accelerators) or 'default'}: {run_id!r} is not a "
                        "calibration run of its accelerators"
                    )
        for run in cat.sizing.published_runs:
            if run.accelerator not in cat.accelerators:
                problems.append(f"sizing published run {run.id}: unknown accelerator {run.accelerator!r}")
            stand_in = cat.instance_types.get((run.provider, run.instance_type))
            if stand_in is None or stand_in.accelerator != run.accelerator or run.gpus % stand_in.accelerator_count:
                problems.append(
                    f"sizing published run {run.id}: {run.provider}/{run.instance_type} is not a {run.accelerator} "
                    f"type whose nodes hold its {run.gpus} GPUs"
                )
        if {o.optimizer for o in cat.sizing.optimizers} != {"adam", "adamw", "sgd"}:
            problems.append("sizing: optimizers must cover adam, adamw and sgd")
    problems.extend(collective_problems(cat.collectives, cat.instance_types, cat.accelerators, cat.sources))
    if problems:
        raise CatalogError("catalog data is inconsistent:\n  " + "\n  ".join(problems))


def _nccl_covered(cat: Catalog, prof: NcclProfile) -> list[str]:
    """GPU instance types of the catalog a profile covers."""
    return sorted(
        name
        for (prov, name), it in cat.instance_types.items()
        if prof.covers(prov, it.network.fabric, name)
        and (acc := cat.accelerator_of(it)) is not None
        and acc.kind == "gpu"
    )


def _check_nccl(cat: Catalog, problems: list[str]) -> None:
    """Every NCCL figure cited; profiles name real instance types; exactly one profile per GPU type at the default
    versions; every covered type says what bus bandwidth to expect (or that no source publishes one)."""
    data = cat.nccl

    def cited(sid: str, what: str) -> None:
        if sid not in cat.sources:
            problems.append(f"nccl {what}: unknown source id {sid!r}")

    ids = [p.id for p in data.profiles]
    for pid in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"nccl: duplicate profile id {pid!r}")
    for prof in data.profiles:
        what = f"profile {prof.id}"
        for sid in {prof.source, *prof.field_sources.values()}:
            cited(sid, what)
        if prof.script is not None:
            cited(prof.script.source, f"{what} script")
        for s in prof.settings:
            for sid in {s.source, *s.field_sources.values()}:
                cited(sid, f"{what} {s.name}")
        for name in prof.instance_types:
            it = cat.instance_type(prof.provider, name)
            if it is None or it.network.fabric != prof.fabric:
                problems.append(
                    f"nccl {what}: {prof.provider}/{name} is not an instance type with the {prof.fabric} fabric"
                )
        if not _nccl_covered(cat, prof):
            problems.append(f"nccl {what}: covers no GPU instance type")
    if data.mnnvl is not None:
        for sid in {data.mnnvl.source, *data.mnnvl.field_sources.values()}:
            cited(sid, "mnnvl")
        for s in data.mnnvl.settings:
            for sid in {s.source, *s.field_sources.values()}:
                cited(sid, f"mnnvl {s.name}")
    for rec in data.default_versions:
        cited(rec.source, f"default versions {rec.provider}/{rec.fabric}")
    for names in data.guest_nic_names:
        cited(names.source, f"guest NIC names {names.instance_type}")
        if cat.instance_type(names.provider, names.instance_type) is None:
            problems.append(f"nccl guest NIC names: unknown instance type {names.provider}/{names.instance_type}")
    for bw in data.busbw:
        cited(bw.source, f"busbw {bw.instance_type}")
        if cat.instance_type(bw.provider, bw.instance_type) is None:
            problems.append(f"nccl busbw: unknown instance type {bw.provider}/{bw.instance_type}")
        for pid in bw.profiles:
            if pid not in ids:
                problems.append(f"nccl busbw {bw.instance_type}: unknown profile {pid!r}")
    for (prov, name), it in sorted(cat.instance_types.items()):
        candidates = [p for p in data.profiles if p.covers(prov, it.network.fabric, name)]
        acc = cat.accelerator_of(it)
        if not candidates or acc is None or acc.kind != "gpu":
            continue
        defaults = next(
            (d.versions for d in data.default_versions if (d.provider, d.fabric) == (prov, it.network.fabric)), {}
        )
        chosen = [
            p.id
            for p in candidates
            if all(lib in defaults and version_in_range(defaults[lib], r) for lib, r in p.requires.items())
        ]
        if len(chosen) != 1:
            problems.append(f"nccl: {prov}/{name} at the default versions {defaults} matches profiles {chosen}")
        if not any((b.provider, b.instance_type) == (prov, name) for b in data.busbw):
            problems.append(f"nccl: {prov}/{name} has no busbw record (give a figure or say none is published)")


def _unique(items: Iterable[tuple[Any, T]], what: str) -> dict[Any, T]:
    out: dict[Any, T] = {}
    for key, rec in items:
        if key in out:
            raise CatalogError(f"duplicate {what} {key!r}")
        out[key] = rec
    return out


@functools.cache
def load_catalog(data_dir: Path = DATA_DIR) -> Catalog:
    """Load and cross-check the catalog (cached per directory in the process, and per content on disk).

    The on-disk cache (:mod:`aicluster.catalog.cache`) is keyed by a hash of every data file and of this
    package's source; a missing, stale or unusable cache just means the files are parsed again."""
    key = None
    if _cache.cache_dir() is not None:
        try:
            key = _cache.catalog_key(data_dir)
        except OSError:
            key = None
    if key is not None and (cached := _cache.read(key, Catalog)) is not None:
        return cached
    cat = _load(data_dir)
    if key is not None:
        _cache.write(key, cat)
    return cat


def _load(data_dir: Path) -> Catalog:
    """Parse, validate and cross-check the catalog's data files."""
    sources = _unique(((s.id, s) for s in _load_dir(Source, data_dir / "sources")), "source")
    accelerators = _unique(
        ((a.id, a) for a in _records(Accelerator, _read(data_dir / "accelerators.yaml") or [], data_dir)),
        "accelerator",
    )
    instance_types = _unique(
        (((it.provider, it.name), it) for it in _load_dir(InstanceType, data_dir / "instance_types")),
        "instance type",
    )
    tpu_path = data_dir / "tpu_types.yaml"
    tpu_types = _unique(
        ((t.name, t) for t in _records(TpuType, (_read(tpu_path) if tpu_path.exists() else None) or [], tpu_path)),
        "tpu type",
    )
    regions = _unique((((r.provider, r.name), r) for r in _load_dir(Region, data_dir / "regions")), "region")
    storage = tuple(_load_dir(StorageTier, data_dir / "storage"))
    images = _unique((((i.provider, i.id), i) for i in _load_dir(Image, data_dir / "images")), "image")
    services = _unique(
        (((v.provider, v.service), v) for v in _load_dir(ServicePrice, data_dir / "services")), "service price"
    )
    try:
        constants = Constants.model_validate(_read(data_dir / "constants.yaml"))
    except ValidationError as exc:
        raise CatalogError(f"{data_dir / 'constants.yaml'}: {exc}") from exc
    nccl_path = data_dir / "nccl.yaml"
    try:
        nccl = NcclData.model_validate(
            _read(nccl_path)
            if nccl_path.exists()
            else {"default_versions": [], "guest_nic_names": [], "profiles": [], "busbw": []}
        )
    except ValidationError as exc:
        raise CatalogError(f"{nccl_path}: {exc}") from exc
    switches_path = data_dir / "switches.yaml"
    switches = _unique(
        (
            (sw.id, sw)
            for sw in _records(Switch, (_read(switches_path) if switches_path.exists() else None) or [], switches_path)
        ),
        "switch",
    )
    k8s_path = data_dir / "kubernetes.yaml"
    try:
        k8s = KubernetesData.model_validate((_read(k8s_path) if k8s_path.exists() else None) or {})
    except ValidationError as exc:
        raise CatalogError(f"{k8s_path}: {exc}") from exc
    rel_path = data_dir / "reliability.yaml"
    try:
        reliability = ReliabilityData.model_validate(_read(rel_path)) if rel_path.exists() else None
    except ValidationError as exc:
        raise CatalogError(f"{rel_path}: {exc}") from exc
    mon_path = data_dir / "monitoring.yaml"
    try:
        monitoring = MonitoringData.model_validate(_read(mon_path)) if mon_path.exists() else None
    except ValidationError as exc:
        raise CatalogError(f"{mon_path}: {exc}") from exc
    sizing_path = data_dir / "sizing.yaml"
    try:
        sizing = SizingPriors.model_validate(_read(sizing_path)) if sizing_path.exists() else None
    except ValidationError as exc:
        raise CatalogError(f"{sizing_path}: {exc}") from exc
    coll_path = data_dir / "collectives.yaml"
    try:
        collectives = CollectivesData.model_validate((_read(coll_path) if coll_path.exists() else None) or {})
    except ValidationError as exc:
        raise CatalogError(f"{coll_path}: {exc}") from exc
    health_path = data_dir / "health.yaml"
    try:
        health = HealthData.model_validate(_read(health_path)) if health_path.exists() else None
    except ValidationError as exc:
        raise CatalogError(f"{health_path}: {exc}") from exc
    policies_path = data_dir / "update_policies.yaml"
    cat = Catalog(
        sources,
        accelerators,
        instance_types,
        tpu_types,
        regions,
        storage,
        images,
        services,
        constants,
        nccl=nccl,
        switches=switches,
        kubernetes=_unique(((k.provider, k) for k in k8s.services), "kubernetes service"),
        addons=_unique(((a.id, a) for a in k8s.addons), "kubernetes add-on"),
        reliability=reliability,
        monitoring=monitoring,
        sizing=sizing,
        collectives=collectives,
        change_rules=_unique(((r.type, r) for r in _load_dir(ChangeRule, data_dir / "changes")), "change rule"),
        update_policies=tuple(
            _records(UpdatePolicy, _read(policies_path) if policies_path.exists() else [], policies_path)
        ),
        health=health,
    )
    _check(cat)
    return cat
