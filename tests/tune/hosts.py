"""Real SSH hosts for tests: each a network namespace on a private bridge running sshd in a chroot of its own
overlay over one Debian root filesystem (debootstrap, cached under .work/cache), with its own hostname.

Nothing of the host machine is changed but a bridge, veth pairs and namespaces, all removed on exit; the nodes'
writes land in their overlay's upper directory (what a test inspects). The nodes have no route out, so a role
that downloads fails there (as a node without egress would); tests run the roles that need no network, or whose
packages the root filesystem already has (slurm_rootfs_tar: Debian's Slurm and munge).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.targets import CACHE, debian_rootfs, locked, overlay, unavailable, unpacked

# Debian's Slurm 22.05 and munge, for SSH hosts that run the Slurm roles (the nodes cannot download).
SLURM_PACKAGES = ("munge", "slurm-client", "slurmd", "slurmctld")


def missing_tools() -> list[str]:
    need = ("debootstrap", "ip", "unshare", "chroot", "ssh", "ssh-keygen")  # sshd runs from the rootfs
    return [t for t in need if shutil.which(t) is None] + ([] if os.geteuid() == 0 else ["root"])


def rootfs_tar() -> Path:
    """The shared Debian root filesystem (tests/targets.py): python3, openssh-server, procps."""
    return debian_rootfs()


def slurm_rootfs_tar() -> Path:
    """The shared root filesystem plus SLURM_PACKAGES (built once from it, then cached), without the munge key
    the package install made: each test node makes its own, as each machine's own install does."""
    base = rootfs_tar()
    tarball = CACHE / f"{base.stem}-{'-'.join(SLURM_PACKAGES)}.tar"
    with locked(tarball):
        if tarball.exists():
            return tarball
        work = CACHE / f"{tarball.stem}.build"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            subprocess.run(["tar", "-C", str(work), "-xf", str(base)], check=True)
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            for cmd in (
                ["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *SLURM_PACKAGES],
            ):
                proc = subprocess.run(["chroot", str(work), *cmd], capture_output=True, text=True, check=False, env=env)
                if proc.returncode != 0:
                    unavailable(
                        f"installing {', '.join(SLURM_PACKAGES)} into the root filesystem failed "
                        f"({(proc.stdout + proc.stderr).strip()[-300:]})",
                        "it needs network access to the Debian mirror once (the result is cached in .work/cache)",
                    )
            (work / "etc/munge/munge.key").unlink()
            for deb in (work / "var/cache/apt").rglob("*.deb"):
                deb.unlink()
            for cache in (work / "var/cache/apt").glob("*.bin"):
                cache.unlink()
            partial = tarball.parent / f"{tarball.name}.partial"
            subprocess.run(["tar", "-C", str(work), "-cf", str(partial), "."], check=True)
            partial.rename(tarball)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return tarball


@dataclass(frozen=True)
class Allocation:
    """One harness user's names and addresses: namespaces <prefix>-<i>, bridge br-<prefix>, host-side veths
    <prefix><i>h, and the /24 <subnet>.0 (nodes at .11, .12, ...)."""

    prefix: str
    subnet: str


def _taken(allocation: Allocation) -> bool:
    """Whether this machine already has the bridge or a route into the /24 (another harness user's set)."""
    bridge = subprocess.run(["ip", "link", "show", f"br-{allocation.prefix}"], capture_output=True, check=False)
    route = subprocess.run(
        ["ip", "-4", "route", "show", "to", "match", f"{allocation.subnet}.1"],
        capture_output=True,
        text=True,
        check=False,
    )
    routed = any(not line.startswith("default") for line in route.stdout.splitlines() if line.strip())
    return bridge.returncode == 0 or routed


def allocate(purpose: str, pid: int | None = None, taken: Callable[[Allocation], bool] = _taken) -> Allocation:
    """A prefix and a /24 of its own for each harness user: derived from the user id, the purpose (tests, a
    benchmark) and the process, so that a benchmark, the tests and pytest-xdist workers side by side never share
    (and never delete) each other's namespaces, bridge or addresses; one that this machine already uses is passed
    over. Names fit Linux's 15-character interface names (br-<8>, <8><i>h)."""
    key = f"{os.getuid()}:{purpose}:{os.getpid() if pid is None else pid}"
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    for attempt in range(64):
        n = seed + attempt * 7919
        digits = "".join("0123456789abcdefghijklmnopqrstuvwxyz"[(n // 36**k) % 36] for k in range(6))
        allocation = Allocation(prefix=f"ai{digits}", subnet=f"10.{100 + (n >> 20) % 100}.{(n >> 8) % 256}")
        if not taken(allocation):
            return allocation
    raise RuntimeError(f"no free prefix and /24 for {purpose} after 64 tries (ip link; ip route)")


@dataclass(frozen=True)
class Node:
    name: str
    address: str
    namespace: str
    upper: Path  # the node's own writes


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@contextlib.contextmanager
def ssh_hosts(
    names: list[str],
    work: Path,
    *,
    rootfs: Path | None = None,
    purpose: str = "tests",
    hostnames: Mapping[str, str] | None = None,
) -> Iterator[tuple[list[Node], Path]]:
    """Start one SSH host per name; yields the nodes and the private key that logs in as root.

    rootfs: the root filesystem tarball (default rootfs_tar()); purpose: who runs the set (tests, a benchmark),
    which with the user and the process picks its own namespaces, bridge and /24 (allocate()), so that two sets
    never meet; hostnames: a node's host name where it is not its inventory name (a cloud's ip-10-0-1-5)."""
    own = allocate(purpose)
    prefix, subnet = own.prefix, own.subnet
    bridge, veth = f"br-{prefix}", prefix
    # The root filesystem, unpacked once per tarball and never written (tests/targets.py), under this set's own layer:
    # the login key, the host keys (one set for every node, as a cloned image has), sshd's run directory.
    shared = unpacked(rootfs or rootfs_tar())
    work.mkdir(parents=True)
    key = work / "id_ed25519"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    layer = work / "rootfs-layer"  # the nodes stack it over the shared root filesystem
    with overlay([shared], work / "rootfs", keep=layer) as base:
        ssh_dir = base / "root" / ".ssh"
        ssh_dir.mkdir(mode=0o700, exist_ok=True)
        (ssh_dir / "authorized_keys").write_text((work / "id_ed25519.pub").read_text())
        (base / "run" / "sshd").mkdir(parents=True, exist_ok=True)
        _sh("chroot", str(base), "ssh-keygen", "-A")
        (base / "usr" / "sbin" / "policy-rc.d").write_text("#!/bin/sh\nexit 101\n")
        (base / "usr" / "sbin" / "policy-rc.d").chmod(0o755)
    lower = f"{layer}:{shared}"
    nodes: list[Node] = []
    procs: list[subprocess.Popen[bytes]] = []
    _sh("ip", "link", "add", bridge, "type", "bridge")  # fails rather than take over one that exists
    _sh("ip", "addr", "add", f"{subnet}.1/24", "dev", bridge)
    _sh("ip", "link", "set", bridge, "up")
    try:
        for i, name in enumerate(names):
            ns, host_end = f"{prefix}-{i}", f"{veth}{i}h"
            address = f"{subnet}.{11 + i}"
            _sh("ip", "netns", "add", ns)
            _sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _sh("ip", "link", "set", host_end, "master", bridge, "up")
            _sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
            _sh("ip", "-n", ns, "link", "set", "eth0", "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            node_dir = work / name
            upper, scratch, merged = node_dir / "upper", node_dir / "work", node_dir / "merged"
            for d in (upper, scratch, merged):
                d.mkdir(parents=True)
            script = (
                f"hostname {(hostnames or {}).get(name, name)} && "
                f"mount -t overlay overlay -o lowerdir={lower},upperdir={upper},workdir={scratch} {merged} && "
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
            subprocess.run(["ip", "netns", "del", f"{prefix}-{i}"], capture_output=True, check=False)
            subprocess.run(["ip", "link", "del", f"{veth}{i}h"], capture_output=True, check=False)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True, check=False)


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


def ssh(node: Node, key: Path, command: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run a shell command on a node as root (its namespaces, its root filesystem); never raises on a non-zero
    exit. A daemon started here must detach from the session (setsid -f ... </dev/null >/dev/null 2>&1)."""
    return subprocess.run(
        ["ssh", *ssh_options(key), f"root@{node.address}", command],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


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
