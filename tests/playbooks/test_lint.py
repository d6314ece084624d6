"""ansible-lint (production profile, nothing skipped) and ansible-playbook --syntax-check over
playbooks/, with an inventory rendered by `aicluster inventory`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.playbooks.conftest import PLAYBOOKS, SITE, ansible_env, render_inventory, tool


def test_lint_config_is_production_with_an_empty_skip_list() -> None:
    config = yaml.safe_load((PLAYBOOKS / ".ansible-lint").read_text())
    assert config["profile"] == "production"
    assert config.get("skip_list", []) == []
    assert config.get("warn_list", []) == []


def test_every_noqa_says_why() -> None:
    for path in PLAYBOOKS.rglob("*.yml"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "# noqa" in line:
                reason = line.split("# noqa", 1)[1].split(":", 2)
                assert len(reason) == 3, f"{path}:{n}: a noqa needs a rule and a reason"
                assert reason[2].strip(), f"{path}:{n}: a noqa needs a reason"


@pytest.mark.slow
def test_ansible_lint_production_profile_passes() -> None:
    proc = subprocess.run(
        [tool("ansible-lint"), "--offline", "--profile", "production", "-c", ".ansible-lint", "--nocolor", "."],
        cwd=PLAYBOOKS,
        capture_output=True,
        text=True,
        check=False,
        env=ansible_env(),
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "Profile 'production' was required, and it passed" in proc.stdout + proc.stderr


@pytest.mark.parametrize("stack", ["p5-small", "gcp-a3mega-slurm"])
def test_site_syntax_check_with_a_rendered_inventory(stack: str, tmp_path: Path) -> None:
    inv = render_inventory(stack, tmp_path / "inventory")
    proc = subprocess.run(
        [tool("ansible-playbook"), "--syntax-check", "-i", str(inv), str(SITE)],
        capture_output=True,
        text=True,
        check=False,
        env=ansible_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ERROR" not in proc.stdout + proc.stderr


def test_every_role_has_its_api_and_argument_specs() -> None:
    roles = sorted(p for p in (PLAYBOOKS / "roles").iterdir() if p.is_dir())
    assert {r.name for r in roles} == {
        "validate", "base", "nvidia", "efa", "infiniband", "gcp_gpudirect", "tpu", "nccl",
        "slurm_common", "slurm_controller", "slurm_burst", "slurm_repair", "slurm_compute", "acceptance", "nvidia_imex",
        "aicluster_programs", "slurm_health", "node_exporter", "dcgm_exporter", "prometheus", "alertmanager",
        "slurm_exporter",
    }  # fmt: skip
    for role in roles:
        defaults = yaml.safe_load((role / "defaults/main.yml").read_text()) or {}
        specs = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
        assert set(defaults) == set(specs), f"{role.name}: defaults and argument_specs differ"
        assert all(name.startswith(f"{role.name}_") for name in defaults), role.name
        for template in (role / "templates").rglob("*.j2") if (role / "templates").exists() else []:
            first = template.read_text().splitlines()
            assert "ansible_managed | comment" in "\n".join(first[:2]), f"{template}: no ansible_managed header"
