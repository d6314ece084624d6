"""Rack-scale pools under a real Slurm 24.11 (Debian 13's, tests/integration/slurm_trixie.py): the rendered slurm.conf,
topology.conf and gres.conf of the test stacks gb200-site (four DGX GB200 NVL72 racks, a slurmd per compute tray) and
gb200-gcp (two A4X sub-blocks and two CPU VMs, CLOUD nodes), and of every example stack.

What is shown, with Slurm's own answers: one block per NVLink domain of the plan; a job asking for a segment of 18
nodes runs inside one domain, 36 in segments of 18 on two whole domains; a segment larger than a domain is refused;
a 20-node job without segments is spread over two neighbouring domains (an aggregated block of 36); every job step
across nodes gets an IMEX channel of its own (switch/nvidia_imex); the health check drains a tray whose IMEX daemon
is not READY or whose GPU has not joined the NVLink fabric, and whole-domain jobs then avoid its rack; a pool without
NVLink domains is scheduled beside the blocks. Needs root, debootstrap and network access to deb.debian.org once
(the root filesystem is cached); skipped without them, except in CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from aicluster.catalog import load_catalog
from aicluster.plan import ClusterPlan
from aicluster.plan.models import OnpremHost
from aicluster.preview import plan_stack
from aicluster.schedulers.slurm.render import files
from aicluster.stackfile import find_project, read_stack
from tests.conftest import IN_CI, ROOT, SLURM_STACKS
from tests.helpers import data_stack, hybrid_site_cluster, plan_of
from tests.integration.slurm_trixie import FAULTS, Cluster, settings, slurm_cluster
from tests.integration.test_slurmctld import HARMLESS_ERRORS, HYBRID_SITE, addressed
from tests.tune.hosts import allocate

pytestmark = pytest.mark.slow

VERSION = (24, 11)
NOT_AVAILABLE = "Requested node configuration is not available"


@pytest.fixture
def tools() -> None:
    missing = [t for t in ("debootstrap", "ip", "unshare", "nsenter", "chroot") if shutil.which(t) is None]
    if os.geteuid() != 0:
        missing.append("root")
    if missing:
        message = f"needs {', '.join(missing)}: apt-get install debootstrap iproute2 util-linux, run as root"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def data_stack_plan(name: str) -> ClusterPlan:
    """A stack of tests/data/stacks, planned."""
    return plan_of(load_catalog(), data_stack(name))


def hosted(cp: ClusterPlan, subnet: str) -> ClusterPlan:
    """The owned pools' nodes as hosts at <subnet>.11, .12, ... (NodeAddr=), where the harness runs their slurmd."""
    names = [n for p in cp.pools for n in p.node_names()]
    address = {n: f"{subnet}.{11 + i}" for i, n in enumerate(names)}
    pools = []
    for pool in cp.pools:
        assert pool.onprem is not None
        hosts = tuple(OnpremHost(name=n, address=address[n]) for n in pool.node_names())
        pools.append(pool.model_copy(update={"onprem": pool.onprem.model_copy(update={"hosts": hosts})}))
    return cp.model_copy(update={"pools": tuple(pools)})


def placed(cluster: Cluster, *args: str) -> list[str]:
    """The nodes `sbatch --test-only` would start a job on (it says "... on nodes <hostlist> in partition ...")."""
    out = cluster.run("sbatch", "--test-only", *args, "--wrap", "true")
    m = re.search(r" on nodes (\S+) in partition", out.stderr)
    assert out.returncode == 0, f"{args}: {out.stderr}"
    assert m is not None, f"{args}: {out.stderr}"
    return cluster.hostnames(m[1])


def refused(cluster: Cluster, *args: str) -> str:
    out = cluster.run("sbatch", "--test-only", *args, "--wrap", "true")
    assert out.returncode != 0, f"{args} was accepted: {out.stderr}"
    return out.stderr


def ran_on(cluster: Cluster, *args: str) -> list[str]:
    """Run `hostname` as a real job step (srun): the nodes it ran on (each slurmd's hostname is its node name)."""
    out = cluster.run("srun", *args, "hostname")
    assert out.returncode == 0, f"srun {args}: {out.stderr}\n{cluster.log('slurmd')[-2000:]}"
    return sorted(out.stdout.split())


def domains_of(cp: ClusterPlan, nodes: list[str]) -> list[str]:
    """The NVLink domains `nodes` fall in, each listed once, in plan order."""
    return [d.id for d in cp.nvlink_domains if set(d.nodes) & set(nodes)]


def whole(cp: ClusterPlan, nodes: list[str]) -> bool:
    """Whether `nodes` are exactly the nodes of the domains they touch."""
    touched = {n for d in cp.nvlink_domains if set(d.nodes) & set(nodes) for n in d.nodes}
    return touched == set(nodes)


def unexpected_errors(log: str) -> list[str]:
    errors = [line for line in log.splitlines() if "error:" in line or "fatal:" in line]
    return [line for line in errors if not any(known in line for known in HARMLESS_ERRORS)]


def test_rack_scale_site_runs_jobs_inside_nvlink_domains(tools: None, tmp_path: Path) -> None:
    own = allocate("slurm-blocks")
    cp = hosted(data_stack_plan("gb200-site"), own.subnet)
    names = [n for p in cp.pools for n in p.node_names()]
    assert (len(cp.nvlink_domains), len(names)) == (4, 72)
    rendered = files(cp, VERSION, settings())
    with slurm_cluster(tmp_path, rendered, prefix=own.prefix, subnet=own.subnet, nodes=names) as cluster:
        started = time.monotonic()
        cluster.wait("72 trays registered and idle", lambda out: out.count(" idle") == 72, seconds=120)
        print(f"gb200-site: 72 slurmd registered in {time.monotonic() - started:.1f} s")

        # one block per NVLink domain, as the plan names them, and the aggregated sizes 36 and 72
        topology = cluster.records("topology")
        blocks = {r["BlockName"]: cluster.hostnames(r["Nodes"]) for r in topology if "BlockName" in r}
        assert blocks == {d.id: list(d.nodes) for d in cp.nvlink_domains}
        assert sorted(int(r["BlockSize"]) for r in topology if "AggregatedBlock" in r) == [36, 36, 72]
        # the rendered files loaded, and 72 slurmd registered with them, without an error (what the jobs below log
        # is theirs: a loaded machine can make a message time out)
        assert unexpected_errors(cluster.log()) == []

        # real jobs: a segment of 18 runs on one whole domain, 36 in segments of 18 on two whole ones
        one = ran_on(cluster, "-N", "18", "--segment=18")
        assert (len(domains_of(cp, one)), whole(cp, one)) == (1, True), one
        two = ran_on(cluster, "-N", "36", "--segment=18")
        assert (len(domains_of(cp, two)), whole(cp, two)) == (2, True), two
        # a segment larger than a domain is refused; without segments, 20 nodes spread over two neighbouring
        # domains (nvl0+nvl1 or nvl2+nvl3: an aggregated block), and a job larger than the cluster is refused
        assert NOT_AVAILABLE in refused(cluster, "-N", "19", "--segment=19")
        spread = ran_on(cluster, "-N", "20")
        assert domains_of(cp, spread) in (["gb200-nvl0", "gb200-nvl1"], ["gb200-nvl2", "gb200-nvl3"]), spread
        assert NOT_AVAILABLE in refused(cluster, "-N", "73")
        print(f"segment 18: {domains_of(cp, one)}; 36 in segments of 18: {domains_of(cp, two)}")
        print(f"20 nodes, no segments: {domains_of(cp, spread)}")

        # IMEX: each job step across nodes gets a channel of its own while another job holds one
        batch = cluster.run(
            "sbatch", "--parsable", "-N", "18", "--segment=18", "--chdir=/tmp", "-o", "/tmp/imex-%j.out", "--wrap",
            "srun ls /dev/nvidia-caps-imex-channels; sleep 300",
        )  # fmt: skip
        assert batch.returncode == 0, batch.stderr
        job = batch.stdout.strip()
        out = cluster.root / "tmp" / f"imex-{job}.out"
        deadline = time.monotonic() + 60
        while not (out.exists() and len(out.read_text().split()) == 18):
            assert time.monotonic() < deadline, f"job {job} printed no channels: {cluster.log('slurmd')[-2000:]}"
            time.sleep(0.5)
        held = set(out.read_text().split())
        step = cluster.run("srun", "-N", "18", "--segment=18", "ls", "/dev/nvidia-caps-imex-channels")
        assert step.returncode == 0, step.stderr
        mine = set(step.stdout.split())
        assert (len(held), len(mine)) == (1, 1), (held, mine)
        assert held != mine
        assert all(re.fullmatch(r"channel\d+", c) for c in held | mine)
        print(f"IMEX channels: job {job} {sorted(held)}, the next job {sorted(mine)}")
        cluster.run("scancel", job)

        # the health check (as slurmd runs it) drains a tray whose IMEX daemon is not READY, and one whose GPU has
        # not joined the NVLink fabric; jobs that want whole domains then keep off their racks (the two that
        # best-fit placement chose above)
        (cluster.root / FAULTS.lstrip("/") / "gb200-040-imex").touch()
        (cluster.root / FAULTS.lstrip("/") / "gb200-060-fabric").touch()
        healthy = cluster.on_node("gb200-005", "env", "SLURMD_NODENAME=gb200-005", "/etc/slurm/healthcheck.sh")
        assert healthy.returncode == 0, healthy.stderr
        for node, reason in (
            ("gb200-040", "aicluster-health:IMEX healthcheck: IMEX daemon not READY (nvidia-imex-ctl -q: UNAVAILABLE)"),
            (
                "gb200-060",
                "aicluster-health:NVLINK_FABRIC healthcheck: NVLink fabric: 3 of 4 GPUs joined (nvidia-smi -q Fabric "
                "State/Status)",
            ),
        ):
            check = cluster.on_node(node, "env", f"SLURMD_NODENAME={node}", "/etc/slurm/healthcheck.sh")
            assert check.returncode == 1, check.stdout + check.stderr
            record = cluster.run("scontrol", "show", "node", node).stdout
            assert "DRAIN" in record, record
            assert f"Reason={reason}" in record, record
        cluster.wait("the job ended", lambda s: "alloc" not in s and "mix" not in s and "comp" not in s)
        left = ran_on(cluster, "-N", "36", "--segment=18")
        assert (domains_of(cp, left), whole(cp, left)) == (["gb200-nvl0", "gb200-nvl1"], True), left
        print(f"with gb200-040 and gb200-060 drained, 36 in segments of 18: {domains_of(cp, left)}")
        print("slurmctld errors while the jobs ran:", unexpected_errors(cluster.log()) or "none")


def test_rack_scale_cloud_pool_blocks_beside_a_pool_without_nvlink(tools: None, tmp_path: Path) -> None:
    """CLOUD nodes (a cloud's pools: powered down until a job needs them) are placed by the blocks all the same;
    the CPU pool's nodes are in no block, and its partition schedules them as before."""
    own = allocate("slurm-blocks-cloud")
    cp = data_stack_plan("gb200-gcp")
    with slurm_cluster(tmp_path, files(cp, VERSION, settings()), prefix=own.prefix, subnet=own.subnet) as cluster:
        topology = cluster.records("topology")
        blocks = {r["BlockName"]: cluster.hostnames(r["Nodes"]) for r in topology if "BlockName" in r}
        assert blocks == {d.id: list(d.nodes) for d in cp.nvlink_domains}
        assert "blocks lack access to 2 nodes: cpu-[000-001]" in cluster.log()

        one = placed(cluster, "-p", "gb200", "-N", "18", "--segment=18")
        assert (len(domains_of(cp, one)), whole(cp, one)) == (1, True), one
        every = [n for d in cp.nvlink_domains for n in d.nodes]
        assert placed(cluster, "-p", "gb200", "-N", "36", "--segment=18") == every
        assert NOT_AVAILABLE in refused(cluster, "-p", "gb200", "-N", "19", "--segment=19")
        assert domains_of(cp, placed(cluster, "-p", "gb200", "-N", "20")) == ["gb200-nvl0", "gb200-nvl1"]
        assert NOT_AVAILABLE in refused(cluster, "-p", "gb200", "-N", "37")
        assert placed(cluster, "-p", "cpu", "-N", "2") == ["cpu-000", "cpu-001"]

        assert unexpected_errors(cluster.log()) == []


@pytest.fixture
def example(request: pytest.FixtureRequest) -> ClusterPlan:
    if request.param == HYBRID_SITE:
        return plan_of(load_catalog(), hybrid_site_cluster())
    return addressed(plan_stack(read_stack(find_project(ROOT), request.param)))


@pytest.mark.parametrize("example", [*SLURM_STACKS, HYBRID_SITE], indirect=True)
def test_slurmctld_24_11_loads_every_example_stack(tools: None, example: ClusterPlan, tmp_path: Path) -> None:
    """Every example's files as rendered for 24.11 (topology/block where the plan allows it, the tree with sites):
    slurmctld takes them without an error and shows the plan's nodes and blocks or switches."""
    own = allocate("slurm-examples")
    cp = example
    rendered = files(cp, VERSION, settings())
    with slurm_cluster(tmp_path, rendered, prefix=own.prefix, subnet=own.subnet) as cluster:
        nodes = {r["NodeName"] for r in cluster.records("node")}
        assert nodes == {n for p in cp.pools for n in p.node_names()}
        topology = cluster.records("topology")
        if "TopologyPlugin=topology/block" in rendered["/etc/slurm/slurm.conf"]:
            listed = sorted(n for r in topology if "BlockName" in r for n in cluster.hostnames(r["Nodes"]))
        else:
            listed = sorted(n for r in topology if r.get("Level") == "0" for n in cluster.hostnames(r["Nodes"]))
        assert listed == sorted(nodes)
        assert unexpected_errors(cluster.log()) == []
