"""The slurm_repair role applied for real to a Debian bookworm root filesystem (the harness of test_chroot.py): the
controller of an owned site whose hosts have Redfish BMCs gets aicluster-repair in its virtual environment (pydantic
from wheels downloaded once), the BMC password files (root's alone, from slurm_repair_bmc_passwords, as a vault would
give them; never in the output), and the every-minute timer; the installed program loads the rendered
configuration; a second run changes nothing."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from aicluster.catalog import load_catalog
from aicluster.inventory import inventory, read_yaml, write
from tests.helpers import onprem_cluster, onprem_pool, plan_of
from tests.playbooks.conftest import fresh_rootfs, run_playbook
from tests.playbooks.test_chroot import extra_vars
from tests.targets import wheels_for

pytestmark = pytest.mark.slow

PASSWORD = "s3cret-bmc-7f1d"
HOSTS = [
    {"name": f"dgx-{i:03d}", "address": f"10.200.1.{10 + i}", "bmc": f"redfish://10.200.9.{10 + i}",
     "bmc_username": "admin", "bmc_secret": "aicluster:bmcPassword"}
    for i in range(2)
]  # fmt: skip


def in_root(rootfs: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chroot", str(rootfs), *argv], capture_output=True, text=True, check=False, timeout=120)


def test_repair_role_installs_the_program_the_password_files_and_the_timer(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    plan = plan_of(load_catalog(), onprem_cluster(pools=[onprem_pool(nodes=2, hosts=HOSTS)]))
    files = inventory(plan, {}, {}, "pulumi stack output")
    all_vars = read_yaml(files["group_vars/all.yml"])
    assert all_vars["slurm_repair_bmc_secrets"] == ["aicluster:bmcPassword"]
    assert PASSWORD not in json.dumps(files)
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv = write(tmp_path / "inventory", files, {}, shown="inventory").target
        host = plan.controller_host()
        hostvars = {"ansible_connection": "community.general.chroot", "ansible_host": str(rootfs),
                    "ansible_python_interpreter": "/usr/bin/python3"}  # fmt: skip
        (inv / "zz-chroot.yml").write_text(yaml.safe_dump({"all": {"hosts": {host: hostvars}}}))
        wheels = wheels_for(all_vars["slurm_repair_requirements"])
        secrets = json.dumps({"slurm_repair_bmc_passwords": {"aicluster:bmcPassword": PASSWORD}})
        args = ["--limit", host, "--tags", "validate,slurm_repair",
                *extra_vars(f"aicluster_programs_wheel_dir={wheels}"), "-e", secrets]  # fmt: skip
        first = run_playbook(inv, *args, collections=collections_path)
        assert first.rc == 0, first.output[-4000:]
        assert first.recap(host)["changed"] > 0
        assert PASSWORD not in first.output  # no_log

        secret = rootfs / "etc/aicluster/bmc/bmcPassword"
        assert secret.read_text() == PASSWORD + "\n"
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        assert (secret.stat().st_uid, secret.stat().st_gid) == (0, 0)
        assert stat.S_IMODE(secret.parent.stat().st_mode) == 0o700

        program = rootfs / "opt/aicluster/bin/aicluster-repair"
        assert stat.S_IMODE(program.stat().st_mode) == 0o755
        helped = in_root(rootfs, "/opt/aicluster/bin/aicluster-repair", "--help")
        assert helped.returncode == 0, helped.stdout + helped.stderr
        assert "usage: aicluster-repair " in helped.stdout
        # the rendered configuration (slurm_common installs slurm_files on every Slurm host; not run here) loads with
        # the installed pydantic; its BMCs point at the password file
        conf = rootfs / "etc/slurm/aicluster-repair.json"
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(all_vars["slurm_files"]["/etc/slurm/aicluster-repair.json"])
        check = (
            "from pathlib import Path; from aicluster.repair.config import load; "
            "c = load(Path('/etc/slurm/aicluster-repair.json')); "
            "print(c.actions['XID79'], sorted(c.bmcs), c.bmcs['dgx-000'].password_file)"
        )
        loaded = in_root(rootfs, "env", "PYTHONPATH=/opt/aicluster/lib", "/opt/aicluster/venv/bin/python", "-c", check)
        assert loaded.returncode == 0, loaded.stdout + loaded.stderr
        assert loaded.stdout.split() == ["power_cycle", "['dgx-000',", "'dgx-001']", "/etc/aicluster/bmc/bmcPassword"]
        # a configuration error is the program's own message and exit status 2
        missing = in_root(rootfs, "/opt/aicluster/bin/aicluster-repair", "--config", "/nonexistent.json")
        assert missing.returncode == 2, missing.stdout + missing.stderr
        assert "/nonexistent.json: not found" in missing.stderr

        units = rootfs / "etc/systemd/system"
        service = (units / "aicluster-repair.service").read_text()
        assert "User=root\n" in service
        assert "ExecStart=/opt/aicluster/bin/aicluster-repair --config /etc/slurm/aicluster-repair.json\n" in service
        assert "OnCalendar=minutely\n" in (units / "aicluster-repair.timer").read_text()

        second = run_playbook(inv, *args, collections=collections_path)
        assert second.rc == 0, second.output[-4000:]
        assert second.recap(host)["changed"] == 0, second.output[-4000:]
        print(f"\nrepair chroot apply: first run {first.seconds:.1f} s, second run {second.seconds:.1f} s")
