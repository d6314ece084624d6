"""`aicluster-health --layer boot|prolog|epilog|periodic`: run the layer's checks, drain or resume the node.

Exit status: 0 healthy (or drained by someone else, which is theirs to handle), 1 the node is unhealthy (drained
here, or would be with `"drain": false`), 2 usage. It never prints a traceback: anything unexpected becomes a
`CHECK_FAILED` drain reason."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import socket
import sys
from pathlib import Path

from .checks import Finding, check_of, cleared_codes, read_boot_id, run_checks
from .config import DEFAULT_PATH, LAYERS, ConfigError, HealthConfig, Layer, load
from .reasons import format_reason, parse_reason
from .slurm import Scontrol, SlurmError

STATE_FILE = "state.json"
# reasons aicluster-repair writes on a node it holds for a person (repeat offender, no automatic repair): no check
# clears them, not even the boot layer
HELD_CODES = frozenset({"HELD"})


def log(message: str) -> None:
    print(f"aicluster-health: {message}", file=sys.stderr)


def _read_state(state_dir: Path) -> dict[str, object]:
    try:
        data = json.loads((state_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(state_dir: Path, state: dict[str, object]) -> None:
    tmp = state_dir / f".{STATE_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(state), encoding="utf-8")
    os.replace(tmp, state_dir / STATE_FILE)


def decide(
    findings: list[Finding], cleared: set[str], layer: Layer, current: str | None, *, passed: set[str]
) -> tuple[str, str | None]:
    """What to do with the node: ("drain", reason), ("resume", None), ("keep", why) or ("ok", None).

    - someone else's drain reason is never replaced or cleared;
    - our own reason is replaced only when its code was cleared in this run (else the first fault stays);
    - our own reason is cleared when the check that set it passed, or by the boot layer (after a reboot).
    """
    ours = parse_reason(current)
    draining = [f for f in findings if f.drain]
    if current and ours is None:
        return ("keep", f"drained by someone else ({current}); left alone")
    if ours is not None and ours.code in HELD_CODES:  # aicluster-repair held it for a person: a person resumes it
        return ("keep", f"held for a person ({current}); left alone")
    reason_cleared = ours is not None and (
        layer == "boot" or ours.code in cleared or check_of(ours.code, ours.detail) in passed
    )
    if draining:
        if ours is not None and not reason_cleared:
            return ("keep", f"already drained by aicluster ({current})")
        first = draining[0]
        more = f" (+{len(draining) - 1} more)" if len(draining) > 1 else ""
        return ("drain", format_reason(first.code, first.detail + more))
    if ours is not None:
        return ("resume", None) if reason_cleared else ("keep", f"{current}: not cleared by the {layer} checks")
    return ("ok", None)


def run(config: HealthConfig, layer: Layer, node: str) -> int:
    state_dir = Path(config.state_dir)
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with (state_dir / "lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # prolog and health check may overlap; the watermark is shared
        state = _read_state(state_dir)
        boot_id = read_boot_id(config.boot_id_file)
        if state.get("boot_id") != boot_id:
            if layer == "periodic":  # slurmd's first HealthCheckProgram run after a boot
                layer = "boot"
            state = {"boot_id": boot_id}
        mark = state.get("xid_watermark")
        outcome = run_checks(config, layer, node, float(mark) if isinstance(mark, int | float) else None)
        if outcome.new_watermark is not None:
            state["xid_watermark"] = outcome.new_watermark
        _write_state(state_dir, state)
    return act(config, layer, node, outcome.findings, outcome.passed)


def act(config: HealthConfig, layer: Layer, node: str, findings: list[Finding], passed: set[str]) -> int:
    for f in findings:
        log(f"{node} {layer}: {'FAIL' if f.drain else 'warn'} {f.code} {f.detail}")
    scontrol = Scontrol(config.tools.scontrol, config.timeout_s)
    unhealthy = any(f.drain for f in findings)
    current: str | None = None
    try:
        node_state = scontrol.show(node)
        current = node_state.reason if node_state.drained or node_state.down else None
    except SlurmError as exc:
        log(f"{node}: cannot read the node's state ({exc}); draining without it, never resuming")
        node_state = None
    what, arg = decide(findings, cleared_codes(passed), layer, current, passed=passed)
    if what == "keep":
        log(f"{node}: {arg}")
        return 1 if unhealthy else 0  # a prolog must still fail on a fault, whoever drained the node
    if what == "ok" or (what == "resume" and node_state is None):
        return 0
    if not config.drain:
        log(f"{node}: would {what}{' with ' + arg if arg else ''} (drain disabled)")
        return 1 if what == "drain" else 0
    try:
        if what == "drain" and arg is not None:
            scontrol.drain(node, arg, reboot_issued=node_state is not None and node_state.reboot_issued)
            log(f"{node}: drained: {arg}")
            return 1
        scontrol.resume(node)
        log(f"{node}: resumed (was {current})")
        return 0
    except SlurmError as exc:
        log(f"{node}: {what} failed: {exc}")
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aicluster-health", description=__doc__.splitlines()[0])
    parser.add_argument("--layer", choices=LAYERS, required=True)
    parser.add_argument("--config", default=os.environ.get("AICLUSTER_HEALTH_CONFIG", DEFAULT_PATH))
    parser.add_argument("--node", default=None, help="node name (default: $SLURMD_NODENAME, else the host name)")
    args = parser.parse_args(argv)
    node = args.node or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    layer: Layer = args.layer
    try:
        config = load(args.config)
    except ConfigError as exc:
        return act(HealthConfig(), layer, node, [Finding("CHECK_FAILED", f"config: {exc}")], set())
    try:
        return run(config, layer, node)
    except Exception as exc:  # the contract: a drain reason, never a traceback
        return act(config, layer, node, [Finding("CHECK_FAILED", f"internal: {type(exc).__name__}: {exc}")], set())


if __name__ == "__main__":
    sys.exit(main())
