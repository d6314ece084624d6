"""The bursting configuration: which Slurm cloud nodes live in which cloud group.

The renderer writes it as JSON next to slurm.conf (`aicluster-burst.json` in slurm.conf's directory, 0644: it
holds no secret). The programs find it, in this order: `--config PATH`, the environment variable
`AICLUSTER_BURST_CONFIG`, then `aicluster-burst.json` beside `$SLURM_CONF` (slurmctld always sets SLURM_CONF for
ResumeProgram/SuspendProgram), then `/etc/slurm/aicluster-burst.json`.

Schema (`BurstConfig.model_json_schema()` is the machine-readable form)::

    {
      "version": 1,
      "cluster": "llm-dev",                     # tags every instance with aicluster:cluster
      "log_file": "/var/log/slurm/aicluster-burst.log",   # null: stderr (slurmctld's log keeps nothing of it)
      "state_dir": "/var/spool/slurmctld/aicluster-burst", # per-group lock files
      "scontrol": "scontrol",                   # path or name; slurmctld runs the programs with no PATH
      "launch_wait_s": 300,                     # resume waits at most this long for the group's new instances
      "poll_s": 5,                              # how often it asks the cloud meanwhile
      "api_timeout_s": 10,                      # each cloud API request: connect and read timeout (2 attempts)
      "lock_wait_s": 120,                       # longest wait for another program's group lock
      "orphan_grace_s": 600,                    # sync removes an instance bound to no node after this long
      "node_sets": [
        {"provider": "aws", "nodes": "aws-h100-[000-015]", "region": "us-east-1",
         "group": "llm-dev-h100", "instance_type": "p5.48xlarge", "market": "on-demand",
         "endpoint_url": null},
        {"provider": "gcp", "nodes": "gcp-a3-[000-007]", "project": "my-project", "region": "us-central1",
         "zone": "us-central1-a", "group": "llm-dev-a3", "instance_type": "a3-highgpu-8g", "market": "spot"},
        {"provider": "azure", "nodes": "az-nd-[000-003]", "subscription_id": "...", "resource_group": "llm-dev",
         "region": "eastus", "group": "llm-dev-nd", "instance_type": "Standard_ND96isr_H100_v5",
         "market": "on-demand"}
      ]
    }

`nodes` is a Slurm hostlist expression, expanded with `scontrol show hostnames`. Every field is checked before a
program touches Slurm or a cloud: region, zone, group, project and subscription names have their cloud's form,
`endpoint_url` is https (plain http only to this machine's loopback, for a local proxy or test endpoint, and never
with a user, password, query or fragment), paths are absolute and hold no control character. A node name belongs to at
most one set. `group` names the Auto Scaling group (aws), the zonal managed instance group in `zone` (gcp) or
the VM scale set in `resource_group` (azure); the group must exist (the Pulumi components create it with a
desired size of 0). Credentials are never in this file: each cloud SDK finds them its usual way (instance
profile / ~/.aws of SlurmUser, application default credentials, managed identity or `az login`).

This module imports nothing else of the project.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

CONFIG_NAME = "aicluster-burst.json"
ENV_VAR = "AICLUSTER_BURST_CONFIG"
# Slurm node names the renderer makes: letters, digits, '-', '_' and '.', plus hostlist brackets and commas; never a
# leading '-' (scontrol would read an option) and brackets that close (checked below).
HOSTLIST_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_.\-\[\],]*$"
# a name each cloud accepts for a group, a project, a resource group: letters, digits and - _ . (no space, no ':',
# no control character); the per-cloud forms below narrow it
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,254}$"
# absolute paths with no control character (the programs open them as SlurmUser)
PATH_PATTERN = r"^/[^\x00-\x1f\x7f]*$"
# region and zone names, in each cloud's own form (us-east-1 / us-gov-west-1; us-central1, us-central1-a; eastus)
AWS_REGION = r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$"
GCP_REGION = r"^[a-z]+-[a-z]+[0-9]{1,2}$"
GCP_ZONE = r"^[a-z]+-[a-z]+[0-9]{1,2}-[a-z]$"
GCP_PROJECT = r"^([a-z0-9.\-]+:)?[a-z][a-z0-9\-]{4,28}[a-z0-9]$"
GCP_GROUP = r"^[a-z]([\-a-z0-9]{0,61}[a-z0-9])?$"
AZURE_REGION = r"^[a-z][a-z0-9]{1,39}$"
AZURE_SUBSCRIPTION = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
AZURE_RESOURCE_GROUP = r"^[-\w.()]{0,89}[-\w()]$"
LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}


def _brackets_close(expression: str) -> str:
    depth = 0
    for c in expression:
        depth += {"[": 1, "]": -1}.get(c, 0)
        if depth not in (0, 1):
            raise ValueError("brackets must pair and not nest (e.g. `aws-h100-[000-015]`)")
    if depth:
        raise ValueError("a '[' is not closed (e.g. `aws-h100-[000-015]`)")
    return expression


def _endpoint(url: str | None) -> str | None:
    """https://host[:port][/path] only; plain http only to this machine's loopback (a local proxy or test endpoint).
    Never a user, password, query or fragment: the SDK would send them, and they would land in logs."""
    if url is None:
        return None
    if any(c.isspace() or not c.isprintable() for c in url):
        raise ValueError("an endpoint has no space or control character (e.g. `https://vpce-0123.ec2.us-east-1...`)")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc}); write https://HOST[:PORT]") from None
    if parts.scheme not in ("https", "http") or not host:
        raise ValueError("write https://HOST[:PORT] (e.g. the VPC endpoint's DNS name)")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise ValueError("an endpoint has no user, password, query or fragment: credentials come from the SDK's chain")
    if parts.scheme == "http" and not _loopback(host):
        raise ValueError("plain http only to this machine (127.0.0.1, ::1, localhost); use https")
    return url


def _loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


Hostlist = Annotated[
    str,
    Field(pattern=HOSTLIST_PATTERN, max_length=65536,
          description="Slurm hostlist of the cloud nodes this group backs (e.g. `aws-h100-[000-015]`)"),
    AfterValidator(_brackets_close),
]  # fmt: skip
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
AbsolutePath = Annotated[str, Field(pattern=PATH_PATTERN, max_length=4096)]
Seconds = Annotated[float, Field(allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _NodeSet(_Strict):
    nodes: Hostlist
    region: Annotated[str, Field(min_length=1, description="cloud region (e.g. `us-east-1`)")]
    group: Annotated[
        Name,
        Field(min_length=1, description="name of the cloud group that holds the instances (e.g. `llm-dev-h100`)"),
    ]
    instance_type: Annotated[
        Name, Field(min_length=1, description="instance/machine type/VM size of the group (e.g. `p5.48xlarge`)")
    ]
    market: Annotated[
        Literal["on-demand", "spot"],
        Field(description="purchase option of the group's instances: spot ones may be reclaimed at any time"),
    ] = "on-demand"


class AwsNodeSet(_NodeSet):
    provider: Literal["aws"] = "aws"
    region: Annotated[str, Field(pattern=AWS_REGION, description="AWS region (e.g. `us-east-1`)")]
    endpoint_url: Annotated[
        str | None,
        Field(description="EC2 and Auto Scaling API endpoint, for VPC endpoints (e.g. `https://vpce-...`); https, "
                          "or plain http to this machine's loopback only"),
        AfterValidator(_endpoint),
    ] = None  # fmt: skip


class GcpNodeSet(_NodeSet):
    provider: Literal["gcp"]
    region: Annotated[str, Field(pattern=GCP_REGION, description="Google Cloud region (e.g. `us-central1`)")]
    group: Annotated[str, Field(pattern=GCP_GROUP, description="the zonal managed instance group (e.g. `llm-dev-a3`)")]
    project: Annotated[str, Field(pattern=GCP_PROJECT, description="Google Cloud project id (e.g. `my-project`)")]
    zone: Annotated[
        str, Field(pattern=GCP_ZONE, description="zone of the managed instance group (e.g. `us-central1-a`)")
    ]

    @field_validator("zone")
    @classmethod
    def _zone_in_region(cls, zone: str, info: ValidationInfo) -> str:
        region = info.data.get("region")
        if region and zone.rsplit("-", 1)[0] != region:
            raise ValueError(f"it is not in region {region!r} (a zone is REGION-LETTER, e.g. `{region}-a`)")
        return zone


class AzureNodeSet(_NodeSet):
    provider: Literal["azure"]
    region: Annotated[str, Field(pattern=AZURE_REGION, description="Azure region name (e.g. `eastus`, not `East US`)")]
    subscription_id: Annotated[
        str, Field(pattern=AZURE_SUBSCRIPTION, description="Azure subscription id of the scale set (a GUID)")
    ]
    resource_group: Annotated[
        str, Field(pattern=AZURE_RESOURCE_GROUP, description="resource group of the scale set (e.g. `llm-dev`)")
    ]


NodeSet = Annotated[AwsNodeSet | GcpNodeSet | AzureNodeSet, Field(discriminator="provider")]


class BurstConfig(_Strict):
    version: Literal[1] = 1
    cluster: Annotated[
        Name, Field(min_length=1, description="cluster name, the aicluster:cluster tag (e.g. `llm-dev`)")
    ]
    log_file: Annotated[
        AbsolutePath | None,
        Field(description="log file of the programs; null logs to stderr (e.g. `/var/log/slurm/burst.log`); when it "
                          "cannot be opened the programs log to stderr and go on"),
    ] = None  # fmt: skip
    state_dir: Annotated[
        AbsolutePath, Field(min_length=2, description="directory for the per-group lock files, writable by SlurmUser")
    ] = "/var/spool/slurmctld/aicluster-burst"
    scontrol: Annotated[
        str,
        Field(pattern=r"^(/[^\x00-\x1f\x7f]+|[A-Za-z0-9_.][A-Za-z0-9_.\-]*)$",
              description="scontrol program: an absolute path or a bare name (e.g. `/usr/bin/scontrol`)"),
    ] = "scontrol"  # fmt: skip
    launch_wait_s: Annotated[
        Seconds, Field(gt=0, le=3600, description="longest wait for new instances; keep it below ResumeTimeout")
    ] = 300.0
    poll_s: Annotated[Seconds, Field(gt=0, le=60, description="seconds between cloud polls while waiting")] = 5.0
    orphan_grace_s: Annotated[
        Seconds, Field(gt=0, description="age after which sync removes an instance bound to no Slurm node")
    ] = 600.0
    api_timeout_s: Annotated[
        Seconds,
        Field(gt=0, le=120, description="connect and read timeout of each cloud API request; a request is tried "
                                        "twice at most, then counts as failed"),
    ] = 10.0  # fmt: skip
    lock_wait_s: Annotated[
        Seconds, Field(gt=0, le=3600, description="longest wait for the group lock another program holds")
    ] = 120.0
    node_sets: Annotated[list[NodeSet], Field(min_length=1, max_length=1000, description="one entry per cloud group")]

    @model_validator(mode="after")
    def _groups_unique(self) -> BurstConfig:
        seen: dict[tuple[str, str, str], int] = {}
        for i, s in enumerate(self.node_sets):
            key = (s.provider, s.region, s.group)
            if key in seen:
                raise ValueError(
                    f"node_sets[{i}].group: got {s.group!r}; node_sets[{seen[key]}] already uses this group "
                    "(give each node set its own group, or merge the two hostlists into one set)"
                )
            seen[key] = i
        return self


def json_schema() -> dict[str, Any]:
    """The published JSON schema of the bursting configuration (schema/aicluster-burst.schema.json)."""
    schema = BurstConfig.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://aicluster.dev/schema/aicluster-burst.schema.json"
    schema["title"] = "aicluster-burst.json"
    return schema


class ConfigError(Exception):
    """The configuration is missing or invalid; the message names the file, the field and the fix."""


def config_path(
    explicit: str | None = None,
    env: dict[str, str] | None = None,
    *,
    env_var: str = ENV_VAR,
    name: str = CONFIG_NAME,
) -> Path:
    """A controller program's configuration: the path given, else $env_var, else `name` beside slurm.conf."""
    env = dict(os.environ) if env is None else env
    if explicit:
        return Path(explicit)
    if env.get(env_var):
        return Path(env[env_var])
    if env.get("SLURM_CONF"):
        return Path(env["SLURM_CONF"]).parent / name
    return Path("/etc/slurm") / name


# what a failed pattern means, in the house style's words: the form and an example (aicluster-repair's
# configuration adds its own patterns to these: aicluster/repair/config.py)
PATTERN_HELP = {
    HOSTLIST_PATTERN: "write a Slurm hostlist of letters, digits, - _ . with [ranges] (e.g. `aws-h100-[000-015]`)",
    NAME_PATTERN: "letters, digits, - _ . only, starting with a letter or digit (e.g. `llm-dev-h100`)",
    PATH_PATTERN: "an absolute path with no control character (e.g. `/var/log/slurm/aicluster-burst.log`)",
    AWS_REGION: "an AWS region name (e.g. `us-east-1`)",
    GCP_REGION: "a Google Cloud region name (e.g. `us-central1`)",
    GCP_ZONE: "a Google Cloud zone name (e.g. `us-central1-a`)",
    GCP_PROJECT: "a Google Cloud project id: 6-30 lowercase letters, digits and '-' (e.g. `my-project`)",
    GCP_GROUP: "a managed instance group name: lowercase letters, digits and '-' (e.g. `llm-dev-a3`)",
    AZURE_REGION: "an Azure region name, lowercase with no space (e.g. `eastus`, not `East US`)",
    AZURE_SUBSCRIPTION: "an Azure subscription id, a GUID (e.g. `00000000-0000-0000-0000-000000000000`)",
    AZURE_RESOURCE_GROUP: "an Azure resource group name (e.g. `llm-dev`)",
}
MAX_CONFIG_BYTES = 16 * 2**20

M = TypeVar("M", bound=BaseModel)
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_URL_SECRETS = re.compile(r"(\w+://)[^/\s'\"@]*@")  # scheme://user:password@ -> scheme://***@
_URL_QUERY = re.compile(r"(\w+://[^'\"\s?#]*)[?#][^'\"\s]*")  # a URL's ?query or #fragment


def load_json(path: Path, model: type[M], *, not_found: str, pattern_help: Mapping[str, str] = PATTERN_HELP) -> M:
    """A controller program's JSON configuration, validated by `model`: ConfigError with one line per problem
    (file, field, value, fix; `pattern_help` words a failed pattern) for a missing, unreadable, oversized or invalid
    file. `not_found` says how the file is made. The burst programs' and aicluster-repair's one loader."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ValueError(f"over {MAX_CONFIG_BYTES // 2**20} MiB")
        raw = json.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found ({not_found})") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"{path}: not readable JSON: {str(exc)[:200]}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError("\n".join(_problem(path, err, pattern_help) for err in exc.errors())) from None


def _problem(path: Path, err: Any, pattern_help: Mapping[str, str]) -> str:
    loc = list(err["loc"])
    if err["type"] == "extra_forbidden":
        return f"{path}: {_where(loc)}: not a field of the configuration (remove it)"
    value = err["input"]
    message = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "union_tag_invalid":  # the provider: name that field, not the whole node set
        loc, value = [*loc, "provider"], err["ctx"]["tag"]
        message = f"expected one of {err['ctx']['expected_tags']}"
    if isinstance(value, str) and "://" in value:  # a URL in any field: never echo its user or query
        value = _masked(value)
    shown = _URL_SECRETS.sub(r"\1***@", _URL_QUERY.sub(r"\1", repr(value)))  # nor one inside a list or object
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    given = f"got {shown}; " if err["type"] != "missing" else ""
    if err["type"] == "string_pattern_mismatch":
        message = pattern_help.get(str(err.get("ctx", {}).get("pattern")), message)
    return f"{path}: {_where(loc)}: {given}{message}"


def load(path: Path) -> BurstConfig:
    return load_json(path, BurstConfig, not_found="write it with the stack's Slurm files, or pass --config")


def _masked(url: str) -> str:
    """An endpoint as an error may show it: a password in the user part or a query never appears."""
    url = url.split("?", 1)[0].split("#", 1)[0]
    scheme, sep, rest = url.partition("//")
    if sep and "@" in rest.split("/", 1)[0]:
        rest = "***@" + rest.split("@", 1)[1]
    return scheme + sep + rest


def _where(loc: list[int | str]) -> str:
    """pydantic's location as the house style writes it: node_sets[0].market (the union's tag left out; a dict's
    key named as such)."""
    out = ""
    parts = [p for p in loc if p != "[key]"]
    for i, part in enumerate(parts):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i and isinstance(parts[i - 1], int) and part in ("aws", "gcp", "azure"):
            continue
        elif not _PLAIN_KEY.fullmatch(part):  # a key with a space, quote or newline: quoted, on one line
            out += f"[{part[:60]!r}]"
        else:
            out += f".{part}" if out else part
    return (out or "(top level)") + (" (the key)" if "[key]" in loc else "")


if __name__ == "__main__":  # `python -m aicluster.burst.config` prints the schema (`make schema` writes it)
    print(json.dumps(json_schema(), indent=2))
