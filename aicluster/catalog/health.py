"""Typed records of data/health.yaml: the XID catalog (what each XID means and the immediate action NVIDIA's XID
catalog gives it), the node health thresholds per instance type (GPUs, InfiniBand ports and their rate), and the
check rules with a published basis (row remapping, ECC, NVLink). aicluster/render/health.py turns them into the
configuration of the node-side checker (aicluster/health).

This module imports nothing of the project (layering rule: the catalog is a leaf).
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from .models import Sourced, _Record

# NVIDIA XID catalog "Resolution Bucket (Immediate Action)" values, as its two implementations spell them, plus
# FOLLOW_LINKED for XID 154 (its action is the one of the XID it reports a change for).
XidAction = Literal[
    "IGNORE",
    "RESTART_APP",
    "WORKFLOW_XID_45",
    "WORKFLOW_XID_48",
    "WORKFLOW_NVLINK_ERR",
    "WORKFLOW_NVLINK5_ERR",
    "RESET_GPU",
    "RESTART_BM",
    "RESTART_VM",
    "CHECK_MECHANICALS",
    "CONTACT_SUPPORT",
    "FOLLOW_LINKED",
]
# The buckets whose fault is the application's (or nothing): the node stays in service.
NO_DRAIN_ACTIONS: frozenset[str] = frozenset({"IGNORE", "RESTART_APP", "WORKFLOW_XID_45", "FOLLOW_LINKED"})
# Tools whose XID lists say "this node is unhealthy" (used where the catalog gives no action).
XidList = Literal["aznhc", "dcgm-fail", "dcgm-warn", "eks-fatal", "gke-critical"]


class Xid(Sourced):
    xid: Annotated[int, Field(ge=1, le=9999, description="The XID number (e.g. `79`).")]
    name: Annotated[
        str | None, Field(description="What it means (e.g. `GPU has fallen off the bus`); null: not recorded.")
    ]
    action: Annotated[
        XidAction | None,
        Field(description="NVIDIA's immediate-action bucket (e.g. `RESTART_BM`); null: no source read gives it."),
    ]
    listed_by: Annotated[
        tuple[XidList, ...], Field(description="Health tools that treat it as a node fault (e.g. `[aznhc]`).")
    ] = ()
    note: Annotated[str | None, Field(description="Anything the action alone does not say.")] = None

    @property
    def drains(self) -> bool:
        """Whether an occurrence drains the node: a bucket other than the application's; with no bucket recorded,
        when a health tool lists it as fatal (AzNHC, DCGM FAIL, EKS fatal, GKE critical)."""
        if self.action is not None:
            return self.action not in NO_DRAIN_ACTIONS
        return any(t != "dcgm-warn" for t in self.listed_by)

    @property
    def label(self) -> str:
        return self.name or f"XID {self.xid}"


class NodeThresholds(Sourced):
    """What a healthy node of one instance type shows (AzNHC's per-SKU conf files)."""

    provider: Annotated[str, Field(description="Catalog provider (e.g. `azure`).")]
    instance_type: Annotated[str, Field(description="Instance type (e.g. `Standard_ND96isr_H100_v5`).")]
    gpus: Annotated[int, Field(ge=1, description="GPUs nvidia-smi must list.")]
    ib_device_prefix: Annotated[str, Field(description="RDMA device names checked (e.g. `mlx5_ib`).")]
    ib_ports: Annotated[int, Field(ge=1, description="InfiniBand ports that must be ACTIVE.")]
    ib_rate_gbps: Annotated[float, Field(gt=0, description="Rate each of them must show, Gb/s (e.g. `400`).")]


class HealthRules(Sourced):
    """Fail when a count is above its maximum."""

    row_remap_pending_max: Annotated[int, Field(ge=0, description="GPUs' row-remap pending flag.")]
    row_remap_failure_max: Annotated[int, Field(ge=0, description="GPUs' row-remap failure flag.")]
    ecc_uncorrected_volatile_max: Annotated[int, Field(ge=0, description="Uncorrected volatile ECC errors per GPU.")]
    nvlink_inactive_max: Annotated[int, Field(ge=0, description="Inactive NVLink links per GPU.")]


# What aicluster-repair does with a drained node (aicluster/repair): see data/health.yaml's `repair` section.
RepairAction = Literal["reset_gpu", "reboot", "power_cycle", "replace", "hold"]


class RepairRule(Sourced):
    code: Annotated[
        str,
        Field(pattern=r"^[A-Z][A-Z0-9_]{0,31}$",
              description="An XID bucket (e.g. `RESTART_BM`) or a drain reason code (e.g. `GPU_COUNT`)."),
    ]  # fmt: skip
    kind: Annotated[Literal["bucket", "check"], Field(description="`bucket`: an XID action; `check`: a reason code.")]
    action: Annotated[RepairAction, Field(description="What the repair program does (e.g. `power_cycle`).")]
    note: Annotated[str | None, Field(description="Why, where the action alone does not say.")] = None


class RepairLimits(Sourced):
    max_share_in_repair: Annotated[
        float, Field(gt=0, le=1, description="Circuit breaker: the most of the cluster's nodes in repair at once.")
    ]
    repeat_count: Annotated[
        int, Field(ge=1, description="Repeat offender: this many repairs within the window hold the node.")
    ]
    repeat_window_s: Annotated[float, Field(gt=0, description="The repeat-offender window, seconds (7 days).")]
    repair_timeout_s: Annotated[
        float, Field(gt=0, description="A repair not finished after this long holds the node, seconds.")
    ]


class RepairData(_Record):
    actions: tuple[RepairRule, ...]
    limits: RepairLimits

    @model_validator(mode="after")
    def _unique(self) -> RepairData:
        keys = [(r.kind, r.code) for r in self.actions]
        if len(keys) != len(set(keys)):
            raise ValueError("health repair actions: a code appears twice")
        buckets = set(get_args(XidAction))
        bad = [r.code for r in self.actions if r.kind == "bucket" and r.code not in buckets]
        if bad:
            raise ValueError(f"health repair actions: {bad} are not XID buckets ({sorted(buckets)})")
        return self


class HealthData(_Record):
    xids: tuple[Xid, ...]
    thresholds: tuple[NodeThresholds, ...]
    rules: HealthRules
    repair: RepairData | None = None

    @model_validator(mode="after")
    def _unique(self) -> HealthData:
        seen = [x.xid for x in self.xids]
        if len(seen) != len(set(seen)):
            raise ValueError(f"health xids: duplicate XIDs {sorted({x for x in seen if seen.count(x) > 1})}")
        keys = [(t.provider, t.instance_type) for t in self.thresholds]
        if len(keys) != len(set(keys)):
            raise ValueError("health thresholds: an instance type appears twice")
        return self

    def thresholds_for(self, provider: str, instance_type: str) -> NodeThresholds | None:
        return next((t for t in self.thresholds if (t.provider, t.instance_type) == (provider, instance_type)), None)

    def repair_actions(self) -> dict[str, RepairAction]:
        """Drain reason code -> repair action: every XID whose bucket has a rule (`XID79` -> `power_cycle`), and the
        checks' codes. A code missing here is held by the repair program."""
        if self.repair is None:
            return {}
        buckets = {r.code: r.action for r in self.repair.actions if r.kind == "bucket"}
        out: dict[str, RepairAction] = {
            f"XID{x.xid}": buckets[x.action] for x in self.xids if x.action is not None and x.action in buckets
        }
        out.update({r.code: r.action for r in self.repair.actions if r.kind == "check"})
        return out
