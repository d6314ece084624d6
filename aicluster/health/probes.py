"""Reading the node: bounded tool calls and the parsers of their outputs. Every parser takes text (recorded in
tests) and raises ProbeError on anything it cannot read; nothing here decides health."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


class ProbeError(Exception):
    """A tool could not run, timed out, or said something we cannot read."""


def run_tool(argv: list[str], timeout_s: float, max_bytes: int) -> str:
    """Run a program (an argument list, never a shell) with a timeout; its stdout, decoded leniently."""
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.run(
                argv, stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise ProbeError(f"{os.path.basename(argv[0])} timed out after {timeout_s:g} s") from exc
        except OSError as exc:
            raise ProbeError(f"{os.path.basename(argv[0])} could not run: {exc.strerror or exc}") from exc
        size = out.seek(0, os.SEEK_END)
        if size > max_bytes:
            raise ProbeError(f"{os.path.basename(argv[0])} wrote {size} bytes (limit {max_bytes})")
        out.seek(0)
        data = out.read()
    if proc.returncode != 0:
        raise ProbeError(f"{os.path.basename(argv[0])} exited {proc.returncode}")
    if b"\x00" in data:
        raise ProbeError(f"{os.path.basename(argv[0])} wrote binary output")
    return data.decode("utf-8", errors="replace")


def read_small(path: Path, limit: int = 4096) -> str:
    """A sysfs/proc file's text (bounded); ProbeError when unreadable."""
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise ProbeError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise ProbeError(f"{path}: longer than {limit} bytes")
    return data.decode("utf-8", errors="replace").strip()


# ------------------------------------------------------------------------------------------------ nvidia-smi

GPU_QUERY = "index,pci.bus_id,name,pcie.link.width.current,pcie.link.width.max,ecc.errors.uncorrected.volatile.total"
REMAP_QUERY = "gpu_bus_id,remapped_rows.pending,remapped_rows.failure"
CLOCKS_QUERY = "index,clocks_throttle_reasons.active"
NA = {"[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]", ""}


@dataclass(frozen=True)
class Gpu:
    index: int
    bus_id: str
    name: str
    width_current: int | None
    width_max: int | None
    ecc_uncorrected: int | None


def _csv_rows(text: str, columns: int, what: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != columns:
            raise ProbeError(f"{what}: a line has {len(cells)} fields, expected {columns}")
        rows.append(cells)
    return rows


def _int(cell: str, what: str) -> int | None:
    if cell.lower() in NA:
        return None
    if not re.fullmatch(r"\d{1,12}", cell):
        raise ProbeError(f"{what}: {cell[:40]!r} is not a count")
    return int(cell)


def _flag(cell: str, what: str) -> int | None:
    """Row-remap flags: 0/1 or No/Yes (drivers differ)."""
    low = cell.lower()
    if low in NA:
        return None
    if low in ("no", "false"):
        return 0
    if low in ("yes", "true"):
        return 1
    return _int(cell, what)


def parse_gpus(text: str) -> list[Gpu]:
    """`nvidia-smi --query-gpu=GPU_QUERY --format=csv,noheader,nounits`."""
    gpus = []
    for index, bus, name, wcur, wmax, ecc in _csv_rows(text, 6, "nvidia-smi --query-gpu"):
        idx = _int(index, "GPU index")
        if idx is None or not name or not re.fullmatch(r"[0-9A-Fa-f:.]{1,20}", bus):
            raise ProbeError("nvidia-smi --query-gpu: a line without index, name or PCI bus id")
        gpus.append(Gpu(idx, bus, name, _int(wcur, "PCIe width"), _int(wmax, "PCIe width"), _int(ecc, "ECC")))
    return gpus


def parse_remapped_rows(text: str) -> list[tuple[str, int | None, int | None]]:
    """`nvidia-smi --query-remapped-rows=REMAP_QUERY --format=csv,noheader`: (bus id, pending, failure)."""
    return [
        (bus, _flag(pending, "remapped_rows.pending"), _flag(failure, "remapped_rows.failure"))
        for bus, pending, failure in _csv_rows(text, 3, "nvidia-smi --query-remapped-rows")
    ]


def parse_clock_reasons(text: str) -> list[tuple[int, int]]:
    """`nvidia-smi --query-gpu=CLOCKS_QUERY --format=csv,noheader`: (index, active reasons bit mask)."""
    out = []
    for index, mask in _csv_rows(text, 2, "nvidia-smi clocks_throttle_reasons"):
        idx = _int(index, "GPU index")
        if idx is None or not re.fullmatch(r"0x[0-9A-Fa-f]{1,16}", mask):
            raise ProbeError(f"clocks_throttle_reasons.active: {mask[:40]!r} is not a bit mask")
        out.append((idx, int(mask, 16)))
    return out


def parse_nvlink_status(text: str) -> dict[int, list[tuple[int, bool]]]:
    """`nvidia-smi nvlink -s`: GPU index -> [(link, active)]; a link reads `<inactive>` when it is down."""
    out: dict[int, list[tuple[int, bool]]] = {}
    gpu: int | None = None
    for line in text.splitlines():
        if m := re.match(r"GPU (\d+):", line):
            gpu = int(m.group(1))
            out[gpu] = []
        elif m := re.match(r"\s+Link (\d+):\s*(.*)$", line):
            if gpu is None:
                raise ProbeError("nvidia-smi nvlink -s: a link line before any GPU line")
            out[gpu].append((int(m.group(1)), "<inactive>" not in m.group(2)))
        elif line.strip():
            raise ProbeError(f"nvidia-smi nvlink -s: unexpected line {line.strip()[:40]!r}")
    return out


# ------------------------------------------------------------------------------------------------ kernel log

XID_LINE = re.compile(r"^(?:\[\s*(?P<ts>\d+\.\d+)\]\s*)?NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>\d{1,4})\b")


@dataclass(frozen=True)
class XidEvent:
    xid: int
    pci: str
    ts: float | None


def parse_xids(text: str) -> list[XidEvent]:
    """The `NVRM: Xid (PCI:...): NN, ...` lines of `dmesg` (timestamps `[seconds]` since boot, if present)."""
    events = []
    for line in text.splitlines():
        m = XID_LINE.match(line.strip())
        if m:
            ts = float(m.group("ts")) if m.group("ts") else None
            events.append(XidEvent(int(m.group("xid")), m.group("pci"), ts))
    return events


# ------------------------------------------------------------------------------------------------ RDMA ports


@dataclass(frozen=True)
class RdmaPort:
    device: str
    port: str
    state: str  # e.g. ACTIVE, DOWN
    phys_state: str  # e.g. LinkUp, Polling
    rate_gbps: float | None
    netdev_up: bool | None  # EFA: the netdev's operstate (None: no netdev found)


def _after_colon(text: str) -> str:
    """sysfs `4: ACTIVE` -> `ACTIVE`."""
    return text.split(":", 1)[1].strip() if ":" in text else text.strip()


def parse_rate(text: str) -> float:
    """sysfs `rate`: `400 Gb/sec (4X NDR)` -> 400.0."""
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*Gb/sec", text)
    if not m:
        raise ProbeError(f"rate {text[:40]!r} is not `N Gb/sec`")
    return float(m.group(1))


def rdma_ports(sys_root: Path, prefix: str | None) -> list[RdmaPort]:
    base = sys_root / "class" / "infiniband"
    if not base.is_dir():
        return []
    ports = []
    for dev in sorted(base.iterdir()):
        if prefix and not dev.name.startswith(prefix):
            continue
        netdevs = sorted((dev / "device" / "net").glob("*/operstate")) if (dev / "device" / "net").is_dir() else []
        netdev_up = read_small(netdevs[0]) == "up" if netdevs else None
        port_dir = dev / "ports"
        if not port_dir.is_dir():
            raise ProbeError(f"{dev.name}: no ports directory")
        for port in sorted(port_dir.iterdir()):
            rate_text = read_small(port / "rate") if (port / "rate").exists() else ""
            ports.append(
                RdmaPort(
                    dev.name,
                    port.name,
                    _after_colon(read_small(port / "state")),
                    _after_colon(read_small(port / "phys_state")) if (port / "phys_state").exists() else "",
                    parse_rate(rate_text) if rate_text else None,
                    netdev_up,
                )
            )
    return ports


# ------------------------------------------------------------------------------------------------ mounts


def parse_mounts(text: str) -> dict[str, list[str]]:
    """/proc/self/mounts: mount point -> options of its last mount (octal escapes such as \\040 decoded)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
        out[point] = fields[3].split(",")
    return out
