"""aicluster-resume: slurm.conf's ResumeProgram. `aicluster-resume [--config PATH] HOSTLIST`

slurmctld runs it as SlurmUser with the nodes to power up (a hostlist) and SLURM_RESUME_FILE (a JSON job -> nodes
map that slurmctld deletes soon: copied at once into state_dir/resume, logged, and deleted when done unless
AICLUSTER_BURST_KEEP_RESUME_FILE=1). For each node set of the config it:
1. reuses the instances already bound to the asked nodes (a retry after a slurmctld restart) and unbound live ones;
2. grows the group by the rest, never above its maximum;
3. waits at most launch_wait_s for the new instances to have an address, stopping early when the group reports a
   failed launch (capacity, quota, spot);
4. binds each node to one instance (tag `aicluster:slurm-node=<node>`) and tells Slurm its address
   (`scontrol update nodename=X nodeaddr=IP nodehostname=NAME`); slurmd on the instance then registers as X.

Nodes the cloud did not deliver are set `state=DOWN reason="aicluster-resume: <the cloud's error>"`: slurm.conf(5)
says a ResumeProgram that cannot restore a node "should set the node state to DOWN, which will result in a requeue
of any job associated with the node", which frees the job at once instead of after ResumeTimeout.
`aicluster-burst-sync` later powers such nodes down (POWER_DOWN_FORCE) so they are tried again.

Node sets are handled apart: whatever goes wrong in one (the cloud refuses or never answers, its SDK refuses the
configuration, an unexpected error) sets exactly that set's asked nodes DOWN with the reason, and the others go on.
Every cloud request is bounded (config.api_timeout_s, tried twice at most) and so is the wait for the group lock
(config.lock_wait_s). A bad SLURM_RESUME_FILE is logged and left aside: the hostlist Slurm passed is what counts.

Exit status: 0 once every node is either bound or reported DOWN to Slurm (slurmctld only logs the status);
1 when Slurm could not be told or the hostlist could not be read; 2 for a bad configuration (the nodes are still
reported DOWN when scontrol works).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from aicluster.burst.cloud import CloudError, Group, Instance
from aicluster.burst.common import (
    ConfigError,
    Opener,
    SlurmError,
    default_opener,
    failure,
    group_key,
    group_lock,
    group_nodes,
    load_config,
    log,
    nodes_brief,
    parser,
    scontrol_for,
    setup_logging,
    unexpected,
)
from aicluster.burst.config import BurstConfig
from aicluster.burst.slurm import Slurm, copy_resume_file, one_line, read_resume_file

PROG = "aicluster-resume"


def resume_group(
    group: Group,
    names: Sequence[str],
    slurm: Slurm,
    launch_wait_s: float,
    poll_s: float,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, str]:
    """Power up `names` from `group`; returns {node: reason} for the nodes the cloud did not deliver."""
    failed: dict[str, str] = {}
    alive = [i for i in group.instances() if i.alive]
    bound: dict[str, Instance] = {}  # a retry (slurmctld restarted): the node keeps its instance
    for i in alive:
        if i.node and i.node in names and i.node not in bound:
            bound[i.node] = i
    wanted = [n for n in names if n not in bound]
    taken = {i.id for i in bound.values()}
    free = [i for i in alive if not i.node]
    grown = 0
    started = clock()
    need = len(wanted) - len(free)
    if need > 0:
        cap = group.capacity()
        room = max(cap.maximum - cap.desired, 0)
        grant = min(need, room)
        if grant < need:
            refused = wanted[len(wanted) - (need - grant) :]
            why = (
                f"group {group.name} at its maximum size {cap.maximum} (desired {cap.desired}): "
                f"{need - grant} of {need} new instance(s) refused"
            )
            failed.update(dict.fromkeys(refused, why))
        if grant > 0:
            try:
                group.resize(cap.desired + grant)
                grown = grant
                log.info("group %s: desired %d -> %d for %d node(s)", group.name, cap.desired, cap.desired + grant,
                         grant)  # fmt: skip
            except CloudError as exc:
                failed.update(dict.fromkeys([n for n in wanted if n not in failed][len(free) :], str(exc)))
    todo = [n for n in wanted if n not in failed]
    ready: list[Instance] = []
    problems: list[str] = []
    deadline = started + launch_wait_s
    while True:
        current = group.instances()
        by_id = {i.id: i for i in current}
        bound = {n: by_id.get(i.id, i) for n, i in bound.items()}  # their addresses, once the cloud has them
        ready = [i for i in current if i.alive and not i.node and i.address and i.id not in taken]
        if len(ready) >= len(todo) and all(i.address for i in bound.values()):
            break
        problems = group.failures(started - 1.0) if grown else []
        if problems:
            log.warning("group %s: launch failed: %s", group.name, problems[0])
            break
        if clock() >= deadline:
            problems = [f"no instance of group {group.name} got an address within {launch_wait_s:.0f} s"]
            break
        sleep(poll_s)
    for node, inst in list(bound.items()):
        if not inst.address:
            failed[node] = f"instance {inst.id} has no address yet"
            del bound[node]
    for node, inst in zip(todo, ready, strict=False):
        try:
            group.bind(inst.id, node)
            bound[node] = inst
        except CloudError as exc:
            failed[node] = f"could not tag {inst.id}: {exc}"
    undelivered = [n for n in todo if n not in bound and n not in failed]
    if undelivered:
        why = problems[0] if problems else f"group {group.name} delivered too few instances"
        failed.update(dict.fromkeys(undelivered, why))
        if grown:  # do not keep asking the cloud for instances no node will use
            try:
                cap = group.capacity()
                group.resize(max(cap.desired - min(len(undelivered), grown), 0))
            except CloudError as exc:
                log.warning("group %s: could not lower its desired size: %s", group.name, exc)
    for node, inst in bound.items():
        slurm.update([node], nodeaddr=str(inst.address), nodehostname=inst.hostname or node)
        log.info("node %s -> %s (%s, %s)", node, inst.id, inst.address, inst.hostname or node)
    return failed


def report_down(slurm: Slurm, failed: dict[str, str]) -> None:
    """Set the failed nodes DOWN, one update per reason (split by Scontrol when the list is long); every reason is
    tried before the first error is raised."""
    by_reason: dict[str, list[str]] = {}
    for node, why in failed.items():
        by_reason.setdefault(one_line(f"{PROG}: {why}"), []).append(node)
    errors = []
    for reason, nodes in by_reason.items():
        log.warning("%d node(s) DOWN (%s): %s", len(nodes), nodes_brief(nodes), reason)
        try:
            slurm.update(nodes, state="DOWN", reason=reason)
        except SlurmError as exc:
            errors.append(str(exc))
    if errors:
        raise SlurmError("; ".join(errors))


def resume(config: BurstConfig, slurm: Slurm, names: Sequence[str], opener: Opener = default_opener) -> dict[str, str]:
    plan = group_nodes(config, slurm, names)
    failed = dict.fromkeys(plan.unknown, "node is in no node set of the bursting configuration")
    for idx, nodes in plan.by_set.items():
        node_set = config.node_sets[idx]
        try:
            with group_lock(config, group_key(node_set)):
                group = opener(node_set, config)
                failed.update(resume_group(group, nodes, slurm, config.launch_wait_s, config.poll_s))
        except Exception as exc:  # one node set's failure, whatever it is, is its own nodes' DOWN reason
            log.error("group %s: %s", node_set.group, failure(exc), exc_info=unexpected(exc))
            failed.update(dict.fromkeys(nodes, failure(exc)))
    return failed


def log_resume_file(env: dict[str, str], state_dir: Path) -> None:
    """Log which jobs wait for which nodes, from SLURM_RESUME_FILE; a file that cannot be read or parsed is a
    warning, never a reason to leave the nodes Slurm asked for unhandled."""
    data, copy, problem = copy_resume_file(env, state_dir / "resume")
    if problem:
        log.warning("%s", problem)
    try:
        if data is not None:
            _, jobs = read_resume_file(data)
            for j in jobs:
                log.info("job %d (partition %s, features %s) needs %s", j.job_id, j.partition or "-",
                         j.features or "-", j.nodes_resume)  # fmt: skip
    except ValueError as exc:
        log.warning("%s: %s", env.get("SLURM_RESUME_FILE"), exc)
    finally:
        if copy is not None and env.get("AICLUSTER_BURST_KEEP_RESUME_FILE") != "1":
            copy.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None, opener: Opener = default_opener) -> int:
    args = parser(PROG, "Slurm ResumeProgram: power up cloud nodes", nodes=True).parse_args(argv)
    try:
        config = load_config(args)
    except ConfigError as exc:
        setup_logging(None, PROG)
        log.error("%s", exc)
        try:
            slurm = scontrol_for(None)
            report_down(slurm, dict.fromkeys(slurm.hostnames(args.nodes), f"bad configuration: {exc}"))
        except SlurmError as err:
            log.error("%s", err)
        return 2
    setup_logging(config, PROG)
    try:
        log_resume_file(dict(os.environ), Path(config.state_dir))
    except Exception as exc:  # never let the log of the jobs stop the nodes' resume
        log.warning("SLURM_RESUME_FILE: %s", failure(exc))
    slurm = scontrol_for(config)
    try:
        names = slurm.hostnames(args.nodes)
    except SlurmError as exc:
        log.error("%s", exc)
        return 1
    log.info("resume %s (%d node(s))", args.nodes, len(names))
    try:
        failed = resume(config, slurm, names, opener)
    except Exception as exc:  # resume() isolates each node set; this is for what lies outside them
        log.error("%s", failure(exc), exc_info=unexpected(exc))
        failed = dict.fromkeys(names, failure(exc))
    try:
        if failed:
            report_down(slurm, failed)
    except SlurmError as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
