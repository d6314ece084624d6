"""`aicluster tune` end to end against four real SSH hosts (network namespaces running sshd over a Debian root
filesystem): the real playbook and roles, one host made to fail, the other three finish, the summary names the
failed one, the exit code says so, a rerun limited to it succeeds once the fault is gone, and a further run over
all four changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aicluster.inventory import read_yaml
from tests.conftest import IN_CI, ROOT
from tests.tune.hosts import ansible_env, missing_tools, ssh_hosts
from tests.tune.test_tune_local import rows

pytestmark = pytest.mark.slow
NODES = ["h100-000", "h100-001", "h100-002", "h100-003"]


@pytest.fixture
def tools() -> None:
    missing = missing_tools()
    if missing:
        message = f"needs root and {', '.join(missing)}: apt-get install debootstrap iproute2 openssh-client"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def tune(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "aicluster.cli",
            "tune",
            "good",
            "--playbook",
            str(ROOT / "playbooks" / "site.yml"),
            "--tags",
            "base,nccl",
            "-e",
            "base_apply_sysctl=false",  # the namespaces share this machine's kernel
            *args,
        ],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "200", **env},
        timeout=600,
    )


def test_tune_four_ssh_hosts_with_one_failing(tools: None, project: Path, tmp_path: Path) -> None:
    with ssh_hosts(NODES, tmp_path / "nodes") as (nodes, key):
        hosts = tmp_path / "hosts.yml"
        hosts.write_text(yaml.safe_dump({n.name: n.address for n in nodes}))
        env = ansible_env(key)
        broken = next(n for n in nodes if n.name == "h100-002")
        (broken.upper / "etc" / "nccl.conf").mkdir(parents=True)  # a directory where the file must go

        first = tune(project, env, "--hosts", str(hosts), "--limit", "slurm_compute")
        assert first.returncode == 1, first.stdout + first.stderr
        table = rows(first.stdout)
        assert set(table) == set(NODES)
        assert table["h100-002"][2] == "1", first.stdout  # failed
        assert all(table[n][2:4] == ["0", "0"] for n in NODES if n != "h100-002")  # no failure, reachable
        retry = f"aicluster tune good --tags base,nccl --hosts {hosts} --playbook {ROOT / 'playbooks' / 'site.yml'}"
        assert f"retry them: {retry} --extra-vars base_apply_sysctl=false --limit h100-002" in first.stdout
        inventory = read_yaml((project / ".work/good/inventory/group_vars/pool_h100.yml").read_text())
        for node in nodes:
            if node.name != "h100-002":
                assert inventory["nccl_conf"] in (node.upper / "etc" / "nccl.conf").read_text()
                assert inventory["nccl_env"] in (node.upper / "etc" / "profile.d" / "nccl.sh").read_text()

        (broken.upper / "etc" / "nccl.conf").rmdir()
        retry = tune(project, env, "--hosts", str(hosts), "--limit", "h100-002")
        assert retry.returncode == 0, retry.stdout + retry.stderr
        assert list(rows(retry.stdout)) == ["h100-002"]
        assert inventory["nccl_conf"] in (broken.upper / "etc" / "nccl.conf").read_text()

        again = tune(project, env, "--hosts", str(hosts), "--limit", "slurm_compute")
        assert again.returncode == 0, again.stdout + again.stderr
        assert all(cells[1] == "0" for cells in rows(again.stdout).values()), again.stdout  # changed=0
