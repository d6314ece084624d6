"""aicluster-suspend: slurm.conf's SuspendProgram. `aicluster-suspend [--config PATH] HOSTLIST`

slurmctld runs it as SlurmUser with the nodes to power down. For each node set it deletes exactly the live
instances bound to those nodes (tag `aicluster:slurm-node`) and lowers the group's desired size by as many (AWS:
terminate_instance_in_auto_scaling_group with ShouldDecrementDesiredCapacity=True). A node with no live instance
(reclaimed, or never delivered) is logged and skipped. Exit status: 0 when every bound instance was deleted, 1
when the cloud or Slurm refused (logged; slurmctld treats the nodes as powered down after SuspendTimeout either
way, and `aicluster-burst-sync` removes instances left bound to powered-down nodes), 2 for a bad configuration.
Node sets are handled apart: one that fails (the cloud refuses or never answers, the group lock stays busy past
config.lock_wait_s, an unexpected error) is logged and the others are still deleted. A node in no node set is
logged with the reason and makes the exit status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

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
from aicluster.burst.slurm import Slurm

PROG = "aicluster-suspend"


def suspend(config: BurstConfig, slurm: Slurm, names: Sequence[str], opener: Opener = default_opener) -> list[str]:
    """Delete the instances of `names`; returns the errors (empty when all went)."""
    plan = group_nodes(config, slurm, names)
    errors = [f"{n}: in no node set" for n in plan.unknown]
    if plan.unknown:
        log.error("%d node(s) in no node set of the bursting configuration, nothing deleted for them: %s",
                  len(plan.unknown), nodes_brief(plan.unknown))  # fmt: skip
    for idx, nodes in plan.by_set.items():
        node_set = config.node_sets[idx]
        try:
            with group_lock(config, group_key(node_set)):
                group = opener(node_set, config)
                wanted = set(nodes)
                mine = [i for i in group.instances() if i.alive and i.node in wanted]
                gone = sorted(wanted - {i.node for i in mine if i.node})
                if gone:
                    log.info("group %s: no live instance for %s (nothing to delete)", group.name, ",".join(gone))
                if mine:
                    group.remove([i.id for i in mine])
                    log.info("group %s: deleted %s", group.name,
                             ", ".join(f"{i.node}={i.id}" for i in mine))  # fmt: skip
        except Exception as exc:  # this node set only: the next ones are still deleted
            log.error("group %s: %s", node_set.group, failure(exc), exc_info=unexpected(exc))
            errors.append(f"{node_set.group}: {failure(exc)}")
    return errors


def main(argv: Sequence[str] | None = None, opener: Opener = default_opener) -> int:
    args = parser(PROG, "Slurm SuspendProgram: power down cloud nodes", nodes=True).parse_args(argv)
    try:
        config = load_config(args)
    except ConfigError as exc:
        setup_logging(None, PROG)
        log.error("%s", exc)
        return 2
    setup_logging(config, PROG)
    slurm = scontrol_for(config)
    try:
        names = slurm.hostnames(args.nodes)
    except SlurmError as exc:
        log.error("%s", exc)
        return 1
    log.info("suspend %s (%d node(s))", args.nodes, len(names))
    try:
        errors = suspend(config, slurm, names, opener)
    except Exception as exc:  # suspend() isolates each node set; this is for what lies outside them
        log.error("%s", failure(exc), exc_info=unexpected(exc))
        return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
