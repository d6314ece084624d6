"""A fake GPU node for the health checker: recorded tool outputs behind stand-in nvidia-smi and dmesg, a recorded
/sys tree, a mount table, and a stand-in scontrol that keeps one node's state and reason in a JSON file."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
NODE = "gpu-001"

NVIDIA_SMI = """#!/bin/sh
case "$*" in
  --query-gpu=index,pci.bus_id*) f=gpus.csv ;;
  --query-remapped-rows=*) f=remap.csv ;;
  --query-gpu=index,clocks_throttle*) f=clocks.csv ;;
  "nvlink -s") f=nvlink.txt ;;
  *) echo "unexpected: $*" >&2; exit 9 ;;
esac
[ -f "{d}/exit-$f" ] && exit "$(cat "{d}/exit-$f")"
[ -f "{d}/sleep" ] && sleep "$(cat "{d}/sleep")"
exec cat "{d}/$f"
"""

DMESG = """#!/bin/sh
exec cat "{d}/dmesg.txt"
"""

# scontrol show node / update nodename=X state=DRAIN|RESUME reason=...; every call is logged
SCONTROL = """#!{python}
import json, sys
state_path, log_path = {state!r}, {log!r}
args = sys.argv[1:]
with open(log_path, "a") as fh:
    fh.write(json.dumps(args) + "\\n")
node = json.load(open(state_path))
if args[:2] == ["show", "node"]:
    print(f"NodeName={{args[2]}} Arch=x86_64 CoresPerSocket=56")
    print(f"   State={{node['state']}} ThreadsPerCore=2 TmpDisk=0 Weight=1")
    if node.get("reason"):
        print(f"   Reason={{node['reason']}} [root@2026-11-28T06:00:00]")
    sys.exit(0)
if args[:1] == ["update"]:
    kv = dict(a.split("=", 1) for a in args[1:])
    if kv["state"] == "DRAIN":
        node["state"] = node["state"].split("+")[0] + "+DRAIN"
        node["reason"] = kv["reason"]
    elif kv["state"] == "RESUME":
        node["state"] = node["state"].split("+")[0]
        node["reason"] = None
    json.dump(node, open(state_path, "w"))
    sys.exit(0)
sys.exit(2)
"""

IB_PORT = {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)"}


@dataclass
class FakeNode:
    root: Path
    # where the checker sees `root`: the same path, or the path inside a chroot whose directory `root` is in
    at: Path | None = None

    def seen(self, path: Path) -> Path:
        """`path` (under root) as the checker sees it."""
        return path if self.at is None else self.at / path.relative_to(self.root)

    @property
    def tools(self) -> Path:
        return self.root / "tools"

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def sys(self) -> Path:
        return self.root / "sys"

    def record(self, name: str, text: str | bytes) -> None:
        path = self.out / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())

    def ib_port(self, device: str, **values: str) -> None:
        port = self.sys / "class" / "infiniband" / device / "ports" / "1"
        port.mkdir(parents=True, exist_ok=True)
        for key, value in {**IB_PORT, **values}.items():
            (port / key).write_text(value + "\n")

    def set_node(self, state: str, reason: str | None = None) -> None:
        (self.root / "node.json").write_text(json.dumps({"state": state, "reason": reason}))

    def node(self) -> dict[str, Any]:
        return dict(json.loads((self.root / "node.json").read_text()))

    def calls(self) -> list[list[str]]:
        log = self.root / "scontrol.log"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def updates(self) -> list[list[str]]:
        return [c for c in self.calls() if c[:1] == ["update"]]

    def config(self, **overrides: Any) -> Path:
        cfg: dict[str, Any] = {
            "version": 1,
            "tools": {
                "nvidia_smi": str(self.seen(self.tools / "nvidia-smi")),
                "dmesg": str(self.seen(self.tools / "dmesg")),
                "scontrol": str(self.seen(self.tools / "scontrol")),
            },
            "sys_root": str(self.seen(self.sys)),
            "mounts_file": str(self.seen(self.root / "mounts")),
            "boot_id_file": str(self.seen(self.root / "boot_id")),
            "state_dir": str(self.seen(self.root / "state")),
            "timeout_s": 5,
            "max_output_bytes": 1 << 20,
            "pools": {
                "gpu": {
                    "gpus": 8,
                    "gpu_model": "H100",
                    "nvlink": True,
                    "fabric": "infiniband",
                    "ib_device_prefix": "mlx5_ib",
                    "ib_ports": 8,
                    "ib_rate_gbps": 400,
                    "mounts": [{"path": str(self.seen(self.root / "scratch"))}],
                }
            },
            "xids": {
                "13": {"name": "Graphics engine exception", "action": "RESTART_APP", "drain": False},
                "48": {"name": "double-bit ECC error", "action": "WORKFLOW_XID_48", "drain": True},
                "79": {"name": "GPU has fallen off the bus", "action": "RESTART_BM", "drain": True},
            },
        }
        cfg.update(overrides)
        path = self.root / "health.json"
        path.write_text(json.dumps(cfg))
        return path


def healthy_node(root: Path, at: Path | None = None, python: str = sys.executable) -> FakeNode:
    """An H100 node (8 GPUs, 8 NDR ports, a writable scratch mount) that passes every check. `at`: where the checker
    sees `root` (inside a chroot); `python`: the interpreter of the stand-in scontrol there."""
    node = FakeNode(root, at)
    node.tools.mkdir()
    node.out.mkdir()
    (root / "scratch").mkdir()
    for name, text in {
        "nvidia-smi": NVIDIA_SMI.format(d=node.seen(node.out)),
        "dmesg": DMESG.format(d=node.seen(node.out)),
        "scontrol": SCONTROL.format(
            python=python, state=str(node.seen(root / "node.json")), log=str(node.seen(root / "scontrol.log"))
        ),
    }.items():
        (node.tools / name).write_text(text)
        (node.tools / name).chmod(0o755)
    for name, recorded in {
        "gpus.csv": "gpus-h100.csv",
        "remap.csv": "remap-clean.csv",
        "clocks.csv": "clocks-idle.csv",
        "nvlink.txt": "nvlink-h100.txt",
        "dmesg.txt": "dmesg-healthy.txt",
    }.items():
        shutil.copy(DATA / recorded, node.out / name)
    for i in range(8):
        node.ib_port(f"mlx5_ib{i}")
    node.ib_port("mlx5_an0", rate="100 Gb/sec (4X EDR)")  # the Ethernet NIC: not an IB port of the pool
    scratch = node.seen(root / "scratch")
    (root / "mounts").write_text(f"proc /proc proc rw,nosuid 0 0\ntmpfs {scratch} tmpfs rw,relatime 0 0\n")
    (root / "boot_id").write_text("6a1f0e0c-boot-0001\n")
    node.set_node("IDLE")
    node.config()
    return node
