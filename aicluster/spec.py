"""The stack file format: what a user writes under `aicluster:cluster` in `stacks/Pulumi.<stack>.yaml`.

`ClusterSpec` is the only thing a user writes. It is validated once, here, and every problem is
reported at once as a :class:`Problem` naming the file, the field path, the value and the fix.
Rules that need the catalog (instance type exists, zone belongs to region) live in the planner,
which reports them the same way.

This module imports nothing else of the project.
"""

from __future__ import annotations

import datetime
import difflib
import ipaddress
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

# ------------------------------------------------------------------------------------------------
# Problems and errors
# ------------------------------------------------------------------------------------------------

Path = tuple[str | int, ...]


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_:./@-]+")


# The most characters of one value (or key) a message echoes: enough to recognise it, never a screenful.
MAX_SHOWN = 60


def clip(text: str, limit: int = MAX_SHOWN) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_path(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            shown = clip(part)
            key = shown if _PLAIN_KEY.fullmatch(shown) else _quote(shown)  # not match + "$", which lets "0\n" through
            out += ("." if out else "") + key
    return out or "(top level)"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a stack file: where, what was given, and what to do."""

    path: Path
    message: str
    value: Any = None
    has_value: bool = False
    hint: str | None = None

    def render(self, source: str, lines: Mapping[Path, int] | None = None) -> str:
        where = source
        line = _line_for(self.path, lines or {})
        if line is not None:
            where += f":{line}"
        text = f"{where}: {format_path(self.path)}: "
        if self.has_value:
            text += f"got {_show(self.value)}; "
        text += self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


def _quote(text: str) -> str:
    """Double-quoted, with anything unprintable (newlines, control and separator characters) escaped,
    so that one problem always renders as one line."""
    body = "".join(
        c if c.isprintable() and c not in '"\\' else (f"\\{c}" if c in '"\\' else f"\\u{ord(c):04x}") for c in text
    )
    return f'"{body}"'


def _line_for(path: Path, lines: Mapping[Path, int]) -> int | None:
    p = tuple(path)
    while True:
        if p in lines:
            return lines[p]
        if not p:
            return None
        p = p[:-1]


def _show(value: Any) -> str:
    """A value as the user wrote it in YAML, never a Python repr."""
    if isinstance(value, str):
        return _quote(clip(value))
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if value.bit_length() < 128 else f"a number of {value.bit_length()} bits"
    if isinstance(value, float):
        return {math.inf: ".inf", -math.inf: "-.inf"}.get(value, ".nan" if math.isnan(value) else repr(value))
    if isinstance(value, datetime.date):  # a YAML date (2027-12-31) read by a YAML loader
        return value.isoformat()
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, bytes | bytearray):
        return "binary data"
    return f"a value of type {type(value).__name__}"


@dataclass
class SpecError(Exception):
    """The stack file is wrong. Carries every problem found, not just the first."""

    source: str
    problems: list[Problem]
    lines: Mapping[Path, int] = field(default_factory=dict)

    def __str__(self) -> str:
        return "\n".join(p.render(self.source, self.lines) for p in self.problems)


def did_you_mean(value: str, choices: Sequence[str]) -> str | None:
    if not isinstance(value, str) or len(value) > 200:  # a typo is short; difflib is quadratic
        return None
    match = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return f'did you mean "{match[0]}"?' if match else None


# ------------------------------------------------------------------------------------------------
# Field types
# ------------------------------------------------------------------------------------------------

DNS_LABEL_RE = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
_PATTERN_HINTS = {
    DNS_LABEL_RE: (
        "must be a lowercase DNS label: a-z, 0-9 and '-', starting with a letter, not ending with '-' (e.g. h100)"
    ),
}


def _pattern(regex: str, hint: str) -> str:
    """`regex` for a Field, with the words an error shows instead of it: what the value is, and an example."""
    _PATTERN_HINTS[regex] = hint
    return regex


def _cidr(value: str) -> str:
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise PydanticCustomError(
            "cidr",
            "not an IPv4 CIDR block with its host bits clear (e.g. 10.0.0.0/8): {err}",
            {"err": str(exc)},
        ) from None
    if not any(net.subnet_of(block) for block in _RFC1918):
        raise PydanticCustomError(
            "cidr", "must lie inside an RFC 1918 range (10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)", {}
        )
    return str(net)


_RFC1918 = tuple(ipaddress.IPv4Network(b) for b in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
# Mount points that would break the node: the root, what the OS boots and runs from, and the kernel's
# virtual file systems (everything under those too). /home, /shared, /fsx, /data and the like are normal
# mount points for a shared file system (ParallelCluster mounts a shared /home).
# /opt holds the EFA and NCCL plugin installs of the GPU images; /root holds root's SSH keys.
_NODE_DIRS = frozenset({"/", "/tmp", "/var", "/var/lib", "/var/log", "/root", "/opt"})
_NODE_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
)
_MOUNT_RE = re.compile(r"(/[A-Za-z0-9_][A-Za-z0-9._-]{0,254}){1,16}")


def _abs_path(value: str) -> str:
    parts = value.split("/")[1:]
    if (value != "/" and not _MOUNT_RE.fullmatch(value)) or any(p in (".", "..") for p in parts):
        raise PydanticCustomError(
            "mount",
            "must be an absolute path of letters, digits, '.', '_' and '-' without '.', '..', '//', spaces or a "
            "trailing '/' (e.g. /fsx or /home)",
            {},
        )
    tree = next((t for t in _NODE_TREES if value == t or value.startswith(t + "/")), None)
    if tree is not None or value in _NODE_DIRS:
        raise PydanticCustomError(
            "mount",
            "would hide {what} the node needs to run; mount it elsewhere (e.g. /fsx, /shared or /home)",
            {"what": tree or value},
        )
    return value


# Characters every AWS service accepts in tags (EC2, IAM, FSx, Auto Scaling): letters, digits,
# spaces and + - = . _ : / @ (IAM and FSx reject anything else).
_TAG_CHARS = re.compile(r"[\w .:/=+\-@]*")


def _tag_text(value: str) -> str:
    if not _TAG_CHARS.fullmatch(value):  # not match + "$": "$" matches before a trailing newline
        raise PydanticCustomError(
            "tag", "may only use letters, digits, spaces and + - = . _ : / @ (what every AWS service accepts)", {}
        )
    return value


def _tag_key(value: str) -> str:
    if value.lower().startswith("aws:"):
        raise PydanticCustomError("tag", "tag keys starting with 'aws:' are reserved by AWS", {})
    return value


# Free text (a waiver's reason, a resource name): one line of printable characters, never template or shell
# syntax, since values from the stack reach terminals, Ansible variables and provider inputs.
_NOT_DATA = ("{{", "{%", "{#", "$(", "${", "`")


def _plain_text(value: str) -> str:
    if not value.isprintable():
        raise PydanticCustomError(
            "text", "must be one line of printable text (no newlines, tabs or control characters)", {}
        )
    bad = next((t for t in _NOT_DATA if t in value), None)
    if bad is not None:
        raise PydanticCustomError(
            "text",
            "must not contain {bad}: template and shell syntax is refused in plain data; reword it",
            {"bad": bad},
        )
    return value


# Names the clouds give things: instance types (p5.48xlarge, Standard_ND96isr_H100_v5, a3-megagpu-8g),
# regions and zones of any provider, price SKUs (fsx-lustre/PERSISTENT_2/250), placement groups.
INSTANCE_TYPE_RE = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
REGION_RE = r"^[a-z][a-z0-9-]{0,62}[a-z0-9]$"
ZONE_RE = r"^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$"
SKU_RE = r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$"
PLACEMENT_GROUP_RE = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$"
POLICY_NAME_RE = r"^[a-z0-9][a-z0-9-]{0,127}$"
_PATTERN_HINTS[INSTANCE_TYPE_RE] = "must be an instance type name: letters, digits, '.', '_' and '-' (e.g. p5.48xlarge)"
_PATTERN_HINTS[REGION_RE] = (
    "must be a region name: lowercase letters, digits and '-' (e.g. us-east-1, eastus, us-central1)"
)
_PATTERN_HINTS[ZONE_RE] = "must be a zone name: lowercase letters, digits and '-' (e.g. us-east-1a, 1, us-central1-a)"
_PATTERN_HINTS[SKU_RE] = (
    "must be an instance type or storage tier: letters, digits, '.', '_', '/', ':' and '-' "
    "(e.g. p5.48xlarge or fsx-lustre/PERSISTENT_2/250)"
)
_PATTERN_HINTS[PLACEMENT_GROUP_RE] = (
    "must be a placement group name: letters, digits, '.', '_' and '-' (e.g. llm-dev-h100)"
)
_PATTERN_HINTS[POLICY_NAME_RE] = (
    "must be a policy name: lowercase letters, digits and '-' (e.g. aws-ec2-instance-disallow-public-ip; "
    "aicluster policies lists them)"
)

DnsLabel = Annotated[str, Field(pattern=DNS_LABEL_RE, max_length=63)]
InstanceType = Annotated[str, Field(pattern=INSTANCE_TYPE_RE)]
RegionName = Annotated[str, Field(pattern=REGION_RE)]
ZoneName = Annotated[str, Field(pattern=ZONE_RE)]
Cidr = Annotated[str, AfterValidator(_cidr)]
MountPath = Annotated[str, AfterValidator(_abs_path)]
TagKey = Annotated[str, Field(min_length=1, max_length=128), AfterValidator(_tag_key), AfterValidator(_tag_text)]
TagValue = Annotated[str, Field(max_length=256), AfterValidator(_tag_text)]
Count = Annotated[int, Field(strict=True)]  # YAML `true` or `4.0` is not a count

Provider = Literal["aws", "azure", "gcp", "onprem"]
SUPPORTED_PROVIDERS: tuple[str, ...] = ("aws", "azure", "gcp", "onprem")
AwsMarket = Literal["on-demand", "spot", "capacity-block", "reserved"]
Market = Literal["on-demand", "spot", "capacity-block", "reserved", "flex-start"]
AzureMarket = Literal["on-demand", "spot", "reserved"]
GcpMarket = Literal["on-demand", "spot", "reserved", "flex-start"]
Framework = Literal["soc2", "gdpr", "hipaa", "pci-dss", "iso27001"]


class _Problems(ValueError):
    """Raised inside a validator to carry several located problems out of pydantic."""

    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


# ------------------------------------------------------------------------------------------------
# Pools
# ------------------------------------------------------------------------------------------------


class AwsPool(Strict):
    """A fleet of identical AWS accelerator nodes in one Availability Zone."""

    name: Annotated[DnsLabel, Field(description="Pool name, unique in the cluster (e.g. `h100`).")]
    provider: Annotated[Literal["aws"], Field(description="Cloud or site that runs the pool.")]
    region: Annotated[
        str,
        Field(
            pattern=_pattern(
                r"^[a-z]{2}(-gov)?-[a-z]+-\d$",
                (
                    "must be an AWS region name: lowercase, two letters, an area and a digit (e.g. us-east-1, "
                    "us-gov-west-1)"
                ),
            ),
            description="AWS region (e.g. `us-east-1`).",
        ),
    ]
    zone: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$",
                "must be an AWS Availability Zone name: the region and a letter (e.g. us-east-1a)",
            ),
            description="Availability Zone (e.g. `us-east-1a`). Required for EFA instance types: "
            "EFA traffic does not cross zones.",
        ),
    ] = None
    instance_type: Annotated[InstanceType, Field(description="EC2 instance type (e.g. `p5.48xlarge`).")]
    nodes: Annotated[Count, Field(ge=1, le=100_000, description="Number of nodes (e.g. `64`).")]
    market: Annotated[
        AwsMarket,
        Field(
            description="How capacity is bought: `on-demand`, `spot`, `capacity-block` (EC2 Capacity "
            "Blocks for ML; needs `reservation`) or `reserved` (On-Demand Capacity Reservation or "
            "savings commitment)."
        ),
    ] = "on-demand"
    reservation: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^cr-[0-9a-f]{8,17}$",
                "must be a Capacity Reservation id: cr- and 8 to 17 lowercase hex digits (e.g. cr-0123abcd)",
            ),
            description="Capacity Reservation or Capacity Block id (e.g. `cr-0123abcd`); "
            "required for `capacity-block`, optional for `reserved`.",
        ),
    ] = None
    placement_group: Annotated[
        str | None,
        Field(
            pattern=PLACEMENT_GROUP_RE,
            description="Existing cluster placement group to launch into (e.g. the one your capacity "
            "reservation was created in). Default: a new cluster placement group, except for "
            "capacity blocks and targeted reservations.",
        ),
    ] = None
    image: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^(ami-[0-9a-f]{8,17}|resolve:ssm:/[A-Za-z0-9_./-]+(:[0-9]+)?|[a-z0-9][a-z0-9-]*)$",
                (
                    "must be a catalog image id (e.g. dlami-base-gpu-ubuntu22), an AMI id: ami- and 8 to 17 hex digits "
                    "(e.g. ami-0123abcd), or an SSM parameter (e.g. resolve:ssm:/aws/service/ami or "
                    "resolve:ssm:/my/ami:3)"
                ),
            ),
            description="Catalog image id (e.g. `dlami-base-gpu-ubuntu22`), an AMI id (`ami-0123abcd...`) or an "
            "SSM parameter (`resolve:ssm:/path`, pinned with `:<version>`). Default: the catalog's GPU image.",
        ),
    ] = None
    root_volume_gib: Annotated[
        Count, Field(ge=50, le=16_384, description="Encrypted gp3 root volume size, GiB (e.g. `500`).")
    ] = 500

    @model_validator(mode="after")
    def _market_rules(self) -> AwsPool:
        problems: list[Problem] = []
        if self.market == "capacity-block" and not self.reservation:
            problems.append(
                Problem(
                    ("reservation",),
                    "market capacity-block needs the id (cr-...) of the Capacity Block you purchased",
                )
            )
        if self.market in ("spot", "on-demand") and self.reservation:
            problems.append(
                Problem(
                    ("reservation",),
                    f"a {self.market} pool cannot target a capacity reservation; drop `reservation` or use market "
                    "reserved (or capacity-block)",
                    self.reservation,
                    True,
                )
            )
        if self.market == "capacity-block" and self.placement_group:
            problems.append(
                Problem(
                    ("placement_group",),
                    "capacity blocks must not be launched into a placement group (launches fail with "
                    "insufficient capacity outside the block); drop `placement_group`",
                    self.placement_group,
                    True,
                )
            )
        if self.zone and not self.zone.startswith(self.region):
            problems.append(
                Problem(
                    ("zone",),
                    f"not a zone of region {self.region}",
                    self.zone,
                    True,
                    f'did you mean "{self.region}{self.zone[-1]}"?',
                )
            )
        if problems:
            raise _Problems(problems)
        return self


def _zone_number(value: Any) -> Any:
    """Azure zones are the logical numbers 1, 2 and 3; YAML reads an unquoted `1` as a number."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class AzurePool(Strict):
    """A fleet of identical Azure ND nodes: one or more VM scale sets that each keep one InfiniBand fabric."""

    name: Annotated[DnsLabel, Field(description="Pool name, unique in the cluster (e.g. `h100`).")]
    provider: Annotated[Literal["azure"], Field(description="Cloud or site that runs the pool.")]
    region: Annotated[
        str,
        Field(
            pattern=_pattern(
                r"^[a-z][a-z0-9]+$",
                "must be an Azure location: lowercase letters and digits, without spaces or '-' (e.g. eastus, westus3)",
            ),
            description="Azure location, lowercase without spaces (e.g. `eastus`).",
        ),
    ]
    zone: Annotated[
        Literal["1", "2", "3"] | None,
        BeforeValidator(_zone_number),
        Field(
            description="Logical availability zone (`1`, `2` or `3`). Default: none (regional), which works in "
            "every region; pin it to the zone your quota or Managed Lustre is in."
        ),
    ] = None
    instance_type: Annotated[InstanceType, Field(description="VM size (e.g. `Standard_ND96isr_H100_v5`).")]
    nodes: Annotated[
        Count,
        Field(
            ge=1,
            le=100_000,
            description="Number of VMs (e.g. `64`). Above 100 the pool becomes several scale sets, each its own "
            "InfiniBand domain.",
        ),
    ]
    market: Annotated[
        AzureMarket,
        Field(
            description="How capacity is bought: `on-demand` (pay as you go), `spot` (evictable) or `reserved` "
            "(Azure Reserved VM Instances: a billing discount Azure applies to matching VMs by itself, so nothing "
            "changes in the deployment; give your reserved rate under pricing.overrides)."
        ),
    ] = "on-demand"
    spot_eviction: Annotated[
        Literal["delete", "deallocate"] | None,
        Field(
            description="What Azure does with an evicted spot VM: `delete` (default; nothing is billed after "
            "eviction) or `deallocate` (keeps its disks, which are billed). Spot pools only."
        ),
    ] = None
    resource_group: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^[-\w.()]{0,89}[-\w()]$",
                (
                    "must be a resource group name: 1 to 90 letters, digits, '_', '-', '.', '(' and ')', not ending in "
                    "'.' (e.g. rg-ml-prod)"
                ),
            ),
            description="Existing resource group to deploy into (e.g. `rg-ml-prod`). Default: the cluster creates "
            "one per region.",
        ),
    ] = None
    image: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^([a-z0-9][a-z0-9-]*|[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+)$",
                (
                    "must be a catalog image id: lowercase letters, digits and '-' (e.g. ubuntu-hpc-2204), or a "
                    "Marketplace URN publisher:offer:sku:version (e.g. microsoft-dsvm:ubuntu-hpc:2204:latest)"
                ),
            ),
            description="Catalog image id (e.g. `ubuntu-hpc-2204`) or a Marketplace URN "
            "`publisher:offer:sku:version`. Default: the catalog's Ubuntu-HPC image.",
        ),
    ] = None
    root_volume_gib: Annotated[
        Count, Field(ge=64, le=4_095, description="Encrypted Premium SSD OS disk size, GiB (e.g. `512`).")
    ] = 512
    ib_domain_max_vms: Annotated[
        Count,
        Field(
            ge=1,
            le=300,
            description="VMs per scale set, i.e. per InfiniBand domain. 100 is what one placement group holds; "
            "Azure support can raise it to 300 for a subscription: set this only once they have.",
        ),
    ] = 100

    @model_validator(mode="after")
    def _market_rules(self) -> AzurePool:
        if self.spot_eviction is not None and self.market != "spot":
            raise _Problems(
                [
                    Problem(
                        ("spot_eviction",),
                        f"only spot VMs are evicted; drop spot_eviction or set market: spot (now {self.market})",
                        self.spot_eviction,
                        True,
                    )
                ]
            )
        return self


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


# ------------------------------------------------------------------------------------------------
# On-prem sites and pools
# ------------------------------------------------------------------------------------------------


def _private_ip(value: str) -> str:
    try:
        addr = ipaddress.IPv4Address(value)
    except ValueError:
        raise PydanticCustomError("ip", "not an IPv4 address (e.g. 10.200.1.11)", {}) from None
    if not any(addr in block for block in _RFC1918):
        raise PydanticCustomError(
            "ip", "must be a private address (10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16) of the site's network", {}
        )
    return str(addr)


def _public_ip(value: str) -> str:
    try:
        addr = ipaddress.IPv4Address(value)
    except ValueError:
        raise PydanticCustomError("ip", "not an IPv4 address (e.g. 203.0.113.10)", {}) from None
    if not (addr.is_global or _documentation(addr)):
        raise PydanticCustomError(
            "ip",
            "must be the public IPv4 address the site's VPN device answers on (the clouds' VPN gateways dial it)",
            {},
        )
    return str(addr)


# RFC 5737 documentation ranges: accepted as endpoints so that examples never name a real address
_DOCUMENTATION = tuple(ipaddress.IPv4Network(b) for b in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))


def _documentation(addr: ipaddress.IPv4Address) -> bool:
    return any(addr in block for block in _DOCUMENTATION)


PrivateIp = Annotated[str, AfterValidator(_private_ip)]
PublicIp = Annotated[str, AfterValidator(_public_ip)]
# BGP: 2-byte and 4-byte ASNs; 0, 23456 (AS_TRANS) and 4294967295 are reserved (RFC 7607, 6793, 7300)
BgpAsn = Annotated[int, Field(strict=True, ge=1, le=4_294_967_294)]
BMC_RE = _pattern(
    r"^(redfish|ipmi)://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]{0,512})?$",
    "must be a BMC endpoint: redfish:// or ipmi://, a host and an optional port and path, and no user or password "
    "(e.g. redfish://10.201.0.11/redfish/v1/Systems/1 or ipmi://10.201.0.11:623)",
)
SECRET_NAME_RE = _pattern(
    r"^[A-Za-z][A-Za-z0-9_.-]{0,127}$",
    "must be the name of a Pulumi secret: a letter, then letters, digits, '_', '.' and '-' (e.g. bmcPassword)",
)
RACK_RE = _pattern(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$", "must be a rack name: letters, digits, '.', '_', '-' (e.g. r01)"
)
_CLEAR_SECRETS = ("password", "passwd", "secret_value", "credential_value", "token")


class Host(Strict):
    """One owned node: its name, management address, BMC and place in the data centre."""

    name: Annotated[DnsLabel, Field(description="Host name, unique in the cluster (e.g. `dgx001`).")]
    address: Annotated[
        PrivateIp, Field(description="Management address, inside the site's CIDRs (e.g. `10.200.1.11`).")
    ]
    bmc: Annotated[
        str | None,
        Field(pattern=BMC_RE, description="BMC endpoint: `redfish://host/redfish/v1/Systems/1` or `ipmi://host:623`."),
    ] = None
    bmc_username: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^[A-Za-z0-9._-]{1,64}$", "must be a BMC user name: letters, digits, '.', '_' and '-' (e.g. admin)"
            ),
            description="BMC user name (not secret).",
        ),
    ] = None
    bmc_secret: Annotated[
        str | None,
        Field(
            pattern=SECRET_NAME_RE,
            description="Name of the Pulumi secret that holds the BMC password (`pulumi config set --secret NAME`); "
            "a password itself is refused.",
        ),
    ] = None
    rack: Annotated[str | None, Field(pattern=RACK_RE, description="Rack the host is in (e.g. `r01`).")] = None
    u: Annotated[Count | None, Field(ge=1, le=60, description="Lowest rack unit the host occupies (e.g. `10`).")] = None

    @model_validator(mode="before")
    @classmethod
    def _no_clear_password(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            clear = [k for k in data if isinstance(k, str) and any(w in k.lower() for w in _CLEAR_SECRETS)]
            if clear:
                raise _Problems(
                    [
                        Problem(
                            (k,),
                            "a BMC password in clear text is refused (stack files are read, copied and committed): "
                            "store it as a Pulumi secret (pulumi config set --secret bmcPassword) and give its name "
                            "in bmc_secret",
                        )
                        for k in clear
                    ]
                )
        return data

    @model_validator(mode="after")
    def _bmc_pair(self) -> Host:
        if self.bmc_secret is not None and self.bmc is None:
            raise _Problems([Problem(("bmc",), "bmc_secret is given, so give the BMC endpoint it opens too")])
        return self


class OnpremFabric(Strict):
    """The compute fabric of owned nodes: a rail-optimised fat-tree the planner sizes."""

    kind: Annotated[Literal["infiniband", "roce"], Field(description="`infiniband` or `roce` (RDMA over Ethernet).")]
    link_gbps: Annotated[
        Literal[100, 200, 400, 800], Field(description="Link speed per NIC and switch port, Gb/s (e.g. `400`: NDR).")
    ] = 400
    switch_radix: Annotated[
        Count, Field(ge=8, le=512, description="Ports per switch at the link speed (e.g. `64`: Quantum-2 QM9700).")
    ] = 64
    switch: Annotated[
        str | None,
        Field(
            pattern=_pattern(r"^[a-z0-9][a-z0-9-]{0,62}$", "must be a catalog switch id (e.g. qm9700)"),
            description="Catalog switch id (e.g. `qm9700`). Default: the catalog switch of this kind, link speed "
            "and radix.",
        ),
    ] = None
    planes: Annotated[
        Literal["shared", "per-rail"],
        Field(
            description="`shared`: one fabric whose spines join every rail (DGX SuperPOD H100/B200); `per-rail`: a "
            "separate fat-tree per rail (more reach; NIC r reaches only NIC r of other nodes)."
        ),
    ] = "shared"
    reserved_ports: Annotated[
        Count, Field(ge=0, le=10_000, description="Leaf ports kept for other devices (UFM appliances, storage).")
    ] = 0
    rails: Annotated[
        Count | None, Field(ge=1, le=16, description="Rails (compute NICs per node). Default: the node shape's.")
    ] = None
    oversubscription: Annotated[
        float,
        Field(
            ge=1,
            le=16,
            allow_inf_nan=False,
            description="Wanted leaf oversubscription, down:up (`1`: non-blocking; `2`: 2:1).",
        ),
    ] = 1.0


class SiteNetwork(Strict):
    cidrs: Annotated[
        list[Cidr],
        Field(min_length=1, max_length=64, description="The site's private ranges (e.g. `[10.200.0.0/16]`)."),
    ]
    vpn_endpoint: Annotated[
        PublicIp, Field(description="Public IPv4 address of the site's VPN device (e.g. `203.0.113.10`).")
    ]
    bgp_asn: Annotated[BgpAsn, Field(description="The site router's BGP ASN (e.g. `65010`).")]


class SitePower(Strict):
    pue: Annotated[
        float, Field(ge=1.0, le=3.0, allow_inf_nan=False, description="Power usage effectiveness (e.g. `1.3`).")
    ]
    usd_per_kwh: Annotated[
        float, Field(ge=0, le=10, allow_inf_nan=False, description="Energy price, USD per kWh (e.g. `0.09`).")
    ]
    rack_kw: Annotated[
        float, Field(gt=0, le=1000, allow_inf_nan=False, description="Power a rack can deliver, kW (e.g. `41`).")
    ]
    max_kw: Annotated[
        float,
        Field(
            gt=0, le=10_000_000, allow_inf_nan=False, description="The site's ceiling for IT load, kW (e.g. `2000`)."
        ),
    ]


class HardwareCost(Strict):
    """How owned nodes are costed: a purchase amortised over years, or a rate per node-hour."""

    purchase_usd_per_node: Annotated[
        float | None, Field(gt=0, le=100_000_000, allow_inf_nan=False, description="Price paid per node, USD.")
    ] = None
    amortization_years: Annotated[
        float | None, Field(gt=0, le=30, allow_inf_nan=False, description="Years the purchase is spread over.")
    ] = None
    usd_per_node_hour: Annotated[
        float | None,
        Field(gt=0, le=100_000, allow_inf_nan=False, description="Internal rate per node-hour, USD (instead)."),
    ] = None

    @model_validator(mode="after")
    def _one_basis(self) -> HardwareCost:
        purchase = (self.purchase_usd_per_node is not None, self.amortization_years is not None)
        if self.usd_per_node_hour is not None and any(purchase):
            raise _Problems(
                [
                    Problem(
                        ("usd_per_node_hour",), "give a purchase price with years of amortisation, or a rate: not both"
                    )
                ]
            )
        if self.usd_per_node_hour is None and not all(purchase):
            missing = "amortization_years" if purchase[0] else "purchase_usd_per_node"
            raise _Problems(
                [Problem((missing,), "give purchase_usd_per_node with amortization_years, or usd_per_node_hour")]
            )
        return self


class Site(Strict):
    """An owned data centre: its network, power, carbon and how its hardware is costed."""

    name: Annotated[DnsLabel, Field(description="Site name, unique in the cluster (e.g. `fra1`).")]
    network: Annotated[SiteNetwork, Field(description="CIDRs, VPN endpoint and BGP ASN.")]
    power: Annotated[SitePower, Field(description="PUE, energy price, rack power and the site's ceiling.")]
    carbon_g_per_kwh: Annotated[
        float,
        Field(ge=0, le=2000, allow_inf_nan=False, description="Grid carbon intensity, gCO2e/kWh (e.g. `350`)."),
    ]
    hardware_cost: Annotated[
        HardwareCost | None, Field(description="Amortised purchase or a node-hour rate. Default: unpriced.")
    ] = None
    fabric: Annotated[
        OnpremFabric | None, Field(description="The site's compute fabric, for pools that do not give their own.")
    ] = None


class OnpremPool(Strict):
    """Owned nodes at a site: a node shape from the catalog, a count, and optionally the hosts themselves."""

    name: Annotated[DnsLabel, Field(description="Pool name, unique in the cluster (e.g. `h100`).")]
    provider: Annotated[Literal["onprem"], Field(description="Cloud or site that runs the pool.")]
    site: Annotated[DnsLabel, Field(description="Name of the site under `sites:` (e.g. `fra1`).")]
    instance_type: Annotated[
        InstanceType,
        Field(description="Node shape from the catalog (e.g. `dgx-h100`; `aicluster catalog` lists them)."),
    ]
    nodes: Annotated[
        Count | None, Field(ge=1, le=100_000, description="Number of nodes. Default: the number of hosts.")
    ] = None
    hosts: Annotated[list[Host], Field(max_length=100_000, description="The nodes themselves (optional).")] = []
    fabric: Annotated[OnpremFabric | None, Field(description="The pool's own fabric. Default: the site's.")] = None

    @model_validator(mode="after")
    def _count(self) -> OnpremPool:
        if self.nodes is None and not self.hosts:
            raise _Problems([Problem(("nodes",), "give nodes (a count) or list the hosts")])
        if self.nodes is not None and self.hosts and self.nodes != len(self.hosts):
            raise _Problems(
                [
                    Problem(
                        ("nodes",),
                        f"{len(self.hosts)} hosts are listed: drop nodes, or list every host",
                        self.nodes,
                        True,
                    )
                ]
            )
        return self

    @property
    def node_count(self) -> int:
        return self.nodes if self.nodes is not None else len(self.hosts)

    @property
    def market(self) -> Literal["owned"]:
        """Owned hardware: bought, not rented."""
        return "owned"

    @property
    def region(self) -> str:
        """Where the pool runs, in the place every pool names it: its site."""
        return self.site

    @property
    def zone(self) -> None:
        return None


def pool_fabric(pool: OnpremPool, site: Site) -> tuple[str, OnpremFabric]:
    """The fabric that joins an on-prem pool's nodes: its own (named <site>-<pool>), else its site's (named after
    the site, shared by every pool of the site that gives none). The spec guarantees one of the two."""
    if pool.fabric is not None:
        return f"{site.name}-{pool.name}", pool.fabric
    assert site.fabric is not None
    return site.name, site.fabric


Pool = Annotated[AwsPool | AzurePool | GcpPool | OnpremPool, Field(discriminator="provider")]


# ------------------------------------------------------------------------------------------------
# Storage
# ------------------------------------------------------------------------------------------------


class _Storage(Strict):
    name: Annotated[DnsLabel, Field(description="File system name, unique in the cluster (e.g. `scratch`).")]
    provider: Annotated[
        Provider | None, Field(description="Where it lives. Default: the provider of the first pool.")
    ] = None
    region: Annotated[
        RegionName | None, Field(description="Region. Default: the region of the first pool of that provider.")
    ] = None
    zone: Annotated[
        ZoneName | None,
        BeforeValidator(_zone_number),
        Field(description="Zone. Default: the zone of the first pool of that provider and region."),
    ] = None
    capacity_tib: Annotated[
        float,
        Field(
            gt=0,
            le=100_000,
            allow_inf_nan=False,
            description="Requested capacity, TiB; rounded up to a valid size (FSx's marketing sizes such as "
            "1.2 or 2.4 TiB, which are 1,200 and 2,400 GiB, are taken as meant).",
        ),
    ]
    mount: Annotated[MountPath, Field(description="Mount point on every node (e.g. `/fsx`).")]


class LustreStorage(_Storage):
    """A parallel file system (FSx for Lustre on AWS)."""

    kind: Annotated[Literal["lustre"], Field(description="`lustre`: a parallel file system for data and checkpoints.")]
    throughput_mb_s_per_tib: Annotated[
        Count, Field(gt=0, description="Throughput tier, MB/s per TiB (e.g. `250`; FSx: 125/250/500/1000).")
    ] = 250


class NfsStorage(_Storage):
    """A shared NFS file system for home directories and small data."""

    kind: Annotated[Literal["nfs"], Field(description="`nfs`: a shared file system (EFS on AWS).")]


Storage = Annotated[LustreStorage | NfsStorage, Field(discriminator="kind")]


# ------------------------------------------------------------------------------------------------
# Scheduler, budgets, compliance, pricing, network
# ------------------------------------------------------------------------------------------------


class Controller(Strict):
    instance_type: Annotated[
        InstanceType | None,
        Field(description="Controller instance type (e.g. `m7i.4xlarge`). Default: from the catalog."),
    ] = None
    provider: Annotated[
        Provider | None,
        Field(description="Default: `onprem` when the stack has sites, else the provider of the first pool."),
    ] = None
    region: Annotated[RegionName | None, Field(description="Default: the region of the first pool.")] = None
    site: Annotated[
        DnsLabel | None, Field(description="On-prem: the site slurmctld runs at. Default: the first site.")
    ] = None
    host: Annotated[DnsLabel | None, Field(description="On-prem: the host that runs slurmctld (e.g. `slurm01`).")] = (
        None
    )
    address: Annotated[
        PrivateIp | None, Field(description="On-prem: the host's address, inside the site's CIDRs (e.g. `10.200.0.5`).")
    ] = None


class SlurmScheduler(Strict):
    kind: Annotated[Literal["slurm"], Field(description="`slurm`: a Slurm controller plus the pools as partitions.")]
    controller: Annotated[Controller, Field(description="Where slurmctld runs.")] = Controller()


class KubernetesScheduler(Strict):
    kind: Annotated[Literal["kubernetes"], Field(description="`kubernetes`: a managed control plane (not built yet).")]
    version: Annotated[
        str,
        Field(
            pattern=_pattern(
                r"^1\.\d{2}$",
                "must be a Kubernetes minor version: 1. and two digits (e.g. 1.33)",
            ),
            description="Kubernetes minor version (e.g. `1.33`).",
        ),
    ] = "1.33"


Scheduler = Annotated[SlurmScheduler | KubernetesScheduler, Field(discriminator="kind")]


class Budgets(Strict):
    # Bounds far above any real cluster (a trillion dollars a month, 10 GW, 1 MW racks) that keep sums and
    # divisions finite and the figures printable.
    monthly_usd: Annotated[
        float | None,
        Field(gt=0, le=10**12, allow_inf_nan=False, description="Monthly spend ceiling, USD (730 h months)."),
    ] = None
    power_kw: Annotated[
        float | None,
        Field(gt=0, le=10**7, allow_inf_nan=False, description="Facility power ceiling, kW (IT power x PUE)."),
    ] = None
    rack_kw: Annotated[
        float | None,
        Field(gt=0, le=1_000, allow_inf_nan=False, description="Power per rack, kW; used to count racks (e.g. `40`)."),
    ] = None


DATE_RE = r"^\d{4}-\d{2}-\d{2}$"
_DATE_WORDS = "must be a date (YYYY-MM-DD, e.g. 2027-12-31)"


def _iso_date(value: Any) -> Any:
    """A YAML date (`expires: 2027-12-31`, read as a date by YAML loaders) is the date it names; a number
    (`20271231`) is a date written without its dashes."""
    if isinstance(value, datetime.date):
        return value.isoformat()[:10]
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise PydanticCustomError("date", _DATE_WORDS, {})
    return value


def _calendar_date(value: str) -> str:
    """YYYY-MM-DD that names a day of the calendar (not 2027-13-45 or 2027-02-30)."""
    try:
        datetime.date.fromisoformat(value)
    except ValueError as exc:
        raise PydanticCustomError(
            "date", "not a day of the calendar ({err}); " + _DATE_WORDS, {"err": str(exc)}
        ) from None
    return value


class Waiver(Strict):
    policy: Annotated[
        str, Field(pattern=POLICY_NAME_RE, description="Policy name (e.g. `aws-ec2-instance-disallow-public-ip`).")
    ]
    resource: Annotated[
        str,
        Field(min_length=1, max_length=1024, description="Resource name or URN the waiver covers."),
        AfterValidator(_plain_text),
    ]
    reason: Annotated[
        str,
        Field(min_length=10, max_length=1000, description="Why the finding is accepted."),
        AfterValidator(_plain_text),
    ]
    expires: Annotated[
        str,
        BeforeValidator(_iso_date),
        Field(pattern=_pattern(DATE_RE, _DATE_WORDS), description="Expiry date, YYYY-MM-DD (e.g. `2027-12-31`)."),
        AfterValidator(_calendar_date),
    ]


class Compliance(Strict):
    frameworks: Annotated[list[Framework], Field(description="Control frameworks the cluster is held to.")] = []
    allowed_regions: Annotated[
        list[RegionName],
        Field(description="Regions data may live in (e.g. `[us-east-1]`); empty = any."),
    ] = []
    waivers: Annotated[list[Waiver], Field(description="Accepted policy findings, each with a reason and expiry.")] = []


class PriceOverride(Strict):
    """A negotiated rate that replaces the catalog's list price."""

    sku: Annotated[
        str,
        Field(
            pattern=SKU_RE,
            description=(
                "Instance type (e.g. `p5.48xlarge`), TPU generation (`tpu-v5p`), storage tier (e.g. "
                "`fsx-lustre/PERSISTENT_2/250`) or catalog service (root disks `ebs-gp3`, "
                "`managed-disk-premium-ssd`, `pd-balanced`, `hyperdisk-balanced`; `nat-gateway`; `public-ipv4`)."
            ),
        ),
    ]
    region: Annotated[RegionName | None, Field(description="Only in this region. Default: every region.")] = None
    market: Annotated[Market | None, Field(description="Only for this market. Default: every market.")] = None
    usd_per_hour: Annotated[
        float | None,
        Field(
            gt=0,
            le=100_000,
            allow_inf_nan=False,
            description="Per node-hour (instance types), chip-hour (TPUs) or hour (NAT gateways, public addresses).",
        ),
    ] = None
    usd_per_gib_month: Annotated[
        float | None,
        Field(gt=0, le=1_000, allow_inf_nan=False, description="Per GiB-month, for storage tiers and disks."),
    ] = None

    @model_validator(mode="after")
    def _one_price(self) -> PriceOverride:
        if (self.usd_per_hour is None) == (self.usd_per_gib_month is None):
            raise PydanticCustomError(
                "price",
                "give exactly one of usd_per_hour (instance types, NAT gateways, addresses) or usd_per_gib_month "
                "(storage, disks)",
                {},
            )
        return self


class Pricing(Strict):
    overrides: Annotated[list[PriceOverride], Field(description="Negotiated rates; the most specific match wins.")] = []


_SSH_KEY = r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]{32,16384}={0,2}( [ -~]{0,256})?$"
_PATTERN_HINTS[GCP_REGION_RE] = "must be a GCP region name (e.g. us-central1)"
_PATTERN_HINTS[GCP_ZONE_RE] = "must be a GCP zone name (e.g. us-central1-a)"
_PATTERN_HINTS[TPU_TYPE_RE] = (
    "must be a Cloud TPU accelerator type: v5p-<cores>, v5litepod-<chips> or v6e-<chips> (e.g. v5p-256)"
)
_PATTERN_HINTS[GCP_RESERVATION_RE] = (
    "must be a reservation name, or projects/<project>/reservations/<name>, optionally followed by "
    "/reservationBlocks/<block>"
)
_PATTERN_HINTS[_SSH_KEY] = (
    "must be one OpenSSH public key line (ssh-ed25519 / ssh-rsa / ecdsa-sha2-nistp*, then the base64 key), "
    "as in ~/.ssh/id_ed25519.pub; never the private key"
)


class Access(Strict):
    """How administrators reach the nodes (clouds that need an admin account at VM creation, such as Azure)."""

    admin_username: Annotated[
        str,
        Field(
            pattern=_pattern(
                r"^[a-z_][a-z0-9_-]{0,31}$",
                (
                    "must be a Linux user name: 1 to 32 lowercase letters, digits, '_' and '-', starting with a letter "
                    "or '_' (e.g. aicluster)"
                ),
            ),
            description="Admin account created on Azure VMs (e.g. `aicluster`; Azure rejects `root` and `admin`).",
        ),
    ] = "aicluster"
    ssh_public_keys: Annotated[
        list[Annotated[str, Field(pattern=_SSH_KEY)]],
        Field(description="OpenSSH public keys authorised for the admin account; password login stays off."),
    ] = []

    @model_validator(mode="after")
    def _reserved(self) -> Access:
        if self.admin_username in _RESERVED_ADMIN_NAMES:
            raise _Problems(
                [
                    Problem(
                        ("admin_username",),
                        "reserved by Azure for Linux VMs; use e.g. aicluster",
                        self.admin_username,
                        True,
                    )
                ]
            )
        return self


# Linux admin names Azure refuses at VM creation (a subset that matters in practice).
_RESERVED_ADMIN_NAMES = frozenset(
    {"root", "admin", "administrator", "user", "user1", "test", "test1", "guest", "sys", "support", "azureadmin"}
)


class NetworkSpec(Strict):
    supernet: Annotated[
        Cidr, Field(description="Private range each cloud network's CIDR is carved from (e.g. `10.0.0.0/8`).")
    ] = "10.0.0.0/8"
    exclude: Annotated[
        list[Cidr],
        Field(description="Ranges already in use (on-prem, peered VPCs) that must not be allocated."),
    ] = []
    network_prefix: Annotated[
        Count,
        Field(
            ge=16,
            le=20,
            description="Prefix length of each provider/region network (e.g. `16`; AWS VPCs are /16 at most). "
            "Each zone's compute subnet is 3 bits longer.",
        ),
    ] = 16
    cidrs: Annotated[
        dict[
            Annotated[
                str,
                Field(
                    pattern=_pattern(
                        r"^(aws|azure|gcp|onprem)/[a-z0-9-]+$",
                        (
                            "must be provider/region: aws, azure, gcp or onprem, then '/' and the region in lowercase "
                            "letters, digits and '-' (e.g. aws/us-east-1)"
                        ),
                    )
                ),
            ],
            Cidr,
        ],
        Field(
            description="Pinned network blocks by `provider/region` (e.g. `{aws/us-east-1: 10.20.0.0/16}`). "
            "Unpinned regions take their fixed slot of the supernet."
        ),
    ] = {}


# ------------------------------------------------------------------------------------------------
# The cluster
# ------------------------------------------------------------------------------------------------


_AZURE_TAG_FORBIDDEN = "<>%&\\?/"


def _duplicates(section: str, field: str, values: list[str], why: str) -> list[Problem]:
    first: dict[str, int] = {}
    out = []
    for i, value in enumerate(values):
        if value in first:
            out.append(
                Problem((section, i, field), f"duplicate of {section}[{first[value]}].{field}; {why}", value, True)
            )
        first.setdefault(value, i)
    return out


def _gcp_label_problems(tags: Mapping[str, str]) -> list[Problem]:
    """Tags become GCP labels (lowercase, 63 characters): refuse tags that would collide or be cut."""
    out = []
    seen: dict[str, str] = {}
    for key, value in tags.items():
        label = gcp_label(key, key=True)
        if label in seen:
            out.append(
                Problem(
                    ("tags", key),
                    f"on GCP this tag and {_quote(seen[label])} both become the label {_quote(label)} (labels are "
                    "lowercase, "
                    "with `_` for other characters); rename one",
                    key,
                    True,
                )
            )
        seen.setdefault(label, key)
        for what, text in (("name", key), ("value", value)):
            if len(text) > GCP_LABEL_MAX:
                out.append(
                    Problem(
                        ("tags", key),
                        f"GCP label {what}s are at most {GCP_LABEL_MAX} characters (this one has {len(text)}); "
                        "shorten it",
                        text,
                        True,
                    )
                )
    return out


def _tag_problems(tags: Mapping[str, str], providers: set[Any]) -> list[Problem]:
    problems = _gcp_label_problems(tags) if "gcp" in providers else []
    for key in tags:
        if "azure" in providers and any(c in key for c in _AZURE_TAG_FORBIDDEN):
            problems.append(
                Problem(("tags", key), "Azure tag names cannot contain < > % & \\ ? or /; rename the tag", key, True)
            )
        if key.startswith("aicluster:"):
            problems.append(
                Problem(("tags", key), "the aicluster: prefix is reserved for tags the toolkit sets", key, True)
            )
    return problems


def _site_problems(spec: ClusterSpec) -> list[Problem]:
    """Sites and the on-prem pools and controller that name them: known sites, unique hosts, hosts inside
    their site's CIDRs, and site CIDRs that overlap neither each other nor a pinned cloud network."""
    problems = _duplicates("sites", "name", [site.name for site in spec.sites], "site names must be unique")
    sites = {site.name: site for site in spec.sites}
    names: dict[str, tuple[str | int, ...]] = {}
    addresses: dict[str, tuple[str | int, ...]] = {}

    def host(path: tuple[str | int, ...], name: str, address: str | None, site: str) -> None:
        if name in names:
            problems.append(
                Problem(
                    (*path, "name"),
                    f"{format_path(names[name])} already has this name; host names must be unique",
                    name,
                    True,
                )
            )
        names.setdefault(name, (*path, "name"))
        if address is None:
            return
        if address in addresses:
            problems.append(
                Problem(
                    (*path, "address"),
                    f"{format_path(addresses[address])} already has this address; give each host its own",
                    address,
                    True,
                )
            )
        addresses.setdefault(address, (*path, "address"))
        if site in sites:
            cidrs = sites[site].network.cidrs
            if not any(ipaddress.IPv4Address(address) in ipaddress.IPv4Network(c) for c in cidrs):
                problems.append(
                    Problem(
                        (*path, "address"),
                        f"not inside site {site}'s CIDRs ({', '.join(cidrs)}); use an address of the site's network, "
                        "or add its range to the site's network.cidrs",
                        address,
                        True,
                    )
                )

    for i, pool in enumerate(spec.pools):
        if not isinstance(pool, OnpremPool):
            continue
        if pool.site not in sites:
            known = list(sites)
            problems.append(
                Problem(
                    ("pools", i, "site"),
                    f"no site of this name under sites; known: {', '.join(known)}"
                    if known
                    else "the stack has no sites: describe the data centre under sites (name, network, power, "
                    "carbon_g_per_kwh)",
                    pool.site,
                    True,
                    did_you_mean(pool.site, known),
                )
            )
        elif pool.fabric is None and sites[pool.site].fabric is None:
            problems.append(
                Problem(
                    ("pools", i, "fabric"),
                    f"neither the pool nor site {pool.site} describes the compute fabric: give fabric (kind, "
                    "link_gbps, switch_radix) on the pool or the site",
                )
            )
        for j, h in enumerate(pool.hosts):
            host(("pools", i, "hosts", j), h.name, h.address, pool.site)
    sched = spec.scheduler
    if spec.sites and isinstance(sched, SlurmScheduler):
        c = sched.controller
        base: tuple[str | int, ...] = ("scheduler", "controller")
        if c.provider not in (None, "onprem"):
            problems.append(
                Problem(
                    (*base, "provider"),
                    "a stack with sites runs slurmctld on-prem, with the clouds as burst capacity: drop provider, or "
                    "set it to onprem",
                    c.provider,
                    True,
                )
            )
        site = c.site or spec.sites[0].name
        if c.site is not None and c.site not in sites:
            problems.append(
                Problem(
                    (*base, "site"), "no site of this name under sites", c.site, True, did_you_mean(c.site, list(sites))
                )
            )
        for key in ("host", "address"):
            if getattr(c, key) is None:
                problems.append(
                    Problem(
                        (*base, key),
                        "a stack with sites runs slurmctld on a host of the site: give the controller's host and "
                        "address (e.g. host: slurm01, address: 10.200.0.5)",
                    )
                )
        if c.host is not None:
            host(base, c.host, c.address, site)
    elif isinstance(sched, SlurmScheduler) and sched.controller.provider == "onprem":
        problems.append(
            Problem(
                ("scheduler", "controller", "provider"),
                "an on-prem controller needs a site: describe it under sites",
                "onprem",
                True,
            )
        )
    blocks = [
        (("sites", i, "network", "cidrs", j), c)
        for i, site in enumerate(spec.sites)
        for j, c in enumerate(site.network.cidrs)
    ]
    pinned = [(("network", "cidrs", k), v) for k, v in spec.network.cidrs.items()]
    for n, (path, cidr) in enumerate(blocks):
        net = ipaddress.IPv4Network(cidr)
        for other_path, other in [*blocks[:n], *pinned]:
            if net.overlaps(ipaddress.IPv4Network(other)):
                problems.append(
                    Problem(
                        path,
                        f"overlaps {format_path(other_path)} ({other}); every site and cloud network needs its own "
                        "range, or the VPNs between them cannot route",
                        cidr,
                        True,
                    )
                )
    return problems


class ClusterSpec(Strict):
    """One AI cluster: pools of accelerator nodes, storage, a scheduler, and its guardrails."""

    name: Annotated[
        str,
        Field(
            pattern=DNS_LABEL_RE,
            max_length=40,
            description="Cluster name, a lowercase DNS label (e.g. `llm-train`).",
        ),
    ]
    tags: Annotated[
        dict[TagKey, TagValue],
        Field(description="Tags/labels for every resource (e.g. `{owner: ml-platform, cost-center: '4711'}`)."),
    ] = {}
    sites: Annotated[list[Site], Field(max_length=64, description="Owned data centres that on-prem pools run at.")] = []
    pools: Annotated[list[Pool], Field(min_length=1, description="Node pools; at least one.")]
    storage: Annotated[list[Storage], Field(description="Shared file systems.")] = []
    scheduler: Annotated[Scheduler, Field(description="Workload manager.")] = SlurmScheduler(kind="slurm")
    budgets: Annotated[Budgets, Field(description="Cost and power ceilings the policy pack enforces.")] = Budgets()
    compliance: Annotated[Compliance, Field(description="Frameworks, data residency and waivers.")] = Compliance()
    pricing: Annotated[Pricing, Field(description="Negotiated rates replacing catalog prices.")] = Pricing()
    network: Annotated[NetworkSpec, Field(description="Address plan for the cloud networks.")] = NetworkSpec()
    access: Annotated[Access, Field(description="Admin account and SSH keys for the nodes.")] = Access()

    @model_validator(mode="after")
    def _cross_field(self) -> ClusterSpec:
        problems = [
            *_duplicates("pools", "name", [p.name for p in self.pools], "pool names must be unique"),
            *_duplicates("storage", "name", [st.name for st in self.storage], "file-system names must be unique"),
            *_duplicates("storage", "mount", [st.mount for st in self.storage], "two file systems cannot share it"),
        ]
        providers = [p.provider for p in self.pools]
        for i, st in enumerate(self.storage):
            outer = next((j for j, o in enumerate(self.storage) if st.mount.startswith(o.mount + "/")), None)
            if outer is not None:
                problems.append(
                    Problem(
                        ("storage", i, "mount"),
                        f"inside storage[{outer}].mount ({self.storage[outer].mount}); mounting one file system "
                        "inside another hides it until the outer one is mounted; use a separate path",
                        st.mount,
                        True,
                    )
                )
            if st.provider == "onprem" or (st.provider is None and set(providers) == {"onprem"}):
                problems.append(
                    Problem(
                        ("storage", i, "provider"),
                        "aicluster builds managed file systems in a cloud; a site's own file systems (Lustre, "
                        "GPFS, NFS appliances) stay with the site: mount them with your site tooling, or put this "
                        "file system in a cloud the stack uses",
                        st.provider or "onprem",
                        True,
                    )
                )
            elif st.provider is not None and st.provider not in providers:
                problems.append(
                    Problem(
                        ("storage", i, "provider"),
                        "no pool runs on this provider; allowed: " + ", ".join(sorted(set(providers))),
                        st.provider,
                        True,
                    )
                )
        problems.extend(_tag_problems(self.tags, set(providers)))
        problems.extend(_site_problems(self))
        if problems:
            raise _Problems(problems)
        return self


# ------------------------------------------------------------------------------------------------
# Parsing with readable errors
# ------------------------------------------------------------------------------------------------


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _model_at(path: Sequence[str | int], data: Any) -> type[BaseModel] | None:
    """The model class that validates the mapping at `path` (for 'unknown key' hints)."""
    model: type[BaseModel] | None = ClusterSpec
    node = data
    for part in path:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        fld = model.model_fields.get(part)
        node = node.get(part) if isinstance(node, Mapping) else None
        if fld is None:
            return None
        model = _resolve_model(fld.annotation, node)
    return model


def _resolve_model(annotation: Any, node: Any) -> type[BaseModel] | None:
    import typing

    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _resolve_model(args[0], node)
    candidates = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
    if origin in (list, tuple) and args:
        first = node[0] if isinstance(node, list) and node else None
        return _resolve_model(args[0], first)
    if len(candidates) == 1:
        return candidates[0]
    for cand in candidates:  # discriminated union: pick by the tag value present in the data
        for tag in ("provider", "kind"):
            fld = cand.model_fields.get(tag)
            if fld is not None and isinstance(node, Mapping) and node.get(tag) in typing.get_args(fld.annotation):
                return cand
    for a in args:
        found = _resolve_model(a, node)
        if found is not None:
            return found
    return None


_SIMPLE_MESSAGES = {
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be greater than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "finite_number": "must be a finite number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": 'must be a string (quote numbers, e.g. "4711")',
    "string_too_long": "must be at most {max_length} characters",
    "string_too_short": "must be at least {min_length} characters",
    "too_short": "needs at least {min_length} item(s)",
    "too_long": "allows at most {max_length} item(s)",
}


def _clean_loc(raw_loc: Sequence[str | int], data: Any, etype: str) -> Path:
    """Map pydantic's error location to the user's field path.

    pydantic adds union member tags to the location (`pools.0.aws.zone`): keep only the parts that
    are real keys or indexes of the data (plus a final missing/unknown key)."""
    loc = [p for p in raw_loc if not (isinstance(p, str) and p.startswith("function-"))]
    clean: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, list) and isinstance(part, int):
            clean.append(part)
            node = node[part] if part < len(node) else None
        elif isinstance(node, Mapping) and part in node:
            clean.append(part)
            node = node[part]
        elif isinstance(node, Mapping) and etype in {"missing", "extra_forbidden"} and part == loc[-1]:
            clean.append(part)
            node = None
        # else: a union/discriminator tag, not a real key
    return tuple(clean)


def _problem_from_error(err: Mapping[str, Any], data: Any) -> Problem:
    etype = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    path = _clean_loc(err["loc"], data, etype)

    if etype == "extra_forbidden":
        parent = _model_at(path[:-1], data)
        allowed = _allowed_keys(parent) if parent else []
        key = str(path[-1])
        hint = did_you_mean(key, allowed)
        return Problem(path, f"unknown key; allowed keys: {', '.join(allowed)}", key, True, hint)
    if etype == "missing":
        parent = _model_at(path[:-1], data)
        desc = ""
        if parent is not None:
            fld = parent.model_fields.get(str(path[-1]))
            if fld is not None and fld.description:
                desc = f": {fld.description}"
        return Problem(path, f"required field is missing{desc}")
    if etype == "literal_error":
        expected = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        hint = did_you_mean(str(value), expected) if isinstance(value, str) else None
        return Problem(path, f"allowed: {', '.join(expected)}", value, True, hint)
    if etype in {"union_tag_invalid", "union_tag_not_found"}:
        tag = str(ctx.get("discriminator", "")).strip("'")
        expected = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
        tag_value = value.get(tag) if isinstance(value, Mapping) else None
        if etype == "union_tag_not_found":
            return Problem((*path, tag), f"required field is missing; allowed: {', '.join(expected)}")
        hint = did_you_mean(tag_value, expected) if isinstance(tag_value, str) else None
        return Problem((*path, tag), f"allowed: {', '.join(expected)}", tag_value, True, hint)
    if etype == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        # A "public key" that is not one may be a pasted private key, and a BMC URL with a user part may carry
        # its password: never echo either.
        echo = pattern != _SSH_KEY and not (pattern == BMC_RE and "@" in str(value))
        return Problem(
            path,
            _PATTERN_HINTS.get(pattern, "is not of the form this field takes (docs/spec-reference.md shows it)"),
            value,
            echo,
        )
    simple = _SIMPLE_MESSAGES.get(etype)
    if simple is not None:
        shown = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in ctx.items()}
        return Problem(path, simple.format(**shown), value, True)
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    msg = msg[0].lower() + msg[1:] if msg else msg
    if etype in {"dict_type", "model_type", "model_attributes_type"}:
        return Problem(path, "must be a mapping (key: value)", value, True)
    if etype == "list_type":
        return Problem(path, "must be a list", value, True)
    return Problem(path, msg, value, not isinstance(value, Mapping | list))


def _problems_of(exc: ValidationError, data: Any) -> list[Problem]:
    problems: list[Problem] = []
    for err in exc.errors(include_url=False):
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, _Problems):
            base = _clean_loc(err["loc"], data, err["type"])
            problems.extend(Problem((*base, *p.path), p.message, p.value, p.has_value, p.hint) for p in inner.problems)
            continue
        problems.append(_problem_from_error(err, data))
    return problems


# Lists whose bad items are left out so that the rest can still be checked.
_ITEM_LISTS = ("pools", "storage", "sites")


@dataclass
class Checked:
    """What validating a cluster found: every problem, and a spec of the parts that are right (or None).

    pydantic runs a model's cross-field rules only once its fields are valid, and the planner needs a valid
    spec: so a mistake in one pool would hide a tag collision and every catalog problem. Validation is
    repeated with the wrong parts left out (a bad pool or file system, a bad section back to its default)
    until the rest validates; `spec` is that rest, for the planner, and `original` maps a path in it back to
    the user's (list indexes shift when items are left out)."""

    spec: ClusterSpec | None
    problems: list[Problem]
    kept: dict[str, list[int]] = field(default_factory=dict)
    items_left_out: bool = False  # a pool or file system was left out of `spec`

    def original(self, path: Path) -> Path:
        if len(path) >= 2 and isinstance(path[0], str) and isinstance(path[1], int) and path[0] in self.kept:
            kept = self.kept[path[0]]
            if 0 <= path[1] < len(kept):
                return (path[0], kept[path[1]], *path[2:])
        return path


def check_cluster(data: Any) -> Checked:
    """Validate the `aicluster:cluster` mapping, collecting every problem (see Checked)."""
    if not isinstance(data, Mapping):
        problem = Problem((), "aicluster:cluster must be a mapping with at least `name` and `pools`", data, True)
        return Checked(None, [problem])
    work: dict[Any, Any] = dict(data)
    kept = {k: list(range(len(work[k]))) for k in _ITEM_LISTS if isinstance(work.get(k), list)}
    checked = Checked(None, [], kept)
    for _ in range(8):  # each round leaves out at least one part; a few rounds reach every layer
        try:
            checked.spec = ClusterSpec.model_validate(work)
            break
        except ValidationError as exc:
            found = _problems_of(exc, work)
        checked.problems.extend(
            Problem(checked.original(p.path), p.message, p.value, p.has_value, p.hint) for p in found
        )
        if not _leave_out(work, kept, [p.path for p in found]):
            break
    checked.items_left_out = any(len(kept[k]) != len(data[k]) for k in kept)
    if checked.spec is None and _is_text_map(data.get("tags")):
        # the cluster's tag rules need only the tags and the providers of the pools
        pools = data.get("pools")
        providers = {
            p.get("provider")
            for p in (pools if isinstance(pools, list) else [])
            if isinstance(p, Mapping) and isinstance(p.get("provider"), str)
        }
        checked.problems.extend(_tag_problems(data["tags"], providers))
    checked.problems = _dedupe(checked.problems)
    return checked


def _is_text_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _leave_out(work: dict[Any, Any], kept: dict[str, list[int]], paths: list[Path]) -> bool:
    """Leave out the parts the problems are in; False when nothing more can be left out."""
    drop: dict[str, set[int]] = {}
    changed = False
    for path in paths:
        top = path[0] if path else None
        if top in kept and len(path) >= 2 and isinstance(path[1], int):
            drop.setdefault(str(top), set()).add(path[1])
        elif top == "name":
            changed = changed or work.get("name") != "cluster"
            work["name"] = "cluster"
        elif top is None or top == "pools":  # no pools, or not a list of them: nothing to check further
            return False
        elif top in work:
            del work[top]
            changed = True
    for key, indexes in drop.items():
        work[key] = [item for i, item in enumerate(work[key]) if i not in indexes]
        kept[key] = [k for i, k in enumerate(kept[key]) if i not in indexes]
        changed = True
    return changed and bool(work.get("pools"))


def parse_cluster(data: Any, source: str, lines: Mapping[Path, int] | None = None) -> ClusterSpec:
    """Validate the `aicluster:cluster` mapping. Raises SpecError listing every problem."""
    checked = check_cluster(data)
    if checked.problems or checked.spec is None:
        raise SpecError(source, checked.problems, lines or {})
    return checked.spec


def model_problems(model: type[BaseModel], data: Any, path: Path = ()) -> list[Problem]:
    """Where `data` breaks `model` (a Waiver from another input, a Budgets), in the words the stack's messages
    use, each located under `path`; empty when it is valid."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return [Problem((*path, *p.path), p.message, p.value, p.has_value, p.hint) for p in _problems_of(exc, data)]
    return []


def number_bounds(model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """The JSON Schema bounds (minimum, maximum, ...) the model puts on each of its number fields."""
    keys = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    out: dict[str, dict[str, Any]] = {}
    for name, schema in model.model_json_schema()["properties"].items():
        for branch in schema.get("anyOf", [schema]):
            if branch.get("type") in ("number", "integer"):
                out[name] = {k: branch[k] for k in keys if k in branch}
    return out


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[Path, str]] = set()
    out = []
    for p in problems:
        key = (p.path, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def json_schema() -> dict[str, Any]:
    """The published JSON schema of `aicluster:cluster`."""
    schema = ClusterSpec.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://aicluster.dev/schema/cluster.schema.json"
    schema["title"] = "aicluster:cluster"
    return schema
