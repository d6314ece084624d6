"""The checks, which of them each layer runs, and which drain-reason codes each one owns.

A check returns findings; a check that cannot run (tool missing, timed out, output unreadable) yields one
`CHECK_FAILED` finding naming it, so a broken probe drains the node rather than passing it. Thresholds come from
the configuration (rendered from the catalog's data/health.yaml)."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .config import HealthConfig, Layer, PoolHealth
from .probes import (
    CLOCKS_QUERY,
    GPU_QUERY,
    REMAP_QUERY,
    Gpu,
    ProbeError,
    XidEvent,
    parse_clock_reasons,
    parse_gpus,
    parse_mounts,
    parse_nvlink_status,
    parse_remapped_rows,
    parse_xids,
    rdma_ports,
    read_small,
    run_tool,
)


@dataclass(frozen=True)
class Finding:
    code: str  # the drain reason code (reasons.py grammar)
    detail: str
    drain: bool = True  # False: a warning, logged only


@dataclass
class Context:
    config: HealthConfig
    pool: PoolHealth
    xid_watermark: float | None  # kernel-log seconds already scanned (None: nothing yet this boot)
    new_watermark: float | None = None
    started: float = field(default_factory=time.monotonic)
    _gpus: list[Gpu] | None = field(default=None, repr=False)

    def tool(self, name: str, *args: str) -> str:
        cfg = self.config
        left = cfg.deadline_s - (time.monotonic() - self.started)
        if left <= 0:
            raise ProbeError(f"no time left of the run's {cfg.deadline_s:g} s")
        return run_tool([getattr(cfg.tools, name), *args], min(cfg.timeout_s, left), cfg.max_output_bytes)

    def gpus(self) -> list[Gpu]:
        if self._gpus is None:
            self._gpus = parse_gpus(
                self.tool("nvidia_smi", f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits")
            )
        return self._gpus


def check_gpus(ctx: Context) -> list[Finding]:
    want = ctx.pool.gpus
    if want == 0:
        return []
    gpus = ctx.gpus()
    out = []
    if len(gpus) != want:
        out.append(Finding("GPU_COUNT", f"expected {want} GPUs, nvidia-smi lists {len(gpus)}"))
    if ctx.pool.gpu_model:
        wrong = [g for g in gpus if ctx.pool.gpu_model.lower() not in g.name.lower()]
        if wrong:
            g = wrong[0]
            out.append(Finding("GPU_MODEL", f"GPU {g.index} is {g.name!r}, expected a {ctx.pool.gpu_model}"))
    return out


def check_xids(ctx: Context) -> list[Finding]:
    text = ctx.tool("dmesg")
    events = parse_xids(text)
    mark = ctx.xid_watermark
    fresh: list[XidEvent] = [
        e for e in events if (mark is None) or (e.ts is not None and e.ts > mark)
    ]  # untimestamped lines count only on a boot's first scan
    stamps = [e.ts for e in events if e.ts is not None]
    ctx.new_watermark = max([*stamps, *([mark] if mark is not None else [])], default=mark)
    if ctx.new_watermark is None:
        ctx.new_watermark = 0.0
    out = []
    for e in fresh:
        rule = ctx.config.xids.get(str(e.xid))
        if rule is None:
            out.append(Finding(f"XID{e.xid}", f"GPU {e.pci} unknown to the XID catalog", drain=False))
            continue
        action = f" ({rule.action})" if rule.action else ""
        out.append(Finding(f"XID{e.xid}", f"GPU {e.pci} {rule.name}{action}", drain=rule.drain))
    return out


def check_row_remap(ctx: Context) -> list[Finding]:
    if ctx.pool.gpus == 0:
        return []
    rows = parse_remapped_rows(ctx.tool("nvidia_smi", f"--query-remapped-rows={REMAP_QUERY}", "--format=csv,noheader"))
    out = []
    for bus, pending, failure in rows:
        if failure is not None and failure > ctx.config.row_remap_failure_max:
            out.append(Finding("ROW_REMAP_FAILED", f"GPU {bus} row remapping failed (RMA candidate)"))
        elif pending is not None and pending > ctx.config.row_remap_pending_max:
            out.append(Finding("ROW_REMAP_PENDING", f"GPU {bus} row remap pending (reset the GPU)"))
    return out


def check_ecc(ctx: Context) -> list[Finding]:
    if ctx.pool.gpus == 0:
        return []
    limit = ctx.config.ecc_uncorrected_volatile_max
    return [
        Finding("ECC_UNCORRECTED", f"GPU {g.index} has {g.ecc_uncorrected} uncorrected volatile ECC errors")
        for g in ctx.gpus()
        if g.ecc_uncorrected is not None and g.ecc_uncorrected > limit
    ]


def check_pcie(ctx: Context) -> list[Finding]:
    """The link trained narrower than the GPU can (width only: the generation drops at idle to save power)."""
    if ctx.pool.gpus == 0:
        return []
    return [
        Finding("PCIE_WIDTH", f"GPU {g.index} PCIe link x{g.width_current} of x{g.width_max}")
        for g in ctx.gpus()
        if g.width_current is not None and g.width_max is not None and g.width_current < g.width_max
    ]


def check_nvlink(ctx: Context) -> list[Finding]:
    if ctx.pool.gpus == 0 or not ctx.pool.nvlink:
        return []
    status = parse_nvlink_status(ctx.tool("nvidia_smi", "nvlink", "-s"))
    if not status:
        return [Finding("NVLINK_INACTIVE", "nvidia-smi nvlink -s lists no GPU")]
    out = []
    for gpu, links in sorted(status.items()):
        down = [n for n, active in links if not active]
        if not links or len(down) > ctx.config.nvlink_inactive_max:
            what = f"links {','.join(map(str, down))} inactive" if links else "no NVLink links"
            out.append(Finding("NVLINK_INACTIVE", f"GPU {gpu} {what}"))
    return out


# DCGM_FI_DEV_CLOCKS_EVENT_REASONS bits that mean the hardware slowed the GPU (nvml.h clocksEventReasons):
# HW slowdown 0x8, HW thermal 0x40, HW power brake 0x80. AzNHC only logs throttling, so this never drains.
HW_SLOWDOWN_MASK = 0x8 | 0x40 | 0x80


def check_clocks(ctx: Context) -> list[Finding]:
    if ctx.pool.gpus == 0:
        return []
    text = ctx.tool("nvidia_smi", f"--query-gpu={CLOCKS_QUERY}", "--format=csv,noheader")
    return [
        Finding("GPU_THROTTLE", f"GPU {idx} hardware clock slowdown (reasons {mask:#x})", drain=False)
        for idx, mask in parse_clock_reasons(text)
        if mask & HW_SLOWDOWN_MASK
    ]


def check_fabric(ctx: Context) -> list[Finding]:
    pool = ctx.pool
    if pool.fabric is None:
        return []
    ports = rdma_ports(Path(ctx.config.sys_root), pool.ib_device_prefix)
    out = []
    if pool.fabric == "efa":  # the EFA driver always reports ACTIVE/LinkUp: its netdev tells
        for p in ports:
            if p.netdev_up is False:
                out.append(Finding("IB_PORT_DOWN", f"{p.device} port {p.port} netdev not up"))
    else:
        for p in ports:
            if p.state != "ACTIVE" or (p.phys_state and p.phys_state != "LinkUp"):
                out.append(Finding("IB_PORT_DOWN", f"{p.device} port {p.port} {p.state}/{p.phys_state or '?'}"))
                continue
            if pool.ib_rate_gbps and (p.rate_gbps is None or p.rate_gbps < pool.ib_rate_gbps):
                out.append(
                    Finding(
                        "IB_RATE", f"{p.device} port {p.port} at {p.rate_gbps:g} Gb/s, expected {pool.ib_rate_gbps:g}"
                    )
                    if p.rate_gbps is not None
                    else Finding("IB_RATE", f"{p.device} port {p.port} has no rate")
                )
    want = pool.ib_ports or 1
    if len(ports) < want:  # a port that is there but down is IB_PORT_DOWN above
        out.append(Finding("IB_MISSING", f"{len(ports)} of {want} {pool.fabric} ports present"))
    return out


def _writable(path: str, timeout_s: float) -> str | None:
    """None when a file can be created and removed under `path` within the timeout; else why not."""
    result: list[str | None] = []

    def attempt() -> None:
        probe = os.path.join(path, f".aicluster-health-{uuid.uuid4().hex}")
        try:
            fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.close(fd)
            os.unlink(probe)
            result.append(None)
        except OSError as exc:
            result.append(exc.strerror or str(exc))

    worker = threading.Thread(target=attempt, daemon=True)  # a hung NFS write must not hang the check
    worker.start()
    worker.join(timeout_s)
    return result[0] if result else f"no answer in {timeout_s:g} s"


def check_mounts(ctx: Context) -> list[Finding]:
    if not ctx.pool.mounts:
        return []
    table = parse_mounts(read_small(Path(ctx.config.mounts_file), limit=4 << 20))
    out = []
    for mount in ctx.pool.mounts:
        point = mount.path
        options = table.get(point.rstrip("/") or "/")
        if options is None:
            out.append(Finding("FS_MISSING", f"{point} not mounted"))
        elif "ro" in options:
            out.append(Finding("FS_READONLY", f"{point} mounted read-only"))
        elif mount.write_check and (why := _writable(point, ctx.config.timeout_s)) is not None:
            out.append(Finding("FS_READONLY", f"{point} not writable: {why}"))
    return out


Check = Callable[[Context], list[Finding]]

# name -> (check, codes it owns: a reason with one of these codes is cleared when the check passes)
CHECKS: dict[str, tuple[Check, tuple[str, ...]]] = {
    "gpus": (check_gpus, ("GPU_COUNT", "GPU_MODEL")),
    "xids": (check_xids, ()),  # events: an XID reason is cleared only by the boot layer
    "row_remap": (check_row_remap, ("ROW_REMAP_PENDING", "ROW_REMAP_FAILED")),
    "ecc": (check_ecc, ("ECC_UNCORRECTED",)),
    "pcie": (check_pcie, ("PCIE_WIDTH",)),
    "nvlink": (check_nvlink, ("NVLINK_INACTIVE",)),
    "clocks": (check_clocks, ("GPU_THROTTLE",)),
    "fabric": (check_fabric, ("IB_PORT_DOWN", "IB_RATE", "IB_MISSING")),
    "mounts": (check_mounts, ("FS_MISSING", "FS_READONLY")),
}

# The prolog runs before every job, so only what takes seconds: one nvidia-smi query, dmesg, sysfs, the mounts.
LAYER_CHECKS: dict[str, tuple[str, ...]] = {
    "prolog": ("gpus", "xids", "row_remap", "fabric", "mounts"),
    "epilog": ("gpus", "xids", "row_remap", "ecc", "fabric", "mounts"),
    "periodic": tuple(CHECKS),
    "boot": tuple(CHECKS),
}

# The order findings are reported in: the first draining one becomes the reason.
SEVERITY = (
    "CHECK_FAILED",
    "GPU_COUNT",
    "XID",
    "ROW_REMAP_FAILED",
    "GPU_MODEL",
    "ECC_UNCORRECTED",
    "ROW_REMAP_PENDING",
    "NVLINK_INACTIVE",
    "IB_MISSING",
    "IB_PORT_DOWN",
    "IB_RATE",
    "PCIE_WIDTH",
    "FS_MISSING",
    "FS_READONLY",
)


def _rank(f: Finding) -> int:
    key = "XID" if f.code.startswith("XID") else f.code
    return SEVERITY.index(key) if key in SEVERITY else len(SEVERITY)


@dataclass
class Outcome:
    findings: list[Finding]
    passed: set[str]  # checks that ran to the end and found nothing that drains
    new_watermark: float | None


def run_checks(config: HealthConfig, layer: Layer, node: str, xid_watermark: float | None) -> Outcome:
    ctx = Context(config, config.pool_of(node), xid_watermark)
    findings: list[Finding] = []
    passed: set[str] = set()
    for name in LAYER_CHECKS[layer]:
        check, _ = CHECKS[name]
        try:
            got = check(ctx)
        except ProbeError as exc:
            findings.append(Finding("CHECK_FAILED", f"{name}: {exc}"))
            continue
        findings.extend(got)
        if not any(f.drain for f in got):
            passed.add(name)
    findings.sort(key=_rank)
    return Outcome(findings, passed, ctx.new_watermark)


def cleared_codes(passed: set[str]) -> set[str]:
    return {code for name in passed for code in CHECKS[name][1]}


def check_of(code: str, detail: str) -> str | None:
    """The check a CHECK_FAILED reason names (`CHECK_FAILED gpus: ...` -> `gpus`)."""
    if code != "CHECK_FAILED":
        return None
    head = detail.split(":", 1)[0]
    return head if head in CHECKS else None


def read_boot_id(path: str) -> str:
    try:
        return read_small(Path(path), limit=256)
    except ProbeError:
        return ""
