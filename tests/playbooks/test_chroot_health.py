"""The slurm_health role applied for real to a Debian bookworm root filesystem (the harness of test_chroot.py): a p5
compute node gets aicluster-health where the Slurm scripts call it, in its virtual environment (pydantic from wheels
downloaded once: the root filesystem needs no package index), its state directory and the configuration slurm_common
writes; a check-mode run before writes nothing, a second run changes nothing. Then the installed checker runs inside
the root (chroot) on a fake node (tests/health/fakes.py: recorded nvidia-smi and dmesg outputs, a recorded /sys
tree, a stand-in scontrol) with the rendered configuration's pools and XID table: the boot layer passes, an XID 79
in the kernel log drains the node."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from aicluster.health.reasons import parse_reason
from aicluster.inventory import read_yaml
from aicluster.render.health import CONFIG_FILE
from aicluster.schedulers.slurm.render import DEFAULT_SETTINGS
from tests.health.fakes import DATA, healthy_node
from tests.playbooks.conftest import fresh_rootfs, munge_key, run_playbook
from tests.playbooks.test_chroot import chroot_inventory, extra_vars
from tests.playbooks.test_chroot_burst import in_root
from tests.targets import wheels_for

pytestmark = pytest.mark.slow

HOST = "h100-000"  # p5-small's first node: 8 H100, EFA, FSx for Lustre at /fsx
CONFIG = f"{DEFAULT_SETTINGS.conf_dir}/{CONFIG_FILE}"
PROGRAM = f"{DEFAULT_SETTINGS.health_bin_dir}/aicluster-health"
FAKE = Path("/srv/fake-node")  # the fake node's tools and recordings, as the checker sees them inside the root


def test_health_role_installs_the_checker_the_slurm_scripts_call_and_it_judges_the_node(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv, texts = chroot_inventory("p5-small", HOST, rootfs, tmp_path)
        all_vars = read_yaml((inv / "group_vars" / "all.yml").read_text())
        wheels = wheels_for(all_vars["slurm_health_requirements"])
        args = [
            "--limit", HOST,
            "--tags", "validate,slurm_common,slurm_health",
            *extra_vars(f"slurm_common_munge_key={munge_key()}", f"aicluster_programs_wheel_dir={wheels}"),
        ]  # fmt: skip
        # `aicluster tune --check` on a fresh node: what would change, nothing written (the pip module needs the
        # python3-packaging that the check only pretends to install)
        only = [*args[:2], "--tags", "slurm_health", *args[4:]]
        check = run_playbook(inv, *only, "--check", collections=collections_path)
        assert check.rc == 0, check.output[-4000:]
        assert "changed: [h100-000] => (item=aicluster-health)" in check.output
        assert not (rootfs / "opt/aicluster").exists()

        first = run_playbook(inv, *args, collections=collections_path)
        assert first.rc == 0, first.output[-4000:]
        assert first.recap(HOST)["changed"] > 0

        # the program where the Prolog, Epilog and HealthCheckProgram look for it, with the configuration they pass
        for script in ("prolog", "epilog", "healthcheck"):
            text = texts["slurm_files"][f"{DEFAULT_SETTINGS.conf_dir}/{script}.sh"]
            assert f":{DEFAULT_SETTINGS.health_bin_dir}\n" in text, script
            assert f" --config {CONFIG} " in text, script
        program = rootfs / PROGRAM.lstrip("/")
        assert stat.S_IMODE(program.stat().st_mode) == 0o755
        assert (program.stat().st_uid, program.stat().st_gid) == (0, 0)
        assert "-m aicluster.health.cli " in program.read_text()
        assert (rootfs / CONFIG.lstrip("/")).read_text() == texts["slurm_files"][CONFIG]
        state = rootfs / json.loads(texts["slurm_files"][CONFIG])["state_dir"].lstrip("/")
        assert state == rootfs / "var/lib/aicluster-health"
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        assert (state.stat().st_uid, state.stat().st_gid) == (0, 0)
        helped = in_root(rootfs, PROGRAM, "--help")
        assert helped.returncode == 0, helped.stdout + helped.stderr
        assert "usage: aicluster-health " in helped.stdout
        second = run_playbook(inv, *args, collections=collections_path)
        assert second.rc == 0, second.output[-4000:]
        assert second.recap(HOST)["changed"] == 0, second.output[-4000:]
        print(f"\nhealth chroot apply: first run {first.seconds:.1f} s, second run {second.seconds:.1f} s")

        # The installed checker on a fake H100 node inside the root: the rendered configuration (the p5 pool: 8 H100
        # with NVLink, EFA, /fsx written to; the catalog's XID table), its node-local paths pointed at the fake.
        (rootfs / FAKE.relative_to("/")).mkdir(parents=True)
        node = healthy_node(rootfs / FAKE.relative_to("/"), at=FAKE, python="/usr/bin/python3")
        fake = json.loads(node.config().read_text())
        config = json.loads((rootfs / CONFIG.lstrip("/")).read_text())
        config |= {k: fake[k] for k in ("tools", "sys_root", "mounts_file", "boot_id_file")}
        assert config["pools"]["h100"]["mounts"] == [{"path": "/fsx", "write_check": True}]
        (rootfs / "fsx").mkdir()
        with (node.root / "mounts").open("a") as mounts:
            mounts.write("10.0.0.9@tcp:/fsx /fsx lustre rw,relatime 0 0\n")
        (node.root / "health.json").write_text(json.dumps(config))

        def check(layer: str) -> int:
            run = in_root(rootfs, PROGRAM, "--layer", layer, "--config", str(FAKE / "health.json"), "--node", HOST)
            assert "Traceback" not in run.stderr, run.stderr
            print(run.stderr, end="")
            return run.returncode

        assert check("boot") == 0
        assert node.updates() == []
        assert node.node() == {"state": "IDLE", "reason": None}
        assert json.loads((state / "state.json").read_text())["boot_id"] == "6a1f0e0c-boot-0001"

        shutil.copy(DATA / "dmesg-xid79.txt", node.out / "dmesg.txt")
        assert check("periodic") == 1
        drained = node.node()
        assert drained["state"] == "IDLE+DRAIN"
        reason = parse_reason(drained["reason"])
        assert reason is not None
        assert reason.code == "XID79", drained
