"""The Ansible inventory of a stack, planned and then written: shared by `inventory` and `tune`.

Addresses come from the deployed stack's outputs (or the offline preview's), --hosts FILE and --discover (the
clouds' inventory plugins); an earlier run's are kept when this one gives none.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aicluster.files import write_atomic
from aicluster.stackfile import Project

from .console import escape, out, warn
from .exits import OperationFailed, UsageError
from .inputs import hosts_file, read_stack, slurm_version, work_dir
from .stack_outputs import live_outputs
from .suggest import command as suggest_command

if TYPE_CHECKING:
    from aicluster.plan import ClusterPlan
    from aicluster.schedulers.base import Suggest
    from aicluster.stackfile import StackConfig


def discover_nodes(
    project: Project, stack: StackConfig, plan: ClusterPlan, outputs: Mapping[str, Any], suggest: Suggest
) -> dict[str, str]:
    """--discover: the pools' VMs from the clouds' inventory plugins, named after the plan's nodes. The
    assignment is kept in .work/<stack>/nodes.yml so a VM keeps its name from one run to the next."""
    import yaml

    from aicluster import discover

    work = work_dir(project, stack.stack)
    try:
        configs = discover.plugin_configs(plan, stack.config, suggest)
    except discover.DiscoveryError as exc:
        raise UsageError(str(exc)) from None
    owned = [p.name for p in plan.pools if p.market == "owned"]
    if owned:
        out.print(
            f"[yellow]--discover: on-prem pool(s) {escape(', '.join(owned))}: their hosts and addresses come from "
            "the stack (pools[].hosts) and the controller's from scheduler.controller, never from a cloud[/]"
        )
    if not configs:
        out.print("[yellow]--discover: no pool of this stack is discoverable (TPU hosts come from --hosts)[/]")
        return {}
    directory = work / "discover"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    for stale in set(directory.glob("*.yml")) - {directory / f for f in configs}:
        stale.unlink()
    for filename, config in configs.items():
        write_atomic(directory / filename, yaml.safe_dump(config, sort_keys=False), mode=0o600)
    state = work / "nodes.yml"
    previous: dict[str, str] = {}
    if state.is_file():
        try:
            doc = yaml.safe_load(state.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError:
            doc = None
        if not isinstance(doc, dict):
            warn([f"{state} is not a node -> VM id mapping; naming the VMs afresh"])
            doc = {}
        previous = {str(k): str(v) for k, v in doc.items()}
    try:
        found = discover.instances(discover.list_hosts(directory))
    except discover.DiscoveryError as exc:
        raise OperationFailed(str(exc)) from None
    result = discover.assign(plan, found, outputs, previous)
    write_atomic(state, yaml.safe_dump(result.ids(), sort_keys=True), mode=0o600)
    out.print(
        f"discovered {len(found)} VM(s) with {', '.join(c['plugin'] for c in configs.values())}: "
        f"{len(result.nodes)} named, {len(result.missing)} planned node(s) missing, {len(result.strays)} not placed"
    )
    for inst, why in result.strays:
        out.print(
            f"[yellow]  not placed: {escape(inst.provider)} {escape(inst.name)} ({escape(inst.id)}): {escape(why)}[/]"
        )
    if result.missing:
        shown = ", ".join(result.missing[:8]) + (" ..." if len(result.missing) > 8 else "")
        out.print(f"[yellow]  no VM yet for: {escape(shown)}[/]")
    return result.addresses


@dataclass
class PlannedInventory:
    """An inventory planned for a stack but not written yet (`plan_inventory`), and what its message says."""

    project: Project
    stack: StackConfig
    target: Path  # where it goes
    shown: str  # how messages name that directory (the user's spelling)
    plan: ClusterPlan
    files: dict[str, str]  # relative path -> text
    addresses: dict[str, str]
    source: str  # where the outputs came from
    reused: int  # addresses kept from the previous inventory
    user_out: bool  # --out given

    def write(self, target: Path | None = None) -> None:
        """Write it to `target` (a scratch directory) or, by default, where it goes."""
        from aicluster import inventory as inv

        try:
            inv.write(target or self.target, self.files, self.addresses, shown=self.shown)
        except inv.InventoryDirError as exc:
            raise UsageError(f"--out {exc}" if self.user_out else str(exc)) from None
        if target is not None:
            return
        plan = self.plan
        hosts = sum(len(p.node_names()) for p in plan.pools) + (1 if plan.controller else 0)
        addressed = len(set(self.addresses) | set(inv.stack_addresses(plan)))
        out.print(
            f"wrote {escape(str(self.target))}/hosts.yml and {len(self.files) - 1} group_vars file(s): "
            f"{hosts} host(s), "
            f"{addressed} with an address"
            f"{f' ({self.reused} kept from the previous inventory)' if self.reused else ''}; "
            f"outputs from the {self.source}"
        )
        from aicluster.render.repair import fixed_cloud_pools

        fixed = list(fixed_cloud_pools(plan))
        if plan.controller is not None and fixed and self.source == "offline preview":
            warn(
                [
                    f"pools {', '.join(fixed)}: aicluster-repair holds their nodes' replacements (their cloud groups "
                    "are named only in the deployed stack's outputs): run `aicluster inventory` and `aicluster "
                    "tune` again after `pulumi up`"
                ]
            )


def slurm_release_problems(stack: StackConfig, plan: ClusterPlan, version: tuple[int, int], *, given: bool) -> None:
    """Pools the nodes' Slurm release cannot schedule (rack-scale pools before 23.11): one problem per pool, at its
    `instance_type` line of the stack file (exit 2, nothing written), rather than Slurm files that would not load."""
    from aicluster.schedulers.slurm.render import rack_scale_problems
    from aicluster.spec import Problem, SpecError

    if plan.controller is None:  # no Slurm files (as inventory() renders them only with a controller)
        return
    release = f"{version[0]}.{version[1]:02d}" + ("" if given else " (--slurm-version's default)")
    found = rack_scale_problems(plan, version, release)
    if found:
        index = {p.name: i for i, p in enumerate(plan.pools)}
        problems = [Problem(("pools", index[pool], "instance_type"), why, kind, True) for pool, kind, why in found]
        raise SpecError(stack.source, problems, stack.lines)


def plan_inventory(args: argparse.Namespace, given_plan: ClusterPlan | None = None) -> PlannedInventory:
    """Plan the stack (unless `given_plan` is its plan) and its inventory, writing nothing of it yet. Addresses an
    earlier run was given (--hosts, --discover) are kept when this one gives none. A Kubernetes stack has no
    inventory: exit 2 with the reason."""
    from aicluster import inventory as inv
    from aicluster.preview import offline_outputs, plan_stack

    version = slurm_version(getattr(args, "slurm_version", None))  # bad input fails before any write
    project, stack = read_stack(args)
    work = work_dir(project, stack.stack)
    target = Path(args.out) if args.out else work / "inventory"
    shown = args.out or str(target)
    playbooks = (project.root / "playbooks").resolve()
    if target.resolve() == playbooks or playbooks in target.resolve().parents:
        raise UsageError(f"--out {args.out}: inside playbooks/; inventories go to a work directory (e.g. .work/)")
    plan = given_plan or plan_stack(stack)
    reason = inv.no_inventory_reason(plan, stack.stack, functools.partial(suggest_command, args))
    if reason is not None:
        raise UsageError(reason)
    slurm_release_problems(stack, plan, version, given=getattr(args, "slurm_version", None) is not None)
    names = {n for p in plan.pools for n in p.node_names()} | ({plan.controller_host()} if plan.controller else set())
    given = hosts_file(args.hosts, names)
    # The marker of the last inventory is trusted only where no one else could have changed it, and its addresses
    # only as far as they pass the --hosts check; addresses this run gives replace them unread.
    try:
        inv.check_inventory_dir(target, shown)
    except inv.InventoryDirError as exc:
        raise UsageError(f"--out {exc}" if args.out else str(exc)) from None
    replaced = bool(args.hosts or getattr(args, "discover", False))
    kept: dict[str, str] = {}
    if not replaced and not target.is_symlink():
        kept = {k: v for k, v in inv.previous_addresses(target, shown=shown).items() if k in names}
    outputs = live_outputs(project, stack.stack)
    source = "pulumi stack output"
    if outputs is None:
        outputs = offline_outputs(stack)
        source = "offline preview"
    if getattr(args, "discover", False):
        suggest = functools.partial(suggest_command, args)
        given = {**discover_nodes(project, stack, plan, outputs, suggest), **given}  # --hosts wins
    # Addresses this run gives (--hosts, --discover) replace the earlier ones; a run that gives none (`tune` after
    # `inventory --hosts`) keeps them, rather than losing every address.
    addresses = given if replaced else kept
    try:
        files = inv.inventory(plan, outputs, addresses, source, slurm_version=version, stack_config=stack.config)
    except inv.AddressError as exc:
        raise UsageError(f"not written: {exc}; give the node's address with --hosts FILE") from None
    reused = 0 if replaced else len(kept)
    return PlannedInventory(project, stack, target, shown, plan, files, addresses, source, reused, bool(args.out))
