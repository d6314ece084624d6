"""`aicluster tune STACK`: write the inventory and run playbooks/site.yml over it with ansible-runner (exit 1 if
any host failed). A Kubernetes stack runs no Ansible: the add-ons and the service own its nodes."""

from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path
from typing import Any

from .. import options, suggest
from ..console import err, escape, out, print_warnings
from ..exits import EXIT_FAILED, EXIT_OK, UsageError
from ..inputs import extra_vars, read_stack, work_dir
from ..planned_inventory import plan_inventory
from ..views.tune import score_table, scoreboard

NAME = "tune"
HELP = "write the inventory and run playbooks/site.yml over it with ansible-runner (exit 1 if any host failed)"
STACK = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    # a run over many hosts handles an event per task and host, each leaving a few reference cycles (json's
    # encoder closures): it needs the cyclic collector that the console entry turns off (aicluster/__main__.py)
    p.set_defaults(collect_cycles=True)
    p.add_argument("--limit", metavar="HOSTS", help="only these hosts or groups (Ansible --limit)")
    p.add_argument("--tags", metavar="TAGS", help="only these roles/tags (comma-separated)")
    p.add_argument("--check", action="store_true", help="check mode: report what would change, change nothing")
    options.add_node_sources(p)
    options.add_inventory_out(p, "where to write the inventory (default: .work/<stack>/inventory)")
    p.add_argument("--playbook", metavar="FILE", help="another playbook than playbooks/site.yml")
    p.add_argument("-e", "--extra-vars", action="append", metavar="KEY=VALUE", help="set a role variable (repeatable)")
    p.add_argument(
        "--host-key-checking",
        action="store_true",
        help="check the hosts' SSH keys against known_hosts (Ansible's host_key_checking). Off by default: a first "
        "run meets freshly provisioned hosts whose keys are not known yet. ANSIBLE_HOST_KEY_CHECKING or "
        "host_key_checking in ansible.cfg, where set, always win",
    )


def _check_targets(args: argparse.Namespace, target: Any, playbook: Path, inventory_dir: Path, local: bool) -> None:
    """Before anything runs: known tags, every --limit pattern matching a host or group, at least one host under
    --limit, an address for every host (unless the connection is local)."""
    from aicluster.inventory import read_yaml
    from aicluster.tune import SPECIAL_TAGS, unmatched_patterns

    tags = [t.strip() for t in (args.tags or "").split(",") if t.strip()]
    known = set(target.tags) | set(SPECIAL_TAGS)
    unknown = [t for t in tags if t not in known]
    if unknown:
        from aicluster.spec import did_you_mean

        hint = did_you_mean(unknown[0], sorted(target.tags))
        raise UsageError(
            f"--tags {args.tags}: {', '.join(unknown)} not a tag of {playbook.name}"
            + (f" ({hint})" if hint else "")
            + (f"; known tags: {', '.join(target.tags)}" if target.tags else "; the playbook has no tags")
        )
    if args.limit:
        missing, groups = unmatched_patterns(inventory_dir / "hosts.yml", args.limit)
        if missing:
            raise UsageError(
                f"--limit {args.limit}: {', '.join(missing)} {'matches' if len(missing) == 1 else 'match'} no host or "
                f"group of the inventory; give node names (h100-000), groups ({', '.join(groups[:10])}) or patterns "
                "(h100-00*, slurm_compute:!h100-001)"
            )
    if not target.hosts:
        doc = read_yaml((inventory_dir / "hosts.yml").read_text(encoding="utf-8"))
        groups = sorted((doc.get("all") or {}).get("children") or {})
        where = f"--limit {args.limit}: no host of the inventory matched" if args.limit else "no host to run on"
        raise UsageError(f"{where}; give a node name, a group ({', '.join(groups[:10])}) or a pattern (h100-00*)")
    if local:
        return
    addressed = _addressed(read_yaml((inventory_dir / "hosts.yml").read_text(encoding="utf-8")))
    missing = [h for h in target.hosts if h not in addressed]
    if missing:
        shown = ", ".join(missing[:8]) + (f" ... ({len(missing)} in all)" if len(missing) > 8 else "")
        raise UsageError(
            f"no address for {shown}: give them with --hosts FILE (node name -> address) or --discover (cloud "
            f"pools; on-prem nodes: list them with their addresses under the pool's hosts in the stack), "
            f"or leave them out with --limit"
        )


def _addressed(doc: Any) -> set[str]:
    """Hosts of an inventory document that have an `ansible_host`."""
    found: set[str] = set()

    def walk(group: Any) -> None:
        if not isinstance(group, dict):
            return
        for name, hostvars in (group.get("hosts") or {}).items():
            if isinstance(hostvars, dict) and hostvars.get("ansible_host"):
                found.add(str(name))
        for child in (group.get("children") or {}).values():
            walk(child)

    walk(doc.get("all") if isinstance(doc, dict) else None)
    return found


def run(args: argparse.Namespace) -> int:
    import tempfile

    from aicluster import tune
    from aicluster.preview import plan_stack

    extravars = extra_vars(args.extra_vars)  # bad input fails before anything is written
    for flag, value, instead in (
        ("--tags", args.tags, "the tags to run (e.g. --tags base,nccl), or leave it out to run the whole playbook"),
        ("--limit", args.limit, "hosts or groups (e.g. --limit slurm_compute), or leave it out to run on every host"),
    ):
        if value is not None and not value.strip(" ,:"):  # Ansible would run everything
            raise UsageError(f"{flag} is empty: give {instead}")

    if args.host_key_checking:
        setting = tune.users_host_key_checking()
        if setting is not None and not setting[1]:
            raise UsageError(
                f"--host-key-checking: {setting[0]} turns host key checking off, and aicluster never overrides your "
                "setting; drop one of them"
            )

    project, stack = read_stack(args)
    plan = plan_stack(stack)
    notes = tune.scheduler_notes(plan, stack.stack, functools.partial(suggest.command, args))
    if notes:  # no Ansible (Kubernetes): the add-ons and the service own the nodes (exit 0, nothing written)
        from aicluster.plan.registry import SCHEDULERS

        title = SCHEDULERS[plan.scheduler].title
        print_warnings(plan)
        for line in notes:
            out.print(escape(line))
        given = [
            flag
            for flag, value in (
                ("--limit", args.limit),
                ("--tags", args.tags),
                ("--check", args.check),
                ("--hosts", args.hosts),
                ("--discover", getattr(args, "discover", None)),
                ("--playbook", args.playbook),
                ("--extra-vars", args.extra_vars),
                ("--host-key-checking", args.host_key_checking),
            )
            if value
        ]
        if given:
            err.print(f"note: {', '.join(given)} apply to the Ansible run, which a {title} stack has none of: ignored")
        return EXIT_OK
    from aicluster.scaffold import playbooks

    # the project's own playbooks/ (this repository's), else those installed with the package
    playbook = Path(args.playbook) if args.playbook else playbooks(project.root) / "site.yml"
    if not playbook.is_file():
        raise UsageError(f"{playbook}: no such playbook")
    planned = plan_inventory(args, plan)
    project, stack = planned.project, planned.stack
    roles_path = playbook.parent / "roles"
    local = os.environ.get("ANSIBLE_TRANSPORT") == "local" or extravars.get("ansible_connection") == "local"
    # Exit 2 writes nothing: Ansible lists the hosts and tags over a scratch copy of the inventory, and the
    # inventory goes into place only once the tags, the limit and the addresses pass.
    with tempfile.TemporaryDirectory(prefix="aicluster-inventory-") as scratch:
        checked = Path(scratch) / "inventory"
        planned.write(checked)
        try:
            target = tune.targets(
                playbook,
                checked / "hosts.yml",
                roles_path=roles_path,
                limit=args.limit,
                host_key_checking=args.host_key_checking,
            )
        except tune.TuneError as exc:
            raise UsageError(f"{playbook}: {exc}") from None
        _check_targets(args, target, playbook, checked, local)
    planned.write()
    inventory_dir = planned.target
    work = work_dir(project, stack.stack) / "runner"
    with scoreboard(stack.stack) as show:
        result = tune.run(
            playbook,
            inventory_dir / "hosts.yml",
            work,
            roles_path=roles_path,
            limit=args.limit,
            tags=args.tags,
            check=args.check,
            extravars=extravars,
            on_change=show,
            host_key_checking=args.host_key_checking,
        )
    mode = " (check mode: nothing changed)" if args.check else ""
    title = f"tune {escape(stack.stack)}{mode}: {result.tasks} task(s) in {result.seconds:.1f} s"
    out.print(score_table(result.hosts, title))
    out.print(f"[dim]artifacts: {escape(str(result.artifacts))}[/]")
    idle = [h for h in target.hosts if h not in result.failed_hosts and not result.hosts.get(h, tune.HostScore()).ran]
    if result.failed_hosts or result.status != "successful" or idle or not result.hosts:
        failed = ",".join(result.failed_hosts)
        if failed or result.status != "successful":
            out.print(f"[red]{len(result.failed_hosts)} host(s) failed: {escape(failed) or result.status}[/]")
        if idle:
            shown = ", ".join(idle[:8]) + (" ..." if len(idle) > 8 else "")
            out.print(f"[red]{len(idle)} host(s) ran no task: {escape(shown)} (check --tags and --limit)[/]")
        if failed:
            out.print(f"retry them: {escape(suggest.repeat(args, '--limit', failed))}")
        return EXIT_FAILED
    # A task "reached" a host when it ran there: assertions on inventory variables (the validate role) and tasks
    # delegated elsewhere run on the controller, so a host that had only those was checked, not tuned.
    tuned = [h for h, s in result.hosts.items() if s.reached]
    checked_only = [h for h, s in result.hosts.items() if s.ran and not s.reached]
    if tuned:
        out.print(f"[green]{len(tuned)} host(s) tuned[/]")
    if checked_only:
        shown = ", ".join(checked_only[:8]) + (" ..." if len(checked_only) > 8 else "")
        out.print(f"[green]{len(checked_only)} host(s) checked (no task reached the host): {escape(shown)}[/]")
    if args.check:
        out.print(f"apply it: {escape(suggest.repeat(args, drop=('--check',)))}")
    return EXIT_OK
