"""`aicluster tune` with the Slurm tags (but slurm_health) against real SSH hosts (network namespaces running sshd
over a Debian root filesystem with Debian's Slurm 22.05 and munge packages): the controller and two compute nodes of
p5-small.

Each host starts with a munge key of its own, as each machine's package install makes one. Tuning gives every
compute node the controller's key (slurp through delegate_to), writes the inventory's Slurm files, prepares the
controller's state directory and tells slurmd its Slurm node name; a second run changes nothing.

Then the daemons are started as their Debian units would start them (there is no systemd in a namespace): munged
and slurmctld on the controller, munged and slurmd on both compute nodes, whose host names are a cloud's
(ip-10-77-10-12), not their Slurm names. Each node must register with slurmctld as the node the inventory names,
from its own address (SlurmctldParameters=cloud_reg_addrs) -- which also proves the munge keys match: slurmctld
rejects a registration whose credential another key signed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from aicluster.inventory import read_yaml
from tests.conftest import IN_CI, ROOT
from tests.tune.hosts import Node, ansible_env, missing_tools, slurm_rootfs_tar, ssh, ssh_hosts

pytestmark = pytest.mark.slow

CONTROLLER = "llm-dev-slurmctld"  # p5-small's ClusterPlan.controller_host(), slurm.conf's SlurmctldHost
COMPUTES = ["h100-000", "h100-001"]
# A cloud names its VMs itself (ip-10-0-1-5, <prefix>-abcd): slurmd learns which Slurm node it is only from -N.
HOSTNAMES = {name: f"ip-10-0-1-{12 + i}" for i, name in enumerate(COMPUTES)}
# The nodes have no route out: Debian's packages are in the root filesystem and apt must not refresh its lists.
NO_APT_UPDATE = [f"slurm_{role}_apt_cache_valid_time=315360000" for role in ("common", "controller", "compute")]

# The namespaces lack three things of a GPU node, so the daemons run from a copy of the tuned /etc/slurm that
# differs there only (the rest is the inventory's text, byte for byte):
#  - a cgroup tree of their own (slurmd's cgroup plugins would write to this machine's): proctrack/linuxproc,
#    task/none, jobacct_gather/none, and cgroup/v1 named instead of detected (loaded, then never used);
#  - GPUs: gres.conf's File= points at eight character devices (NVIDIA's major, 195) made in the node's own /run;
#  - 192 CPUs and 1.9 TB: SlurmdParameters=config_overrides, so slurmctld takes slurm.conf's figures.
SANDBOX = "/run/slurm-sandbox"
MAKE_SANDBOX = f"""set -e
rm -rf {SANDBOX}; cp -a /etc/slurm {SANDBOX}; cd {SANDBOX}
sed -i -e 's|^ProctrackType=.*|ProctrackType=proctrack/linuxproc|' -e 's|^TaskPlugin=.*|TaskPlugin=task/none|' \\
  -e 's|^JobAcctGatherType=.*|JobAcctGatherType=jobacct_gather/none|' slurm.conf
echo SlurmdParameters=config_overrides >> slurm.conf
sed -i 's|^CgroupPlugin=.*|CgroupPlugin=cgroup/v1|' cgroup.conf
mkdir dev; for i in 0 1 2 3 4 5 6 7; do mknod dev/nvidia$i c 195 $i; done
sed -i 's|File=/dev/nvidia|File={SANDBOX}/dev/nvidia|' gres.conf
"""


@pytest.fixture
def tools() -> None:
    missing = missing_tools()
    if missing:
        message = f"needs root and {', '.join(missing)}: apt-get install debootstrap iproute2 openssh-client"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def tune(project: Path, env: dict[str, str], hosts: Path) -> subprocess.CompletedProcess[str]:
    extra = [arg for pair in NO_APT_UPDATE for arg in ("-e", pair)]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "aicluster.cli",
            "tune",
            "good",
            "--playbook",
            str(ROOT / "playbooks" / "site.yml"),
            "--hosts",
            str(hosts),
            "--limit",
            ",".join([CONTROLLER, *COMPUTES]),
            # the Slurm roles of `--tags slurm` but slurm_health: the node health checker needs python3-venv and
            # pydantic, which these hosts (no route out) cannot get; tests/playbooks/test_chroot_health.py has it
            "--tags",
            "slurm_common,slurm_controller,slurm_burst,slurm_compute",
            *extra,
        ],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "200", **env},
        timeout=600,
    )


def rows(stdout: str) -> dict[str, list[str]]:
    """The summary table's rows: host -> [ok, changed, failed, unreachable, skipped, last failure]."""
    out = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if cells and cells[0] in (CONTROLLER, *COMPUTES):
            out[cells[0]] = cells[1:]
    return out


def run(node: Node, key: Path, command: str) -> str:
    proc = ssh(node, key, command)
    assert proc.returncode == 0, f"{node.name}: {command}: {proc.stdout}{proc.stderr}"
    return proc.stdout.strip()


def start_unit(unit: str, user: str = "") -> str:
    """Shell that starts a Debian unit's ExecStart as systemd would: with its EnvironmentFile's variables
    expanded, as its User, detached; SLURM_CONF points the Slurm daemons at the sandbox copy."""
    path = f"/lib/systemd/system/{unit}.service"
    runas = f"runuser -u {user} -- " if user else ""
    return (
        f"set -a; for f in $(sed -n 's/^EnvironmentFile=-\\{{0,1\\}}//p' {path}); do [ ! -r $f ] || . $f; done; "
        f"set +a; export SLURM_CONF={SANDBOX}/slurm.conf; "
        f'eval "setsid -f {runas}$(sed -n "s/^ExecStart=//p" {path})" </dev/null >/dev/null 2>&1'
    )


START_MUNGE = f"install -d -o munge -g munge -m 0755 /run/munge && {start_unit('munge', 'munge')}"


def wait_for(node: Node, key: Path, command: str, done: Callable[[str], bool], what: str, seconds: float) -> str:
    """Poll `command` on `node` until its output satisfies `done`; fail with the last output at the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        proc = ssh(node, key, command)
        if proc.returncode == 0 and done(proc.stdout):
            return proc.stdout
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds:.0f} s: {proc.stdout}{proc.stderr}")
        time.sleep(0.25)


def node_field(line: str, field: str) -> str:
    """A field of `scontrol -o show node` (one without spaces)."""
    m = re.search(rf"\b{field}=(\S*)", line)
    return m[1] if m else ""


def registered_from(address: str) -> Callable[[str], bool]:
    return lambda line: node_field(line, "NodeAddr") == address


def test_tune_slurm_hosts_then_slurmd_registers_by_its_slurm_name(tools: None, project: Path, tmp_path: Path) -> None:
    with ssh_hosts(
        [CONTROLLER, *COMPUTES],
        tmp_path / "nodes",
        rootfs=slurm_rootfs_tar(),
        purpose="slurm-hosts",
        hostnames=HOSTNAMES,
    ) as (nodes, key):
        by_name = {n.name: n for n in nodes}
        ctl = by_name[CONTROLLER]
        computes = [by_name[name] for name in COMPUTES]
        hosts = tmp_path / "hosts.yml"
        hosts.write_text(yaml.safe_dump({n.name: n.address for n in nodes}))
        env = ansible_env(key)
        # What each machine's `apt-get install munge` does: a key of its own (postinst runs mungekey as munge).
        for node in nodes:
            run(node, key, "su munge -s /bin/sh -c 'mungekey -c'")
        keys = {n.name: (n.upper / "etc/munge/munge.key").read_bytes() for n in nodes}
        assert len(set(keys.values())) == len(nodes)

        started = time.monotonic()
        first = tune(project, env, hosts)
        first_s = time.monotonic() - started
        assert first.returncode == 0, first.stdout + first.stderr
        table = rows(first.stdout)
        assert set(table) == {CONTROLLER, *COMPUTES}, first.stdout
        assert all(cells[2:4] == ["0", "0"] for cells in table.values()), first.stdout  # none failed or unreachable

        # The controller keeps its key; every compute node now has it, byte for byte, 0400 munge:munge.
        controller_key = (ctl.upper / "etc/munge/munge.key").read_bytes()
        assert controller_key == keys[CONTROLLER]
        for node in computes:
            assert (node.upper / "etc/munge/munge.key").read_bytes() == controller_key, node.name
            assert run(node, key, "stat -c '%U:%G %a' /etc/munge/munge.key") == "munge:munge 400"

        # The controller: slurmctld installed, and its StateSaveLocation owned by SlurmUser.
        assert run(ctl, key, "dpkg-query -W -f '${Status}' slurmctld") == "install ok installed"
        assert run(ctl, key, "stat -c '%U:%G %a' /var/spool/slurmctld") == "slurm:slurm 750"

        # Every Slurm host: the inventory's Slurm files, the scripts executable.
        inventory = read_yaml((project / ".work/good/inventory/group_vars/all.yml").read_text())
        slurm_files: dict[str, str] = inventory["slurm_files"]
        assert "/etc/slurm/slurm.conf" in slurm_files
        for node in nodes:
            for path, text in slurm_files.items():
                target = node.upper / path.lstrip("/")
                assert target.read_text() == text, f"{node.name}:{path}"
                assert bool(target.stat().st_mode & 0o100) == path.endswith(".sh"), f"{node.name}:{path}"

        # Every compute node: slurmd.service's environment file names the node; the controller's is the package's.
        for node in computes:
            options = run(node, key, '. /etc/default/slurmd && printf %s "$SLURMD_OPTIONS"')
            assert options == f"-N {node.name}", node.name
        assert not (ctl.upper / "etc/default/slurmd").exists()

        started = time.monotonic()
        again = tune(project, env, hosts)
        again_s = time.monotonic() - started
        assert again.returncode == 0, again.stdout + again.stderr
        table = rows(again.stdout)
        assert set(table) == {CONTROLLER, *COMPUTES}, again.stdout
        assert all(cells[1] == "0" for cells in table.values()), again.stdout  # changed=0 on every host

        # Every Slurm host must resolve slurm.conf's SlurmctldHost (slurmd, scontrol, slurmctld itself): slurm_common
        # maps it to the controller's address. slurmctld runs only on a host whose name is SlurmctldHost (it has no
        # -N): the controller VMs get it from cloud-init, and the controller's namespace has it here.
        for node in nodes:
            etc_hosts = (node.upper / "etc/hosts").read_text()
            assert f"{ctl.address} {CONTROLLER}" in etc_hosts.splitlines(), etc_hosts

        # The daemons.
        for node in nodes:
            run(node, key, "grep -qw localhost /etc/hosts || echo '127.0.0.1 localhost' >> /etc/hosts")
            run(node, key, MAKE_SANDBOX)
            run(node, key, START_MUNGE)
        run(ctl, key, start_unit("slurmctld"))
        wait_for(ctl, key, "scontrol ping", lambda out: "is UP" in out, "slurmctld answering", 60)
        for node in computes:
            assert run(node, key, "hostname") == HOSTNAMES[node.name]
            run(node, key, start_unit("slurmd"))
        for node in computes:
            show = f"scontrol -o show node {node.name}"
            try:
                line = wait_for(ctl, key, show, registered_from(node.address), f"{node.name} registered", 60)
            except AssertionError as exc:
                logs = ssh(node, key, "tail -n 20 /var/log/slurm/slurmd.log").stdout
                logs += ssh(ctl, key, "tail -n 20 /var/log/slurm/slurmctld.log").stdout
                raise AssertionError(f"{exc}\n{logs}") from None
            # slurmd runs as the unit runs it, with the node's Slurm name from /etc/default/slurmd ...
            cmdline = run(node, key, "tr '\\0' ' ' < /proc/$(cat /run/slurmd.pid)/cmdline")
            assert f" -N {node.name}" in f" {cmdline}", cmdline
            # ... and registered as that node, from its address, under its cloud host name.
            assert node_field(line, "NodeHostName") == HOSTNAMES[node.name], line
            # IDLE+CLOUD+DRAIN here: the rendered health check, which slurmd runs before it registers, found no
            # nvidia-smi and drained the node through scontrol (so that path works too); never INVALID_REG.
            state = node_field(line, "State")
            assert "CLOUD" in state, line
            assert "INVALID_REG" not in state, line
            print(f"\n{node.name}: registered from {node.address}, State={state}")
        print(f"slurm tune over 3 hosts: first run {first_s:.1f} s, second run {again_s:.1f} s")
