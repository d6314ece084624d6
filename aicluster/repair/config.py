"""The repair configuration (`aicluster-repair.json` beside slurm.conf), read by `aicluster-repair` on the Slurm
controller. `aicluster inventory` renders it from the plan and the catalog (aicluster/render/repair.py); schema:
`RepairConfig.model_json_schema()`.

It holds no secret: a BMC's password is in a root-only file (`password_file`) the controller's role writes from the
stack's Pulumi secret; the file is read at the moment of a power-cycle and its content is never logged.

Found, in this order: `--config PATH`, `AICLUSTER_REPAIR_CONFIG`, `aicluster-repair.json` beside `$SLURM_CONF`,
`/etc/slurm/aicluster-repair.json`. Every field is checked before the program touches Slurm or a BMC; a bad file is
one message per problem naming the file, the field, the value and the fix, and exit status 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from aicluster.burst.config import HOSTLIST_PATTERN, NAME_PATTERN, PATH_PATTERN, NodeSet, _loopback, load_json
from aicluster.burst.config import PATTERN_HELP as BURST_PATTERN_HELP
from aicluster.burst.config import config_path as burst_config_path
from aicluster.repair.breaker import breaker_limit

CONFIG_NAME = "aicluster-repair.json"
ENV_VAR = "AICLUSTER_REPAIR_CONFIG"
CODE_PATTERN = r"^[A-Z][A-Z0-9_]{0,31}$"
NODE_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_.\-]{0,127}$"
USER_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"

Action = Literal["reset_gpu", "reboot", "power_cycle", "replace", "hold"]
AbsolutePath = Annotated[str, Field(pattern=PATH_PATTERN, max_length=4096)]
Seconds = Annotated[float, Field(allow_inf_nan=False)]


def _bmc_url(url: str) -> str:
    """https://host[:port][/redfish/v1/Systems/ID]; plain http only to this machine's loopback (a test BMC); never a
    user, password, query or fragment (they would be sent and logged)."""
    if any(c.isspace() or not c.isprintable() for c in url):
        raise ValueError("a BMC URL has no space or control character (e.g. `https://10.201.0.11`)")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc}); write https://HOST[:PORT][/redfish/v1/Systems/ID]") from None
    if parts.scheme not in ("https", "http") or not host:
        raise ValueError("write https://HOST[:PORT][/redfish/v1/Systems/ID] (e.g. `https://10.201.0.11`)")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise ValueError("a BMC URL has no user, password, query or fragment: give username and password_file")
    if parts.scheme == "http" and not _loopback(host):
        raise ValueError("plain http only to this machine (127.0.0.1, ::1, localhost); a BMC is reached with https")
    path = parts.path.rstrip("/")
    if path and not path.startswith("/redfish/v1/Systems/"):
        raise ValueError("the path, if any, is the system's: /redfish/v1/Systems/ID (e.g. `/redfish/v1/Systems/1`)")
    return url


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Bmc(_Strict):
    url: Annotated[
        str,
        Field(description="The BMC's Redfish service, optionally with the system's path (e.g. "
                          "`https://10.201.0.11/redfish/v1/Systems/1`); without one, the service's only system"),
        AfterValidator(_bmc_url),
    ]  # fmt: skip
    username: Annotated[str, Field(pattern=USER_PATTERN, description="BMC user name (e.g. `admin`)")]
    password_file: Annotated[
        AbsolutePath,
        Field(description="root-only file (mode 0600 or 0400) holding the BMC password (e.g. "
                          "`/etc/aicluster/bmc/bmcPassword`); a file others may read is refused"),
    ]  # fmt: skip
    ca_file: Annotated[
        AbsolutePath | None, Field(description="CA bundle the BMC's certificate is checked with; null: the system's")
    ] = None
    verify_tls: Annotated[
        bool, Field(description="check the BMC's certificate (false: BMCs with a self-signed one; logged at each use)")
    ] = True


class RepairConfig(_Strict):
    version: Literal[1] = 1
    cluster: Annotated[str, Field(pattern=NAME_PATTERN, description="cluster name (e.g. `llm-dev`)")]
    enabled: Annotated[bool, Field(description="false: read and report only, never act")] = True
    scontrol: Annotated[
        str,
        Field(pattern=r"^(/[^\x00-\x1f\x7f]+|[A-Za-z0-9_.][A-Za-z0-9_.\-]*)$",
              description="scontrol program: an absolute path or a bare name (e.g. `/usr/bin/scontrol`)"),
    ] = "scontrol"  # fmt: skip
    state_dir: Annotated[
        AbsolutePath, Field(min_length=2, description="history, lock and report (e.g. `/var/lib/aicluster-repair`)")
    ] = "/var/lib/aicluster-repair"
    log_file: Annotated[AbsolutePath | None, Field(description="log file; null: stderr (the journal)")] = None
    burst_config: Annotated[
        AbsolutePath | None,
        Field(description="the bursting configuration (aicluster-burst.json): a cloud node's instance is deleted "
                          "through its group; null or missing: the SuspendProgram deletes it when Slurm powers the "
                          "node down"),
    ] = None  # fmt: skip
    max_share_in_repair: Annotated[
        float,
        Field(gt=0, le=1, description="circuit breaker: never more than this share of the cluster's nodes in repair "
                                      "at once (e.g. `0.5`)"),
    ] = 0.5  # fmt: skip
    repeat_count: Annotated[
        int, Field(ge=1, le=1000, description="repeat offender: a node repaired this many times in the window is held")
    ] = 5
    repeat_window_s: Annotated[Seconds, Field(gt=0, description="repeat-offender window, seconds (7 days)")] = 604800.0
    repair_timeout_s: Annotated[
        Seconds, Field(gt=0, description="a repair whose node is not back after this long is held, seconds")
    ] = 1800.0
    api_timeout_s: Annotated[
        Seconds, Field(gt=0, le=120, description="each BMC or cloud request's connect and read timeout, seconds")
    ] = 10.0
    power_off_wait_s: Annotated[
        Seconds, Field(gt=0, le=600, description="longest wait for a BMC to report the system off (ForceOff, On)")
    ] = 120.0
    actions: Annotated[
        dict[Annotated[str, Field(pattern=CODE_PATTERN)], Action],
        Field(description="drain reason code -> repair action (e.g. `{\"XID79\": \"power_cycle\"}`); a code not "
                          "listed is held"),
    ] = {}  # fmt: skip
    bmcs: Annotated[
        dict[Annotated[str, Field(pattern=NODE_PATTERN)], Bmc],
        Field(description="node name -> its Redfish BMC (owned nodes only)"),
    ] = {}  # fmt: skip
    node_sets: Annotated[
        list[NodeSet],
        Field(max_length=1000,
              description="the cloud groups Pulumi keeps at their size (not the burst ones, which are in "
                          "burst_config), in aicluster-burst.json's form: a node of one is replaced by deleting "
                          "its instance (found by the node's address) and setting the group's size back"),
    ] = []  # fmt: skip

    cloud_pools: Annotated[
        dict[Annotated[str, Field(pattern=NAME_PATTERN)], Annotated[str, Field(pattern=HOSTLIST_PATTERN)]],
        Field(description="each cloud pool Pulumi keeps at its size -> its nodes (a Slurm hostlist, e.g. "
                          "`h100-[000-015]`), from the plan, so a node whose group is not in node_sets yet (the "
                          "configuration was rendered before `pulumi up`) is held saying so"),
    ] = {}  # fmt: skip

    def limit(self, nodes: int) -> int:
        """The most nodes of `nodes` that may be in repair at once."""
        return breaker_limit(self.max_share_in_repair, nodes)


def config_path(explicit: str | None = None, env: dict[str, str] | None = None) -> Path:
    """The path given, else the environment variable ENV_VAR, else the file beside slurm.conf (the burst
    programs' rule)."""
    return burst_config_path(explicit, env, env_var=ENV_VAR, name=CONFIG_NAME)


# the burst configuration's words for a failed pattern (one definition), aicluster-repair's own patterns, and its
# example of a path
PATTERN_HELP = {
    **BURST_PATTERN_HELP,
    PATH_PATTERN: "an absolute path with no control character (e.g. `/var/lib/aicluster-repair`)",
    CODE_PATTERN: "a drain reason code: capitals, digits and '_' (e.g. `XID79`, `GPU_COUNT`)",
    NODE_PATTERN: "a Slurm node name: letters, digits, - _ . (e.g. `dgx-001`)",
    USER_PATTERN: "a BMC user name: letters, digits, '.', '_' and '-' (e.g. `admin`)",
}


def load(path: Path) -> RepairConfig:
    return load_json(
        path,
        RepairConfig,
        not_found="`aicluster inventory` renders it with the Slurm files; or pass --config",
        pattern_help=PATTERN_HELP,
    )


def json_schema() -> dict[str, object]:
    schema = RepairConfig.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://aicluster.dev/schema/aicluster-repair.schema.json"
    schema["title"] = CONFIG_NAME
    return schema


if __name__ == "__main__":  # `python -m aicluster.repair.config` prints the schema (`make schema` writes it)
    print(json.dumps(json_schema(), indent=2))
