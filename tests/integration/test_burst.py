"""Slurm cloud bursting end to end: a real slurmctld (Debian's 22.05) runs the real aicluster-resume and
aicluster-suspend as its ResumeProgram/SuspendProgram against a local EC2 + Auto Scaling API (moto's server).

The slurm.conf is a hybrid one written here (the renderer does not emit bursting yet): two static "on-prem" nodes
(State=UNKNOWN, Weight=1) and two cloud nodes (State=CLOUD, Feature=cloud,aws,<type>, Weight=100), SuspendTime
only on the cloud partition, a topology tree per site with no common root. The test plays the booted instance by
starting a slurmd under the cloud node's name (no root-only plugins: proctrack/linuxproc, task/none, no munge).

1. burst: a job on the cloud partition makes slurmctld call aicluster-resume; the group grows by one; the node is
   bound to the new instance (tag) and Slurm gets its address; slurmd registers; the job runs; once idle
   slurmctld calls aicluster-suspend and the group shrinks back to 0.
2. capacity: the group is at its maximum; the asked nodes go DOWN with a reason naming it and the job is requeued,
   not hung; aicluster-burst-sync powers them down again so they will be retried.
3. spot reclaim: the bound instance is terminated behind Slurm's back; aicluster-burst-sync powers the node down
   and the running job is requeued; the Auto Scaling replacement, bound to no node, is deleted.
Needs Slurm (apt-get install slurmctld slurmd slurm-client) and the dev extras (boto3, moto[server]); skipped
without Slurm, except in CI (CI=true), where a missing Slurm is a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aicluster.burst.cloud import NODE_TAG
from aicluster.burst.slurm import parse_node_line, read_resume_file
from tests.conftest import IN_CI

boto3 = pytest.importorskip("boto3", reason="install the dev extras: pip install -e '.[dev]'")
moto_server = pytest.importorskip("moto.server", reason="install the dev extras: pip install -e '.[dev]'")

pytestmark = pytest.mark.slow

INSTALL = "Slurm is not installed: apt-get install slurmctld slurmd slurm-client"
REGION = "us-east-1"
TYPE = "m5.large"
CLOUD = ["aws-m5-00", "aws-m5-01"]
ONPREM = ["onprem-00", "onprem-01"]
WAIT_S = 120.0  # the longest one step may take: a hang guard (a node registered in 3-35 s on a loaded 2-core host)


def need(*programs: str) -> None:
    import shutil

    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        message = f"{', '.join(missing)} not found. {INSTALL}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, probe: Callable[[], Any], seconds: float = WAIT_S, why: Callable[[], str] = str) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds:.0f} s\n{why()}")
        time.sleep(0.2)


def wrapper(path: Path, module: str, env: dict[str, str]) -> Path:
    """What the console script does, for a checkout whose entry points are not installed. slurmctld runs its power
    programs with only SLURM_CONF set: the wrapper supplies the interpreter, the checkout and the test's (fake)
    cloud credentials."""
    exports = "".join(f"export {k}='{v}'\n" for k, v in env.items())
    path.write_text(f'#!/bin/sh\n{exports}exec {sys.executable} -m aicluster.burst.{module} "$@"\n')
    path.chmod(0o755)
    return path


SLURM_CONF = """\
ClusterName={cluster}
SlurmctldHost={host}
SlurmctldPort={ctl_port}
SlurmdPort={d_port}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/none
CredType=cred/none
StateSaveLocation={base}/state
SlurmdSpoolDir={spool}/%n
SlurmctldPidFile={base}/run/slurmctld.pid
SlurmdPidFile={base}/run/slurmd-%n.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobRequeue=1
TopologyPlugin=topology/tree
# power saving: global SuspendTime off, on the cloud partition only
SuspendTime=INFINITE
ResumeProgram={resume}
SuspendProgram={suspend}
ResumeTimeout=60
SuspendTimeout=5
ResumeRate=0
SuspendRate=0
TreeWidth=65533
# before 23.02 powered-down cloud nodes are hidden from scontrol/sinfo (the sync reads them) unless this is set
PrivateData=cloud
SlurmctldParameters=cloud_reg_addrs,power_save_interval=1,power_save_min_interval=0
# on-prem nodes resolve (here: to this machine, where no slurmd of theirs runs); cloud nodes get theirs on resume
NodeName={onprem} NodeAddr=127.0.0.1 CPUs=1 Weight=1 Feature=onprem State=UNKNOWN
NodeName={cloud} CPUs=1 Weight=100 Feature=cloud,aws,{type} State=CLOUD
PartitionName=onprem Nodes={onprem} Default=YES State=UP
PartitionName=cloud Nodes={cloud} SuspendTime=3 State=UP
"""

TOPOLOGY_CONF = """\
# one tree per site and no common root: no job spans the VPN
SwitchName=onprem-leaf Nodes={onprem}
SwitchName=aws-leaf Nodes={cloud}
"""


@dataclass
class Site:
    env: dict[str, str]
    base: Path
    asg: Any
    ec2: Any
    group: str
    config: Path
    sync: Path
    slurmds: dict[str, subprocess.Popen[bytes]]
    spool: str = ""

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, env=self.env, capture_output=True, text=True, check=check, timeout=30)

    def node(self, name: str) -> dict[str, str]:
        return parse_node_line(self.run("scontrol", "-o", "show", "node", name).stdout.strip())

    def states(self, name: str) -> set[str]:
        return {s.rstrip("*") for s in self.node(name).get("State", "").split("+")}

    def job(self, job_id: str) -> dict[str, str]:
        out = self.run("scontrol", "-o", "show", "job", job_id, check=False).stdout
        return dict(re.findall(r"(\w+)=(\S*)", out))

    def capacity(self) -> int:
        g = self.asg.describe_auto_scaling_groups(AutoScalingGroupNames=[self.group])["AutoScalingGroups"][0]
        return int(g["DesiredCapacity"])

    def instances(self) -> dict[str, dict[str, Any]]:
        """Live instances of the group -> their EC2 record."""
        r = self.ec2.describe_instances(Filters=[{"Name": "tag:aws:autoscaling:groupName", "Values": [self.group]}])
        return {
            i["InstanceId"]: i
            for res in r["Reservations"]
            for i in res["Instances"]
            if i["State"]["Name"] in ("pending", "running")
        }

    def bound(self, node: str) -> dict[str, Any] | None:
        for i in self.instances().values():
            if {"Key": NODE_TAG, "Value": node} in i.get("Tags", []):
                return i
        return None

    def boot(self, node: str) -> None:
        """The instance boots: its slurmd starts under the node's Slurm name. `-b` reports a boot now: slurmctld
        takes a resumed node only from a slurmd whose BootTime is later than the resume (slurm.conf(5))."""
        (Path(self.spool) / node).mkdir(parents=True, exist_ok=True)
        self.slurmds[node] = subprocess.Popen(
            ["slurmd", "-D", "-b", "-N", node], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def steps(self, node: str) -> list[int]:
        """Process ids of job steps still running under this node's slurmd (`scontrol listpids`)."""
        env = {**self.env, "SLURMD_NODENAME": node}
        out = subprocess.run(["scontrol", "listpids"], env=env, capture_output=True, text=True, check=False).stdout
        return [int(line.split()[0]) for line in out.splitlines()[1:] if line.split() and line.split()[0].isdigit()]

    def halt(self, node: str) -> None:
        """The instance goes: its job steps end (slurmctld kills them, or this does after 15 s), then slurmd."""
        proc = self.slurmds.pop(node, None)
        if proc is not None:
            deadline = time.monotonic() + 15
            while self.steps(node) and time.monotonic() < deadline:
                time.sleep(0.2)
            for pid in self.steps(node):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            while self.steps(node) and time.monotonic() < deadline + 5:
                time.sleep(0.2)
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def logs(self) -> str:
        text = ""
        slurmds = sorted(p.name for p in (self.base / "log").glob("slurmd-*.log"))
        for name in ("burst.log", "slurmctld.log", *slurmds):
            p = self.base / "log" / name
            if p.exists():
                text += f"--- {name}\n" + "\n".join(p.read_text().splitlines()[-40:]) + "\n"
        return text


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    need("slurmctld", "slurmd", "scontrol", "sbatch")
    base = tmp_path
    for d in ("etc", "state", "log", "run", "burst"):
        (base / d).mkdir()
    # slurmstepd's unix sockets live in the spool and their paths may not pass 108 bytes: pytest's tmp_path under
    # xdist (.../popen-gw0/test_.../spool/<node>/<node>_<job>.<step>) is too long, so the spool is a short one
    spool = tempfile.mkdtemp(prefix="aib-", dir="/tmp")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host_port = server.get_host_and_port()
    url = f"http://{host_port[0]}:{host_port[1]}"
    creds = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    kw = {"endpoint_url": url, "region_name": REGION, "aws_access_key_id": "testing",
          "aws_secret_access_key": "testing"}  # fmt: skip
    ec2, asg = boto3.client("ec2", **kw), boto3.client("autoscaling", **kw)
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    group = f"burst-{user}-{os.getpid()}"
    image = ec2.describe_images()["Images"][0]["ImageId"]
    ec2.create_launch_template(LaunchTemplateName=group, LaunchTemplateData={"ImageId": image, "InstanceType": TYPE})
    asg.create_auto_scaling_group(AutoScalingGroupName=group, MinSize=0, MaxSize=2, DesiredCapacity=0,
                                  LaunchTemplate={"LaunchTemplateName": group, "Version": "$Latest"},
                                  AvailabilityZones=[f"{REGION}a"])  # fmt: skip

    config = base / "etc" / "aicluster-burst.json"
    config.write_text(json.dumps({
        "version": 1, "cluster": "burst-test", "log_file": str(base / "log" / "burst.log"),
        "state_dir": str(base / "burst"), "launch_wait_s": 20, "poll_s": 0.2, "orphan_grace_s": 1,
        "node_sets": [{"provider": "aws", "nodes": "aws-m5-[00-01]", "region": REGION, "group": group,
                       "instance_type": TYPE, "market": "spot", "endpoint_url": url}],
    }, indent=2))  # fmt: skip
    wrapper_env = {
        "AICLUSTER_BURST_KEEP_RESUME_FILE": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        **creds,
    }
    resume = wrapper(base / "resume.sh", "resume", wrapper_env)
    suspend = wrapper(base / "suspend.sh", "suspend", wrapper_env)
    sync = wrapper(base / "sync.sh", "sync", wrapper_env)

    port = free_port()
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
    fields = {"onprem": "onprem-[00-01]", "cloud": "aws-m5-[00-01]"}
    (base / "etc" / "slurm.conf").write_text(SLURM_CONF.format(
        cluster=f"burst{os.getuid()}", host=host, ctl_port=port, d_port=free_port(), user=user, base=base, spool=spool,
        resume=resume, suspend=suspend, type=TYPE, **fields))  # fmt: skip
    (base / "etc" / "topology.conf").write_text(TOPOLOGY_CONF.format(**fields))
    env = {**os.environ, "SLURM_CONF": str(base / "etc" / "slurm.conf")}
    s = Site(env, base, asg, ec2, group, config, sync, {}, spool)
    out = (base / "log" / "stdout.log").open("w")
    ctl = subprocess.Popen(["slurmctld", "-D", "-c"], env=env, stdout=out, stderr=subprocess.STDOUT,
                           start_new_session=True)  # fmt: skip
    try:
        wait_for("slurmctld up", lambda: " is UP" in s.run("scontrol", "ping", check=False).stdout, 15,
                 lambda: (base / "log" / "stdout.log").read_text() + s.logs())  # fmt: skip
        yield s
    finally:
        s.run("scancel", "--user", user, check=False)
        for node in list(s.slurmds):
            s.halt(node)
        s.run("scontrol", "shutdown", "slurmctld", check=False)
        try:
            ctl.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(ctl.pid, signal.SIGKILL)
            ctl.wait()
        out.close()
        server.stop()
        shutil.rmtree(spool, ignore_errors=True)


def test_slurm_bursts_into_an_auto_scaling_group_and_back(site: Site) -> None:
    s = site
    t0 = time.monotonic()
    assert "Nodes=aws-m5-[00-01] " in s.run("scontrol", "-o", "show", "partition", "cloud").stdout
    for n in CLOUD:
        assert {"CLOUD", "POWERED_DOWN"} <= s.states(n), s.node(n)
        assert s.node(n)["AvailableFeatures"] == f"cloud,aws,{TYPE}"
    # the two sites are two trees with no common root
    switches = s.run("scontrol", "-o", "show", "topology").stdout
    assert "Switches=" not in switches.replace("Switches=(null)", "")

    # 1. burst: slurmctld runs aicluster-resume for exactly the node it chose; the group grows by one
    job = s.run("sbatch", "-p", "cloud", "-N1", "-o", "/dev/null", "--wrap", "true", "--parsable").stdout.strip()
    node = wait_for("resume binds an instance", lambda: next((n for n in CLOUD if s.bound(n)), None),
                    why=s.logs)  # fmt: skip
    assert s.capacity() == 1
    assert [n for n in CLOUD if s.bound(n)] == [node]
    inst = s.bound(node)
    assert inst is not None
    rec = wait_for("Slurm knows the address", lambda: s.node(node).get("NodeAddr") == inst["PrivateIpAddress"]
                   and s.node(node), why=s.logs)  # fmt: skip
    assert rec["NodeHostName"] == inst["PrivateDnsName"]
    assert "POWERING_UP" in s.states(node)
    # the program copied SLURM_RESUME_FILE before slurmctld deleted it (kept here: AICLUSTER_BURST_KEEP_RESUME_FILE)
    copies = [read_resume_file(p.read_text()) for p in (s.base / "burst" / "resume").glob("*.json")]
    assert [(every, [(j.job_id, j.nodes_resume) for j in jobs]) for every, jobs in copies] == [
        (node, [(int(job), node)])
    ]
    # the instance boots: slurmd registers as the node (from this machine: cloud_reg_addrs) and the job runs
    s.boot(node)
    wait_for(f"job {job} completes", lambda: s.job(job).get("JobState") == "COMPLETED",
             why=lambda: str(s.job(job)) + s.logs())  # fmt: skip
    assert s.job(job)["NodeList"] == node
    # idle for SuspendTime: slurmctld runs aicluster-suspend, which terminates the bound instance and shrinks
    wait_for("suspend shrinks the group", lambda: s.capacity() == 0 and not s.instances(), why=s.logs)
    s.halt(node)
    wait_for(f"{node} powered down", lambda: "POWERED_DOWN" in s.states(node), why=s.logs)
    burst_s = time.monotonic() - t0

    # 2. capacity: the group is at its maximum; the nodes go DOWN with the reason and the job is requeued
    s.asg.update_auto_scaling_group(AutoScalingGroupName=s.group, MaxSize=0)
    job = s.run("sbatch", "-p", "cloud", "-N1", "-o", "/dev/null", "--wrap", "true", "--parsable").stdout.strip()
    down = wait_for("resume reports DOWN", lambda: [n for n in CLOUD if "DOWN" in s.states(n)], why=s.logs)
    reason = s.node(down[0])["Reason"]
    assert reason.startswith(f"aicluster-resume: group {s.group} at its maximum size 0"), reason
    assert s.capacity() == 0
    wait_for(f"job {job} requeued, not hung", lambda: s.job(job).get("JobState") == "PENDING"
             and int(s.job(job).get("Restarts", "0")) >= 1, why=lambda: str(s.job(job)) + s.logs())  # fmt: skip
    s.run("scancel", job)
    # the sync powers the DOWN nodes down (Slurm keeps them DOWN), and its next run returns them to service
    assert s.run(str(s.sync)).returncode == 0
    for n in down:
        wait_for(f"{n} powered down", lambda n=n: {"DOWN", "POWERED_DOWN"} <= s.states(n),
                 why=lambda n=n: str(s.node(n)) + s.logs())  # fmt: skip
    assert s.run(str(s.sync)).returncode == 0
    for n in down:
        wait_for(f"{n} back in service", lambda n=n: {"IDLE", "POWERED_DOWN"} <= s.states(n)
                 and "DOWN" not in s.states(n), why=lambda n=n: str(s.node(n)) + s.logs())  # fmt: skip
    s.asg.update_auto_scaling_group(AutoScalingGroupName=s.group, MaxSize=2)

    # 3. spot reclaim: the instance goes behind Slurm's back; the sync powers the node down, the job is requeued
    job = s.run("sbatch", "-p", "cloud", "-N1", "-o", "/dev/null", "--wrap", "sleep 120", "--parsable").stdout
    job = job.strip()
    node = wait_for("resume binds an instance", lambda: next((n for n in CLOUD if s.bound(n)), None), why=s.logs)
    s.boot(node)
    wait_for(f"job {job} runs", lambda: s.job(job).get("JobState") == "RUNNING",
             why=lambda: str(s.job(job)) + s.logs())  # fmt: skip
    reclaimed = s.bound(node)
    assert reclaimed is not None
    s.ec2.terminate_instances(InstanceIds=[reclaimed["InstanceId"]])
    assert s.run(str(s.sync)).returncode == 0, s.logs()
    rec = s.node(node)
    assert rec["Reason"].startswith(f"aicluster-burst-sync: instance {reclaimed['InstanceId']} EC2 state terminated")
    wait_for(f"job {job} requeued", lambda: int(s.job(job).get("Restarts", "0")) >= 1,
             why=lambda: str(s.job(job)) + s.logs())  # fmt: skip
    s.run("scancel", job)
    s.halt(node)  # after slurmctld killed the job's steps (a reclaimed VM takes them with it)
    # Auto Scaling replaced the instance; the replacement is bound to no node: the next sync deletes it
    time.sleep(1.1)  # orphan_grace_s
    assert s.run(str(s.sync)).returncode == 0, s.logs()
    wait_for("the group is empty again", lambda: s.capacity() == 0 and not s.instances(), why=s.logs)
    # slurmctld logs "power_save: program exit status of N" for a resume/suspend that failed: none did
    assert "power_save: program exit status" not in (s.base / "log" / "slurmctld.log").read_text()
    assert " ERROR " not in (s.base / "log" / "burst.log").read_text(), s.logs()
    print(f"\nburst round trip {burst_s:.1f} s, whole test {time.monotonic() - t0:.1f} s")
