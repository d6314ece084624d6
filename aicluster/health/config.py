"""The checker's configuration: a JSON file `aicluster inventory` renders from the plan and the catalog
(aicluster/render/health.py). Tool paths, the /sys root and the mounts file are settings so that tests (and odd
nodes) can point them elsewhere."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_PATH = "/etc/slurm/aicluster-health.json"
LAYERS = ("boot", "prolog", "epilog", "periodic")
Layer = Literal["boot", "prolog", "epilog", "periodic"]


class ConfigError(ValueError):
    """The configuration file is missing or invalid."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tools(_Strict):
    nvidia_smi: Annotated[str, Field(description="nvidia-smi (e.g. `/usr/bin/nvidia-smi`).")] = "/usr/bin/nvidia-smi"
    dmesg: Annotated[str, Field(description="dmesg, for the kernel log's XID lines.")] = "/usr/bin/dmesg"
    scontrol: Annotated[str, Field(description="scontrol (slurmd runs us with no PATH).")] = "/usr/bin/scontrol"


class XidRule(_Strict):
    name: Annotated[str, Field(description="What the XID means (e.g. `GPU has fallen off the bus`).")]
    action: Annotated[
        str | None, Field(description="NVIDIA's immediate-action bucket (e.g. `RESTART_BM`); null: none recorded.")
    ]
    drain: Annotated[bool, Field(description="Whether an occurrence drains the node.")]


class Mount(_Strict):
    path: Annotated[str, Field(description="Mount point (e.g. `/fsx`).")]
    write_check: Annotated[
        bool, Field(description="Also create and remove a file there (off for NFS: root is squashed by default).")
    ] = True


class PoolHealth(_Strict):
    gpus: Annotated[int, Field(ge=0, description="GPUs each node must show (0: not a GPU node).")] = 0
    gpu_model: Annotated[
        str | None, Field(description="Text nvidia-smi's GPU name must contain (e.g. `H100`); null: any.")
    ] = None
    nvlink: Annotated[bool, Field(description="GPUs joined by NVLink: no link may be inactive.")] = False
    fabric: Annotated[Literal["infiniband", "efa"] | None, Field(description="RDMA fabric to check.")] = None
    ib_device_prefix: Annotated[
        str | None, Field(description="Only RDMA devices whose name starts so (e.g. `mlx5_ib`); null: all.")
    ] = None
    ib_ports: Annotated[int | None, Field(ge=1, description="Ports that must be ACTIVE; null: not counted.")] = None
    ib_rate_gbps: Annotated[
        float | None, Field(gt=0, description="Rate every port must reach (Gb/s, e.g. `400`); null: not checked.")
    ] = None
    mounts: Annotated[tuple[Mount, ...], Field(description="File systems that must be mounted (and writable).")] = ()


class HealthConfig(_Strict):
    version: Literal[1] = 1
    tools: Tools = Tools()
    sys_root: Annotated[str, Field(description="Where /sys is (tests: a recorded tree).")] = "/sys"
    mounts_file: Annotated[str, Field(description="The mount table.")] = "/proc/self/mounts"
    boot_id_file: Annotated[str, Field(description="Changes at every boot.")] = "/proc/sys/kernel/random/boot_id"
    state_dir: Annotated[str, Field(description="Kernel-log watermark and boot id.")] = "/var/lib/aicluster-health"
    timeout_s: Annotated[float, Field(gt=0, le=60, description="Bound on each tool call, seconds.")] = 10.0
    deadline_s: Annotated[
        float, Field(gt=0, description="Bound on all tool calls of a run (slurmd kills the health check at 60 s).")
    ] = 45.0
    max_output_bytes: Annotated[int, Field(gt=0, description="Tool output beyond this is an error.")] = 8 << 20
    drain: Annotated[bool, Field(description="false: report only, never call scontrol update.")] = True
    pools: Annotated[dict[str, PoolHealth], Field(description="Per pool (node names are <pool>-<index>).")] = {}
    nodes: Annotated[
        dict[str, str], Field(description="Node name -> pool, for nodes not named <pool>-<index> (site hosts).")
    ] = {}
    xids: Annotated[dict[str, XidRule], Field(description="XID (as a string) -> what it means and does.")] = {}
    row_remap_pending_max: Annotated[int, Field(ge=0)] = 0
    row_remap_failure_max: Annotated[int, Field(ge=0)] = 0
    ecc_uncorrected_volatile_max: Annotated[int, Field(ge=0)] = 0
    nvlink_inactive_max: Annotated[int, Field(ge=0)] = 0

    def pool_of(self, node: str) -> PoolHealth:
        """The node's pool (an unknown node gets only the XID check)."""
        name = self.nodes.get(node) or re.sub(r"-\d+$", "", node)
        return self.pools.get(name, PoolHealth())


def load(path: str | Path) -> HealthConfig:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(raw) > 16 << 20:
        raise ConfigError(f"{path}: larger than 16 MiB")
    try:
        return HealthConfig.model_validate(json.loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from exc
    except ValueError as exc:  # pydantic's ValidationError
        first = str(exc).splitlines()[1:2]
        raise ConfigError(f"{path}: invalid: {' '.join(first) or exc}") from exc
