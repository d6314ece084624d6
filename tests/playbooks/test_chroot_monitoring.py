"""The monitoring roles applied for real to a Debian bookworm root filesystem (the chroot harness of
test_chroot.py): Debian's prometheus-node-exporter and prometheus from the archive, the files `aicluster inventory`
renders, `promtool check config` on what was installed, and a second run that changes nothing. dcgm-exporter is not
in Debian: by default its role writes only the counters and says the exporter is not installed; told to run a binary
that is not there it stops with the message that says how to provide one; with a stand-in binary (what an image would
carry) it writes the unit that runs it."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from aicluster.inventory import read_yaml
from tests.playbooks.conftest import fresh_rootfs, run_playbook
from tests.playbooks.test_chroot import chroot_inventory, extra_vars

pytestmark = pytest.mark.slow

NO_SERVICES = [f"{role}_manage_services=false" for role in ("node_exporter", "dcgm_exporter", "prometheus")]


def _vars(*pairs: str) -> list[str]:
    return extra_vars(*NO_SERVICES, *pairs)


def test_prometheus_and_node_exporter_on_the_controller_and_a_second_run_changes_nothing(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv, _ = chroot_inventory("p5-small", "llm-dev-slurmctld", rootfs, tmp_path)
        controller = read_yaml((inv / "group_vars" / "slurm_controller.yml").read_text())
        everyone = read_yaml((inv / "group_vars" / "all.yml").read_text())
        args = ["--limit", "llm-dev-slurmctld", "--tags", "validate,node_exporter,prometheus", *_vars()]
        first = run_playbook(inv, *args, collections=collections_path)
        assert first.rc == 0, first.output[-4000:]
        assert first.recap("llm-dev-slurmctld")["changed"] > 0

        etc = rootfs / "etc"
        # node_exporter: Debian's package, on the catalog's port, the infiniband collector named
        assert (rootfs / "usr/bin/prometheus-node-exporter").exists()
        args_line = (etc / "default/prometheus-node-exporter").read_text()
        assert f"--web.listen-address=:{everyone['node_exporter_port']}" in args_line
        assert "--collector.infiniband" in args_line
        # Prometheus: every file the inventory carries, byte for byte, where prometheus.yml names them
        files = controller["prometheus_files"]
        assert {"prometheus.yml", "rules/gpu.yml", "targets/node.yml"} <= set(files)
        for rel, text in files.items():
            assert (etc / "prometheus" / rel).read_text() == text, rel
        assert "--config.file=/etc/prometheus/prometheus.yml" in (etc / "default/prometheus").read_text()
        # the installed configuration and rules pass the installed promtool (the role ran it too)
        check = subprocess.run(
            ["chroot", str(rootfs), "/usr/bin/promtool", "check", "config", "/etc/prometheus/prometheus.yml"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert check.returncode == 0, check.stdout + check.stderr
        assert "SUCCESS" in check.stdout + check.stderr
        assert "rules found" in check.stdout + check.stderr

        second = run_playbook(inv, *args, collections=collections_path)
        assert second.rc == 0, second.output[-4000:]
        assert second.recap("llm-dev-slurmctld")["changed"] == 0, second.output[-4000:]
        print(f"\nmonitoring chroot apply: first run {first.seconds:.1f} s, second run {second.seconds:.1f} s")

        # managed, before `up`: the inventory says the workspace is not known yet, and the role stops there
        waiting = run_playbook(
            inv,
            *args,
            "-e",
            "prometheus_remote_write_missing='the workspace address is a stack output; run pulumi up'",
            collections=collections_path,
        )
        assert waiting.rc != 0
        assert "the workspace address is a stack output; run pulumi up" in waiting.output


def test_dcgm_exporter_runs_a_provided_binary_with_the_inventorys_counters(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv, _ = chroot_inventory("p5-small", "h100-000", rootfs, tmp_path)
        everyone = read_yaml((inv / "group_vars" / "all.yml").read_text())
        not_installed = run_playbook(
            inv, "--limit", "h100-000", "--tags", "dcgm_exporter", *_vars(), collections=collections_path
        )
        assert not_installed.rc == 0, not_installed.output[-4000:]
        # the counters only (the play's message, hidden with ok results here, says the exporter is not installed)
        assert (rootfs / "etc/dcgm-exporter/aicluster-counters.csv").read_text() == everyone["dcgm_exporter_counters"]
        assert not (rootfs / "etc/systemd/system/dcgm-exporter.service").exists()

        args = ["--limit", "h100-000", "--tags", "dcgm_exporter", *_vars("dcgm_exporter_source=binary")]
        refused = run_playbook(inv, *args, collections=collections_path)
        assert refused.rc != 0
        assert "no executable dcgm-exporter at /usr/local/bin/dcgm-exporter" in refused.output
        assert "dcgm_exporter_source" in refused.output

        binary = rootfs / "usr/local/bin/dcgm-exporter"  # what an image built with `make binary` would carry
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text("#!/bin/sh\nexit 0\n")
        binary.chmod(0o755)
        first = run_playbook(inv, *args, collections=collections_path)
        assert first.rc == 0, first.output[-4000:]
        counters = rootfs / "etc/dcgm-exporter/aicluster-counters.csv"
        assert counters.read_text() == everyone["dcgm_exporter_counters"]
        assert "DCGM_FI_DEV_ROW_REMAP_PENDING, gauge" in counters.read_text()
        unit = (rootfs / "etc/systemd/system/dcgm-exporter.service").read_text()
        port = everyone["dcgm_exporter_port"]
        exec_start = f"ExecStart=/usr/local/bin/dcgm-exporter -f /etc/dcgm-exporter/aicluster-counters.csv -a :{port}"
        assert exec_start in unit
        assert stat.S_IMODE(counters.stat().st_mode) == 0o644

        second = run_playbook(inv, *args, collections=collections_path)
        assert second.rc == 0, second.output[-4000:]
        assert second.recap("h100-000")["changed"] == 0, second.output[-4000:]
