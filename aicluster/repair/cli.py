"""`aicluster-repair [--config PATH] [--dry-run]`: one pass over the cluster's drained nodes (a systemd timer runs
it every minute on the Slurm controller, as root: BMC password files are root's).

One pass, under the state directory's lock:
1. `scontrol -o show node`: every node, its state and reason. Only reasons of aicluster's grammar are read
   (reasons.parse_reason); a node someone else drained is never touched.
2. Repairs in flight are closed when the node is back in service (no DRAIN, DOWN, REBOOT_* or POWER_DOWN state),
   drained again with a new code (the boot check found a fault: it is a candidate again), or taken over by
   someone else's reason; one still not back after repair_timeout_s is held.
3. Candidates: our reason (not HELD, not REPAIR), DRAIN with no job left: IDLE, DOWN or UNKNOWN, not COMPLETING.
   The action is config.actions[code] (a code not there is held), by platform: a burst node (one of
   burst_config's node sets) is replaced: its instance deleted through its group, the node powered down, so Slurm
   powers it up on a new one. Otherwise reset_gpu and reboot are a Slurm reboot (`scontrol reboot ASAP
   nextstate=RESUME`; the per-GPU `nvidia-smi -r` runs only on the node, so a reboot is the portable reset), or a
   BMC power cycle when the owned node's slurmd does not answer; power_cycle and replace are, on a cloud node of
   one of config.node_sets, a replacement through its group, on an owned node a Redfish power cycle (held without
   a BMC; an owned replace is held: hardware is not replaced by a program).
4. Guard rails: a node repaired repeat_count times within repeat_window_s is held (repeat offender), before the
   circuit breaker is asked; a repair starts only while the nodes in repair (the state's repairs in flight, and
   Slurm's nodes out of service with a REPAIR reason, or with a reboot pending) stay within max_share_in_repair of
   all nodes. Holds are never limited: they take nodes out of nobody's hands. A reason on a node back in service
   is stale (live_reason) and read as none.
5. A node in repair reads `aicluster-health:REPAIR <action> <CODE> <detail>`; a held one `aicluster-health:HELD
   <why>; <CODE> <detail>`, which aicluster-health never clears (a person resumes it). The state and a report
   (report.json: the breaker, the nodes in repair, the held nodes and why) are written atomically.

Exit status: 0, 1 when Slurm, a BMC or a cloud refused something (logged), 2 for a bad configuration.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aicluster.burst.cloud import CloudError, replace_instances
from aicluster.burst.common import AnyNodeSet, Opener, default_opener
from aicluster.burst.common import setup_logging as shared_logging
from aicluster.burst.config import (
    BurstConfig,
    ConfigError,  # one error type for both programs' configurations
)
from aicluster.burst.config import load as load_burst
from aicluster.burst.slurm import Scontrol, SlurmError, node_states, own_reason, parse_node_line
from aicluster.burst.suspend import suspend
from aicluster.health.reasons import format_reason, parse_reason
from aicluster.repair.config import RepairConfig, config_path, load
from aicluster.repair.redfish import Redfish, RedfishError
from aicluster.repair.state import Busy, Held, NodeState, OpenRepair, State, locked, read, write_atomic

PROG = "aicluster-repair"
REPORT_FILE = "report.json"
REPAIR, HELD = "REPAIR", "HELD"
# a node in these states is not back from its repair yet
NOT_BACK = {"DRAIN", "DOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED", "POWER_DOWN", "POWERING_DOWN", "POWERING_UP"}
NO_JOB = {"IDLE", "DOWN", "UNKNOWN"}  # base states of a node with no job left
IN_FLIGHT = {"REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERING_DOWN", "POWER_DOWN"}
POWER_MOVING = {"POWERING_UP", "POWERING_DOWN", "POWER_DOWN"}

log = logging.getLogger("aicluster.repair")


def live_reason(record: dict[str, str]) -> str:
    """The node's reason (without Slurm's ` [user@time]`) while the node is out of service (NOT_BACK); "" once it
    is back. Slurm reasons are for DOWN, DRAIN and FAIL nodes, but from 23.02.5 to 25.11 a slurmctld without
    accounting storage (aicluster renders none) keeps the last reason on a node resumed or returned to service
    after a reboot, until a job is allocated to it: it clears reasons in clusteracct_storage_g_node_up, a no-op
    without a database (SchedMD commit 332d015ef3; fixed in 26.05, cd41b6164d; seen on 24.11 by
    tests/integration/test_repair_reboot.py). A stale REPAIR or HELD reason on a node back in service is no repair
    and no hold."""
    states = node_states(record)
    return own_reason(record.get("Reason", "")) if states & NOT_BACK else ""


BmcOpener = Callable[..., Redfish]


@dataclass
class Outcome:
    repaired: list[str] = field(default_factory=list)  # repairs begun this pass
    held: list[str] = field(default_factory=list)  # held this pass
    waiting: list[str] = field(default_factory=list)  # left for the circuit breaker
    errors: list[str] = field(default_factory=list)


class Repairer:
    def __init__(self, config: RepairConfig, slurm: Scontrol, now: float, bmc_opener: BmcOpener = Redfish.connect,
                 cloud_opener: Opener = default_opener, dry_run: bool = False) -> None:  # fmt: skip
        self.config = config
        self.slurm = slurm
        self.now = now
        self.bmc_opener = bmc_opener
        self.cloud_opener = cloud_opener
        self.act = config.enabled and not dry_run
        self.burst: BurstConfig | None = None
        self.burst_nodes: set[str] = set()  # nodes of the bursting configuration's node sets
        self.group_of: dict[str, AnyNodeSet] = {}  # nodes of the groups Pulumi keeps at their size
        self.cloud_pool: dict[str, str] = {}  # node -> its cloud pool (the plan's, whether its group is known or not)
        self.records_now: dict[str, dict[str, str]] = {}

    def memberships(self) -> None:
        """Which cloud nodes are burst nodes and which belong to a fixed-size group (hostlists expanded by scontrol).
        A bursting configuration that cannot be read is logged: its nodes' replacements are held meanwhile."""
        path = self.config.burst_config
        if path and Path(path).exists():
            try:
                self.burst = load_burst(Path(path))
            except ConfigError as exc:
                log.error("%s", str(exc).splitlines()[0])
            else:
                for s in self.burst.node_sets:
                    self.burst_nodes.update(self.slurm.hostnames(s.nodes))
        for s in self.config.node_sets:
            for n in self.slurm.hostnames(s.nodes):
                self.group_of.setdefault(n, s)
        for pool, nodes in self.config.cloud_pools.items():
            for n in self.slurm.hostnames(nodes):
                self.cloud_pool.setdefault(n, pool)

    # ------------------------------------------------------------------------------------------ Slurm

    def records(self) -> dict[str, dict[str, str]]:
        lines = self.slurm.run("-o", "show", "node").splitlines()
        recs = [parse_node_line(line) for line in lines if line.strip()]
        return {r["NodeName"]: r for r in recs if "NodeName" in r}

    def set_reason(self, node: str, reason: str) -> None:
        self.slurm.update([node], state="DRAIN", reason=reason)

    # ------------------------------------------------------------------------------------------ one pass

    def run(self, state: State) -> tuple[Outcome, dict[str, object]]:
        cfg, out = self.config, Outcome()
        records = self.records()
        self.records_now = records
        self.memberships()
        window_start = self.now - cfg.repeat_window_s
        for s in state.nodes.values():
            s.history = [t for t in s.history if t > window_start]
        self.close_repairs(state, records, out)
        in_repair = {n for n, s in state.nodes.items() if s.open is not None}
        for name, rec in records.items():
            reason = parse_reason(live_reason(rec))
            if reason is not None and (reason.code == REPAIR or IN_FLIGHT & node_states(rec)):
                in_repair.add(name)
        limit = cfg.limit(len(records))
        for name in sorted(records):
            rec = records[name]
            text = live_reason(rec)
            reason = parse_reason(text)
            node = state.nodes.get(name)
            if node is not None and node.held is not None and (reason is None or reason.code != HELD):
                log.info("node %s: no longer held (reason now %r); its hold is cleared", name, text or None)
                node.held = None
            if reason is None or reason.code in (REPAIR, HELD) or (node is not None and node.open is not None):
                continue
            states = node_states(rec)
            base = rec.get("State", "").split("+", 1)[0].rstrip("*~#!%$@^-")
            if "DRAIN" not in states:
                continue
            if base not in NO_JOB or "COMPLETING" in states:
                log.info("node %s (State=%s): %s; waiting for its jobs to end", name, rec.get("State"), text)
                continue
            if states & POWER_MOVING:
                continue
            action, why = self.resolve(name, reason.code, states)
            ns = state.node(name)
            if action != "hold" and len(ns.history) >= cfg.repeat_count:
                days = cfg.repeat_window_s / 86400
                action, why = "hold", (f"repeat offender: {len(ns.history)} repairs in {days:g} d "
                                       f"(limit {cfg.repeat_count})")  # fmt: skip
            if action == "hold":
                self.hold(name, ns, why, text, out)
                continue
            if len(in_repair) + 1 > limit:
                log.warning("node %s: %s wanted (%s), circuit breaker: %d of %d nodes in repair, at most %d (%g)",
                            name, action, reason.code, len(in_repair), len(records), limit,
                            cfg.max_share_in_repair)  # fmt: skip
                out.waiting.append(name)
                continue
            if not self.act:
                log.info("node %s: would %s (%s)", name, action, text)
                continue
            ns.history.append(self.now)  # an attempt counts: a BMC that fails every minute ends held, not hammered
            try:
                self.start(name, action, reason.code, text, states)
            except Exception as exc:  # this node only (Slurm, the BMC, the cloud refused): the others go on
                exc_text = str(exc) if isinstance(exc, SlurmError | RedfishError | OSError | CloudError) else (
                    f"{type(exc).__name__}: {exc}")  # fmt: skip
                log.error("node %s: %s failed: %s", name, action, exc_text)
                out.errors.append(f"{name}: {action}: {exc_text}")
                continue
            ns.open = OpenRepair(action, self.now, reason.code, text)
            in_repair.add(name)
            out.repaired.append(name)
        report = self.report(state, records, in_repair, limit, out)
        return out, report

    def resolve(self, name: str, code: str, states: set[str]) -> tuple[str, str]:
        """(action on this node, why it is held when the action is hold)."""
        wanted = self.config.actions.get(code)
        if wanted is None:
            return "hold", f"{code}: no automatic repair known"
        if wanted == "hold":
            return "hold", f"{code}: needs a person"
        if name in self.burst_nodes:  # a new instance at the next power-up: the whole node is new
            return "replace", ""
        if wanted in ("reset_gpu", "reboot"):
            if "NOT_RESPONDING" in states and "CLOUD" not in states and name in self.config.bmcs:
                return "power_cycle", ""  # slurmd does not answer: a Slurm reboot would never reach the node
            return "reboot", ""
        if "CLOUD" in states or name in self.group_of or name in self.cloud_pool:
            if name in self.group_of:
                return "replace", ""
            if name in self.cloud_pool:  # rendered before `pulumi up`: the pool's group was not known then
                pool = self.cloud_pool[name]
                return (
                    "hold",
                    f"{code}: a replacement, but cloud pool {pool}'s group unknown (inventory after pulumi up)",
                )
            return "hold", f"{code}: needs a {wanted} and no cloud group of the node is known"
        if wanted == "power_cycle":
            if name in self.config.bmcs:
                return "power_cycle", ""
            return "hold", f"{code}: needs a power cycle and the node has no Redfish BMC"
        return "hold", f"{code}: an owned node is replaced by a person"

    def hold(self, name: str, ns: NodeState, why: str, text: str, out: Outcome) -> None:
        reason = format_reason(HELD, f"{why}; {text.removeprefix('aicluster-health:')}")
        if not self.act:
            log.warning("node %s: would hold: %s", name, reason)
            return
        log.warning("node %s: held: %s", name, reason)
        try:
            self.set_reason(name, reason)
        except SlurmError as exc:
            out.errors.append(f"{name}: hold: {exc}")
            log.error("node %s: hold failed: %s", name, exc)
            return
        ns.held = Held(self.now, why)
        out.held.append(name)

    def start(self, name: str, action: str, code: str, text: str, states: set[str]) -> None:
        detail = f"{action} {text.removeprefix('aicluster-health:')}"
        reason = format_reason(REPAIR, detail)
        log.warning("node %s: %s (was: %s)", name, action, text)
        if action == "reboot":
            # the per-GPU reset (nvidia-smi -r) runs only on the node with its GPUs idle; a reboot resets them all.
            # slurmd's health check at boot (the boot layer) runs before the node registers. Healthy: the
            # registration ends the reboot with nextstate=RESUME (IDLE; 24.11 keeps the REPAIR reason, stale:
            # live_reason), no person needed. Still faulty: the check ends the reboot itself (RESUME) and drains
            # after it, because Slurm (22.05 and 24.11) clears a drain given while it waits for the reboot
            # (aicluster/health/slurm.py drain); the node stays drained with the fault's reason, and the next pass
            # closes this repair and takes the node up again.
            self.slurm.run("reboot", "ASAP", "nextstate=RESUME", f"reason={reason}", name)
            return
        self.set_reason(name, reason)  # marked first: a concurrent health check must not resume it mid-way
        try:
            if action == "power_cycle":
                done = self.bmc_opener(self.config.bmcs[name], self.config.api_timeout_s).power_cycle(
                    self.config.power_off_wait_s
                )
                log.warning("node %s: BMC %s", name, done)
            elif action == "replace" and name in self.burst_nodes:
                self.replace_burst(name, states)
            elif action == "replace":
                self.replace_in_group(name, self.records_now.get(name, {}))
        except BaseException:
            try:
                self.set_reason(name, text)  # the fault's reason back: the next pass tries again (or holds it)
            except SlurmError as exc:
                log.error("node %s: could not restore its reason: %s", name, exc)
            raise

    def replace_burst(self, name: str, states: set[str]) -> None:
        """A burst node: delete its instance through its group (the SuspendProgram's own code, under its group
        lock), then power the node down: Slurm powers it up again on a new instance when a job needs it."""
        assert self.burst is not None
        errors = suspend(self.burst, self.slurm, [name], self.cloud_opener)
        if errors:
            raise OSError("; ".join(errors))
        if "POWERED_DOWN" in states:  # powered down already: undrained, it powers up on a new instance
            self.slurm.update([name], state="RESUME")
        else:
            self.slurm.update([name], state="POWER_DOWN_FORCE", reason=format_reason(REPAIR, f"replace {name}"))

    def replace_in_group(self, name: str, rec: dict[str, str]) -> None:
        """A node of a group Pulumi keeps at its size: its instance (the one at the node's address) is deleted and
        the group's size set back, so the group launches a new one. The node stays drained (REPAIR) until the new
        instance is set up as that node and its first health check passes; the repair timeout holds it if not."""
        node_set = self.group_of[name]
        group = self.cloud_opener(node_set, self.burst_for(node_set))
        addresses = {a for a in (rec.get("NodeAddr"), rec.get("NodeHostName")) if a and a != name}
        mine = [i for i in group.instances() if i.alive and (i.node == name or {i.address, i.hostname} & addresses)]
        if len(mine) != 1:
            raise OSError(f"group {group.name}: {len(mine)} live instances at the node's address {sorted(addresses)}")
        replace_instances(group, [mine[0].id])
        log.warning(
            "node %s: group %s: instance %s deleted, the group launches a new one", name, group.name, mine[0].id
        )

    def burst_for(self, node_set: AnyNodeSet) -> BurstConfig:
        """The settings the group code takes (timeouts, cluster), for a group that is not a burst one."""
        return BurstConfig(cluster=self.config.cluster, node_sets=[node_set], api_timeout_s=self.config.api_timeout_s)

    def close_repairs(self, state: State, records: dict[str, dict[str, str]], out: Outcome) -> None:
        for name, ns in state.nodes.items():
            o = ns.open
            if o is None:
                continue
            rec = records.get(name)
            if rec is None:
                log.info("node %s: no longer in Slurm; its repair is closed", name)
                ns.open = None
                continue
            states = node_states(rec)
            text = live_reason(rec)
            reason = parse_reason(text)
            if not states & NOT_BACK:
                log.info("node %s: back in service after %s (%s)", name, o.action, rec.get("State"))
                ns.open = None
            elif reason is None and text:
                log.info("node %s: drained by someone else (%s); its repair is closed, the node left alone", name, text)
                ns.open = None
            elif reason is not None and reason.code != REPAIR:
                log.warning("node %s: after %s it reads %s", name, o.action, text)
                ns.open = None
            elif self.now - o.since > self.config.repair_timeout_s:
                ns.open = None
                why = f"{o.action} not done after {self.config.repair_timeout_s:g} s"
                self.hold(name, ns, why, o.reason or text, out)

    def report(self, state: State, records: dict[str, dict[str, str]], in_repair: set[str], limit: int,
               out: Outcome) -> dict[str, object]:  # fmt: skip
        held: dict[str, dict[str, object]] = {
            n: {"since": s.held.since, "why": s.held.why, "repairs_in_window": len(s.history)}
            for n, s in sorted(state.nodes.items()) if s.held is not None
        }  # fmt: skip
        for name, rec in sorted(records.items()):  # Slurm's HELD reasons too: a lost state file forgets none
            reason = parse_reason(live_reason(rec))
            if reason is not None and reason.code == HELD and name not in held:
                history = state.nodes[name].history if name in state.nodes else []
                held[name] = {"since": None, "why": reason.detail.split("; ", 1)[0], "repairs_in_window": len(history)}
        return {
            "time": self.now,
            "nodes": len(records),
            "circuit_breaker": {
                "in_repair": sorted(in_repair),
                "limit": limit,
                "share": self.config.max_share_in_repair,
                "waiting": out.waiting,
            },
            "held": held,
            "repeat_offenders": sorted(n for n, h in held.items() if str(h["why"]).startswith("repeat offender")),
            "repaired_now": out.repaired,
            "errors": out.errors,
        }


def setup_logging(config: RepairConfig | None, echo: bool = False) -> None:
    """The burst programs' logging (a log file, or stderr saying why), for this program and the burst group code it
    calls (which logs its deletions); `echo` (--dry-run): to stderr as well, for the person who runs it."""
    shared_logging(config, PROG, ("aicluster.repair", "aicluster.burst"), echo=echo)


def run_once(config: RepairConfig, slurm: Scontrol, now: float | None = None, dry_run: bool = False,
             bmc_opener: BmcOpener = Redfish.connect,
             cloud_opener: Opener = default_opener) -> Outcome:  # fmt: skip
    state_dir = Path(config.state_dir)
    with locked(state_dir):
        state, problem = read(state_dir)
        if problem:
            log.warning("%s", problem)
        repairer = Repairer(config, slurm, time.time() if now is None else now, bmc_opener, cloud_opener, dry_run)
        out, report = repairer.run(state)
        if dry_run:  # changes nothing, its own files included: the report goes to stdout
            print(json.dumps(report, indent=1))
            return out
        write_atomic(state_dir / "state.json", state.to_json())
        write_atomic(state_dir / REPORT_FILE, json.dumps(report, indent=1) + "\n", 0o644)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description="repair the Slurm nodes aicluster-health drained")
    p.add_argument("--config", help="the repair configuration (default: aicluster-repair.json beside SLURM_CONF)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="log what would be done, to stderr and the log file, and print the report; change nothing (the state "
        "and report files included)",
    )
    args = p.parse_args(argv)
    try:
        config = load(config_path(args.config))
    except ConfigError as exc:
        setup_logging(None)
        log.error("%s", exc)
        return 2
    setup_logging(config, echo=args.dry_run)
    try:
        out = run_once(config, Scontrol(config.scontrol, config.api_timeout_s * 3), dry_run=args.dry_run)
    except Busy as exc:
        log.info("%s; this pass is skipped", exc)
        return 0
    except (SlurmError, OSError) as exc:
        log.error("%s", exc)
        return 1
    return 1 if out.errors else 0


if __name__ == "__main__":
    sys.exit(main())
