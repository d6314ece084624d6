"""The rendered Slurm configuration of every example stack, loaded by a real slurmctld (Debian's 22.05).

slurmctld accepts bad Gres values silently, so the tests compare what Slurm reports (`scontrol show node`,
`scontrol show topology`, `slurmd -G`) with the plan, and fail on any `error:` line in the log that is not
known noise. Needs `apt-get install slurmctld slurmd slurm-client`; skipped without it, except in CI
(CI=true), where a missing Slurm is a failure.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import re
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aicluster.catalog import load_catalog
from aicluster.plan import ClusterPlan
from aicluster.plan.models import OnpremHost
from aicluster.preview import plan_stack
from aicluster.schedulers.slurm.render import (
    HYBRID_PARTITION,
    RESUME_PROGRAM,
    SUSPEND_PROGRAM,
    SlurmSettings,
    cloud_pools,
    cpu_layout,
    files,
    gres_type,
    hostlist,
    onprem_leaves,
)
from aicluster.stackfile import find_project, read_stack
from tests.conftest import IN_CI, ROOT, SLURM_STACKS
from tests.helpers import hybrid_site_cluster, plan_of

pytestmark = pytest.mark.slow

INSTALL = "Slurm is not installed: apt-get install slurmctld slurmd slurm-client"
START_TIMEOUT_S = 10.0
# "error:" lines that every start of Debian's slurmctld 22.05 logs with a fresh state directory (-c).
HARMLESS_ERRORS = (
    # Debian ships the mpi/pmix_v4 plugin, but slurmctld does not pull in the PMIx library
    "mpi/pmix_v4: init: (null) [0]: mpi_pmix.c:195: pmi/pmix: can not load PMIx library",
    "Couldn't load specified plugin name for mpi/pmix_v4: Plugin init() callback failed",
    "MPI: Cannot create context for mpi/pmix_v4",
    # no state files on a first start (and on shutdown, before any job was saved)
    "Could not open job state file",
    "NOTE: Trying backup state save file. Jobs may be lost!",
    "Could not open reservation state file",
    "NOTE: Trying backup state save file. Reservations may be lost",
    # slurmctld times gettimeofday() at start; on a loaded shared machine it logs this as an "error"
    "High latency for 1000 calls to gettimeofday()",
)


def need(*programs: str) -> None:
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


HYBRID_SITE = "hybrid-site"  # not a stack file: the on-prem example bursting into AWS and GCP (tests.helpers)


def load(stack: str) -> ClusterPlan:
    if stack == HYBRID_SITE:
        return plan_of(load_catalog(), hybrid_site_cluster())
    return addressed(plan_stack(read_stack(find_project(ROOT), stack)))


def addressed(plan: ClusterPlan) -> ClusterPlan:
    """Owned pools the stack gives only a count of are named <pool>-NNN and found through the site's DNS, which
    slurmctld resolves at start (it refuses names it cannot resolve). The test machine has no such DNS, so those
    nodes are given as hosts of the same names at addresses in the site's network (NodeAddr=)."""
    cidrs = {site.name: ipaddress.ip_network(site.cidrs[0]) for site in plan.sites}
    pools = []
    for pool in plan.pools:
        if pool.onprem is None or pool.onprem.hosts:
            pools.append(pool)
            continue
        ips = cidrs[pool.onprem.site].hosts()
        hosts = tuple(OnpremHost(name=n, address=str(next(ips))) for n in pool.node_names())
        pools.append(pool.model_copy(update={"onprem": pool.onprem.model_copy(update={"hosts": hosts})}))
    return plan.model_copy(update={"pools": tuple(pools)})


# Slurm 22.05 has no topology/block, so it cannot run a rack-scale plan (rack_scale_problems refuses to render one):
# those stacks are loaded by Slurm 24.11 in test_slurm_blocks.py; this file takes the others
SLURM_22_STACKS = [s for s in SLURM_STACKS if not load(s).nvlink_domains]


def settings_for(base: Path, device_dir: str = "/dev") -> SlurmSettings:
    """Private directories, a free port, no munge and no cgroups: what a test machine can run."""
    for d in ("etc", "state", "spool", "log", "run", "bin"):
        (base / d).mkdir(exist_ok=True)
    for program in (RESUME_PROGRAM, SUSPEND_PROGRAM):  # slurmctld disables power saving without executables
        script = base / "bin" / program
        script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{base}/log/burst.log"\n')
        script.chmod(0o755)
    port = free_port()
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
    return SlurmSettings(
        conf_dir=str(base / "etc"),
        controller_host=host,
        slurm_user=getpass.getuser(),
        slurmctld_port=port,
        slurmd_port=port + 1,
        state_save_location=str(base / "state"),
        slurmd_spool_dir=str(base / "spool"),
        run_dir=str(base / "run"),
        log_dir=str(base / "log"),
        auth_type="auth/none",
        cred_type="cred/none",
        proctrack_type="proctrack/linuxproc",
        task_plugin="task/none",
        device_dir=device_dir,
        burst_bin_dir=str(base / "bin"),
    )


def write(plan: ClusterPlan, settings: SlurmSettings) -> dict[str, str]:
    """Write the files where `settings` puts them; SLURM_CONF for the Slurm commands."""
    for path, text in files(plan, (22, 5), settings).items():
        Path(path).write_text(text)
    return {**os.environ, "SLURM_CONF": f"{settings.conf_dir}/slurm.conf"}


def expected_leaves(plan: ClusterPlan) -> set[frozenset[str]]:
    """Leaf switches' node sets: a cloud pool's fabric domains (the pool, if it has none); with sites, an owned
    fabric's scalable units."""
    found: set[frozenset[str]] = set()
    for pool in cloud_pools(plan) if plan.sites else plan.pools:
        names = pool.node_names()
        found |= {frozenset(names[r.start : r.stop]) for _, r in pool.fabric_domains() or [("", range(pool.nodes))]}
    if plan.sites:
        found |= {frozenset(nodes) for _, leaves in onprem_leaves(plan) for _, nodes in leaves}
    return found


def expected_trees(plan: ClusterPlan) -> list[set[str]]:
    """With sites: the node set of each topology tree, an owned fabric's or a cloud pool's."""
    owned = [{n for _, nodes in leaves for n in nodes} for _, leaves in onprem_leaves(plan)]
    return owned + [set(p.node_names()) for p in cloud_pools(plan)]


@dataclass
class Controller:
    plan: ClusterPlan
    env: dict[str, str]
    log: Path
    started_s: float

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, env=self.env, capture_output=True, text=True, check=check)

    def records(self, *what: str) -> list[dict[str, str]]:
        """`scontrol -o show ...` as one key=value dict per line (only values without spaces are whole)."""
        out = self.run("scontrol", "-o", "show", *what).stdout
        return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in out.splitlines() if line.strip()]

    def hostnames(self, expression: str) -> set[str]:
        return set(self.run("scontrol", "show", "hostnames", expression).stdout.split())


@pytest.fixture
def controller(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Controller]:
    need("slurmctld", "scontrol", "sbatch")
    plan = load(request.param)
    env = write(plan, settings_for(tmp_path))
    stdout = tmp_path / "log" / "stdout.log"
    t0 = time.monotonic()
    with stdout.open("w") as out:
        proc = subprocess.Popen(
            ["slurmctld", "-D", "-c"], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        ctl = Controller(plan, env, tmp_path / "log" / "slurmctld.log", 0.0)
        try:
            while " is UP" not in ctl.run("scontrol", "ping", check=False).stdout:
                if proc.poll() is not None or time.monotonic() - t0 > START_TIMEOUT_S:
                    pytest.fail(f"slurmctld did not come up (exit {proc.poll()}):\n{stdout.read_text()}")
                time.sleep(0.05)
            ctl.started_s = time.monotonic() - t0
            yield ctl
        finally:
            ctl.run("scontrol", "shutdown", "slurmctld", check=False)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.parametrize("controller", [*SLURM_22_STACKS, HYBRID_SITE], indirect=True)
def test_slurmctld_runs_the_plan(controller: Controller) -> None:
    ctl, plan = controller, controller.plan
    print(f"{plan.name}: slurmctld up in {ctl.started_s:.2f} s")

    # nodes: exactly the plan's names, with its GPUs and CPUs
    nodes = {r["NodeName"]: r for r in ctl.records("node")}
    expected = {name: pool for pool in plan.pools for name in pool.node_names()}
    assert sorted(nodes) == sorted(expected)
    for name, pool in expected.items():
        gres = gres_type(pool)
        assert nodes[name]["Gres"] == (f"gpu:{gres}:{pool.accelerators_per_node}" if gres else "(null)"), name
        assert int(nodes[name]["CPUTot"]) == pool.vcpus_per_node, name
        layout = cpu_layout(pool)
        if layout is not None:  # Slurm took the catalog's layout, not one it inferred from CPUs alone
            reported = (
                int(nodes[name]["Sockets"]),
                int(nodes[name]["CoresPerSocket"]),
                int(nodes[name]["ThreadsPerCore"]),
            )
            assert reported == layout, name
        # owned (on-prem) nodes are static; the clouds' nodes are CLOUD nodes
        assert ("CLOUD" in nodes[name]["State"]) == (pool.onprem is None), name

    # partitions: one per pool with its nodes; none spans two networks (with sites: but the default `hybrid`)
    network_of = {name: pool.network for name, pool in expected.items()}
    partitions = {r["PartitionName"]: ctl.hostnames(r["Nodes"]) for r in ctl.records("partition")}
    for pool in plan.pools:
        assert partitions[pool.name] == set(pool.node_names())
    for name, members in partitions.items():
        if name != HYBRID_PARTITION:
            assert len({network_of[n] for n in members}) == 1, f"partition {name} spans networks"

    # topology: a leaf per fabric domain (an owned fabric: per scalable unit), one root per network (with sites:
    # per owned fabric and per cloud pool) holding exactly its nodes
    switches = ctl.records("topology")
    leaves = {frozenset(ctl.hostnames(s["Nodes"])) for s in switches if s["Level"] == "0"}
    assert leaves == expected_leaves(plan)
    children = {c for s in switches for c in s.get("Switches", "").split(",") if c}
    roots = {s["SwitchName"]: ctl.hostnames(s["Nodes"]) for s in switches if s["SwitchName"] not in children}
    if plan.sites:
        assert sorted(map(sorted, roots.values())) == sorted(map(sorted, expected_trees(plan)))
        network_of = {n: root for root, members in roots.items() for n in members}  # a tree is a network here
    else:
        assert roots == {
            network: {n for n, net in network_of.items() if net == network} for network in set(network_of.values())
        }

    # a job larger than any one network is refused even when it may use every partition. Owned nodes wait for
    # their slurmd (State=UNKNOWN), which this machine does not run, so only the clouds' trees can take a job here.
    cloud_nodes = {n for n, pool in expected.items() if pool.onprem is None}
    sizes = [len(members) for members in roots.values() if members <= cloud_nodes]
    if len(sizes) > 1:
        every = ",".join(p.name for p in plan.pools if p.onprem is None)
        fits = ctl.run("sbatch", "--test-only", "-N", str(max(sizes)), "-p", every, "--wrap", "true", check=False)
        assert fits.returncode == 0, fits.stderr
        spans = ctl.run("sbatch", "--test-only", "-N", str(max(sizes) + 1), "-p", every, "--wrap", "true", check=False)
        assert spans.returncode != 0
        assert "Requested node configuration is not available" in spans.stderr

    log = ctl.log.read_text()
    errors = [line for line in log.splitlines() if "error:" in line or "fatal:" in line]
    assert [line for line in errors if not any(known in line for known in HARMLESS_ERRORS)] == []
    # the job accounting plugins are a coherent pair: nothing gathered that is not stored
    assert "Job accounting information gathered, but not stored" not in log


@pytest.mark.parametrize("stack", [*SLURM_22_STACKS, HYBRID_SITE])
def test_slurmd_reads_gres_conf(stack: str, tmp_path: Path) -> None:
    """`slurmd -G -N <node>` parses gres.conf as a node would (it needs the device files: fake ones)."""
    need("slurmd")
    if os.geteuid() != 0:
        pytest.skip("creating fake /dev/nvidia* character devices needs root")
    plan = load(stack)
    dev = tmp_path / "dev"
    dev.mkdir()
    for i in range(max(p.accelerators_per_node for p in plan.pools)):
        os.mknod(dev / f"nvidia{i}", 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    env = write(plan, settings_for(tmp_path, device_dir=str(dev)))
    for pool in plan.pools:
        node = pool.node_names()[-1]
        out = subprocess.run(["slurmd", "-G", "-N", node], env=env, capture_output=True, text=True, check=True)
        found = re.findall(r"Gres Name=(\S+) Type=(\S+) Count=(\d+)", out.stdout + out.stderr)
        gres = gres_type(pool)
        assert found == ([("gpu", gres, str(pool.accelerators_per_node))] if gres else []), node


@pytest.mark.parametrize("controller", [HYBRID_SITE], indirect=True)
def test_slurmctld_keeps_the_site_static_and_the_clouds_powered_down(controller: Controller) -> None:
    """The hybrid layout as slurmctld reads it: owned nodes static at their addresses, cloud nodes CLOUD and
    powered down with their features and weights, disjoint trees, and no job larger than one tree."""
    ctl, plan = controller, controller.plan
    nodes = {r["NodeName"]: r for r in ctl.records("node")}
    owned, p5, a3 = plan.pools
    for host in owned.onprem.hosts if owned.onprem else ():
        node = nodes[host.name]
        assert node["NodeAddr"] == host.address
        assert not {"CLOUD", "POWERED_DOWN"} & set(node["State"].split("+")), node["State"]
        assert node["Weight"] == "1"
        assert node["AvailableFeatures"] == "onprem,fra1,dgx-h100,infiniband,h100,owned"
    for pool in (a3, p5):
        for name in pool.node_names():
            node = nodes[name]
            assert {"CLOUD", "POWERED_DOWN"} <= set(node["State"].split("+")), node["State"]
            features = node["AvailableFeatures"].split(",")
            assert features[:2] == ["cloud", pool.provider]
            assert pool.instance_type in features
            assert int(node["Weight"]) > 1
    assert nodes["p5-000"]["AvailableFeatures"].endswith(",spot")

    # disjoint trees: the site's fabric and each cloud pool
    switches = ctl.records("topology")
    children = {c for s in switches for c in s.get("Switches", "").split(",") if c}
    roots = {s["SwitchName"]: ctl.hostnames(s["Nodes"]) for s in switches if s["SwitchName"] not in children}
    assert sorted(roots) == ["a3-p0", "fra1", "p5"]
    assert roots["fra1"] == set(owned.node_names())
    assert not roots["fra1"] & (roots["p5"] | roots["a3-p0"])

    # power saving on the cloud partitions only; the default partition is `hybrid`, and a job submitted there
    # (no -p) fits in one tree or not at all: 8 cloud nodes are GCP's pool, 12 would straddle AWS and GCP. The
    # owned nodes wait for their slurmd (State=UNKNOWN), which this machine does not run.
    parts = {r["PartitionName"]: r for r in ctl.records("partition")}
    assert parts[HYBRID_PARTITION]["Default"] == "YES"
    assert (parts["p5"]["SuspendTime"], parts["p5"]["ResumeTimeout"], parts["p5"]["SuspendTimeout"]) == (
        "600",
        "1800",
        "120",
    )
    assert (parts["a3"]["SuspendTime"], parts["a3"]["ResumeTimeout"]) == ("300", "300")
    assert "SuspendTime" not in parts["h100"]
    assert "SuspendTime" not in parts[HYBRID_PARTITION]
    config = dict(re.findall(r"^(\w+)\s+= (.*)$", ctl.run("scontrol", "show", "config").stdout, re.M))
    assert config["SuspendTime"] == "INFINITE"
    assert config["ResumeProgram"].endswith("/aicluster-resume")
    assert config["SuspendProgram"] == config["ResumeFailProgram"]
    assert config["SuspendProgram"].endswith("/aicluster-suspend")
    cloud = ctl.run("sbatch", "--test-only", "-N", "8", "-C", "cloud", "--wrap", "true", check=False)
    assert cloud.returncode == 0, cloud.stderr
    assert "on nodes a3-[000-007] in partition hybrid" in cloud.stderr
    for size in (a3.nodes + p5.nodes, owned.nodes + 1):
        spans = ctl.run("sbatch", "--test-only", "-N", str(size), "--wrap", "true", check=False)
        assert spans.returncode != 0, size
        assert "Requested node configuration is not available" in spans.stderr


def test_slurm_expands_our_hostlists(tmp_path: Path) -> None:
    need("scontrol")
    env = write(load("p5-small"), settings_for(tmp_path))
    names = [f"h100-{i:03d}" for i in (*range(100), 150, *range(200, 250))] + ["a3-0999", "a3-1000"]
    expression = hostlist(names)
    assert expression == "h100-[000-099,150,200-249],a3-[0999-1000]"
    out = subprocess.run(
        ["scontrol", "show", "hostnames", expression], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == names
