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

`nodes` is a Slurm hostlist expression, expanded with `scontrol show hostnames`. A node name belongs to at
most one set. `group` names the Auto Scaling group (aws), the zonal managed instance group in `zone` (gcp) or
the VM scale set in `resource_group` (azure); the group must exist (the Pulumi components create it with a
desired size of 0). Credentials are never in this file: each cloud SDK finds them its usual way (instance
profile / ~/.aws of SlurmUser, application default credentials, managed identity or `az login`).

This module imports nothing else of the project.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

CONFIG_NAME = "aicluster-burst.json"
ENV_VAR = "AICLUSTER_BURST_CONFIG"
# Slurm node names the renderer makes: letters, digits, '-', '_' and '.', plus hostlist brackets and commas.
HOSTLIST_PATTERN = r"^[A-Za-z0-9_.\-\[\],]+$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _NodeSet(_Strict):
    nodes: Annotated[
        str,
        Field(
            pattern=HOSTLIST_PATTERN,
            description="Slurm hostlist of the cloud nodes this group backs (e.g. `aws-h100-[000-015]`)",
        ),
    ]
    region: Annotated[str, Field(min_length=1, description="cloud region (e.g. `us-east-1`)")]
    group: Annotated[
        str,
        Field(min_length=1, description="name of the cloud group that holds the instances (e.g. `llm-dev-h100`)"),
    ]
    instance_type: Annotated[
        str, Field(min_length=1, description="instance/machine type/VM size of the group (e.g. `p5.48xlarge`)")
    ]
    market: Annotated[
        Literal["on-demand", "spot"],
        Field(description="purchase option of the group's instances: spot ones may be reclaimed at any time"),
    ] = "on-demand"


class AwsNodeSet(_NodeSet):
    provider: Literal["aws"] = "aws"
    endpoint_url: Annotated[
        str | None,
        Field(description="EC2 and Auto Scaling API endpoint, for VPC endpoints (e.g. `https://vpce-...`)"),
    ] = None


class GcpNodeSet(_NodeSet):
    provider: Literal["gcp"]
    project: Annotated[str, Field(min_length=1, description="Google Cloud project id (e.g. `my-project`)")]
    zone: Annotated[str, Field(min_length=1, description="zone of the managed instance group (e.g. `us-central1-a`)")]


class AzureNodeSet(_NodeSet):
    provider: Literal["azure"]
    subscription_id: Annotated[str, Field(min_length=1, description="Azure subscription id of the scale set")]
    resource_group: Annotated[str, Field(min_length=1, description="resource group of the scale set")]


NodeSet = Annotated[AwsNodeSet | GcpNodeSet | AzureNodeSet, Field(discriminator="provider")]


class BurstConfig(_Strict):
    version: Literal[1] = 1
    cluster: Annotated[str, Field(min_length=1, description="cluster name, the aicluster:cluster tag (e.g. `llm-dev`)")]
    log_file: Annotated[
        str | None, Field(description="log file of the programs; null logs to stderr (e.g. `/var/log/slurm/burst.log`)")
    ] = None
    state_dir: Annotated[
        str, Field(min_length=1, description="directory for the per-group lock files, writable by SlurmUser")
    ] = "/var/spool/slurmctld/aicluster-burst"
    scontrol: Annotated[str, Field(min_length=1, description="scontrol program (e.g. `/usr/bin/scontrol`)")] = (
        "scontrol"
    )
    launch_wait_s: Annotated[
        float, Field(gt=0, le=3600, description="longest wait for new instances; keep it below ResumeTimeout")
    ] = 300.0
    poll_s: Annotated[float, Field(gt=0, le=60, description="seconds between cloud polls while waiting")] = 5.0
    orphan_grace_s: Annotated[
        float, Field(gt=0, description="age after which sync removes an instance bound to no Slurm node")
    ] = 600.0
    node_sets: Annotated[list[NodeSet], Field(min_length=1, description="one entry per cloud group")]

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


def config_path(explicit: str | None = None, env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    if explicit:
        return Path(explicit)
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR])
    if env.get("SLURM_CONF"):
        return Path(env["SLURM_CONF"]).parent / CONFIG_NAME
    return Path("/etc/slurm") / CONFIG_NAME


def load(path: Path) -> BurstConfig:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found (write it with the stack's Slurm files, or pass --config)") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not readable JSON: {exc}") from None
    try:
        return BurstConfig.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = list(err["loc"])
            value = err["input"]
            if err["type"] == "union_tag_invalid":  # the provider: name that field, not the whole node set
                loc, value = [*loc, "provider"], err["ctx"]["tag"]
            given = f"got {value!r}; " if err["type"] != "missing" else ""
            problems.append(f"{path}: {_where(loc)}: {given}{err['msg']}")
        raise ConfigError("\n".join(problems)) from None


def _where(loc: list[int | str]) -> str:
    """pydantic's location as the house style writes it: node_sets[0].market (the union's tag left out)."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i and isinstance(loc[i - 1], int) and part in ("aws", "gcp", "azure"):
            continue
        else:
            out += f".{part}" if out else part
    return out or "(top level)"


if __name__ == "__main__":  # `python -m aicluster.burst.config` prints the schema (`make schema` writes it)
    print(json.dumps(json_schema(), indent=2))
