"""Draining and resuming through scontrol (argument lists, never a shell). Only aicluster's own reasons are ever
replaced or cleared: a node someone else drained keeps their reason."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from .reasons import clean


class SlurmError(Exception):
    pass


@dataclass(frozen=True)
class NodeState:
    state: str  # e.g. IDLE+DRAIN
    reason: str | None  # without the ` [user@time]` suffix

    @property
    def flags(self) -> set[str]:
        return set(self.state.split("+"))

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.flags

    @property
    def down(self) -> bool:
        return self.state.split("+")[0] == "DOWN"

    @property
    def reboot_issued(self) -> bool:
        """Slurm rebooted the node and waits for it to register: slurmd's health check at boot runs now."""
        return "REBOOT_ISSUED" in self.flags


def parse_show_node(text: str) -> NodeState:
    """`scontrol show node NAME` (multi-line form: the reason is alone on its line)."""
    state = re.search(r"\bState=(\S+)", text)
    if state is None:
        raise SlurmError("scontrol show node: no State=")
    reason = None
    for line in text.splitlines():
        if m := re.match(r"\s*Reason=(.*)$", line):
            reason = re.sub(r" \[[^\[\]@ ]+@[^\[\] ]+\]$", "", m.group(1).strip()) or None
    return NodeState(state.group(1), reason)


@dataclass
class Scontrol:
    path: str
    timeout_s: float

    def _run(self, *args: str) -> str:
        try:
            proc = subprocess.run(
                [self.path, *args],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=self.timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"scontrol {args[0]}: {exc}") from exc
        if proc.returncode != 0:
            raise SlurmError(f"scontrol {args[0]}: {clean(proc.stderr or proc.stdout, 300)}")
        return proc.stdout

    def show(self, node: str) -> NodeState:
        return parse_show_node(self._run("show", "node", node))

    def drain(self, node: str, reason: str, *, reboot_issued: bool = False) -> None:
        """Drain `node` with `reason`. `reboot_issued`: the node is DOWN+REBOOT_ISSUED, waiting to register after a
        `scontrol reboot` (slurmd runs its health check before it registers). Slurm (22.05 and 24.11, observed)
        takes a drain then, but the registration that ends the reboot clears it (nextstate=RESUME: IDLE; DOWN: DOWN,
        which ReturnToService=2 returns to service at the next registration; 24.11 without accounting storage keeps
        the reason on the IDLE node, 22.05 clears it). `scontrol cancel_reboot` is refused then (both releases). So
        the reboot is ended first with RESUME (the node becomes IDLE+NOT_RESPONDING: not schedulable until it
        registers) and the drain given after it; the registration then keeps it: IDLE+DRAIN with this reason."""
        if "=" in reason or not reason.isprintable() or "\n" in reason:
            raise ValueError(f"not a reason scontrol takes: {reason!r}")
        if reboot_issued:
            self._run("update", f"nodename={node}", "state=RESUME")
        self._run("update", f"nodename={node}", "state=DRAIN", f"reason={reason}")

    def resume(self, node: str) -> None:
        self._run("update", f"nodename={node}", "state=RESUME")
