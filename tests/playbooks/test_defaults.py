"""Role defaults that are expressions, evaluated by Ansible itself: the package names and versions a host gets
depend on its facts (driver branch, accelerator, the inventory's library versions), and a wrong name only shows
on a real host with the vendor's repository. Each case loads the role's defaults/main.yml into a local play with
the given variables and prints the templated value."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster.burst.config import BurstConfig
from aicluster.health.config import HealthConfig
from tests.playbooks.conftest import PLAYBOOKS, ansible_env, tool


def templated(tmp_path: Path, role: str, expression: str, variables: dict[str, Any]) -> Any:
    play = [
        {
            "name": "Evaluate a role default",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [
                {"ansible.builtin.include_vars": str(PLAYBOOKS / "roles" / role / "defaults" / "main.yml")},
                {
                    "ansible.builtin.copy": {
                        "content": f"{{{{ {expression} | to_json }}}}",
                        "dest": str(tmp_path / "out"),
                    }
                },
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    # as extra vars: include_vars would override play vars, and an operator overrides a default with -e
    (tmp_path / "vars.json").write_text(json.dumps({**variables, "ansible_python_interpreter": sys.executable}))
    proc = subprocess.run(
        [
            tool("ansible-playbook"),
            "-i",
            "localhost,",
            "-e",
            f"@{tmp_path / 'vars.json'}",
            str(tmp_path / "play.yml"),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=ansible_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((tmp_path / "out").read_text())


@pytest.mark.parametrize(
    ("branch", "accelerator", "expected"),
    [
        # NVIDIA's repository drops the branch from these names from 580 on (gpu-driver-container install.sh)
        ("580", "h100-sxm-80gb", ["nvidia-fabricmanager=580.173.02-*", "libnvidia-nscq=580.173.02-*"]),
        ("580", "b200-sxm-180gb", ["nvidia-fabricmanager=580.173.02-*", "libnvidia-nscq=580.173.02-*", "nvlsm"]),
        ("570", "h100-sxm-80gb", ["nvidia-fabricmanager-570=580.173.02-*", "libnvidia-nscq-570=580.173.02-*"]),
    ],
)
def test_fabric_manager_packages_follow_the_driver_branch(
    tmp_path: Path, branch: str, accelerator: str, expected: list[str]
) -> None:
    variables = {"nvidia_driver_branch": branch, "accelerator": accelerator}
    assert templated(tmp_path, "nvidia", "nvidia_fabricmanager_packages", variables) == expected


def test_efa_installs_the_installer_the_nccl_profile_was_chosen_for(tmp_path: Path) -> None:
    variables = {"nccl_library_versions": {"efa-installer": "1.51.0", "aws-ofi-nccl": "1.22.0"}}
    url = templated(tmp_path, "efa", "efa_installer_url", variables)
    assert url == "https://efa-installer.amazonaws.com/aws-efa-installer-1.51.0.tar.gz"


def test_gib_image_is_the_catalogs_nccl_gib_release(tmp_path: Path) -> None:
    variables = {"nccl_library_versions": {"nccl-gib": "1.1.2"}}
    image = templated(tmp_path, "gcp_gpudirect", "gcp_gpudirect_components['gpudirect-rdma'].plugin_image", variables)
    assert image == "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.2"


@pytest.mark.parametrize(
    ("slurm_files", "expected"),
    [
        pytest.param(
            {"/etc/slurm/aicluster-burst.json": '{"cluster": "c", "state_dir": "/srv/burst-locks", "node_sets": []}'},
            "/srv/burst-locks",
            id="the-configurations-state-dir",
        ),
        pytest.param({}, BurstConfig.model_fields["state_dir"].default, id="the-programs-default"),
    ],
)
def test_burst_state_dir_is_the_one_the_configuration_names(
    tmp_path: Path, slurm_files: dict[str, str], expected: str
) -> None:
    assert templated(tmp_path, "slurm_burst", "slurm_burst_state_dir", {"slurm_files": slurm_files}) == expected


@pytest.mark.parametrize(
    ("slurm_files", "expected"),
    [
        pytest.param(
            {"/etc/slurm/aicluster-health.json": '{"version": 1, "state_dir": "/srv/health"}'},
            "/srv/health",
            id="the-configurations-state-dir",
        ),
        pytest.param({}, HealthConfig.model_fields["state_dir"].default, id="the-checkers-default"),
    ],
)
def test_health_state_dir_is_the_one_the_configuration_names(
    tmp_path: Path, slurm_files: dict[str, str], expected: str
) -> None:
    assert templated(tmp_path, "slurm_health", "slurm_health_state_dir", {"slurm_files": slurm_files}) == expected


def run_role_locally(tmp_path: Path, role: str, variables: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The role on localhost, for its guard tasks only (they end or fail the host before anything is changed)."""
    play = [{"name": "Apply a role", "hosts": "localhost", "connection": "local", "gather_facts": False,
             "roles": [{"role": str(PLAYBOOKS / "roles" / role)}]}]  # fmt: skip
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "vars.json").write_text(json.dumps({**variables, "ansible_python_interpreter": sys.executable}))
    return subprocess.run(
        [tool("ansible-playbook"), "-i", "localhost,", "-e", f"@{tmp_path / 'vars.json'}", str(tmp_path / "play.yml")],
        capture_output=True,
        text=True,
        check=False,
        env=ansible_env(),
        timeout=120,
    )


def test_burst_role_does_nothing_on_a_cluster_that_does_not_burst(tmp_path: Path) -> None:
    proc = run_role_locally(tmp_path, "slurm_burst", {"scheduler": "slurm", "slurm_files": {}})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changed=0" in proc.stdout
    assert "failed=0" in proc.stdout
    assert "Install python3-venv" not in proc.stdout  # ended before its first task


def test_burst_role_refuses_a_bursting_cluster_without_its_configuration(tmp_path: Path) -> None:
    why = "pool p5: the Auto Scaling group's name is not known yet (deploy the stack with `pulumi up`, ...)"
    proc = run_role_locally(tmp_path, "slurm_burst", {"scheduler": "slurm", "burst_config_missing": why})
    assert proc.returncode != 0
    assert "slurm.conf runs the bursting programs, but the inventory has no /etc/slurm/aicluster-burst.json" in (
        proc.stdout
    )
    assert why in proc.stdout
    assert "--skip-tags slurm_burst" in proc.stdout


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        pytest.param({"nvlink": {"nodes_per_domain": 18}}, True, id="nvl72-pool"),
        pytest.param({"nvlink": {"nodes_per_domain": 1}}, False, id="single-node-domain"),
        pytest.param({}, False, id="8-gpu-server"),
    ],
)
def test_imex_is_installed_on_multi_node_nvlink_pools(
    tmp_path: Path, variables: dict[str, Any], expected: bool
) -> None:
    assert templated(tmp_path, "nvidia", "nvidia_imex_enabled | bool", variables) is expected


@pytest.mark.parametrize(
    ("branch", "expected"),
    [
        # NVIDIA gpu-driver-container ubuntu install.sh (imex_install): no branch in the name from 580 on
        ("580", ["nvidia-imex=580.173.02-*"]),
        ("570", ["nvidia-imex-570=580.173.02-*"]),
    ],
)
def test_imex_package_follows_the_driver_branch(tmp_path: Path, branch: str, expected: list[str]) -> None:
    assert templated(tmp_path, "nvidia", "nvidia_imex_packages", {"nvidia_driver_branch": branch}) == expected


def test_grace_hosts_get_the_sbsa_and_arm64_repositories_and_no_fabric_manager(tmp_path: Path) -> None:
    """A GB200 compute tray: NVIDIA's sbsa CUDA repository and the arm64 container toolkit repository (by the host's
    architecture), the nvidia role applies (gb200 has no suffix), and no Fabric Manager (the switch trays' job)."""
    facts = {"ansible_facts": {"architecture": "aarch64", "distribution": "Ubuntu", "distribution_version": "24.04"}}
    expression = (
        "[nvidia_cuda_repo_key_url, nvidia_container_repo_arch, nvidia_fabricmanager_enabled | bool, "
        "accelerator is match(nvidia_accelerator_pattern)]"
    )
    got = templated(tmp_path, "nvidia", expression, {**facts, "accelerator": "gb200", "accelerators_per_node": 4})
    assert got == [
        "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa/3bf863cc.pub",
        "arm64",
        False,
        True,
    ]


@pytest.mark.parametrize(
    ("cpu_arch", "image", "lib_dir"),
    [
        (
            "arm64",
            "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-arm64:v1.1.2",
            "/usr/lib/aarch64-linux-gnu",
        ),
        ("x86_64", "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.2", "/usr/lib/x86_64-linux-gnu"),
    ],
)
def test_gib_installer_follows_the_plans_architecture(tmp_path: Path, cpu_arch: str, image: str, lib_dir: str) -> None:
    variables = {"cpu_arch": cpu_arch, "nccl_library_versions": {"nccl-gib": "1.1.2"}}
    expression = "[gcp_gpudirect_components['gpudirect-rdma'].plugin_image, gcp_gpudirect_nvidia_lib_dir]"
    assert templated(tmp_path, "gcp_gpudirect", expression, variables) == [image, lib_dir]


@pytest.mark.parametrize("accelerator", ["gb200", "gb300", "h100-sxm-80gb", "b300-sxm"])
def test_every_role_takes_the_catalogs_nvidia_ids(tmp_path: Path, accelerator: str) -> None:
    for role, pattern in (("base", "base_nvidia_accelerator_pattern"), ("nccl", "nccl_accelerator_pattern")):
        assert templated(tmp_path, role, f"'{accelerator}' is match({pattern})", {}) is True


def test_health_role_does_nothing_on_a_cluster_without_slurm(tmp_path: Path) -> None:
    proc = run_role_locally(tmp_path, "slurm_health", {"scheduler": "kubernetes"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changed=0" in proc.stdout
    assert "Check the health checker's inventory" not in proc.stdout  # ended before its first check


@pytest.mark.parametrize(
    ("variables", "missing"),
    [
        pytest.param({"slurm_files": {"/etc/slurm/aicluster-health.json": "{}"}}, "no slurm_health_requirements",
                     id="an-inventory-from-before-the-role"),
        pytest.param({"slurm_files": {}, "slurm_health_requirements": ["pydantic==2.14.3"]},
                     "no /etc/slurm/aicluster-health.json in slurm_files", id="no-checker-configuration"),
    ],
)  # fmt: skip
def test_health_role_refuses_an_inventory_without_what_it_installs(
    tmp_path: Path, variables: dict[str, Any], missing: str
) -> None:
    proc = run_role_locally(tmp_path, "slurm_health", {"scheduler": "slurm", **variables})
    assert proc.returncode != 0
    assert f"the Slurm scripts run aicluster-health, but the inventory has {missing}" in proc.stdout
    assert "`aicluster inventory STACK`" in proc.stdout
    assert "--skip-tags slurm_health" in proc.stdout
