"""aicluster's programs on the nodes, installed by the shared aicluster_programs role for the role of each concern
(slurm_burst, slurm_health): what each role installs is a console script of pyproject.toml, installed where the
Slurm files call it, and `aicluster inventory` renders, for every example stack, what those roles need."""

from __future__ import annotations

import ast
import tomllib
from typing import Any

import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.health.config import HealthConfig
from aicluster.inventory import PYPROJECT, group_name, inventory, program_requirements, read_yaml
from aicluster.render.health import CONFIG_FILE
from aicluster.schedulers.slurm.render import DEFAULT_SETTINGS
from tests.conftest import ROOT, SLURM_STACKS, STACKS
from tests.playbooks.conftest import PLAYBOOKS

ROLES = PLAYBOOKS / "roles"
SCRIPTS: dict[str, str] = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["scripts"]


def defaults(role: str) -> dict[str, Any]:
    return dict(yaml.safe_load((ROLES / role / "defaults/main.yml").read_text()) or {})


def includes_of_the_shared_role() -> list[tuple[str, dict[str, Any]]]:
    """Every `include_role: aicluster_programs` of every role, with its vars: (role, vars)."""
    out = []
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            include = task.get("ansible.builtin.include_role")
            if include and include["name"] == "aicluster_programs":
                out.append((path.parts[-3], task["vars"]))
    return out


def programs_of(role: str, variables: dict[str, Any]) -> dict[str, str]:
    value = variables["aicluster_programs_programs"]
    name = value.removeprefix("{{").removesuffix("}}").strip()  # "{{ slurm_health_programs }}": the role's default
    return dict(defaults(role)[name])


def test_the_roles_that_run_programs_install_them_through_the_shared_role() -> None:
    assert {role for role, _ in includes_of_the_shared_role()} >= {"slurm_burst", "slurm_health"}


@pytest.mark.parametrize(("role", "variables"), [pytest.param(r, v, id=r) for r, v in includes_of_the_shared_role()])
def test_every_program_a_role_installs_is_a_console_script_of_the_project(role: str, variables: dict[str, Any]) -> None:
    """The wrapper runs `python -m MODULE`: MODULE is the program's entry point in [project.scripts] (its `main`,
    which the module runs as __main__), in one of the subpackages the role copies."""
    programs = programs_of(role, variables)
    assert programs
    for name, module in programs.items():
        assert SCRIPTS.get(name) == f"{module}:main", (role, name)
        assert module.split(".")[1] in variables["aicluster_programs_subpackages"], (role, name)
        source = ROOT / (module.replace(".", "/") + ".py")
        tree = ast.parse(source.read_text(encoding="utf-8"))
        guards = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "__name__ == '__main__'"]
        assert guards, f"{source}: `python -m` would run nothing"
        assert "main()" in ast.unparse(guards[0]), f"{source}: `python -m` would not run main()"


def test_the_programs_are_installed_where_slurm_calls_them() -> None:
    shared = defaults("aicluster_programs")
    prefix = shared["aicluster_programs_prefix"]
    bin_dir = shared["aicluster_programs_bin_dir"].replace("{{ aicluster_programs_prefix }}", prefix)
    assert bin_dir == DEFAULT_SETTINGS.burst_bin_dir == DEFAULT_SETTINGS.health_bin_dir
    assert defaults("slurm_health")["slurm_health_config_path"] == f"{DEFAULT_SETTINGS.conf_dir}/{CONFIG_FILE}"


def _slurm_version(plan: Any) -> tuple[int, int]:
    return (24, 11) if plan.nvlink_domains else (22, 5)  # rack-scale pools need Slurm's topology/block


def test_only_kubernetes_stacks_are_not_slurm_stacks() -> None:
    """Every stack with an Ansible inventory is checked below: a Kubernetes stack has none (its nodes are the managed
    service's), and its node health is the control plane's."""
    from aicluster.preview import plan_stack
    from aicluster.stackfile import find_project, read_stack

    others = [s for s in STACKS if s not in SLURM_STACKS]
    assert others
    assert all(plan_stack(read_stack(find_project(ROOT), s)).scheduler == "kubernetes" for s in others)


@pytest.mark.parametrize("stack", SLURM_STACKS)
def test_every_example_stacks_inventory_has_what_the_program_roles_need(stack: str, catalog: Catalog) -> None:
    """Offline (no stack outputs): a Slurm stack's inventory carries the checker's configuration, valid for the
    checker itself, with every pool and every node of the plan, and the pinned pydantic the role installs."""
    from aicluster.preview import plan_stack
    from aicluster.stackfile import find_project, read_stack

    plan = plan_stack(read_stack(find_project(ROOT), stack))
    files = inventory(plan, {}, {}, "offline preview", slurm_version=_slurm_version(plan), catalog=catalog)
    all_vars = read_yaml(files["group_vars/all.yml"])
    assert all_vars["slurm_health_requirements"] == program_requirements([])
    assert [r.split("==")[0] for r in all_vars["slurm_health_requirements"]] == ["pydantic"]
    path = defaults("slurm_health")["slurm_health_config_path"]
    config = HealthConfig.model_validate_json(all_vars["slurm_files"][path])
    assert set(config.pools) == {p.name for p in plan.pools}
    for pool in plan.pools:
        expected = pool.accelerators_per_node if pool.accelerator_kind == "gpu" else 0
        for node in pool.node_names():
            assert config.pool_of(node).gpus == expected, (pool.name, node)
    # every host the checker runs on is one the slurm_health play reaches
    hosts = read_yaml(files["hosts.yml"])["all"]["children"]
    assert set(hosts["slurm_compute"]["children"]) == {group_name("pool", p.name) for p in plan.pools}
