"""GCP pools (GPU VMs and Cloud TPU slices) in the stack file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import (
    Field,
    model_validator,
)

from .base import (
    Count,
    DnsLabel,
    GcpMarket,
    InstanceType,
    PoolRollout,
    Problem,
    Rollout,
    Strict,
    _pattern,
    _Problems,
)

_GCP_NAME = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
GCP_RESERVATION_RE = rf"^(projects/{_GCP_NAME}/reservations/)?{_GCP_NAME}(/reservationBlocks/{_GCP_NAME})?$"
TPU_TYPE_RE = r"^(v5litepod|v5p|v6e)-[1-9][0-9]*$"
GCP_REGION_RE = r"^[a-z]+-[a-z]+[0-9]+$"
GCP_ZONE_RE = r"^[a-z]+-[a-z]+[0-9]+-[a-z]$"
# GCP label keys and values: at most 63 characters of lowercase letters, digits, `_` and `-`; keys start
# with a letter (gcp-labels). Tags are mapped onto labels by `gcp_label`.
GCP_LABEL_MAX = 63


def gcp_label(text: str, *, key: bool = False) -> str:
    """A tag key or value as a GCP label: lowercase, other characters become `_`, at most 63 characters;
    a key that does not start with a letter gets a `t` in front."""
    out = re.sub(r"[^a-z0-9_-]", "_", text.lower())
    if key and not out[:1].isalpha():
        out = "t" + out
    return out[:GCP_LABEL_MAX]


def gcp_labels(tags: Mapping[str, str]) -> dict[str, str]:
    return {gcp_label(k, key=True): gcp_label(v) for k, v in tags.items()}


class GcpPool(Strict):
    """A GCP pool in one zone: GPU VMs (`instance_type` + `nodes`: managed instance groups with their GPU
    networks) or Cloud TPU slices (`tpu` + `slices`)."""

    name: Annotated[DnsLabel, Field(description="Pool name, unique in the cluster (e.g. `h100`).")]
    provider: Annotated[Literal["gcp"], Field(description="Cloud or site that runs the pool.")]
    region: Annotated[str, Field(pattern=r"^[a-z]+-[a-z]+[0-9]+$", description="GCP region (e.g. `us-central1`).")]
    zone: Annotated[
        str | None,
        Field(
            pattern=GCP_ZONE_RE,
            description="Zone (e.g. `us-central1-a`). Required with `reservation` (reservations are zonal). "
            "Default: the first zone the catalog lists for the type, with a warning.",
        ),
    ] = None
    instance_type: Annotated[
        InstanceType | None,
        Field(description="GPU machine type (e.g. `a3-megagpu-8g`). Not with `tpu`."),
    ] = None
    nodes: Annotated[
        Count | None,
        Field(ge=1, le=100_000, description="Number of VMs (e.g. `32`); with `instance_type`."),
    ] = None
    rollout: PoolRollout = Rollout()
    tpu: Annotated[
        str | None,
        Field(
            pattern=TPU_TYPE_RE,
            description="Cloud TPU accelerator type of each slice (e.g. `v5p-256`, `v5litepod-16`, `v6e-64`); "
            "v5p names count TensorCores (2 per chip), v5e and v6e count chips. Not with `instance_type`.",
        ),
    ] = None
    slices: Annotated[
        Count | None,
        Field(ge=1, le=1_000, description="Number of TPU slices (e.g. `2` for Multislice); with `tpu`. Default 1."),
    ] = None
    runtime_version: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^[a-z0-9][a-z0-9.-]*$",
                "must be a TPU software version: lowercase letters, digits, '.' and '-' (e.g. v2-alpha-tpuv5)",
            ),
            description="TPU software version (e.g. `v2-alpha-tpuv5`). Default: the catalog's for the generation.",
        ),
    ] = None
    market: Annotated[
        GcpMarket,
        Field(
            description="How capacity is bought: `on-demand`, `spot`, `reserved` (consume a reservation at your "
            "committed-use rate: the named `reservation`, else any matching one) or `flex-start` (Dynamic "
            "Workload Scheduler: GPU VMs start together once capacity is found, for at most `max_run_hours`)."
        ),
    ] = "on-demand"
    reservation: Annotated[
        str | None,
        Field(
            pattern=GCP_RESERVATION_RE,
            description="Reservation to consume (GPU pools): a name, `projects/<project>/reservations/<name>` for a "
            "shared one, and optionally `/reservationBlocks/<block>` to pin one block.",
        ),
    ] = None
    max_run_hours: Annotated[
        Count | None,
        Field(ge=1, le=168, description="flex-start only: hours the VMs may run before GCP deletes them (<= 7 days)."),
    ] = None
    compact_placement: Annotated[
        bool,
        Field(
            description="Pack GPU VMs with a compact placement policy where the machine type allows one (default true)."
        ),
    ] = True
    image: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^([a-z0-9][a-z0-9-]*|projects/[a-z][-a-z0-9]*/global/images/(family/)?[a-z][-a-z0-9]*)$",
                (
                    "must be a catalog image id: lowercase letters, digits and '-' (e.g. "
                    "ubuntu-accelerator-2204-nvidia-580), or projects/<project>/global/images/<name> or "
                    ".../images/family/<family>"
                ),
            ),
            description="Catalog image id (e.g. `ubuntu-accelerator-2204-nvidia-580`) or "
            "`projects/<project>/global/images/[family/]<name>`. Default: the catalog's GPU image.",
        ),
    ] = None
    root_volume_gib: Annotated[
        Count, Field(ge=50, le=65_536, description="Boot disk size, GiB (e.g. `500`); GPU pools.")
    ] = 500

    @model_validator(mode="after")
    def _shape_rules(self) -> GcpPool:
        problems: list[Problem] = []

        def bad(field: str, message: str, value: object = None) -> None:
            problems.append(Problem((field,), message, value, value is not None))

        if (self.instance_type is None) == (self.tpu is None):
            bad(
                "instance_type",
                "a GCP pool is either GPU VMs (instance_type + nodes) or TPU slices (tpu + slices): set exactly one "
                "of instance_type and tpu",
            )
        elif self.tpu is not None:
            if self.nodes is not None:
                bad("nodes", "a TPU pool counts slices, not nodes: use slices", self.nodes)
            if self.reservation is not None:
                bad(
                    "reservation",
                    "TPU slices consume the project's TPU reservation with market reserved; drop reservation",
                    self.reservation,
                )
            if self.market == "flex-start":
                bad(
                    "market",
                    "flex-start is for GPU pools here; TPU pools use on-demand, spot or reserved",
                    "flex-start",
                )
        else:
            if self.nodes is None:
                bad("nodes", "required field is missing: number of VMs (e.g. `8`)")
            for field in ("slices", "runtime_version"):
                if getattr(self, field) is not None:
                    bad(field, f"{field} is for TPU pools (tpu: ...); drop it", getattr(self, field))
        if self.reservation is not None and self.market in ("spot", "flex-start"):
            bad(
                "reservation",
                f"{self.market} VMs cannot consume a reservation; drop reservation or use market reserved/on-demand",
                self.reservation,
            )
        if self.reservation is not None and self.zone is None:
            bad("zone", "reservations are zonal: set the zone the reservation is in")
        if self.max_run_hours is not None and self.market != "flex-start":
            bad(
                "max_run_hours",
                f"only flex-start VMs have a run limit (market is {self.market}); drop it",
                self.max_run_hours,
            )
        if self.zone and not self.zone.startswith(self.region + "-"):
            problems.append(
                Problem(
                    ("zone",),
                    f"not a zone of region {self.region}",
                    self.zone,
                    True,
                    f'did you mean "{self.region}-{self.zone[-1]}"?',
                )
            )
        if problems:
            raise _Problems(problems)
        return self

    @property
    def units(self) -> int:
        """Nodes of a GPU pool, slices of a TPU pool."""
        return self.nodes if self.nodes is not None else (self.slices or 1)
