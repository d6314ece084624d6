"""Real SSH hosts for tests: each a network namespace on a private bridge running sshd in a chroot of its own
overlay over one Debian root filesystem (debootstrap, cached under .work/cache), with its own hostname.

Nothing of the host machine is changed but a bridge, veth pairs and namespaces, all removed on exit; the nodes'
writes land in their overlay's upper directory (what a test inspects). The nodes have no route out, so a role
that downloads fails there (as a node without egress would); tests run the roles that need no network.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.targets import debian_rootfs

BRIDGE = "br-aictune"
SUBNET = "10.77.9"


def missing_tools() -> list[str]:
    need = ("debootstrap", "ip", "unshare", "chroot", "ssh", "ssh-keygen")  # sshd runs from the rootfs
    return [t for t in need if shutil.which(t) is None] + ([] if os.geteuid() == 0 else ["root"])


def rootfs_tar() -> Path:
    """The shared Debian root filesystem (tests/targets.py): python3, openssh-server, procps."""
    return debian_rootfs()


@dataclass(frozen=True)
class Node:
    name: str
    address: str
    namespace: str
    upper: Path  # the node's own writes


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@contextlib.contextmanager
def ssh_hosts(names: list[str], work: Path) -> Iterator[tuple[list[Node], Path]]:
    """Start one SSH host per name; yields the nodes and the private key that logs in as root."""
    base = work / "rootfs"
    base.mkdir(parents=True)
    with tarfile.open(rootfs_tar()) as tar:
        tar.extractall(base, filter="fully_trusted")
    key = work / "id_ed25519"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    ssh_dir = base / "root" / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    (ssh_dir / "authorized_keys").write_text((work / "id_ed25519.pub").read_text())
    (base / "run" / "sshd").mkdir(parents=True, exist_ok=True)
    _sh("chroot", str(base), "ssh-keygen", "-A")
    (base / "usr" / "sbin" / "policy-rc.d").write_text("#!/bin/sh\nexit 101\n")
    (base / "usr" / "sbin" / "policy-rc.d").chmod(0o755)
    nodes: list[Node] = []
    procs: list[subprocess.Popen[bytes]] = []
    subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)
    _sh("ip", "link", "add", BRIDGE, "type", "bridge")
    _sh("ip", "addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE)
    _sh("ip", "link", "set", BRIDGE, "up")
    try:
        for i, name in enumerate(names):
            ns, host_end = f"aictune-{i}", f"aict{i}h"
            address = f"{SUBNET}.{11 + i}"
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
            _sh("ip", "netns", "add", ns)
            _sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _sh("ip", "link", "set", host_end, "master", BRIDGE, "up")
            _sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
            _sh("ip", "-n", ns, "link", "set", "eth0", "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            node_dir = work / name
            upper, scratch, merged = node_dir / "upper", node_dir / "work", node_dir / "merged"
            for d in (upper, scratch, merged):
                d.mkdir(parents=True)
            script = (
                f"hostname {name} && "
                f"mount -t overlay overlay -o lowerdir={base},upperdir={upper},workdir={scratch} {merged} && "
                f"mount -t proc proc {merged}/proc && mount --rbind /dev {merged}/dev && "
                f"exec chroot {merged} /usr/sbin/sshd -D -e -o UseDNS=no"
            )
            procs.append(
                subprocess.Popen(
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns,
                        "unshare",
                        "--uts",
                        "--mount",
                        "--fork",
                        "--kill-child",
                        "sh",
                        "-c",
                        script,
                    ],
                    stdin=subprocess.DEVNULL,  # never a test runner's pipe (pytest-xdist talks over stdin)
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            nodes.append(Node(name, address, ns, upper))
        _wait_for_ssh(nodes, key)
        yield nodes, key
    finally:
        for node in nodes:
            pids = subprocess.run(
                ["ip", "netns", "pids", node.namespace], check=False, capture_output=True, text=True
            ).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        for i in range(len(names)):
            subprocess.run(["ip", "netns", "del", f"aictune-{i}"], capture_output=True, check=False)
            subprocess.run(["ip", "link", "del", f"aict{i}h"], capture_output=True, check=False)
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)


def ssh_options(key: Path) -> list[str]:
    return [
        "-i",
        str(key),
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "ConnectTimeout=2",
    ]


def _wait_for_ssh(nodes: list[Node], key: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    for node in nodes:
        while True:
            probe = subprocess.run(
                ["ssh", *ssh_options(key), f"root@{node.address}", "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )
            if probe.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{node.name} ({node.address}): sshd did not answer: {probe.stderr.decode()[-300:]}")
            time.sleep(0.2)


def ansible_env(key: Path) -> dict[str, str]:
    """Environment for `aicluster tune` against these hosts: root over SSH with the test key, one multiplexed
    connection per host and pipelining, as an operator would run it."""
    control = tempfile.mkdtemp(prefix="aic-cp-", dir="/tmp")
    atexit.register(shutil.rmtree, control, True)
    return {
        "ANSIBLE_PRIVATE_KEY_FILE": str(key),
        "ANSIBLE_REMOTE_USER": "root",
        "ANSIBLE_SSH_ARGS": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ControlMaster=auto "
        "-o ControlPersist=30s",
        # a short directory: a control socket's path must fit in 108 bytes, and test paths under pytest-xdist
        # are long enough to break that (ssh then fails with "Data could not be sent")
        "ANSIBLE_SSH_CONTROL_PATH_DIR": control,
        "ANSIBLE_SSH_CONTROL_PATH": "%(directory)s/%%C",
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        "ANSIBLE_TIMEOUT": "10",
    }
