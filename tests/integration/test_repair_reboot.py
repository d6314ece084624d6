"""aicluster-repair's Slurm reboot end to end, with a real slurmctld and a real slurmd and the reboot faked, on two
Slurm releases: this machine's (Debian 12: 22.05) and Debian 13's (24.11, in a root filesystem:
tests/integration/slurm_trixie.py, whose root the rack-scale tests build and cache). The RebootProgram only leaves
a mark; the test then stops slurmd and starts it again in a new time namespace whose boot clock reads 0
(`unshare --time --boottime`), so that slurmd registers with an uptime younger than the reboot request, as after a
real reboot ("Node ... rebooted 1 secs ago"), and a new boot id for aicluster-health. slurmd runs the rendered
health check (healthcheck.sh: the real aicluster-health's periodic layer, the boot layer on its first run after a
boot, over the fake node's recorded tools of tests/health/fakes.py) once before it registers, as it does at every
start.

What it proves (both releases' behaviour, observed): a drain given while the node is DOWN+REBOOT_ISSUED is cleared
by the registration that ends the reboot, and `scontrol cancel_reboot` is refused then, so the boot check ends the
reboot first (RESUME) and drains after it. A node still faulty after its repair reboot stays drained with the
fault's parseable reason (through a later slurmd restart too), and aicluster-repair takes it up again; a healthy
one returns to IDLE, without a person. 24.11 without accounting storage keeps a node's last reason when it is
resumed or returns to service (22.05 clears it); aicluster-repair reads such a reason as stale (live_reason).

Needs root (slurmd; a time namespace), util-linux's unshare with --time, Slurm (apt-get install slurmctld slurmd
slurm-client) and for 24.11 debootstrap and network access to deb.debian.org once; skipped without them, except
with CI=true."""

from __future__ import annotations

import abc
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aicluster.health.reasons import format_reason, parse_reason
from aicluster.plan import ClusterPlan
from aicluster.render.health import CONFIG_FILE as HEALTH_CONFIG
from aicluster.render.repair import repair_config
from aicluster.repair.cli import main as repair
from aicluster.schedulers.slurm.render import SlurmSettings, healthcheck_sh, scripts
from aicluster.schedulers.slurm.render import slurm_conf as render_slurm_conf
from tests.conftest import ROOT
from tests.health.fakes import DATA, FakeNode, healthy_node
from tests.integration import slurm_trixie
from tests.integration.test_slurmctld import free_port, load, need, settings_for
from tests.targets import unavailable
from tests.tune.hosts import allocate

pytestmark = pytest.mark.slow

STACK = "p5-small"
WAIT_S = 60.0  # for Slurm to act (it does in about a second); a failure, not a timing assertion
# slurm.conf keys taken from the rendered file: how Slurm treats a node that registers, the health check, and the
# accounting (none: whether a node's reason outlives its drain depends on it, KEEPS_REASON)
RENDERED_KEYS = ("ReturnToService", "HealthCheckProgram", "HealthCheckInterval", "HealthCheckNodeState",
                 "JobAcctGatherType", "AccountingStorageType")  # fmt: skip
# The Slurm releases the test runs on: this machine's (Debian 12) and Debian 13's in a root filesystem
# (tests/integration/slurm_trixie.py)
HOST, TRIXIE = "22.05", "24.11"
VERSIONS = {HOST: (22, 5), TRIXIE: (24, 11)}
# Whether a node resumed, or returned to service by the registration after a reboot, keeps its last reason when
# slurmctld has no accounting storage (aicluster renders none): 23.02.5 to 25.11 do (aicluster.repair.cli.live_reason)
KEEPS_REASON = {HOST: False, TRIXIE: True}
LIST_GPUS = """#!/bin/sh
# the health check's own GPU count (nvidia-smi --list-gpus); anything else: {why}
if [ "$1" = --list-gpus ]; then
  for i in 0 1 2 3 4 5 6 7; do echo "GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-$i)"; done
  exit 0
fi
exec {other} "$@"
"""


def usable() -> None:
    if shutil.which("unshare") is None:
        unavailable("unshare not found", "apt-get install util-linux")
    if os.geteuid() != 0:
        unavailable("slurmd and a time namespace need root", "run these tests as root (CI does)")
    probe = subprocess.run(["unshare", "--time", "--boottime=-1", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        unavailable(f"no time namespace here (unshare --time: {probe.stderr.strip()})",
                    "needs Linux 5.6+ and util-linux 2.36+ (unshare --time --boottime)")  # fmt: skip


@dataclass
class Cluster(abc.ABC):
    """One slurmctld and the slurmd of one node, as the tests drive them whichever Slurm runs them."""

    base: Path  # the test's directory on this machine: the fake node, aicluster-repair's state
    node: str
    fake: FakeNode
    release: str  # HOST or TRIXIE
    scontrol_path: str  # the cluster's scontrol as this machine runs it (aicluster-repair's too)
    env: dict[str, str]
    etc: Path  # the cluster's configuration directory (slurm.conf, healthcheck.sh) on this machine
    node_etc: str  # ... and as the node sees it
    share: Path  # a directory the node writes in (the RebootProgram's mark), on this machine
    node_share: str  # ... and as the node sees it
    log: Path  # slurmctld's log

    @property
    def keeps_reason(self) -> bool:
        return KEEPS_REASON[self.release]

    def scontrol(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.scontrol_path, *args], env=self.env, capture_output=True, text=True, check=check)

    def record(self) -> dict[str, str]:
        line = self.scontrol("-o", "show", "node", self.node).stdout
        rec = dict(re.findall(r"(\w+)=(\S*)", line))
        reason = re.search(r"\bReason=(.*?) \[[^\]]+\]", line)
        rec["Reason"] = reason.group(1) if reason else ""
        return rec

    def show(self) -> tuple[set[str], str | None]:
        rec = self.record()
        return set(rec["State"].split("+")), rec["Reason"] or None

    def wait(self, what: str, done: Callable[[dict[str, str]], bool]) -> dict[str, str]:
        deadline = time.monotonic() + WAIT_S
        while True:
            rec = self.record()
            if done(rec):
                return rec
            if time.monotonic() > deadline:
                log = self.log.read_text().splitlines()[-15:]
                pytest.fail(f"{what}: not after {WAIT_S:g} s; node {rec}\n" + "\n".join(log))
            time.sleep(0.2)

    @abc.abstractmethod
    def start_slurmd(self, boot: bool) -> None:
        """slurmd -D for the node; `boot`: in a new time namespace whose boot clock starts at 0 (a fresh boot).
        HostCluster (Debian 12's 22.05) and TrixieCluster (24.11 in the trixie root) each start their own."""

    @abc.abstractmethod
    def stop_slurmd(self) -> None:
        """Stop the node's slurmd (a reboot's shutdown)."""

    def restart_slurmd(self, before: str) -> dict[str, str]:
        """slurmd stopped and started again without a reboot; its registration."""
        self.stop_slurmd()
        time.sleep(1.1)  # SlurmdStartTime is in whole seconds: the new start must read differently
        self.start_slurmd(boot=False)
        return self.registered_again(before)

    def registered_again(self, before: str) -> dict[str, str]:
        """Wait until slurmd registered anew (a new SlurmdStartTime) and Slurm no longer waits for a reboot."""
        return self.wait("slurmd registers", lambda r: r.get("SlurmdStartTime") != before
                         and not {"REBOOT_ISSUED", "NOT_RESPONDING"} & set(r["State"].split("+")))  # fmt: skip

    def reboot(self, boot_id: str) -> dict[str, str]:
        """Slurm asked for a reboot: wait for the RebootProgram's mark, then 'boot' (slurmd in a new time namespace,
        a new boot id) and wait for the registration. Slurm takes the new boot: the node's BootTime is later."""
        mark = self.share / "rebooted"
        self.wait("the RebootProgram runs", lambda r: mark.exists())
        mark.unlink()
        old = self.record()
        before = old.get("SlurmdStartTime", "")
        self.stop_slurmd()
        (self.fake.root / "boot_id").write_text(boot_id + "\n")
        # boot time is whole seconds (now - uptime): the new boot must fall after the reboot request
        time.sleep(2)
        self.start_slurmd(boot=True)
        rec = self.registered_again(before)
        assert rec["BootTime"] > old["BootTime"], (old["BootTime"], rec["BootTime"])  # ISO times: later sorts later
        return rec


@dataclass
class HostCluster(Cluster):
    """This machine's Slurm (Debian 12: 22.05), the daemons on private directories and ports."""

    slurmd: subprocess.Popen[bytes] | None = None

    def start_slurmd(self, boot: bool) -> None:
        command = ["slurmd", "-D", "-N", self.node]
        if boot:
            uptime = float(Path("/proc/uptime").read_text().split()[0])
            command = ["unshare", "--time", f"--boottime={-int(uptime)}", *command]
        with (self.base / "log" / "slurmd.out").open("a") as out:
            self.slurmd = subprocess.Popen(command, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                           start_new_session=True)  # fmt: skip

    def stop_slurmd(self) -> None:
        if self.slurmd is not None:
            os.killpg(self.slurmd.pid, signal.SIGTERM)
            try:
                self.slurmd.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.slurmd.pid, signal.SIGKILL)
                self.slurmd.wait()
            self.slurmd = None


@dataclass
class TrixieCluster(Cluster):
    """Debian 13's Slurm (24.11) in its root filesystem: tests/integration/slurm_trixie.py's harness."""

    harness: slurm_trixie.Cluster | None = field(default=None, repr=False)

    def start_slurmd(self, boot: bool) -> None:
        assert self.harness is not None
        self.harness.start_slurmd(self.node, boot=boot)

    def stop_slurmd(self) -> None:
        assert self.harness is not None
        self.harness.stop_slurmd(self.node)


def slurm_conf_for(plan: ClusterPlan, version: tuple[int, int], settings: SlurmSettings, *, controller: str,
                   node: str, node_line: str) -> str:  # fmt: skip
    """slurm.conf of one node: the health and return-to-service settings as rendered for the plan and `version`,
    the daemons where `settings` puts them."""
    rendered = dict(
        line.split("=", 1) for line in render_slurm_conf(plan, version, settings).splitlines() if "=" in line
    )
    lines = [
        "ClusterName=reboot", f"SlurmctldHost={controller}", f"SlurmUser={settings.slurm_user}",
        f"SlurmctldPort={settings.slurmctld_port}", f"SlurmdPort={settings.slurmd_port}", "AuthType=auth/none",
        "CredType=cred/none", f"StateSaveLocation={settings.state_save_location}",
        f"SlurmdSpoolDir={settings.slurmd_spool_dir}", f"SlurmctldPidFile={settings.run_dir}/slurmctld.pid",
        f"SlurmdPidFile={settings.run_dir}/slurmd.pid", f"SlurmctldLogFile={settings.log_dir}/slurmctld.log",
        f"SlurmdLogFile={settings.log_dir}/slurmd.log", "MailProg=/bin/true", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "MpiDefault=none", f"RebootProgram={settings.reboot_program}",
        "ResumeTimeout=120", *(f"{k}={rendered[k]}" for k in RENDERED_KEYS),
        f"NodeName={node} {node_line} CPUs=1 RealMemory=100 State=UNKNOWN",
        f"PartitionName=batch Nodes={node} Default=YES State=UP",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def fake_node(base: Path, node: str, scontrol: str) -> tuple[FakeNode, Path]:
    """The node's tools (tests/health/fakes.py), healthy; aicluster-health's configuration for it, on this
    machine, with `scontrol` the cluster's."""
    (base / "node").mkdir()
    fake = healthy_node(base / "node")
    tools = {"nvidia_smi": str(fake.tools / "nvidia-smi"), "dmesg": str(fake.tools / "dmesg"), "scontrol": scontrol}
    return fake, fake.config(tools=tools, nodes={node: "gpu"})


@contextlib.contextmanager
def host_cluster(base: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    need("slurmctld", "slurmd", "scontrol")
    plan = load(STACK)
    node = plan.pools[0].node_names()[0]
    hbin = base / "hbin"
    hbin.mkdir()
    settings = settings_for(base)
    settings = type(settings)(**{**settings.__dict__, "reboot_program": str(base / "bin" / "reboot"),
                                 "slurmd_port": free_port(), "health_bin_dir": str(hbin)})  # fmt: skip
    conf = Path(settings.conf_dir)
    env = {**os.environ, "SLURM_CONF": str(conf / "slurm.conf")}
    monkeypatch.setenv("SLURM_CONF", env["SLURM_CONF"])

    # the node: the fake node's tools; aicluster-health and nvidia-smi where the rendered script finds them
    scontrol = shutil.which("scontrol")
    assert scontrol is not None
    fake, config = fake_node(base, node, scontrol)
    (conf / HEALTH_CONFIG).write_text(config.read_text())
    programs = {
        # slurmd runs the health check with no SLURM_CONF (this machine's Slurm is the test's, not /etc/slurm's)
        "aicluster-health": f"#!/bin/sh\nexport SLURM_CONF={env['SLURM_CONF']} PYTHONPATH={ROOT}\n"
                            f'exec {sys.executable} -m aicluster.health "$@"\n',
        "nvidia-smi": LIST_GPUS.format(why="the fake node's recorded outputs", other=fake.tools / "nvidia-smi"),
    }  # fmt: skip
    for name, text in programs.items():
        (hbin / name).write_text(text)
        (hbin / name).chmod(0o755)
    reboot = Path(settings.reboot_program)
    reboot.write_text(f"#!/bin/sh\ntouch {base}/run/rebooted\n")
    reboot.chmod(0o755)
    (conf / "healthcheck.sh").write_text(healthcheck_sh(plan, settings))
    (conf / "healthcheck.sh").chmod(0o755)
    assert scripts(settings)["healthcheck"] == str(conf / "healthcheck.sh")

    # slurm.conf: one node on this machine
    host = settings.controller_host
    text = slurm_conf_for(plan, VERSIONS[HOST], settings, controller=f"{host}(127.0.0.1)", node=node,
                          node_line=f"NodeHostname={host} NodeAddr=127.0.0.1")  # fmt: skip
    (conf / "slurm.conf").write_text(text)

    ctl_out = base / "log" / "slurmctld.out"
    with ctl_out.open("w") as out:
        ctld = subprocess.Popen(["slurmctld", "-D", "-c"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
    c = HostCluster(base, node, fake, HOST, scontrol, env, conf, str(conf), base / "run",
                    str(base / "run"), base / "log" / "slurmctld.log")  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT_S
        ping = ["scontrol", "ping"]
        while " is UP" not in subprocess.run(ping, env=env, capture_output=True, text=True, check=False).stdout:
            if ctld.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"slurmctld did not come up (exit {ctld.poll()}):\n{ctl_out.read_text()}")
            time.sleep(0.1)
        yield c
    finally:
        c.stop_slurmd()
        subprocess.run(["scontrol", "shutdown", "slurmctld"], env=env, capture_output=True, check=False)
        try:
            ctld.wait(timeout=10)
        except subprocess.TimeoutExpired:
            ctld.kill()
            ctld.wait()


# Where the trixie root's node writes what this machine reads (the RebootProgram's mark, a check's output)
SHARE = "/var/lib/aicluster-test/share"
# aicluster-health in the trixie root: the root has no Python, so it runs on this machine's, out of the chroot into
# the test's mount namespace (nsenter), still in the node's network and UTS namespaces (its host name is the node's);
# with the test's configuration (argparse takes the last --config)
HEALTH_WRAPPER = """#!/bin/sh
exec nsenter --mount=/proc/{pid}/ns/mnt env PYTHONPATH={root} {python} -m aicluster.health "$@" --config {config}
"""


@contextlib.contextmanager
def trixie_cluster(base: Path) -> Iterator[Cluster]:
    tools = ("debootstrap", "ip", "nsenter", "chroot")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        unavailable(f"{', '.join(missing)} not found", "apt-get install debootstrap iproute2 util-linux")
    plan = load(STACK)
    node = plan.pools[0].node_names()[0]
    own = allocate("slurm-reboot")
    settings = slurm_trixie.settings()
    settings = type(settings)(**{**settings.__dict__, "reboot_program": "/usr/local/sbin/aicluster-test-reboot"})
    # the cluster's scontrol, from this machine and from aicluster-health (out of the chroot): the controller's
    scontrol = base / "bin" / "scontrol"
    fake, config = fake_node(base, node, str(scontrol))
    files = {
        f"{settings.conf_dir}/slurm.conf": slurm_conf_for(
            plan, VERSIONS[TRIXIE], settings, controller=slurm_trixie.CONTROLLER, node=node,
            node_line=f"NodeAddr={own.subnet}.11",
        ),
        scripts(settings)["healthcheck"]: healthcheck_sh(plan, settings),
        f"{settings.health_bin_dir}/aicluster-health": HEALTH_WRAPPER.format(
            pid=os.getpid(), root=ROOT, python=sys.executable, config=config
        ),
        # before the GB200 stand-in in PATH: an H100 node's 8 GPUs
        "/usr/local/sbin/nvidia-smi": LIST_GPUS.format(why="not asked here", other="false"),
        settings.reboot_program: f"#!/bin/sh\ntouch {SHARE}/rebooted\n",
        f"{SHARE}/.keep": "",
    }  # fmt: skip
    with slurm_trixie.slurm_cluster(base, files, prefix=own.prefix, subnet=own.subnet, nodes=[node],
                                    start=False) as harness:  # fmt: skip
        scontrol.parent.mkdir(exist_ok=True)
        scontrol.write_text(
            f'#!/bin/sh\nexec ip netns exec {harness.controller_ns} chroot {harness.root} /usr/bin/scontrol "$@"\n'
        )
        scontrol.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
        c = TrixieCluster(base, node, fake, TRIXIE, str(scontrol), env,
                          harness.root / settings.conf_dir.lstrip("/"), settings.conf_dir,
                          harness.root / SHARE.lstrip("/"), SHARE, harness.root / "var/log/slurm/slurmctld.log",
                          harness=harness)  # fmt: skip
        yield c


@pytest.fixture(params=[HOST, TRIXIE])
def cluster(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """The node registered and IDLE under a real slurmctld of each Slurm release."""
    usable()
    start = time.monotonic()
    with host_cluster(tmp_path, monkeypatch) if request.param == HOST else trixie_cluster(tmp_path) as c:
        c.start_slurmd(boot=False)
        c.wait("the node registers", lambda r: r["State"] == "IDLE")
        print(f"Slurm {request.param}: up in {time.monotonic() - start:.1f} s")
        yield c


def repair_pass(c: Cluster, plan_stack: str = STACK) -> dict[str, object]:
    rendered = repair_config(load(plan_stack)).model_dump(mode="json")
    config = c.base / "aicluster-repair.json"
    fields = {"scontrol": c.scontrol_path, "state_dir": str(c.base / "repair"), "log_file": None,
              "max_share_in_repair": 1.0, "repeat_count": 3}  # fmt: skip
    config.write_text(json.dumps({**rendered, **fields}))
    assert repair(["--config", str(config)]) == 0
    report: dict[str, object] = json.loads((c.base / "repair" / "report.json").read_text())
    return report


def test_a_node_still_faulty_after_its_repair_reboot_stays_drained_and_a_healthy_one_returns(
    cluster: Cluster,
) -> None:
    c = cluster
    fault = format_reason("XID48", "GPU 0000:3a:00 Double-bit (uncorrectable) ECC error (WORKFLOW_XID_48)")
    shutil.copy(DATA / "dmesg-xid48.txt", c.fake.out / "dmesg.txt")  # the XID is in the kernel log again each boot
    c.scontrol("update", f"nodename={c.node}", "state=DRAIN", f"reason={fault}")  # as aicluster-health drains it

    # aicluster-repair: a Slurm reboot of the drained node (XID48: reset_gpu, a reboot here)
    assert repair_pass(c)["repaired_now"] == [c.node]
    states, reason = c.show()
    assert reason is not None
    assert reason.startswith("aicluster-health:REPAIR reboot XID48 ")

    # the node "boots" still faulty: the boot check before registration drains it, and the registration keeps it
    rec = c.reboot("6a1f0e0c-boot-0002")
    states, reason = set(rec["State"].split("+")), rec["Reason"]
    assert states == {"IDLE", "DRAIN"}
    found = parse_reason(reason)
    assert found is not None
    assert found.code == "XID48"
    # the boot check's own finding (the kernel log of this boot), not the reason the repair began with
    assert found.detail == "GPU 0000:18:00 double-bit ECC error (WORKFLOW_XID_48)"

    # it stays so when slurmd starts again without a reboot (ReturnToService=2 returns DOWN nodes, not drained ones)
    rec = c.restart_slurmd(rec["SlurmdStartTime"])
    assert set(rec["State"].split("+")) == {"IDLE", "DRAIN"}
    assert rec["Reason"] == reason

    # the next repair pass reads the fault again: the repair that did not help is closed, the node repaired anew
    report = repair_pass(c)
    assert report["repaired_now"] == [c.node]
    assert "REBOOT_REQUESTED" in c.show()[0] or "REBOOT_ISSUED" in c.show()[0]

    # this time the reboot cleared the fault: the boot check passes and the node is back, IDLE; 22.05 clears the
    # reason, 24.11 keeps the repair's (stale: aicluster-repair counts it in no repair)
    shutil.copy(DATA / "dmesg-healthy.txt", c.fake.out / "dmesg.txt")
    rec = c.reboot("6a1f0e0c-boot-0003")
    assert rec["State"] == "IDLE"
    if c.keeps_reason:
        stale = parse_reason(rec["Reason"])
        assert stale is not None
        assert (stale.code, stale.detail.startswith("reboot XID48 ")) == ("REPAIR", True), rec["Reason"]
    else:
        assert rec["Reason"] == ""
    report = repair_pass(c)
    assert report["circuit_breaker"]["in_repair"] == []  # type: ignore[index]
    assert report["repaired_now"] == []


NAIVE_CHECK = """#!/bin/sh
# a boot check that drains the way any script would: one `scontrol update state=DRAIN`; before it, it tries to end
# the reboot with `scontrol cancel_reboot` (its answer kept in {share}/cancel)
export SLURM_CONF={conf}
scontrol cancel_reboot "$SLURMD_NODENAME" > {share}/cancel 2>&1
echo "exit $?" >> {share}/cancel
scontrol update nodename="$SLURMD_NODENAME" state=drain reason="{reason}"
exit 1
"""


@pytest.mark.parametrize("nextstate", ["RESUME", "DOWN"])
def test_slurm_clears_a_drain_given_while_it_waits_for_the_reboot(cluster: Cluster, nextstate: str) -> None:
    """What the boot check works around, on both releases: a drain given by the health check slurmd runs before it
    registers after `scontrol reboot` is cleared by that registration. nextstate=RESUME: IDLE (a faulty node back
    in service); nextstate=DOWN: DOWN with the check's reason and " : reboot complete" appended, not drained
    (ReturnToService=2 returns it at the next registration). `scontrol cancel_reboot` is refused meanwhile. 22.05
    clears the reason of the node back in service, 24.11 keeps it (no accounting storage). If a Slurm release keeps
    the drain, this test says so and the RESUME before the drain (aicluster/health/slurm.py) is no longer needed."""
    c = cluster
    fault = format_reason("XID48", "GPU 0000:18:00 double-bit ECC error (WORKFLOW_XID_48)")
    c.scontrol("update", f"nodename={c.node}", "state=DRAIN", f"reason={fault}")
    repair_reason = format_reason("REPAIR", "reboot " + fault.removeprefix("aicluster-health:"))
    c.scontrol("reboot", "ASAP", f"nextstate={nextstate}", f"reason={repair_reason}", c.node)
    assert set(c.record()["State"].split("+")) == {"IDLE", "DRAIN", "REBOOT_REQUESTED"}
    check = NAIVE_CHECK.format(conf=f"{c.node_etc}/slurm.conf", share=c.node_share, reason=fault)
    (c.etc / "healthcheck.sh").write_text(check)
    rec = c.reboot("6a1f0e0c-boot-0002")
    print(f"Slurm {c.release}, nextstate={nextstate}: registered {rec['State']} {rec['Reason']!r}")
    # the check ran while the node was DOWN+DRAIN+REBOOT_ISSUED: cancel_reboot refused, the state unchanged
    assert (c.share / "cancel").read_text() == "slurm_update error: Invalid node state specified\nexit 1\n"
    refused = f"Invalid node state transition requested for node {c.node} from=REBOOT^ to=CANCEL_REBOOT"
    assert refused in c.log.read_text()
    if nextstate == "RESUME":
        assert rec["State"] == "IDLE"
        assert rec["Reason"] == (fault if c.keeps_reason else "")
        return
    assert rec["State"] == "DOWN"
    assert rec["Reason"] == fault + " : reboot complete"
    # and DOWN is no hold: the next registration (here a slurmd restart, the check passing) returns it
    (c.etc / "healthcheck.sh").write_text("#!/bin/sh\nexit 0\n")
    rec = c.restart_slurmd(rec["SlurmdStartTime"])
    assert rec["State"] == "IDLE"
    assert rec["Reason"] == (fault + " : reboot complete" if c.keeps_reason else "")


def test_a_held_node_a_person_resumed_is_no_longer_held(cluster: Cluster) -> None:
    """aicluster-repair holds a node for a person with a HELD reason; once the person resumes it, it is no longer
    reported held, on 24.11 too, where the resumed node keeps the HELD reason (stale: live_reason)."""
    c = cluster
    held = format_reason("HELD", "repeat offender: 5 repairs in 7 d (limit 5); XID48 GPU 0000:18:00 ECC")
    c.scontrol("update", f"nodename={c.node}", "state=DRAIN", f"reason={held}")
    assert list(repair_pass(c)["held"]) == [c.node]  # type: ignore[call-overload]
    c.scontrol("update", f"nodename={c.node}", "state=RESUME")  # the person
    states, reason = c.show()
    assert "DRAIN" not in states
    assert reason == (held if c.keeps_reason else None)
    report = repair_pass(c)
    assert report["held"] == {}
    assert report["circuit_breaker"]["in_repair"] == []  # type: ignore[index]
