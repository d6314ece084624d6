"""The slurm_burst role applied for real to a Debian bookworm root filesystem (the same harness as test_chroot.py):
the controller of a site that bursts into AWS and GCP gets slurmctld, the bursting programs in their virtual
environment (pydantic and the two SDKs installed from wheels downloaded once, since the root filesystem needs no
package index), the state directory and the sync timer; a second run changes nothing."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from aicluster.catalog import load_catalog
from aicluster.inventory import inventory, read_yaml, write
from aicluster.schedulers.slurm.render import DEFAULT_SETTINGS, burst_programs
from tests.helpers import hybrid_site_cluster, plan_of
from tests.playbooks.conftest import fresh_rootfs, munge_key, run_playbook
from tests.playbooks.test_chroot import extra_vars
from tests.targets import unavailable, wheels_for

pytestmark = pytest.mark.slow

# What `pulumi stack output` gives once the stack is up: the groups the resume program resizes.
OUTPUTS = {
    "pools": {
        "p5": {"asg_name": "hybrid-fra1-p5-asg-5d1e0c7"},
        "a3": {"group_names": {"a3-p0": "hybrid-fra1-a3-a3-p0-3b9f2a1"}},
    }
}
STACK_CONFIG = {"gcp:project": "ml-burst-1234"}
PREFIX = Path("opt/aicluster")
HOST_UNITS = Path("/usr/lib/systemd/system")


def burst_inventory(rootfs: Path, tmp: Path) -> tuple[Path, str, dict[str, object]]:
    """The inventory of a deployed hybrid stack, its controller pointed at the root filesystem."""
    plan = plan_of(load_catalog(), hybrid_site_cluster())
    files = inventory(plan, OUTPUTS, {}, "pulumi stack output", stack_config=STACK_CONFIG)
    inv = write(tmp / "inventory", files, {}, shown="inventory").target
    host = plan.controller_host()
    hostvars = {
        "ansible_connection": "community.general.chroot",
        "ansible_host": str(rootfs),
        "ansible_python_interpreter": "/usr/bin/python3",
    }
    # read after hosts.yml, whose address for the controller (the site's) it replaces
    (inv / "zz-chroot.yml").write_text(yaml.safe_dump({"all": {"hosts": {host: hostvars}}}))
    return inv, host, read_yaml(files["group_vars/all.yml"])


def in_root(rootfs: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chroot", str(rootfs), *argv], capture_output=True, text=True, check=False, timeout=120)


def test_burst_role_installs_the_programs_and_the_sync_timer_and_a_second_run_changes_nothing(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv, host, all_vars = burst_inventory(rootfs, tmp_path)
        assert all_vars["slurm_burst_providers"] == ["aws", "gcp"]
        wheels = wheels_for(all_vars["slurm_burst_requirements"])  # type: ignore[arg-type]
        args = [
            "--limit", host,
            "--tags", "validate,slurm_common,slurm_controller,slurm_burst",
            *extra_vars(f"slurm_common_munge_key={munge_key()}", f"aicluster_programs_wheel_dir={wheels}"),
        ]  # fmt: skip
        first = run_playbook(inv, *args, collections=collections_path)
        assert first.rc == 0, first.output[-4000:]
        assert first.recap(host)["changed"] > 0

        # the three programs, where slurm.conf's ResumeProgram / SuspendProgram / ResumeFailProgram point
        programs = [
            *burst_programs(DEFAULT_SETTINGS).values(),
            f"{DEFAULT_SETTINGS.burst_bin_dir}/aicluster-burst-sync",
        ]
        for program in programs:
            path = rootfs / program.lstrip("/")
            assert stat.S_IMODE(path.stat().st_mode) == 0o755, program
            assert (path.stat().st_uid, path.stat().st_gid) == (0, 0), program
        module = {"aicluster-resume": "resume", "aicluster-suspend": "suspend", "aicluster-burst-sync": "sync"}
        for program in programs:
            name = Path(program).name
            assert f"-m aicluster.burst.{module[name]} " in (rootfs / program.lstrip("/")).read_text()
            helped = in_root(rootfs, program, "--help")
            assert helped.returncode == 0, helped.stdout + helped.stderr
            assert f"usage: {name} " in helped.stdout
        # a configuration error is the programs' own message and exit status 2
        missing = in_root(rootfs, programs[2], "--config", "/nonexistent.json")
        assert missing.returncode == 2, missing.stdout + missing.stderr
        assert "/nonexistent.json: not found" in missing.stderr
        # the rendered configuration loads with the installed pydantic, and both SDKs import in the venv
        python = f"/{PREFIX}/venv/bin/python"
        check = (
            "from pathlib import Path; from aicluster.burst.config import load; import boto3; "
            "from google.cloud import compute_v1; "
            "c = load(Path('/etc/slurm/aicluster-burst.json')); print(c.state_dir, [s.provider for s in c.node_sets])"
        )
        loaded = in_root(rootfs, "env", f"PYTHONPATH=/{PREFIX}/lib", python, "-c", check)
        assert loaded.returncode == 0, loaded.stdout + loaded.stderr
        assert loaded.stdout.split() == ["/var/spool/slurmctld/aicluster-burst", "['aws',", "'gcp']"]

        state = rootfs / "var/spool/slurmctld/aicluster-burst"
        slurm_uid = next(
            int(line.split(":")[2])
            for line in (rootfs / "etc/passwd").read_text().splitlines()
            if line.startswith("slurm:")
        )
        assert state.is_dir()
        assert state.stat().st_uid == slurm_uid
        assert stat.S_IMODE(state.stat().st_mode) == 0o750

        units = rootfs / "etc/systemd/system"
        service = (units / "aicluster-burst-sync.service").read_text()
        assert "User=slurm\n" in service
        assert "ExecStart=/opt/aicluster/bin/aicluster-burst-sync --config /etc/slurm/aicluster-burst.json\n" in service
        assert "OnCalendar=minutely\n" in (units / "aicluster-burst-sync.timer").read_text()
        assert not (units / "timers.target.wants/aicluster-burst-sync.timer").exists()  # no services in a chroot
        second = run_playbook(inv, *args, collections=collections_path)
        assert second.rc == 0, second.output[-4000:]
        assert second.recap(host)["changed"] == 0, second.output[-4000:]
        print(f"\nburst chroot apply: first run {first.seconds:.1f} s, second run {second.seconds:.1f} s")
        assert json.loads((rootfs / "etc/slurm/aicluster-burst.json").read_text())["cluster"] == "hybrid-fra1"

        # The units as systemd reads them, ExecStart resolved inside the root filesystem. A minimal root has no
        # systemd of its own: the targets the units hang on (sysinit, timers) are lent from this machine's systemd.
        analyze = shutil.which("systemd-analyze")
        if analyze is None:
            unavailable(
                "systemd-analyze is not installed (the units were written, not verified)", "apt-get install systemd"
            )
        for unit in HOST_UNITS.glob("*"):
            lent = rootfs / "usr/lib/systemd/system" / unit.name
            if not lent.exists() and unit.is_file():
                lent.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(unit, lent)
        verify = subprocess.run(
            [analyze, "verify", f"--root={rootfs}", "--man=no",
             "/etc/systemd/system/aicluster-burst-sync.service", "/etc/systemd/system/aicluster-burst-sync.timer"],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        assert verify.returncode == 0, verify.stdout + verify.stderr
