"""The roles applied for real to a Debian bookworm root filesystem (debootstrap) through the
community.general.chroot connection: the first run applies, the second changes nothing; the roles
that need GPUs or vendor repositories this machine cannot reach run in check mode and must not fail.

Applied for real: validate, base, nccl, slurm_common and slurm_compute (Debian's munge, slurm-client
and slurmd 22.05 packages). Check mode only: nvidia, efa, infiniband (inbox and DOCA), gcp_gpudirect
(TCPXO and gIB), tpu."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster.inventory import read_yaml
from tests.playbooks.conftest import fresh_rootfs, munge_key, render_inventory, run_playbook

pytestmark = pytest.mark.slow

# Stand-ins for the inventory variables `aicluster inventory` does not write yet (nccl_conf, nccl_env,
# slurm_files, nccl_expected_busbw_gb_s); used only when the rendered inventory lacks them.
NCCL_CONF = "NCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME=^lo,docker\n"
NCCL_ENV = "export FI_EFA_USE_HUGE_PAGE=0\n"
SLURM_FILES = {
    "/etc/slurm/slurm.conf": "ClusterName=test\nSlurmctldHost=test-slurmctld\nGresTypes=gpu\n",
    "/etc/slurm/gres.conf": "AutoDetect=off\nNodeName=h100-[000-003] Name=gpu Type=h100 File=/dev/nvidia[0-7]\n",
    "/etc/slurm/cgroup.conf": "ConstrainDevices=yes\n",
    "/etc/slurm/prolog.d/10-dcgm-diag.sh": "#!/bin/sh\nexec dcgmi diag -r 1\n",
}
# Nothing may be started or loaded in a chroot: it shares this machine's kernel and process table.
NO_SERVICES = [
    "base_apply_sysctl=false",
    *(
        f"{role}_manage_services=false"
        for role in (
            "base",
            "nvidia",
            "infiniband",
            "gcp_gpudirect",
            "slurm_common",
            "slurm_controller",
            "slurm_burst",
            "slurm_compute",
        )
    ),
]


def chroot_inventory(stack: str, host: str, rootfs: Path, tmp: Path, *flags: str) -> tuple[Path, dict[str, Any]]:
    """`aicluster inventory STACK FLAGS...`, plus one file that points `host` at the root filesystem; and the
    NCCL and Slurm texts the host gets (the inventory's, else the stand-ins)."""
    inv = render_inventory(stack, tmp / f"inventory-{Path(stack).stem}", *flags)
    pool_vars: dict[str, Any] = {}
    for path in (inv / "group_vars").glob("pool_*.yml"):
        pool_vars |= read_yaml(path.read_text())
    all_vars = read_yaml((inv / "group_vars" / "all.yml").read_text())
    hostvars: dict[str, Any] = {
        "ansible_connection": "community.general.chroot",
        "ansible_host": str(rootfs),
        "ansible_python_interpreter": "/usr/bin/python3",
    }
    if "nccl_conf" not in pool_vars:
        hostvars |= {"nccl_conf": NCCL_CONF, "nccl_env": NCCL_ENV}
    if "slurm_files" not in all_vars:
        hostvars["slurm_files"] = SLURM_FILES
    (inv / "chroot.yml").write_text(yaml.safe_dump({"all": {"hosts": {host: hostvars}}}))
    texts = {
        "nccl_conf": hostvars.get("nccl_conf", pool_vars.get("nccl_conf")),
        "nccl_env": hostvars.get("nccl_env", pool_vars.get("nccl_env")),
        "slurm_files": hostvars.get("slurm_files", all_vars.get("slurm_files")),
    }
    return inv, texts


def extra_vars(*pairs: str) -> list[str]:
    out: list[str] = []
    for pair in [*NO_SERVICES, *pairs]:
        out += ["-e", pair]
    return out


def test_roles_apply_to_a_debian_rootfs_and_a_second_run_changes_nothing(
    rootfs_tarball: Path, collections_path: Path, tmp_path: Path
) -> None:
    with fresh_rootfs(rootfs_tarball, tmp_path / "rootfs") as rootfs:
        inv, texts = chroot_inventory("p5-small", "h100-000", rootfs, tmp_path)
        args = [
            "--limit", "h100-000",
            "--tags", "validate,base,nccl,slurm_common,slurm_compute",
            *extra_vars(f"slurm_common_munge_key={munge_key()}"),
        ]  # fmt: skip
        first = run_playbook(inv, *args, collections=collections_path)
        assert first.rc == 0, first.output[-4000:]
        assert first.recap("h100-000")["changed"] > 0

        etc = rootfs / "etc"
        assert (etc / "nccl.conf").read_text().endswith(texts["nccl_conf"].strip() + "\n")
        assert (etc / "profile.d/nccl.sh").read_text().endswith(texts["nccl_env"].strip() + "\n")
        limits = (etc / "security/limits.d/90-aicluster.conf").read_text()
        assert "memlock    unlimited" in limits
        assert "nofile     1048576" in limits
        sysctl = (etc / "sysctl.d/90-aicluster.conf").read_text()
        assert "# fabric: efa" in sysctl
        assert "kernel.numa_balancing = 0" in sysctl
        assert "gc_thresh3" not in sysctl  # the InfiniBand neighbour tables are not an EFA setting
        assert "blacklist nouveau" in (etc / "modprobe.d/blacklist-nouveau.conf").read_text()
        dropin = etc / "systemd/system/nvidia-persistenced.service.d/90-aicluster.conf"
        assert "--persistence-mode" in dropin.read_text()
        wants = etc / "systemd/system/multi-user.target.wants/nvidia-persistenced.service"
        assert os.readlink(wants) == "/lib/systemd/system/nvidia-persistenced.service"
        assert "/etc/slurm/slurm.conf" in texts["slurm_files"]
        for path, text in texts["slurm_files"].items():
            target = rootfs / path.lstrip("/")
            assert target.read_text() == text
            executable = bool(target.stat().st_mode & stat.S_IXUSR)
            assert executable == path.endswith(".sh"), path
        key = etc / "munge/munge.key"
        assert stat.S_IMODE(key.stat().st_mode) == 0o400
        assert key.stat().st_size == 128
        assert (rootfs / "usr/sbin/slurmd").exists()
        assert "slurm:x:64030:64030:" in (etc / "passwd").read_text()

        second = run_playbook(inv, *args, collections=collections_path)
        assert second.rc == 0, second.output[-4000:]
        assert second.recap("h100-000")["changed"] == 0, second.output[-4000:]
        print(f"\nchroot apply: first run {first.seconds:.1f} s, second run {second.seconds:.1f} s")

        # The vendor roles on the tuned host, in check mode: they report and do not fail.
        check = run_playbook(inv, "--limit", "h100-000", "--tags", "nvidia,efa", "--check", "--diff",
                             *extra_vars(), collections=collections_path)  # fmt: skip
        assert check.rc == 0, check.output[-4000:]
        assert "URIs: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/" in check.output
        assert "URIs: https://nvidia.github.io/libnvidia-container/stable/deb/amd64/" in check.output
        assert not (etc / "apt/sources.list.d/nvidia-cuda.sources").exists()


@pytest.mark.parametrize(
    ("stack", "host", "tags", "more", "expect"),
    [
        pytest.param(
            "azure-nd-h100", "h100-000", "base,infiniband", [],
            ["gc_thresh3 = 16384", "infiniband : Install the inbox RDMA stack"], id="azure-infiniband-inbox",
        ),
        pytest.param(
            "azure-nd-h100", "h100-000", "infiniband", ["infiniband_stack=doca", "infiniband_gdr_mode=peermem"],
            ["/public/repo/doca/3.2.2/debian12/x86_64/", "nvidia-peermem"], id="azure-infiniband-doca-peermem",
        ),
        pytest.param(
            "gcp-a3mega-slurm", "h100-000", "base,nvidia,gcp_gpudirect", [],
            ["net.core.optmem_max = 131072", "tcpgpudmarxd-dev:v1.0.20", "import-helper"], id="gcp-a3mega-tcpxo",
        ),
        pytest.param(
            "gcp-a3ultra-reservation", "h200-000", "base,gcp_gpudirect", [],
            ["gpu0rdma0.log_martians = 0"], id="gcp-a3ultra-gib",
        ),
        pytest.param(
            "gcp-tpu-v5p", "v5p-000", "base,nvidia,tpu,nccl", [],
            ["TPU_ACCELERATOR_TYPE=v5p-256", "TPU_SLICE_NAME=v5p-s0"], id="gcp-tpu",
        ),
    ],
)  # fmt: skip
def test_platform_roles_pass_check_mode(
    shared_rootfs: Path,
    collections_path: Path,
    tmp_path: Path,
    stack: str,
    host: str,
    tags: str,
    more: list[str],
    expect: list[str],
) -> None:
    rootfs = shared_rootfs
    before = sorted(p.relative_to(rootfs) for p in (rootfs / "etc").rglob("*"))
    inv, _ = chroot_inventory(stack, host, rootfs, tmp_path)
    run = run_playbook(inv, "--limit", host, "--tags", tags, "--check", "--diff", *extra_vars(*more),
                       collections=collections_path)  # fmt: skip
    assert run.rc == 0, run.output[-4000:]
    assert run.recap(host)["failed"] == 0
    for text in expect:
        assert text in run.output, f"{text!r} not in the check-mode diff:\n{run.output[-4000:]}"
    assert sorted(p.relative_to(rootfs) for p in (rootfs / "etc").rglob("*")) == before  # check mode wrote nothing
