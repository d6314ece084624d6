"""The nvidia_imex role applied for real to a Debian bookworm root filesystem through the chroot connection, for a
tray of the gb200-site test stack (four GB200 NVL72 racks): nodes_config.cfg is its NVLink domain's 18 addresses
in plan order (the same file on every node of the rack), config.cfg gets the IMEX settings, a second run changes
nothing, and a domain with a node the inventory has no address for is refused with what to do. The package comes
from NVIDIA's repository, which a test machine does not reach: it is installed in check mode only (the play after
the nvidia role, as `--tags nvidia` runs them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicluster.catalog import load_catalog
from aicluster.inventory import inventory, write
from tests.helpers import data_stack, plan_of
from tests.playbooks.conftest import fresh_rootfs, run_playbook
from tests.playbooks.test_defaults import templated

pytestmark = pytest.mark.slow

HOST = "gb200-020"  # rack 2 (gb200-nvl1: gb200-018 .. gb200-035)
NO_SERVICES = ["-e", "nvidia_imex_manage_services=false", "-e", "nvidia_imex_install=false"]


def chroot_inventory(where: Path, addresses: dict[str, str]) -> Path:
    """The gb200-site inventory (Slurm 24.11) with `addresses` (--hosts)."""
    cp = plan_of(load_catalog(), data_stack("gb200-site"))
    write(where, inventory(cp, {}, addresses, "test", slurm_version=(24, 11)), addresses, shown=str(where))
    return where


# The IMEX role alone: the validate play still asserts the NCCL texts, and the on-prem GB200 tray has no sourced
# NCCL profile yet (its compute HCAs' names are unpublished), as the validate role's message says to skip them
NO_NCCL = ("-e", "validate_require_nccl=false")


def on_rootfs(rootfs: Path) -> list[str]:
    """HOST is the root filesystem, over the chroot connection: extra vars, which win over the inventory's address
    (the IMEX addresses are the inventory's group_vars, written before)."""
    hostvars = {
        "ansible_connection": "community.general.chroot",
        "ansible_host": str(rootfs),
        "ansible_python_interpreter": "/usr/bin/python3",
    }
    return ["--limit", HOST, *(arg for k, v in hostvars.items() for arg in ("-e", f"{k}={v}"))]


def test_imex_domain_files_apply_to_a_tray_and_a_second_run_changes_nothing(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    addresses = {f"gb200-{i:03d}": f"10.210.{1 + i // 18}.{11 + i % 18}" for i in range(72)}
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv = chroot_inventory(tmp_path / "inventory", addresses)
        args = [*on_rootfs(rootfs), "--tags", "nvidia_imex", *NO_SERVICES, *NO_NCCL]
        first = run_playbook(inv, *args, collections=collections_path)
        assert first.rc == 0, first.output[-4000:]
        assert first.recap(HOST)["changed"] > 0
        imex = rootfs / "etc/nvidia-imex"
        rack = [addresses[f"gb200-{i:03d}"] for i in range(18, 36)]
        assert (imex / "nodes_config.cfg").read_text() == "\n".join(rack) + "\n"
        assert (imex / "config.cfg").read_text().splitlines() == [
            "IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg",
            "SERVER_PORT=50000",
            "IMEX_CMD_ENABLED=1",
            "IMEX_CMD_PORT=50005",
        ]
        second = run_playbook(inv, *args, collections=collections_path)
        assert second.rc == 0, second.output[-4000:]
        assert second.recap(HOST)["changed"] == 0, second.output[-4000:]

        # the package in check mode, after the nvidia role configured (in check mode) the repository it comes from
        check = run_playbook(inv, *on_rootfs(rootfs), "--tags", "nvidia", "--check", "--diff", *NO_NCCL,
                             "-e", "nvidia_manage_services=false", "-e", "nvidia_imex_manage_services=false",
                             collections=collections_path)  # fmt: skip
        assert check.rc == 0, check.output[-4000:]
        assert check.recap(HOST)["failed"] == 0


@pytest.mark.parametrize(
    ("version", "package"),
    [
        pytest.param("580.173.02", "nvidia-imex=580.173.02-*", id="580-unversioned-name"),
        pytest.param("570.172.08", "nvidia-imex-570=570.172.08-*", id="570-branch-in-the-name"),
    ],
)
def test_the_imex_package_follows_the_driver_branch(tmp_path: Path, version: str, package: str) -> None:
    assert templated(tmp_path, "nvidia_imex", "nvidia_imex_package", {"nvidia_imex_version": version}) == package


def test_a_domain_with_a_node_without_an_address_is_refused(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    addresses = {f"gb200-{i:03d}": f"10.210.1.{11 + i}" for i in range(18, 30)}  # 12 of rack 2's 18
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv = chroot_inventory(tmp_path / "inventory", addresses)
        run = run_playbook(
            inv, *on_rootfs(rootfs), "--tags", "nvidia_imex", *NO_SERVICES, *NO_NCCL, collections=collections_path
        )
        assert run.rc != 0
        assert (
            "gb200-020: NVLink domain gb200-nvl1 has nodes without an address (gb200-030, gb200-031, gb200-032, "
            "gb200-033, gb200-034 ...)" in run.output
        ), run.output[-3000:]
        assert not (rootfs / "etc/nvidia-imex/nodes_config.cfg").exists()
