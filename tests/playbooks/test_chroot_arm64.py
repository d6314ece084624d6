"""The roles on a Grace (arm64) host: a Debian bookworm arm64 root filesystem (debootstrap --arch arm64, its programs
run by Debian's qemu-user-static through binfmt_misc) tuned for the A4X pool of a GB200 stack (cpu_arch arm64, NVLink
domains of 18 VMs), the same harness as test_chroot.py.

Applied for real under emulation: validate, base (with its architecture check) and nccl, whose profile then runs in
the root's own arm64 bash with multi-node NVLink on; a second run changes nothing. In check mode (NVIDIA's and
Google's repositories are out of reach here): nvidia, which picks NVIDIA's sbsa and arm64 repositories from the host,
and gcp_gpudirect (its arm64 gIB installer is the plan's choice, tests/playbooks/test_defaults.py). A plan of the
other architecture stops at base.

Building the root takes about 14 minutes on two cores (every package is configured under emulation), once; it is
cached as a tarball beside the x86 one."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from aicluster.inventory import read_yaml
from tests.playbooks.conftest import _root_tools, fresh_rootfs, run_playbook
from tests.playbooks.test_chroot import chroot_inventory, extra_vars
from tests.policies.resources.nvlink import A4X
from tests.targets import debian_rootfs

pytestmark = pytest.mark.slow

HOST = "gb200-000"


@pytest.fixture(scope="module")
def arm64_rootfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    _root_tools()
    tarball = debian_rootfs(arch="arm64")
    with fresh_rootfs(tarball, tmp_path_factory.mktemp("arm64") / "rootfs") as rootfs:
        yield rootfs


# a rack-scale pool's Slurm files need topology/block: Slurm 23.11 or later (22.05, the default, refuses them)
RACK_SCALE_SLURM = ("--slurm-version", "24.11")


def a4x_stack(tmp: Path) -> str:
    """The A4X stack file (tests/policies/resources/nvlink.py), for `aicluster inventory PATH`."""
    path = tmp / "Pulumi.a4x.yaml"
    path.write_text(yaml.safe_dump(A4X), encoding="utf-8")
    return str(path)


def in_root(rootfs: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chroot", str(rootfs), *argv], capture_output=True, text=True, check=False, timeout=300)


def test_the_root_is_arm64(arm64_rootfs: Path) -> None:
    assert in_root(arm64_rootfs, "uname", "-m").stdout.strip() == "aarch64"
    arch = in_root(arm64_rootfs, "dpkg", "--print-architecture").stdout.strip()
    assert arch == "arm64"


def test_roles_tune_a_grace_host_for_multi_node_nvlink(
    arm64_rootfs: Path, collections_path: Path, tmp_path: Path
) -> None:
    inv, texts = chroot_inventory(a4x_stack(tmp_path), HOST, arm64_rootfs, tmp_path, *RACK_SCALE_SLURM)
    pool = read_yaml((inv / "group_vars" / "pool_gb200.yml").read_text())
    assert pool["cpu_arch"] == "arm64"
    assert pool["nvlink"]["nodes_per_domain"] == 18
    args = ["--limit", HOST, "--tags", "validate,base,nccl", *extra_vars()]
    first = run_playbook(inv, *args, collections=collections_path)
    assert first.rc == 0, first.output[-4000:]
    assert first.recap(HOST)["changed"] > 0
    etc = arm64_rootfs / "etc"
    assert (etc / "profile.d/nccl.sh").read_text().endswith(texts["nccl_env"].strip() + "\n")
    # the profile as the node's own (arm64) bash reads it: multi-node NVLink on, after Google's gIB script
    shell = in_root(arm64_rootfs, "bash", "-c", ". /etc/profile.d/nccl.sh; echo $NCCL_MNNVL_ENABLE $NCCL_CUMEM_ENABLE")
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.split() == ["1", "1"]
    assert "kernel.numa_balancing = 0" in (etc / "sysctl.d/90-aicluster.conf").read_text()

    second = run_playbook(inv, *args, collections=collections_path)
    assert second.rc == 0, second.output[-4000:]
    assert second.recap(HOST)["changed"] == 0, second.output[-4000:]
    print(f"\narm64 chroot apply (qemu-user): first run {first.seconds:.1f} s, second run {second.seconds:.1f} s")

    # IMEX needs every node of the domain addressed (this inventory has one host): tests/playbooks/test_chroot_imex.py
    check = run_playbook(inv, "--limit", HOST, "--tags", "nvidia,gcp_gpudirect", "--skip-tags", "nvidia_imex",
                         "--check", "--diff", *extra_vars(), collections=collections_path)  # fmt: skip
    assert check.rc == 0, check.output[-4000:]
    assert "URIs: https://developer.download.nvidia.com/compute/cuda/repos/debian12/sbsa/" in check.output
    assert "URIs: https://nvidia.github.io/libnvidia-container/stable/deb/arm64/" in check.output
    assert check.recap(HOST)["failed"] == 0
    assert not (etc / "apt/sources.list.d/nvidia-cuda.sources").exists()


def test_a_plan_of_the_other_architecture_stops_at_base(
    arm64_rootfs: Path, collections_path: Path, tmp_path: Path
) -> None:
    inv, _ = chroot_inventory(a4x_stack(tmp_path), HOST, arm64_rootfs, tmp_path, *RACK_SCALE_SLURM)
    run = run_playbook(inv, "--limit", HOST, "--tags", "base", "--check", *extra_vars("cpu_arch=x86_64"),
                       collections=collections_path)  # fmt: skip
    assert run.rc != 0
    assert f"{HOST} (pool gb200) is aarch64, but the plan chose x86_64 for a4x-highgpu-4g" in run.output
