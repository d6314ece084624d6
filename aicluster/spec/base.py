"""The leaf of the spec: problems and how they read, field types and patterns, the strict base model.

Imports nothing of the project.
"""

from __future__ import annotations

import datetime
import difflib
import ipaddress
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, SchemaValidator, core_schema

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


class HostCheck(Protocol):
    """Takes note of a host the stack names (an on-prem pool's, a controller's) and says what clashes: a name or an
    address another host of the stack has, or an address outside its site's CIDRs."""

    def __call__(self, path: Path, name: str, address: str | None, site: str, key: str = "name") -> list[Problem]: ...


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


# A workload's name is a DNS label too; the same rule written another way (`[a-z0-9-]` for `[-a-z0-9]`) so that
# its message can give a workload's name as the example, not a pool's (hints are keyed by the pattern).
WORKLOAD_NAME_RE = r"^[a-z]([a-z0-9-]*[a-z0-9])?$"
_PATTERN_HINTS[WORKLOAD_NAME_RE] = (
    "must be a lowercase DNS label: a-z, 0-9 and '-', starting with a letter, not ending with '-' (e.g. llama3-70b)"
)
# What the JSON schema says a count string looks like (the spec's own parser checks it, with its own message).
COUNT_RE = r"^\d+(\.\d+)?([eE]\+?\d+)?(K|M|B|T|Ki|Mi|Gi|Ti)?$"
_PATTERN_HINTS[COUNT_RE] = (
    "must be a whole number, or a number with K/M/B/T (x1000s) or Ki/Mi/Gi/Ti (x1024s) (e.g. 70.6B, 15T or 16Mi)"
)


def _pattern(regex: str, hint: str) -> str:
    """`regex` for a Field, with the words an error shows instead of it: what the value is, and an example."""
    _PATTERN_HINTS[regex] = hint
    return regex


@dataclass(frozen=True)
class LazyPattern:
    """`Field(pattern=regex)` for a regex that is slow to compile, compiled when it first checks a value instead
    of when its model is defined (at every start of every command).

    A bounded repeat of a large class compiles to that many copies of it: the resource group's Unicode `\\w`
    repeated 90 times takes 35-70 ms, the SSH key's base64 class repeated up to 16,384 times 10-30 ms, most
    stacks using neither. The check is the one `pattern=` makes (pydantic-core's regex engine, on the str the
    field's own schema has validated), its error the one it raises (string_pattern_mismatch, same message and
    pattern), and the JSON schema says `pattern` as before.

    `ascii_only`: the regex is made of ASCII literals, ASCII classes and ranges, groups, alternations and repeats
    (no `\\w`, `\\d`, `\\s`, `\\b`, no flags), where Python's `re.fullmatch` decides exactly as that engine does, and
    compiles a bounded repeat without unrolling it (the SSH key's: 28 ms -> 0.1 ms, on every stack with a key)."""

    regex: str
    ascii_only: bool = False

    def __post_init__(self) -> None:
        if self.ascii_only and (not self.regex.isascii() or re.search(r"\\[wWdDsSbBAZ]|\(\?", self.regex)):
            raise ValueError(f"not an ASCII-only pattern: {self.regex!r}")

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {**handler(schema), "pattern": self.regex}

    def _check(self, value: str) -> str:
        if self.ascii_only:
            matched = _ascii_pattern(self.regex).fullmatch(value) is not None
        else:
            try:
                _pattern_validator(self.regex).validate_python(value)
                matched = True
            except ValidationError:
                matched = False
        if not matched:
            raise PydanticCustomError(
                "string_pattern_mismatch", "String should match pattern '{pattern}'", {"pattern": self.regex}
            )
        return value


@cache
def _pattern_validator(regex: str) -> SchemaValidator:
    return SchemaValidator(core_schema.str_schema(pattern=regex))


@cache
def _ascii_pattern(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


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


def _network(value: str) -> str:
    """Any IPv4 CIDR block, public ones too (who may reach an API endpoint)."""
    try:
        return str(ipaddress.IPv4Network(value, strict=True))
    except ValueError as exc:
        raise PydanticCustomError(
            "cidr",
            "not an IPv4 CIDR block with its host bits clear (e.g. 203.0.113.0/24): {err}",
            {"err": str(exc)},
        ) from None


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
CAPACITY_RESERVATION_RE = r"^cr-[0-9a-f]{8,17}$"
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
_PATTERN_HINTS[CAPACITY_RESERVATION_RE] = (
    "must be a Capacity Reservation id: cr- and 8 to 17 lowercase hex digits (e.g. cr-0123abcd)"
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
NetworkCidr = Annotated[str, AfterValidator(_network)]  # any IPv4 block, public ones included
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


def _zone_number(value: Any) -> Any:
    """Azure zones are the logical numbers 1, 2 and 3; YAML reads an unquoted `1` as a number."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# ------------------------------------------------------------------------------------------------
# Rollouts: how a change that recreates or removes a pool's nodes reaches them
# ------------------------------------------------------------------------------------------------

MAX_UNAVAILABLE_HINT = "must be a whole number of nodes from 1 (e.g. 2) or a percentage from 1% to 100% (e.g. 10%)"
PERCENT_RE = _pattern(r"^([1-9][0-9]?|100)%$", MAX_UNAVAILABLE_HINT)


def _max_unavailable(value: Any) -> int | str:
    """A node count (1-100,000) or a share of the pool (1%-100%), with one message for either form."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 100_000:
        return value
    if isinstance(value, str) and re.fullmatch(PERCENT_RE, value):
        return value
    raise PydanticCustomError("max_unavailable", MAX_UNAVAILABLE_HINT)


MaxUnavailable = Annotated[
    int | str,
    PlainValidator(_max_unavailable),
    WithJsonSchema(
        {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 100_000}, {"type": "string", "pattern": PERCENT_RE}]}
    ),
]
TIME_OF_DAY_RE = _pattern(r"^([01][0-9]|2[0-3]):[0-5][0-9]$", "must be a time of day in UTC, HH:MM (e.g. 02:00)")
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


class MaintenanceWindow(Strict):
    """A weekly window, in UTC, when a rollout may take nodes."""

    days: Annotated[
        list[Weekday], Field(min_length=1, max_length=7, description="Days the window opens (e.g. `[sat, sun]`).")
    ]
    start: Annotated[str, Field(pattern=TIME_OF_DAY_RE, description="Start, UTC, HH:MM (e.g. `02:00`).")]
    hours: Annotated[Count, Field(ge=4, le=24, description="Length in hours, at least 4 (GKE's minimum).")]


class Rollout(Strict):
    """How a change that recreates or removes the pool's nodes reaches them: never more than `max_unavailable` of
    them at once, each drained first (running jobs finish, no new job starts) or, with `strategy: window`, only in a
    weekly maintenance window."""

    strategy: Annotated[
        Literal["drain-first", "window"],
        Field(
            description="`drain-first`: drain the nodes to be replaced or removed, then replace them, "
            "`max_unavailable` at a time; `window`: the same, inside `window` only."
        ),
    ] = "drain-first"
    max_unavailable: Annotated[
        MaxUnavailable,
        Field(description="Nodes a rollout may take at once: a count (e.g. `2`) or a share of the pool (e.g. `10%`)."),
    ] = 1
    window: Annotated[
        MaintenanceWindow | None, Field(description="The weekly window for `strategy: window` (UTC).")
    ] = None

    @model_validator(mode="after")
    def _window_matches_strategy(self) -> Rollout:
        if self.strategy == "window" and self.window is None:
            raise _Problems([Problem(("window",), "strategy: window needs a window (days, start, hours)")])
        if self.strategy != "window" and self.window is not None:
            raise _Problems([Problem(("strategy",), "a window is given: set strategy: window, or drop the window")])
        return self

    def batch(self, nodes: int) -> int:
        """`max_unavailable` as a node count for a pool of `nodes` (a share rounds down, never below one)."""
        if isinstance(self.max_unavailable, int):
            return max(1, min(self.max_unavailable, nodes))
        return max(1, nodes * int(self.max_unavailable.rstrip("%")) // 100)


PoolRollout = Annotated[
    Rollout,
    Field(
        description="How a change that recreates or removes the pool's nodes reaches them: `max_unavailable` at a "
        "time, drained first (or only in a maintenance `window`)."
    ),
]
