"""A real Slurm 24.11 for tests: Debian 13 (trixie)'s slurmctld, slurmd and client commands in a debootstrap root
filesystem (cached under .work/cache like the bookworm roots, tests/targets.py), run in network namespaces of their
own. Debian 12's Slurm is 22.05, which has no topology/block (23.11) nor switch/nvidia_imex (24.05).

One overlay of the root per cluster; slurmctld runs in namespace <prefix>-c (hostname: slurm.conf's SlurmctldHost)
on a bridge whose address is the /24's .1; each node that gets a slurmd runs in namespace <prefix>-<i> at .11, .12,
... with a private /dev, /run and /var/spool/slurmd (tmpfs), so that each is a machine of its own with the root
filesystem shared, and its hostname is its Slurm node name. Client commands run in the controller's namespace.
A node's slurmd can be stopped and started again (Cluster.stop_slurmd, start_slurmd), the second time "booted": in a
new time namespace whose boot clock reads 0 (`unshare --time --boottime`), so that slurmctld sees a node that
rebooted (tests/integration/test_repair_reboot.py fakes `scontrol reboot` so).
Nothing of this machine changes but the namespaces, the overlay mount and veth pairs inside the namespaces; all
are removed on exit. The prefix comes from tests.tune.hosts.allocate, so concurrent runs never meet.

The production settings stay but for what a namespace lacks (SlurmSettings below): munge (auth/none), cgroups
(proctrack/linuxproc, task/none; cgroup.conf is replaced by `CgroupPlugin=disabled`), the machine's 2 CPUs
(SlurmdParameters=config_overrides), the NVIDIA driver (/dev/nvidia[0-3] made with NVIDIA's major number 195,
`SwitchParameters=imex_dev_major=` a major number no driver uses, and stand-ins for nvidia-smi, nvidia-imex-ctl and
dcgmi in /usr/local/bin that answer as a healthy GB200 compute tray, or an unhealthy one when told so).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aicluster.schedulers.slurm.render import SlurmSettings, burst_programs
from tests.targets import debian_rootfs, overlay, unpacked

SUITE = "trixie"
PACKAGES = ("slurmctld", "slurmd", "slurm-client")
CONTROLLER = "slurmctld-test"  # SlurmctldHost: the controller namespace's hostname
# A character-device major number in Linux's "local/experimental use" range (240-254, devices.txt): the IMEX
# channels switch/nvidia_imex makes with it open nothing, but they show which channel a job step was given.
IMEX_TEST_MAJOR = 240
GPUS = 4  # a GB200 compute tray's
FAULTS = "/var/lib/aicluster-test/faults"  # <node>-imex, <node>-fabric: the stand-ins answer as a broken tray


def settings() -> SlurmSettings:
    return SlurmSettings(
        controller_host=CONTROLLER,
        auth_type="auth/none",
        cred_type="cred/none",
        proctrack_type="proctrack/linuxproc",
        task_plugin="task/none",
        slurmd_parameters="config_overrides",
        switch_parameters=f"imex_dev_major={IMEX_TEST_MAJOR}",
    )


def root_tarball() -> Path:
    """Debian 13 with Slurm 24.11 (built once with debootstrap, about three minutes, then cached)."""
    return debian_rootfs(SUITE, PACKAGES)


# Stand-ins for the NVIDIA tools the rendered prolog, epilog and health check call: a GB200 tray with 4 GPUs, its
# IMEX daemon READY and every GPU's fabric Completed/Success, unless FAULTS/<node>-imex or -fabric exists.
FAKE_TOOLS = {
    "nvidia-smi": f"""#!/bin/sh
node="$(hostname)"
case "$*" in
  *--list-gpus*)
    i=0
    while [ $i -lt {GPUS} ]; do echo "GPU $i: NVIDIA GB200 (UUID: GPU-$node-$i)"; i=$((i + 1)); done ;;
  -q)
    echo "Attached GPUs                             : {GPUS}"
    i=0
    while [ $i -lt {GPUS} ]; do
      state=Completed
      [ $i -eq 3 ] && [ -e {FAULTS}/$node-fabric ] && state="In Progress"
      printf 'GPU 00000008:%02X:00.0\\n    Product Name                          : NVIDIA GB200\\n' $((i + 1))
      printf '    Fabric\\n        State                             : %s\\n' "$state"
      printf '        Status                            : Success\\n'
      printf '        CliqueId                          : 32766\\n'
      printf '        ClusterUUID                       : 5b1c0e7e-0000-4000-8000-000000000001\\n'
      printf '        Health\\n            Bandwidth                     : Full\\n'
      printf '    Performance State                     : P0\\n'
      i=$((i + 1))
    done ;;
esac
exit 0
""",
    "nvidia-imex-ctl": f"""#!/bin/sh
[ "$1" = "-q" ] || exit 1
if [ -e {FAULTS}/$(hostname)-imex ]; then echo UNAVAILABLE; else echo READY; fi
""",
    "dcgmi": """#!/bin/sh
echo "| Deployment | Pass |"
""",
}


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@dataclass
class Cluster:
    root: Path  # the overlay's merged directory: / of every daemon and command
    prefix: str
    subnet: str
    nodes: dict[str, str] = field(default_factory=dict)  # node -> address, those that run a slurmd
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    slurmd: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)  # node -> its running slurmd

    def start_slurmd(self, node: str, *, boot: bool = False) -> None:
        """slurmd -D for `node` in its namespace, with a fresh private /dev, /run and /var/spool/slurmd; `boot`: in
        a new time namespace whose boot clock starts at 0, as after a reboot (slurmd registers with an uptime younger
        than a `scontrol reboot` given before)."""
        i = list(self.nodes).index(node)
        private = " && ".join(
            f"mount -t tmpfs -o mode=0755 tmpfs {self.root}/{d}" for d in ("dev", "run", "var/spool/slurmd")
        )
        script = (
            f"hostname {shlex.quote(node)} && {private} && {NODE_DEV.format(dev=f'{self.root}/dev')} && "
            f"mount -t proc proc {self.root}/proc && exec chroot {self.root} slurmd -D -N {shlex.quote(node)}"
        )
        clock: list[str] = []
        if boot:
            uptime = float(Path("/proc/uptime").read_text().split()[0])
            clock = ["--time", f"--boottime={-int(uptime)}"]
        self.slurmd[node] = subprocess.Popen(
            ["ip", "netns", "exec", f"{self.prefix}-{i}", "unshare", "--uts", *clock, "--fork", "sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(self.slurmd[node])

    def stop_slurmd(self, node: str) -> None:
        """Stop `node`'s slurmd (SIGTERM, as systemd would) and wait for it; its private mounts go with it."""
        proc = self.slurmd.pop(node)
        with contextlib.suppress(AssertionError, ProcessLookupError):
            os.kill(self._slurmd_pid(node), 15)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    @property
    def controller_ns(self) -> str:
        return f"{self.prefix}-c"

    def run(self, *cmd: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """A Slurm command (or any program of the root) on the controller's namespace, as its host; never raises on
        a non-zero exit."""
        script = f'hostname {CONTROLLER} && mount -t proc proc {self.root}/proc && exec chroot {self.root} "$@"'
        return subprocess.run(
            ["ip", "netns", "exec", self.controller_ns, "unshare", "--uts", "sh", "-c", script, "sh", *cmd],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def on_node(self, node: str, *cmd: str) -> subprocess.CompletedProcess[str]:
        """A command on a node as its slurmd runs one: in the slurmd's namespaces and root, as root."""
        pid = self._slurmd_pid(node)
        return subprocess.run(
            ["nsenter", "-t", str(pid), "-m", "-u", "-n", "-r", "-w", *cmd],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    def _slurmd_pid(self, node: str) -> int:
        namespace = f"{self.prefix}-{list(self.nodes).index(node)}"
        pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, check=True)
        for pid in pids.stdout.split():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "slurmd":
                    return int(pid)
        raise AssertionError(f"{node}: no slurmd runs in {namespace}")

    def records(self, *what: str) -> list[dict[str, str]]:
        """`scontrol -o show ...` as one key=value dict per line (values without spaces)."""
        out = self.run("scontrol", "-o", "show", *what)
        assert out.returncode == 0, out.stderr
        return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in out.stdout.splitlines() if line.strip()]

    def hostnames(self, expression: str) -> list[str]:
        out = self.run("scontrol", "show", "hostnames", expression)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    def log(self, daemon: str = "slurmctld") -> str:
        path = self.root / "var/log/slurm" / f"{daemon}.log"
        return path.read_text() if path.exists() else ""

    def wait(self, what: str, done: Callable[[str], bool], seconds: float = 60.0) -> str:
        """Poll `sinfo -h -N -o "%N %T"` until done(output); fail with the last output and the logs."""
        deadline = time.monotonic() + seconds
        while True:
            out = self.run("sinfo", "-h", "-N", "-o", "%N %T").stdout
            if done(out):
                return out
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {seconds:.0f} s:\n{out}\n{self.log()[-3000:]}")
            time.sleep(0.5)


def _prepare(root: Path, files: Mapping[str, str], hosts: Mapping[str, str], controller_address: str) -> None:
    for directory, owner in (("var/spool/slurmctld", "slurm"), ("var/log/slurm", "slurm"), ("var/spool/slurmd", "")):
        (root / directory).mkdir(parents=True, exist_ok=True)
        if owner:
            _sh("chroot", str(root), "chown", f"{owner}:{owner}", f"/{directory}")
    (root / FAULTS.lstrip("/")).mkdir(parents=True, exist_ok=True)
    for name, body in FAKE_TOOLS.items():
        tool = root / "usr/local/bin" / name
        tool.write_text(body)
        tool.chmod(0o755)
    # slurmctld turns power saving off for programs that are not executable: the burst programs' stand-ins
    for program in burst_programs(settings()).values():
        stub = root / program.lstrip("/")
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    # the test's own files last: they may replace a stand-in; scripts (.sh, or a #! line) are executable
    for path, text in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(0o755 if path.endswith(".sh") or text.startswith("#!") else 0o644)
    # no cgroup tree of its own in a namespace: the rendered cgroup.conf (autodetect) would make slurmd look for one
    (root / "etc/slurm/cgroup.conf").write_text("CgroupPlugin=disabled\n")
    lines = ["127.0.0.1 localhost", f"{controller_address} {CONTROLLER}"]
    lines += [f"{address} {name}" for name, address in hosts.items()]
    (root / "etc/hosts").write_text("\n".join(lines) + "\n")


# A node's private /dev: the devices a daemon and a job step open, and the tray's GPUs (NVIDIA's major, 195).
NODE_DEV = " && ".join(
    [
        "mknod -m 666 {dev}/null c 1 3",
        "mknod -m 666 {dev}/zero c 1 5",
        "mknod -m 666 {dev}/full c 1 7",
        "mknod -m 666 {dev}/random c 1 8",
        "mknod -m 666 {dev}/urandom c 1 9",
        *(f"mknod -m 666 {{dev}}/nvidia{i} c 195 {i}" for i in range(GPUS)),
    ]
)


@contextlib.contextmanager
def slurm_cluster(
    work: Path,
    files: Mapping[str, str],
    *,
    prefix: str,
    subnet: str,
    nodes: Sequence[str] = (),
    start: bool = True,
) -> Iterator[Cluster]:
    """slurmctld on the rendered `files` (target path -> text) in a fresh overlay of the trixie root, and a slurmd
    for each of `nodes` at <subnet>.11, .12, ... (the addresses slurm.conf's NodeAddr= must give them). Yields once
    slurmctld answers (the nodes may still be registering: Cluster.wait). `start=False`: the slurmd are left to the
    test (Cluster.start_slurmd), which may first write files that name the root's path (Cluster.root)."""
    lower = unpacked(root_tarball())
    addresses = {name: f"{subnet}.{11 + i}" for i, name in enumerate(nodes)}
    with overlay([lower], work / "overlay") as root:
        _prepare(root, files, addresses, f"{subnet}.1")
        cluster = Cluster(root, prefix, subnet, dict(addresses))
        ctl = cluster.controller_ns
        made: list[str] = []
        try:
            _sh("ip", "netns", "add", ctl)
            made.append(ctl)
            _sh("ip", "-n", ctl, "link", "set", "lo", "up")
            _sh("ip", "-n", ctl, "link", "add", "br0", "type", "bridge")
            _sh("ip", "-n", ctl, "addr", "add", f"{subnet}.1/24", "dev", "br0")
            _sh("ip", "-n", ctl, "link", "set", "br0", "up")
            for i, address in enumerate(addresses.values()):
                ns = f"{prefix}-{i}"
                _sh("ip", "netns", "add", ns)
                made.append(ns)
                _sh("ip", "-n", ctl, "link", "add", f"n{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
                _sh("ip", "-n", ctl, "link", "set", f"n{i}", "master", "br0", "up")
                _sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
                _sh("ip", "-n", ns, "link", "set", "eth0", "up")
                _sh("ip", "-n", ns, "link", "set", "lo", "up")
            # `ip netns exec` gives each daemon a mount namespace of its own: the mounts below vanish with it
            daemon = f"mount -t proc proc {root}/proc && exec chroot {root} "
            cluster.procs.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", ctl, "unshare", "--uts", "--fork", "sh", "-c",
                     f"hostname {CONTROLLER} && {daemon}slurmctld -D -c"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )  # fmt: skip
            deadline = time.monotonic() + 30
            while " is UP" not in cluster.run("scontrol", "ping").stdout:
                if cluster.procs[0].poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"slurmctld did not come up:\n{cluster.log()[-3000:]}")
                time.sleep(0.2)
            for name in addresses if start else ():
                cluster.start_slurmd(name)
            yield cluster
        finally:
            for ns in made:
                pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False)
                for pid in pids.stdout.split():
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(pid), 9)
            for proc in cluster.procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
            for ns in made:
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
