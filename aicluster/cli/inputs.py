"""Everything that turns an argument into a checked value: the stack, --json targets, JSON inputs, the policy
config, the Slurm release, -e pairs, the stack's work directory. Bad input raises UsageError (exit 2) before
any work or write."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aicluster.files import check_target
from aicluster.spec import SpecError
from aicluster.stackfile import Project, ProjectNotFound, find_project, project_of_file
from aicluster.stackfile import read_stack as read_stack_file

from .exits import UsageError

if TYPE_CHECKING:
    from aicluster.plan import ClusterPlan
    from aicluster.stackfile import StackConfig


def read_stack(args: argparse.Namespace) -> tuple[Project, StackConfig]:
    """The project and the stack the argument names: a stack name, or the path of a Pulumi.<stack>.yaml."""
    from aicluster.stackfile import stack_file_name, stack_name_problem

    given: str = args.stack
    path: Path | None = None
    if "/" in given or os.sep in given or given.endswith((".yaml", ".yml")):
        path = Path(given)
        name = stack_file_name(path)
        if name is None or stack_name_problem(name) is not None:
            raise UsageError(
                f"{given}: not a stack file; a stack file is named Pulumi.<stack>.yaml "
                "(e.g. stacks/Pulumi.p5-small.yaml)"
            )
        if not path.is_file():
            raise UsageError(f"{given}: no such stack file")
        given = name
    elif stack_name_problem(given) is not None:
        raise UsageError(str(stack_name_problem(given)))
    if args.project_dir or path is None:
        project = find_project(Path(args.project_dir) if args.project_dir else None)
    else:  # a stack file: the project here, else the file's own (or none: validate, plan and size need none)
        try:
            project = find_project()
        except ProjectNotFound:
            project = project_of_file(path)
    return project, read_stack_file(project, given, path)


def read_project(args: argparse.Namespace) -> Project:
    """The project of -C, or the nearest with Pulumi.yaml."""
    return find_project(Path(args.project_dir) if args.project_dir else None)


def json_target(path: str | None, parents: bool = False) -> Path | None:
    """--json FILE, checked before any work: '-' (stdout) is None; its directory must exist unless --parents."""
    if path is None or path == "-":
        return None
    return check_target(path, "--json", parents=parents)


def read_json(path: str, what: str) -> Any:
    """A JSON input the user gives: bounded in size, nesting and numbers, so that a hostile file is a clear
    error (exit 2) and not a RecursionError or a 4,300-digit ValueError further on."""
    from aicluster.stackfile import JsonInputError, read_json_input

    try:
        return read_json_input(Path(path))
    except JsonInputError as exc:
        raise UsageError(f"{what} {path}: {exc}") from None


def policy_config(args: argparse.Namespace) -> dict[str, Any] | None:
    """The --policy-config file, checked against every policy's config schema before anything runs."""
    if not args.policy_config:
        return None
    from aicluster.preview.policy import config_problems

    try:
        doc = read_json(args.policy_config, "--policy-config")
    except (ValueError, RecursionError) as exc:  # an integer beyond Python's digit limit; nesting beyond the stack
        what = "nested too deeply" if isinstance(exc, RecursionError) else "holds a number too long to read"
        raise UsageError(f"--policy-config {args.policy_config}: not a usable policy config: it {what}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"--policy-config {args.policy_config}: expected a JSON object of policy name -> settings")
    problems = config_problems(doc)
    if problems:
        raise SpecError(args.policy_config, problems)
    return doc


SLURM_OLDEST = (20, 11)  # SlurmctldParameters=cloud_reg_addrs, which CLOUD nodes registering by name need


def slurm_version(text: str | None) -> tuple[int, int]:
    """--slurm-version YY.MM: the Slurm release the nodes run (the Slurm files are rendered for it)."""
    if text is None:
        return (22, 5)
    m = re.fullmatch(r"(\d{2})\.(\d{1,2})(?:\.\d+)?", text.strip())
    version = (int(m.group(1)), int(m.group(2))) if m else None
    if version is None or not 1 <= version[1] <= 12:
        raise UsageError(f"--slurm-version {text}: expected a Slurm release as YY.MM, e.g. 22.05 or 23.11")
    if version < SLURM_OLDEST:
        raise UsageError(
            f"--slurm-version {text}: aicluster renders Slurm files for {SLURM_OLDEST[0]}.{SLURM_OLDEST[1]} and later "
            "(CLOUD nodes register their address with SlurmctldParameters=cloud_reg_addrs)"
        )
    return version


def extra_vars(pairs: list[str] | None) -> dict[str, Any]:
    """-e KEY=VALUE pairs; VALUE is read as YAML (true, 3, [a, b]) like Ansible's own -e."""
    import yaml

    values: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--extra-vars {pair}: expected KEY=VALUE with KEY a variable name")
        try:
            values[key] = yaml.safe_load(value)
        except yaml.YAMLError:
            values[key] = value
    return values


def work_dir(project: Project, stack: str) -> Path:
    """.work/<stack>: the stack's own work directory, never anywhere else (a stack named `..` or `a/b` is refused
    here too, whatever the stack file's checks say)."""
    work = project.root / ".work"
    target = work / stack
    if not stack or stack in (".", "..") or Path(stack).name != stack or "\\" in stack:
        raise UsageError(
            f'stack "{stack}": not a name aicluster can keep work under (.work/<stack>/); rename the stack'
        )
    if target.resolve().parent != work.resolve():
        raise UsageError(f"{target}: resolves outside {work}; remove the link or rename the stack")
    return target


def hosts_file(path: str | None, names: set[str]) -> dict[str, str]:
    """--hosts FILE: node name -> address, for nodes the cloud outputs do not address (on-prem, tests)."""
    if path is None:
        return {}
    from aicluster.inventory import read_hosts

    return read_hosts(Path(path), names)


def kubernetes_plan(args: argparse.Namespace, command: str, instead: str) -> tuple[Project, StackConfig, ClusterPlan]:
    """The project, stack and plan of a Kubernetes stack; a Slurm stack is bad input (exit 2) naming `instead`."""
    from aicluster.preview import plan_stack

    project, stack = read_stack(args)
    plan = plan_stack(stack)
    if plan.kubernetes is None:  # the command needs the plan's Kubernetes control plane, whatever the stack has
        from aicluster.plan.registry import SCHEDULERS

        kind = plan.scheduler
        raise UsageError(
            f"{command} {stack.stack}: a {SCHEDULERS[kind].title} stack (scheduler.kind: {kind}) has no Kubernetes "
            f"control plane; {instead}"
        )
    return project, stack, plan
