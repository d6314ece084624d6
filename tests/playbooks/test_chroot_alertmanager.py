"""The alertmanager role applied for real to a Debian bookworm root filesystem (the chroot harness of test_chroot.py),
on an example stack given the routing of onprem-dgx-h100 (PagerDuty and Slack): Debian's prometheus-alertmanager
from the archive, the alertmanager.yml `aicluster inventory` renders, each receiver's secret written from a vault
variable to the file the configuration names (root:prometheus, 0640) and never shown in Ansible's output, the
installed amtool accepting the installed configuration, and a second run that changes nothing. Without the secrets
and without a Pulumi stack to read them from, the role stops with the message that says how to give them."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from aicluster.inventory import read_yaml
from tests.conftest import ROOT
from tests.playbooks.conftest import fresh_rootfs, run_playbook
from tests.playbooks.test_chroot import chroot_inventory, extra_vars

pytestmark = pytest.mark.slow

HOST = "llm-dev-slurmctld"  # p5-small's controller (an owned host's address would take the chroot's place)
SECRETS = {
    "aicluster:pagerdutyKey": "pd-routing-key-0123456789",
    "aicluster:slackWebhook": "https://hooks.slack.test/x",
}


def routed_stack(tmp: Path) -> Path:
    """p5-small with onprem-dgx-h100's monitoring.alerts, as a stack file of its own."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text(encoding="utf-8"))
    onprem = yaml.safe_load((ROOT / "stacks" / "Pulumi.onprem-dgx-h100.yaml").read_text(encoding="utf-8"))
    doc["config"]["aicluster:cluster"]["monitoring"] = onprem["config"]["aicluster:cluster"]["monitoring"]
    path = tmp / "Pulumi.p5-routed.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _vars(*pairs: str) -> list[str]:
    return extra_vars("alertmanager_manage_services=false", *pairs)


def test_alertmanager_on_the_controller_with_its_secret_files_and_a_second_run_changes_nothing(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv, _ = chroot_inventory(str(routed_stack(tmp_path)), HOST, rootfs, tmp_path)
        controller = read_yaml((inv / "group_vars" / "slurm_controller.yml").read_text())
        assert [s["key"] for s in controller["alertmanager_secrets"]] == list(SECRETS)

        refused = run_playbook(inv, "--limit", HOST, "--tags", "alertmanager", *_vars(), collections=collections_path)
        assert refused.rc != 0
        assert "alertmanager_pulumi_stack does not name" in " ".join(refused.output.split()), refused.output[-6000:]

        given = json.dumps({"alertmanager_secret_values": SECRETS})
        args = ["--limit", HOST, "--tags", "validate,alertmanager", *_vars(given)]
        first = run_playbook(inv, *args, collections=collections_path)
        assert first.rc == 0, first.output[-4000:]
        assert first.recap(HOST)["changed"] > 0
        for value in SECRETS.values():
            assert value not in first.output  # no_log: the values never reach the output

        etc = rootfs / "etc/prometheus"
        assert (rootfs / "usr/bin/prometheus-alertmanager").exists()
        assert (etc / "alertmanager.yml").read_text() == controller["alertmanager_config"]
        group = (etc / "alertmanager-secrets").stat().st_gid
        for secret in controller["alertmanager_secrets"]:
            path = rootfs / secret["file"].lstrip("/")
            assert path.read_text() == SECRETS[secret["key"]]
            assert stat.S_IMODE(path.stat().st_mode) == 0o640
            assert (path.stat().st_uid, path.stat().st_gid) == (0, group)
        assert stat.S_IMODE((etc / "alertmanager-secrets").stat().st_mode) == 0o750
        # the group is the chroot's prometheus group (the package's), whatever number it has there
        chroot_groups = {
            line.split(":")[2]: line.split(":")[0] for line in (rootfs / "etc/group").read_text().splitlines()
        }
        assert chroot_groups[str(group)] == "prometheus"
        # the installed configuration passes the installed amtool (the role ran it too)
        check = subprocess.run(
            ["chroot", str(rootfs), "/usr/bin/amtool", "check-config", "/etc/prometheus/alertmanager.yml"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert check.returncode == 0, check.stdout + check.stderr
        assert "SUCCESS" in check.stdout

        second = run_playbook(inv, *args, collections=collections_path)
        assert second.rc == 0, second.output[-4000:]
        assert second.recap(HOST)["changed"] == 0, second.output[-4000:]
        print(f"\nalertmanager chroot apply: first run {first.seconds:.1f} s, second run {second.seconds:.1f} s")
