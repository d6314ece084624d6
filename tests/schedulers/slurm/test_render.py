"""Slurm files rendered from the plan: golden files per example stack, and the rules behind them.

Regenerate the goldens with `UPDATE_GOLDEN=1 pytest tests/schedulers/slurm/test_render.py`; tests/integration loads the
same files into a real slurmctld.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from aicluster.preview import plan_stack
from aicluster.render.health import health_json
from aicluster.schedulers.slurm.render import (
    SlurmSettings,
    block_sizes,
    blocks,
    cgroup_conf,
    cpu_layout,
    def_cpu_per_gpu,
    epilog_sh,
    files,
    gres_conf,
    gres_type,
    healthcheck_sh,
    hostlist,
    prolog_sh,
    real_memory_mib,
    slurm_conf,
    topology_conf,
    tree_switches,
)
from aicluster.stackfile import find_project, read_stack
from tests.conftest import ROOT, SLURM_STACKS
from tests.helpers import cluster, data_stack, gcp_cluster, hybrid_site_cluster, plan_of, pool, tpu_pool

GOLDEN = ROOT / "tests" / "golden" / "slurm"
HYBRID = [s for s in SLURM_STACKS if s.startswith(("hybrid-", "three-"))]


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; review and regenerate with UPDATE_GOLDEN=1"


def stack_plan(stack: str) -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), stack))


def below(plan: ClusterPlan, switch: str) -> set[str]:
    """Every node under a tree switch."""
    by_name = {s.name: s for s in tree_switches(plan)}
    s = by_name[switch]
    return set(s.nodes).union(*(below(plan, c) for c in s.switches))


# ------------------------------------------------------------------------------------------ golden files


@pytest.mark.parametrize("stack", SLURM_STACKS)
def test_golden_slurm_files(stack: str) -> None:
    cp = stack_plan(stack)
    # a rack-scale stack's NVLink domains need topology/block: rendered for Debian 13's 24.11, not 22.05's default
    version = (24, 11) if cp.nvlink_domains else (22, 5)
    golden(f"{stack}/slurm.conf", slurm_conf(cp, version))
    golden(f"{stack}/gres.conf", gres_conf(cp))
    golden(f"{stack}/topology.conf", topology_conf(cp, version))


def test_golden_block_topology_and_scripts() -> None:
    # BlockSizes= is Slurm 24.05's spelling (23.11 writes BlockLevels=, test_block_topology_for_slurm_23_11)
    golden("azure-nd-h100-250/topology-block.conf", topology_conf(stack_plan("azure-nd-h100-250"), (24, 11)))
    cp = stack_plan("three-cloud")
    golden("three-cloud/topology-block.conf", topology_conf(cp, (24, 11)))
    golden("cgroup.conf", cgroup_conf(cp))
    golden("three-cloud/prolog.sh", prolog_sh(cp))
    golden("three-cloud/aicluster-health.json", health_json(cp))
    golden("three-cloud/epilog.sh", epilog_sh(cp))
    golden("three-cloud/healthcheck.sh", healthcheck_sh(cp))


# ------------------------------------------------------------------------------------------ names


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        pytest.param([f"h100-{i:03d}" for i in range(16)], "h100-[000-015]", id="one-range"),
        pytest.param(["h100-007"], "h100-007", id="single"),
        pytest.param(["a-001", "a-002", "a-005", "a-007", "a-008"], "a-[001-002,005,007-008]", id="gaps"),
        pytest.param(["a-003", "a-001", "a-002"], "a-[001-003]", id="unordered"),
        pytest.param(["p5-000", "p5-001", "nd-000", "nd-001"], "p5-[000-001],nd-[000-001]", id="two-pools"),
        pytest.param([f"big-{i:04d}" for i in range(998, 1001)], "big-[0998-1000]", id="four-digits"),
        pytest.param(["login", "n-01"], "login,n-01", id="no-number"),
    ],
)
def test_hostlist_compresses_ranges(names: list[str], expected: str) -> None:
    assert hostlist(names) == expected


def test_node_lines_use_the_plans_names_cpus_and_memory() -> None:
    cp = stack_plan("p5-small")
    (p,) = cp.pools
    assert p.node_names()[-1] == "h100-003"
    line = next(x for x in slurm_conf(cp).splitlines() if x.startswith("NodeName="))
    assert line == (
        f"NodeName=h100-[000-003] CPUs=192 RealMemory={real_memory_mib(p)} Gres=gpu:h100:8 "
        "Feature=aws,us-east-1,us-east-1a,p5.48xlarge,efa,h100,on-demand State=CLOUD"
    )


@pytest.mark.parametrize(
    ("changes", "cpus"),
    [
        pytest.param(
            {"instance_type": "p4d.24xlarge"}, "CPUs=96 Sockets=2 CoresPerSocket=24 ThreadsPerCore=2", id="p4d-lscpu"
        ),
        pytest.param(
            {"instance_type": "m7i.8xlarge", "image": "ami-0123456789abcdef0"},
            "CPUs=32 Sockets=1 CoresPerSocket=16 ThreadsPerCore=2",
            id="cpu-only-type",
        ),
        pytest.param({}, "CPUs=192", id="p5-sockets-unpublished-cpus-only"),
    ],
)
def test_node_lines_state_the_cpu_layout_only_where_it_is_sourced(
    catalog: Catalog, changes: dict[str, Any], cpus: str
) -> None:
    cp = plan_of(catalog, cluster(pools=[pool(**changes)]))
    line = next(x for x in slurm_conf(cp).splitlines() if x.startswith("NodeName="))
    assert f" {cpus} RealMemory=" in line


def test_gcp_and_tpu_node_lines() -> None:
    (a3,) = stack_plan("gcp-a3mega-slurm").pools
    assert cpu_layout(a3) == (2, 52, 2)
    assert " CPUs=208 Sockets=2 CoresPerSocket=52 ThreadsPerCore=2 " in slurm_conf(stack_plan("gcp-a3mega-slurm"))
    (tpu,) = stack_plan("gcp-tpu-v5p").pools
    assert cpu_layout(tpu) is None  # TPU hosts have no catalog CPU layout
    assert " CPUs=208 RealMemory=" in slurm_conf(stack_plan("gcp-tpu-v5p"))


@pytest.mark.parametrize(
    ("vcpus", "threads", "expected"),
    [
        pytest.param(192, 2, 24, id="p5-24-threads-12-cores"),
        pytest.param(208, 2, 26, id="a3-26-threads-13-cores"),
        pytest.param(200, 2, 24, id="odd-share-rounds-down-to-whole-cores"),
        pytest.param(200, None, 25, id="unknown-threads-plain-division"),
        pytest.param(96, 1, 12, id="no-smt"),
    ],
)
def test_def_cpu_per_gpu_is_whole_cores(catalog: Catalog, vcpus: int, threads: int | None, expected: int) -> None:
    p = plan_of(catalog, cluster()).pools[0]
    topology = p.cpu_topology.model_copy(update={"threads_per_core": threads})
    p = p.model_copy(update={"vcpus_per_node": vcpus, "cpu_topology": topology})
    assert def_cpu_per_gpu(p) == expected


@pytest.mark.parametrize(
    ("gib", "mib"),
    [
        pytest.param(2048.0, 1992294, id="p5-5pct"),  # 2,097,152 MiB less 104,858
        pytest.param(32.0, 28672, id="small-4gib-floor"),  # 5% would be 1.6 GiB: keep 4 GiB
    ],
)
def test_real_memory_keeps_headroom_for_the_os(catalog: Catalog, gib: float, mib: int) -> None:
    p = plan_of(catalog, cluster()).pools[0].model_copy(update={"memory_gib_per_node": gib})
    assert real_memory_mib(p) == mib


# ------------------------------------------------------------------------------------------ gres


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({"instance_type": "p5.48xlarge"}, "h100", id="p5-h100"),
        pytest.param({"instance_type": "p4d.24xlarge"}, "a100", id="p4d-a100-40gb"),
        pytest.param({"instance_type": "p4de.24xlarge"}, "a100", id="p4de-a100-80gb"),
        pytest.param({"instance_type": "p6-b200.48xlarge"}, "b200", id="p6-b200"),
        pytest.param({"instance_type": "trn1.32xlarge", "image": "ami-0123456789abcdef0"}, None, id="trainium"),
    ],
)
def test_gres_type_comes_from_the_accelerator(catalog: Catalog, changes: dict[str, Any], expected: str | None) -> None:
    cp = plan_of(catalog, cluster(pools=[pool(**changes)]))
    (p,) = cp.pools
    assert gres_type(p) == expected
    nodes = next(x for x in slurm_conf(cp).splitlines() if x.startswith("NodeName="))
    if expected is None:
        assert "Gres=" not in nodes
        assert "Name=gpu" not in gres_conf(cp)
    else:
        assert f" Gres=gpu:{expected}:{p.accelerators_per_node} " in nodes
        devices = f"File=/dev/nvidia[0-{p.accelerators_per_node - 1}]"
        assert f"NodeName=h100-[000-003] Name=gpu Type={expected} {devices}" in gres_conf(cp)


def test_h200_on_gcp() -> None:
    (p,) = stack_plan("gcp-a3ultra-reservation").pools
    assert gres_type(p) == "h200"


def test_tpu_pools_have_no_gres_but_tpu_features_and_whole_hosts(catalog: Catalog) -> None:
    cp = plan_of(catalog, gcp_cluster(pools=[tpu_pool()]))
    text = slurm_conf(cp)
    node = next(x for x in text.splitlines() if x.startswith("NodeName="))
    assert "Gres=" not in node
    assert "v5p-256" in node.split("Feature=")[1]
    assert "PartitionName=v5p Nodes=v5p-[000-063] Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE" in text


# ------------------------------------------------------------------------------------------ topology


def test_azure_250_vms_give_three_leaves_of_100_100_50() -> None:
    cp = stack_plan("azure-nd-h100-250")
    switches = {s.name: s for s in tree_switches(cp)}
    leaves = [s for s in switches.values() if s.nodes]
    assert [(s.name, len(s.nodes)) for s in leaves] == [("h100-ib0", 100), ("h100-ib1", 100), ("h100-ib2", 50)]
    assert switches["h100-ib2"].nodes[0] == "h100-200"
    assert switches["h100"].switches == ("h100-ib0", "h100-ib1", "h100-ib2")
    assert switches["azure-eastus"].switches == ("h100",)
    assert "SwitchName=h100-ib1 Nodes=h100-[100-199]" in topology_conf(cp)


def test_tpu_slices_are_leaves(catalog: Catalog) -> None:
    cp = plan_of(catalog, gcp_cluster(pools=[tpu_pool(slices=3)]))
    leaves = [s for s in tree_switches(cp) if s.nodes]
    assert [(s.name, s.nodes[0], len(s.nodes)) for s in leaves] == [
        ("v5p-s0", "v5p-000", 32),
        ("v5p-s1", "v5p-032", 32),
        ("v5p-s2", "v5p-064", 32),
    ]


def test_an_aws_pool_is_one_leaf_its_placement_group() -> None:
    cp = stack_plan("p5-large")
    assert tree_switches(cp)[0].name == "h100"
    assert topology_conf(cp).splitlines()[-2:] == [
        "SwitchName=h100 Nodes=h100-[000-383]",
        "SwitchName=aws-us-east-1 Switches=h100",
    ]


@pytest.mark.parametrize("stack", HYBRID)
def test_hybrid_stacks_give_disjoint_roots_one_per_network(stack: str) -> None:
    cp = stack_plan(stack)
    switches = tree_switches(cp)
    children = {c for s in switches for c in s.switches}
    roots = [s.name for s in switches if s.name not in children]
    if cp.sites:  # a tree per owned fabric and per cloud pool (tests below), still never one across networks
        trees = [below(cp, r) for r in roots]
        network_of = {n: p.network for p in cp.pools for n in p.node_names()}
        assert all(len({network_of[n] for n in tree}) == 1 for tree in trees)
        assert sorted(map(len, trees)) == sorted(len(p.node_names()) for p in cp.pools)
        return
    networks = sorted({p.network for p in cp.pools})
    assert sorted(roots) == networks
    assert len(networks) > 1
    for root in roots:
        assert below(cp, root) == {n for p in cp.pools if p.network == root for n in p.node_names()}


@pytest.mark.parametrize("stack", SLURM_STACKS)
def test_switch_and_block_names_are_unique_and_cover_every_node(stack: str) -> None:
    cp = stack_plan(stack)
    names = [s.name for s in tree_switches(cp)]
    assert len(names) == len(set(names))
    every = {n for p in cp.pools for n in p.node_names()}
    leaf_nodes = [n for s in tree_switches(cp) for n in s.nodes]
    assert sorted(leaf_nodes) == sorted(every)
    assert sorted(n for b in blocks(cp) for n in b.nodes) == sorted(every)


def test_block_topology_for_slurm_24_05_and_later() -> None:
    cp = stack_plan("azure-nd-h100-250")
    assert topology_conf(cp, (24, 5)).splitlines()[2:] == [
        "BlockName=h100-ib0 Nodes=h100-[000-099]",
        "BlockName=h100-ib1 Nodes=h100-[100-199]",
        "BlockName=h100-ib2 Nodes=h100-[200-249]",
        "BlockSizes=50,100,200",
    ]
    assert "TopologyPlugin=topology/block" in slurm_conf(cp, (24, 11))
    assert "TopologyPlugin=topology/tree" in slurm_conf(cp, (24, 11), SlurmSettings(topology="tree"))
    assert "TopologyPlugin=topology/tree" in slurm_conf(cp)


def test_block_topology_for_slurm_23_11() -> None:
    """23.11 reads `BlockLevels=` (a bitmap of levels, 2^k blocks each; BlockSizes came with 24.05) and stops with
    "children count no equal bblock_node_cnt" unless every block holds the same number of nodes (SchedMD/slurm
    slurm-23-11-10-1 src/plugins/topology/block/topology_block.c)."""
    even = stack_plan("three-cloud")  # three blocks of 4 nodes
    assert topology_conf(even, (23, 11)).splitlines()[-1] == "BlockLevels=0"
    assert "TopologyPlugin=topology/block" in slurm_conf(even, (23, 11))
    uneven = stack_plan("azure-nd-h100-250")  # 100, 100 and 50 nodes: the tree on 23.x
    assert "TopologyPlugin=topology/tree" in slurm_conf(uneven, (23, 11))
    assert topology_conf(uneven, (23, 11)) == topology_conf(uneven, (22, 5))
    with pytest.raises(ValueError, match=r"Slurm 23\.11's topology/block needs every block of one size, not 50, 100"):
        topology_conf(uneven, (23, 11), SlurmSettings(topology="block"))


def test_block_topology_needs_slurm_23_11() -> None:
    with pytest.raises(ValueError, match=r"topology/block needs Slurm 23\.11"):
        topology_conf(stack_plan("p5-small"), (22, 5), SlurmSettings(topology="block"))


# ------------------------------------------------------------------------------------------ partitions, settings


def test_partitions_per_pool_and_per_network_never_across_networks() -> None:
    lines = [x for x in slurm_conf(stack_plan("mixed-spot")).splitlines() if x.startswith("PartitionName=")]
    assert [x.split()[0:2] for x in lines] == [
        ["PartitionName=core", "Nodes=core-[000-007]"],
        ["PartitionName=sweep", "Nodes=sweep-[000-031]"],
        ["PartitionName=aws-us-east-1", "Nodes=core-[000-007],sweep-[000-031]"],
    ]
    assert sum("Default=YES" in x for x in lines) == 1
    assert "DefCpuPerGPU=24 DefMemPerGPU=249036" in lines[0]
    three = slurm_conf(stack_plan("three-cloud"))
    assert [x.split()[0] for x in three.splitlines() if x.startswith("PartitionName=")] == [
        "PartitionName=p5",
        "PartitionName=nd",
        "PartitionName=a3",
    ]


def test_a_pool_named_like_a_network_is_refused(catalog: Catalog) -> None:
    cp = plan_of(catalog, cluster(pools=[pool(name="aws-us-east-1"), pool(name="h100", zone="us-east-1b")]))
    with pytest.raises(ValueError, match="partition names clash: aws-us-east-1"):
        slurm_conf(cp)
    with pytest.raises(ValueError, match="switch names clash: aws-us-east-1"):
        topology_conf(cp)


def test_controller_and_paths_come_from_the_settings() -> None:
    cp = stack_plan("p5-small")
    assert "SlurmctldHost=llm-dev-slurmctld\n" in slurm_conf(cp)
    settings = SlurmSettings(conf_dir="/x/etc", controller_host="vm", slurmctld_port=17817, auth_type="auth/none")
    text = slurm_conf(cp, settings=settings)
    for line in ("SlurmctldHost=vm", "SlurmctldPort=17817", "AuthType=auth/none", "Prolog=/x/etc/prolog.sh"):
        assert f"\n{line}\n" in text
    assert set(files(cp, settings=settings)) == {
        f"/x/etc/{name}"
        for name in (
            "slurm.conf",
            "gres.conf",
            "cgroup.conf",
            "topology.conf",
            "prolog.sh",
            "epilog.sh",
            "healthcheck.sh",
            "aicluster-health.json",
            "aicluster-repair.json",
        )
    }
    assert "--config /x/etc/aicluster-health.json" in files(cp, settings=settings)["/x/etc/prolog.sh"]


def test_production_defaults() -> None:
    text = slurm_conf(stack_plan("p5-small"))
    for line in (
        "SelectType=select/cons_tres",
        "GresTypes=gpu",
        "PrivateData=cloud",
        "ProctrackType=proctrack/cgroup",
        "TaskPlugin=task/affinity,task/cgroup",
        "AuthType=auth/munge",
        "StateSaveLocation=/var/spool/slurmctld",
        "SuspendTime=INFINITE",
    ):
        assert f"\n{line}\n" in text
    cgroup = cgroup_conf(stack_plan("p5-small"))
    assert {"ConstrainDevices=yes", "ConstrainCores=yes", "ConstrainRAMSpace=yes"} <= set(cgroup.splitlines())


def test_kubernetes_clusters_have_no_slurm_files(catalog: Catalog) -> None:
    cp = plan_of(catalog, cluster()).model_copy(update={"scheduler": "kubernetes", "controller": None})
    with pytest.raises(ValueError, match="no Slurm controller"):
        files(cp)


# ------------------------------------------------------------------------------------------ scripts


@pytest.mark.parametrize("render", [prolog_sh, epilog_sh, healthcheck_sh], ids=["prolog", "epilog", "healthcheck"])
def test_scripts_are_valid_bash(render: Any, tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text(render(stack_plan("three-cloud")))
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False).returncode == 0


def fake_bin(tmp_path: Path, **programs: str) -> Path:
    """A directory of stub programs: name -> shell body; scontrol records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    programs.setdefault("scontrol", f'echo "$*" >> {tmp_path}/scontrol.log')
    programs.setdefault("aicluster-health", f'echo "$*" >> {tmp_path}/health.log')  # passes: a healthy node
    for name, body in programs.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def run_script(text: str, tmp_path: Path, node: str, bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.sh"
    # slurmd gives no PATH; the script sets its own, so put the stubs first on it
    script.write_text(text.replace("export PATH=", f"export PATH={bin_dir}:", 1))
    return subprocess.run(
        ["bash", str(script)], env={"SLURMD_NODENAME": node, **env}, capture_output=True, text=True, check=False
    )


def test_prolog_drains_a_gpu_node_that_fails_dcgm_diag(tmp_path: Path) -> None:
    text = prolog_sh(stack_plan("three-cloud"))
    assert "dcgmi diag -r 1" in text
    failing = fake_bin(tmp_path, dcgmi='echo "| Deployment | Fail |"; exit 226')
    done = run_script(text, tmp_path, "nd-002", failing)
    assert done.returncode == 1
    assert (
        (tmp_path / "scontrol.log").read_text()
        == "update nodename=nd-002 state=drain reason=aicluster-health:DCGM_DIAG prolog: dcgmi diag -r 1 failed\n"
    )


def test_prolog_passes_a_healthy_gpu_node_and_skips_tpu_nodes(tmp_path: Path, catalog: Catalog) -> None:
    passing = fake_bin(tmp_path, dcgmi='echo "| Deployment | Pass |"')
    assert run_script(prolog_sh(stack_plan("p5-small")), tmp_path, "h100-003", passing).returncode == 0
    tpu = plan_of(catalog, gcp_cluster(pools=[tpu_pool()]))
    assert run_script(prolog_sh(tpu), tmp_path, "v5p-000", passing).returncode == 0
    assert not (tmp_path / "scontrol.log").exists()


@pytest.mark.parametrize(
    ("render", "layer"),
    [
        pytest.param(prolog_sh, "prolog", id="prolog"),
        pytest.param(epilog_sh, "epilog", id="epilog"),
        pytest.param(healthcheck_sh, "periodic", id="healthcheck"),
    ],
)
def test_each_script_runs_its_layer_of_aicluster_health_first(render: Any, layer: str, tmp_path: Path) -> None:
    """aicluster-health drains the node itself; the script only stops there (exit 1, no second reason)."""
    failing = fake_bin(tmp_path, **{"aicluster-health": f'echo "$*" >> {tmp_path}/health.log; exit 1'})
    done = run_script(render(stack_plan("p5-small")), tmp_path, "h100-001", failing)
    assert done.returncode == 1
    assert (tmp_path / "health.log").read_text() == f"--layer {layer} --config /etc/slurm/aicluster-health.json\n"
    assert not (tmp_path / "scontrol.log").exists()


def test_a_node_without_aicluster_health_keeps_the_shell_checks(tmp_path: Path) -> None:
    """No role installs aicluster-health yet: a node without it is not drained for that, and the health check still
    counts the GPUs (with the checker's code, so the checker clears the drain once installed and passing)."""
    bin_dir = fake_bin(tmp_path, **{"nvidia-smi": 'for i in 0 1 2 3 4 5 6; do echo "GPU $i: NVIDIA H100"; done'})
    (bin_dir / "aicluster-health").unlink()
    # the script's PATH ends in /opt/aicluster/bin; this machine has no aicluster-health there
    done = run_script(healthcheck_sh(stack_plan("p5-small")), tmp_path, "h100-001", bin_dir)
    assert done.returncode == 1
    assert "aicluster-health not installed; its checks are skipped" in done.stderr
    assert (tmp_path / "scontrol.log").read_text() == (
        "show node h100-001\n"
        "update nodename=h100-001 state=drain reason=aicluster-health:GPU_COUNT healthcheck: expected 8 GPUs, "
        "nvidia-smi lists 7\n"
    )
    (tmp_path / "ok").mkdir()
    passing = fake_bin(tmp_path / "ok", dcgmi='echo "| Deployment | Pass |"')
    (passing / "aicluster-health").unlink()
    assert run_script(prolog_sh(stack_plan("p5-small")), tmp_path / "ok", "h100-001", passing).returncode == 0


def test_epilog_runs_dcgm_level_2_after_a_failed_job(tmp_path: Path) -> None:
    stubs = fake_bin(tmp_path, **{"nvidia-smi": "true", "dcgmi": f'echo "$*" >> {tmp_path}/dcgmi.log'})
    text = epilog_sh(stack_plan("p5-small"))
    ok = run_script(text, tmp_path, "h100-001", stubs, SLURM_JOB_GPUS="0,1", SLURM_JOB_EXIT_CODE="0")
    assert ok.returncode == 0
    assert not (tmp_path / "dcgmi.log").exists()
    failed = run_script(text, tmp_path, "h100-001", stubs, SLURM_JOB_GPUS="0,1", SLURM_JOB_EXIT_CODE="256")
    assert failed.returncode == 0
    assert (tmp_path / "dcgmi.log").read_text() == "diag -r 2 -i 0,1\n"


def test_job_accounting_is_gathered_only_where_it_is_stored() -> None:
    """slurmctld logs "error: Job accounting information gathered, but not stored" for jobacct_gather/cgroup with
    accounting_storage/none: the defaults are a coherent pair, and an incoherent one is refused."""
    from aicluster.schedulers.slurm.render import DEFAULT_SETTINGS, SlurmSettings

    assert (DEFAULT_SETTINGS.job_acct_gather_type, DEFAULT_SETTINGS.accounting_storage_type) == (
        "jobacct_gather/none",
        "accounting_storage/none",
    )
    with pytest.raises(ValueError, match="gathered but never stored"):
        SlurmSettings(job_acct_gather_type="jobacct_gather/cgroup")
    assert SlurmSettings(
        job_acct_gather_type="jobacct_gather/cgroup", accounting_storage_type="accounting_storage/slurmdbd"
    )


# ------------------------------------------------------------------------------------------ sites and bursting


@pytest.fixture
def hybrid(catalog: Catalog) -> ClusterPlan:
    return plan_of(catalog, hybrid_site_cluster())


def conf_lines(text: str, key: str) -> list[dict[str, str]]:
    """Lines starting with `key=` as dicts of their key=value words."""
    return [dict(w.split("=", 1) for w in x.split()) for x in text.splitlines() if x.startswith(f"{key}=")]


def settings_of(text: str) -> dict[str, str]:
    """Global key=value lines (one word each) of a slurm.conf."""
    return dict(
        x.split("=", 1) for x in text.splitlines() if "=" in x and " " not in x and not x.startswith(("#", "Node"))
    )


def test_golden_hybrid_site(hybrid: ClusterPlan) -> None:
    golden("hybrid-site/aicluster-health.json", health_json(hybrid))  # site hosts mapped to their pool
    golden("hybrid-site/slurm.conf", slurm_conf(hybrid))
    golden("hybrid-site/slurm-23.11.conf", slurm_conf(hybrid, (23, 11)))
    golden("hybrid-site/gres.conf", gres_conf(hybrid))
    golden("hybrid-site/topology.conf", topology_conf(hybrid))


def test_the_controller_is_the_named_site_host(hybrid: ClusterPlan) -> None:
    assert settings_of(slurm_conf(hybrid))["SlurmctldHost"] == "slurm01(10.200.0.5)"
    # settings that name another host (the integration test's machine) drop the stack's address with it
    assert settings_of(slurm_conf(hybrid, settings=SlurmSettings(controller_host="here")))["SlurmctldHost"] == "here"


def test_owned_nodes_are_static_with_their_addresses_and_cloud_nodes_burst(hybrid: ClusterPlan) -> None:
    nodes = conf_lines(slurm_conf(hybrid), "NodeName")
    owned = [n for n in nodes if n["State"] == "UNKNOWN"]
    assert [n["NodeName"] for n in owned] == hybrid.pools[0].node_names()  # a line per host
    assert (owned[0]["NodeAddr"], owned[127]["NodeAddr"]) == ("10.200.1.10", "10.200.2.37")
    assert {n["Weight"] for n in owned} == {"1"}
    assert {n["Feature"] for n in owned} == {"onprem,fra1,dgx-h100,infiniband,h100,owned"}
    cloud = {n["NodeName"]: n for n in nodes if n["State"] == "CLOUD"}
    assert sorted(cloud) == ["a3-[000-007]", "p5-[000-003]"]
    assert cloud["p5-[000-003]"]["Feature"] == "cloud,aws,us-east-1,us-east-1a,p5.48xlarge,efa,h100,spot"
    assert cloud["a3-[000-007]"]["Feature"].startswith("cloud,gcp,us-east5,us-east5-a,a3-megagpu-8g,")
    assert all(int(n["Weight"]) > 1 for n in cloud.values())
    assert all("NodeAddr" not in n for n in cloud.values())  # slurmd registers its address (cloud_reg_addrs)


def test_power_saving_only_on_the_cloud_partitions(hybrid: ClusterPlan, catalog: Catalog) -> None:
    text = slurm_conf(hybrid, settings=SlurmSettings(burst_bin_dir="/srv/aic/bin/"))
    s = settings_of(text)
    assert s["SuspendTime"] == "INFINITE"  # never an owned node
    assert (s["ResumeRate"], s["SuspendRate"]) == ("0", "0")
    assert s["ResumeProgram"] == "/srv/aic/bin/aicluster-resume"
    assert s["SuspendProgram"] == s["ResumeFailProgram"] == "/srv/aic/bin/aicluster-suspend"
    assert s["TreeWidth"] == "65533"
    assert "ReconfigFlags" not in s  # Slurm 22.05 refuses KeepPowerSaveSettings (added in 23.02)
    assert settings_of(slurm_conf(hybrid, (23, 2)))["ReconfigFlags"] == "KeepPowerSaveSettings"
    assert s["SlurmctldParameters"] == "cloud_reg_addrs,idle_on_node_suspend"
    assert not {"ResumeTimeout", "SuspendTimeout"} & set(s)  # per cloud partition only
    assert s["PrivateData"] == "cloud"  # Slurm 22.05 hides powered-down CLOUD nodes without it
    parts = {p["PartitionName"]: p for p in conf_lines(text, "PartitionName")}
    for planned in hybrid.pools:
        part = parts[planned.name]
        times = catalog.slurm_cloud(planned.provider)
        if planned.onprem is not None:
            assert not {"SuspendTime", "ResumeTimeout", "SuspendTimeout"} & set(part), planned.name
            continue
        assert times is not None
        assert part["SuspendTime"] == str(times.suspend_time_s)
        assert part["ResumeTimeout"] == str(times.resume_timeout_s)
        assert part["SuspendTimeout"] == str(times.suspend_timeout_s)
    assert (parts["p5"]["ResumeTimeout"], parts["a3"]["ResumeTimeout"]) == ("1800", "300")
    # Slurm 23.11 removed cloud_reg_addrs (it is the default there); PrivateData=cloud is a no-op from 23.02
    assert settings_of(slurm_conf(hybrid, (23, 11)))["SlurmctldParameters"] == "idle_on_node_suspend"
    assert "PrivateData" not in slurm_conf(hybrid, (23, 2))
    assert "cloud_reg_addrs" in slurm_conf(hybrid, (23, 2))


def test_the_hybrid_partition_is_the_default_and_holds_every_node(hybrid: ClusterPlan) -> None:
    parts = conf_lines(slurm_conf(hybrid), "PartitionName")
    assert [p["PartitionName"] for p in parts] == ["h100", "p5", "a3", "hybrid"]
    assert [p["PartitionName"] for p in parts if p.get("Default") == "YES"] == ["hybrid"]
    assert parts[-1]["Nodes"] == "dgx-[000-127],p5-[000-003],a3-[000-007]"
    # per-GPU defaults that fit on every pool's nodes (the smallest of the pools')
    assert (parts[-1]["DefCpuPerGPU"], parts[-1]["DefMemPerGPU"]) == ("24", "227635")


def test_site_topology_is_a_tree_per_fabric_and_per_cloud_pool_without_a_common_root(hybrid: ClusterPlan) -> None:
    switches = {s.name: s for s in tree_switches(hybrid)}
    children = {c for s in switches.values() for c in s.switches}
    roots = sorted(n for n in switches if n not in children)
    assert roots == ["a3-p0", "fra1", "p5"]
    assert switches["fra1"].switches == ("fra1-su1", "fra1-su2", "fra1-su3", "fra1-su4")  # SUs of 32 DGX
    assert switches["fra1-su2"].nodes[0] == "dgx-032"
    trees = [below(hybrid, r) for r in roots]
    assert trees == [
        set(hybrid.pools[2].node_names()),
        set(hybrid.pools[0].node_names()),
        set(hybrid.pools[1].node_names()),
    ]
    assert "SwitchName=fra1 Switches=fra1-su1,fra1-su2,fra1-su3,fra1-su4\n" in topology_conf(hybrid)


def test_sites_keep_the_tree_even_on_slurm_23_11_and_refuse_blocks(hybrid: ClusterPlan) -> None:
    assert settings_of(slurm_conf(hybrid, (23, 11)))["TopologyPlugin"] == "topology/tree"
    with pytest.raises(ValueError, match="topology/block could place one job across a site and a cloud"):
        topology_conf(hybrid, (23, 11), SlurmSettings(topology="block"))


def test_an_owned_site_alone_has_static_nodes_and_no_power_saving() -> None:
    cp = stack_plan("onprem-dgx-h100")
    text = slurm_conf(cp)
    s = settings_of(text)
    assert s["SlurmctldHost"] == "slurm01(10.200.0.5)"
    assert s["SuspendTime"] == "INFINITE"
    for key in ("ResumeProgram", "SuspendProgram", "TreeWidth", "SlurmctldParameters", "PrivateData"):
        assert key not in s, key
    assert "State=CLOUD" not in text
    assert [p["PartitionName"] for p in conf_lines(text, "PartitionName") if p.get("Default") == "YES"] == ["h100"]


def test_a_cloud_without_power_saving_times_in_the_catalog_is_refused(hybrid: ClusterPlan, catalog: Catalog) -> None:
    bare = dataclasses.replace(catalog, constants=catalog.constants.model_copy(update={"slurm_cloud": {}}))
    with pytest.raises(ValueError, match="pool p5: no Slurm power-saving times for provider aws in the catalog"):
        slurm_conf(hybrid, catalog=bare)


# ------------------------------------------------------------------------------------------ rack-scale pools


@pytest.fixture
def gb200_site(catalog: Catalog) -> ClusterPlan:
    """tests/data/stacks/Pulumi.gb200-site.yaml: four owned DGX GB200 NVL72 racks (4 x 18 trays)."""
    return plan_of(catalog, data_stack("gb200-site"))


@pytest.fixture
def gb200_gcp(catalog: Catalog) -> ClusterPlan:
    """tests/data/stacks/Pulumi.gb200-gcp.yaml: two A4X sub-blocks (2 x 18 VMs) and two CPU VMs beside them."""
    return plan_of(catalog, data_stack("gb200-gcp"))


def test_golden_rack_scale_files(gb200_site: ClusterPlan, gb200_gcp: ClusterPlan) -> None:
    """Rendered for Debian 13's Slurm 24.11 (what tests/integration/test_slurm_blocks.py loads) and for Ubuntu 24.04's
    23.11 (BlockLevels=, IMEX channel 0 from the prolog)."""
    for name, cp in (("gb200-site", gb200_site), ("gb200-gcp", gb200_gcp)):
        golden(f"{name}/slurm.conf", slurm_conf(cp, (24, 11)))
        golden(f"{name}/topology.conf", topology_conf(cp, (24, 11)))
        golden(f"{name}/gres.conf", gres_conf(cp))
        golden(f"{name}/topology-23.11.conf", topology_conf(cp, (23, 11)))
    golden("gb200-site/healthcheck.sh", healthcheck_sh(gb200_site))
    golden("gb200-site/prolog.sh", prolog_sh(gb200_site, (24, 11)))
    golden("gb200-site/prolog-23.11.sh", prolog_sh(gb200_site, (23, 11)))


def test_a_block_per_nvlink_domain_named_by_the_plan(gb200_site: ClusterPlan, gb200_gcp: ClusterPlan) -> None:
    assert [(b.name, b.nodes) for b in blocks(gb200_site)] == [(d.id, d.nodes) for d in gb200_site.nvlink_domains]
    # the CPU pool beside the sub-blocks is in no block (Slurm schedules its partition without the block plugin)
    assert [b.name for b in blocks(gb200_gcp)] == ["gb200-nvl0", "gb200-nvl1"]
    assert settings_of(topology_conf(gb200_site, (24, 11)))["BlockSizes"] == "18,36,72"
    assert settings_of(topology_conf(gb200_gcp, (24, 11)))["BlockSizes"] == "18,36"
    assert settings_of(topology_conf(gb200_gcp, (23, 11)))["BlockLevels"] == "0-1"


@pytest.mark.parametrize(
    ("domains", "sizes"),
    [
        pytest.param([18, 18, 18, 18], [18, 36, 72], id="four-racks"),
        pytest.param([18, 9], [9, 18], id="ultraserver-x72-and-x36"),
        pytest.param([18], [18], id="one-rack"),
        pytest.param([18] * 5, [18, 36, 72], id="five-racks"),
    ],
)
def test_block_sizes_follow_topology_conf_5(gb200_gcp: ClusterPlan, domains: list[int], sizes: list[int]) -> None:
    """topology.conf(5): each block holds at least the first (base) size; each size is a power of two times the one
    before. A partial domain (AWS's 9-instance u-p6e-gb200x36 beside an 18-instance x72) lowers the base."""
    cp = with_domains(gb200_gcp, domains)
    found = block_sizes(cp)
    assert found == sizes
    assert all(len(b.nodes) >= found[0] for b in blocks(cp))
    assert all((b // a) & (b // a - 1) == 0 and b % a == 0 for a, b in itertools.pairwise(found))


def with_domains(cp: ClusterPlan, counts: list[int]) -> ClusterPlan:
    """`cp` with its first pool cut into NVLink domains of these node counts (the others dropped)."""
    pool = cp.pools[0].model_copy(update={"nodes": sum(counts)})
    names = pool.node_names()
    domains, first = [], 0
    for k, n in enumerate(counts):
        domains.append(
            cp.nvlink_domains[0].model_copy(
                update={"id": f"gb200-nvl{k}", "nodes": tuple(names[first : first + n]), "whole": n == 18}
            )
        )
        first += n
    return cp.model_copy(update={"pools": (pool,), "nvlink_domains": tuple(domains)})


def test_slurm_22_05_refuses_rack_scale_pools_rather_than_write_a_tree(gb200_gcp: ClusterPlan) -> None:
    for render in (slurm_conf, topology_conf):
        with pytest.raises(
            ValueError, match=r"pool gb200: a4x-highgpu-4g is a rack-scale type: .* which Slurm 22\.05 does not have"
        ):
            render(gb200_gcp, (22, 5))
    with pytest.raises(ValueError, match="they are Slurm blocks"):
        slurm_conf(gb200_gcp, (24, 11), SlurmSettings(topology="tree"))
    # 23.x needs every block of one size: a partial domain beside whole ones is for 24.05 and later
    uneven = with_domains(gb200_gcp, [18, 9])
    with pytest.raises(ValueError, match=r"Slurm 23\.11 needs every block of one size, not 9, 18 nodes"):
        topology_conf(uneven, (23, 11))
    assert settings_of(topology_conf(uneven, (24, 5)))["BlockSizes"] == "9,18"


def test_imex_channels_come_from_slurm_from_24_05_and_from_the_prolog_before(gb200_site: ClusterPlan) -> None:
    assert settings_of(slurm_conf(gb200_site, (24, 5)))["SwitchType"] == "switch/nvidia_imex"
    assert "SwitchType" not in settings_of(slurm_conf(gb200_site, (23, 11)))
    assert "SwitchType" not in settings_of(slurm_conf(stack_plan("p5-small"), (24, 11)))
    assert "nvidia-caps-imex-channels" not in prolog_sh(gb200_site, (24, 11))
    assert "mknod -m 666 /dev/nvidia-caps-imex-channels/channel0" in prolog_sh(gb200_site, (23, 11))
    assert files(gb200_site, (23, 11))["/etc/slurm/prolog.sh"] == prolog_sh(gb200_site, (23, 11))


def test_prolog_drains_a_node_whose_driver_has_no_imex_channels(gb200_site: ClusterPlan, tmp_path: Path) -> None:
    """23.x: the prolog makes channel 0 from /proc/devices' nvidia-caps-imex-channels; this machine has no NVIDIA
    driver, so the prolog drains the node with the reason."""
    stubs = fake_bin(tmp_path, dcgmi='echo "| Deployment | Pass |"')
    done = run_script(prolog_sh(gb200_site, (23, 11)), tmp_path, "gb200-007", stubs)
    assert done.returncode == 1
    assert (tmp_path / "scontrol.log").read_text() == (
        "update nodename=gb200-007 state=drain reason=aicluster-health:IMEX prolog: no nvidia-caps-imex-channels in "
        "/proc/devices (NVIDIA driver without IMEX)\n"
    )


# nvidia-smi -q of a GB200 compute tray: the Fabric section per GPU as NVIDIA's tools print it
SMI_Q = """==============NVSMI LOG==============

Attached GPUs                             : 4
""" + "".join(
    f"""GPU 00000008:0{i + 1}:00.0
    Product Name                          : NVIDIA GB200
    Fabric
        State                             : {{state{i}}}
        Status                            : Success
        CliqueId                          : 32766
        ClusterUUID                       : 5b1c0e7e-0000-4000-8000-000000000001
        Health
            Bandwidth                     : Full
    Performance State                     : P0
"""
    for i in range(4)
)


def gb200_tools(tmp_path: Path, imex: str = "READY", states: tuple[str, ...] = ("Completed",) * 4) -> Path:
    smi_q = SMI_Q.format(**{f"state{i}": s for i, s in enumerate(states)})
    (tmp_path / "smi-q.txt").write_text(smi_q)
    return fake_bin(
        tmp_path,
        **{
            "nvidia-smi": f'if [ "$1" = -q ]; then cat {tmp_path}/smi-q.txt; '
            'else for i in 0 1 2 3; do echo "GPU $i: NVIDIA GB200"; done; fi',
            "nvidia-imex-ctl": f'[ "$1" = -q ] && echo {imex}',
        },
    )


@pytest.mark.parametrize(
    ("imex", "states", "reason"),
    [
        pytest.param("READY", ("Completed",) * 4, None, id="healthy"),
        pytest.param(
            "WAITING_FOR_PEERS",
            ("Completed",) * 4,
            "aicluster-health:IMEX healthcheck: IMEX daemon not READY (nvidia-imex-ctl -q: WAITING_FOR_PEERS)",
            id="imex-not-ready",
        ),
        pytest.param(
            "READY",
            ("Completed", "In Progress", "Completed", "Completed"),
            "aicluster-health:NVLINK_FABRIC healthcheck: NVLink fabric: 3 of 4 GPUs joined "
            "(nvidia-smi -q Fabric State/Status)",
            id="gpu-not-in-fabric",
        ),
    ],
)
def test_healthcheck_wants_the_nvlink_domain_whole(
    gb200_site: ClusterPlan, tmp_path: Path, imex: str, states: tuple[str, ...], reason: str | None
) -> None:
    done = run_script(healthcheck_sh(gb200_site), tmp_path, "gb200-020", gb200_tools(tmp_path, imex, states))
    log = tmp_path / "scontrol.log"
    if reason is None:
        assert done.returncode == 0, done.stderr
        assert not log.exists()
    else:
        assert done.returncode == 1
        # (the state read first: a node Slurm waits for after a reboot would get RESUME before the drain)
        assert log.read_text() == f"show node gb200-020\nupdate nodename=gb200-020 state=drain reason={reason}\n"


def test_healthcheck_of_8_gpu_pools_is_unchanged() -> None:
    assert "nvidia-imex-ctl" not in healthcheck_sh(stack_plan("p5-small"))


def test_the_cloud_layout_writes_only_what_the_release_knows(gb200_gcp: ClusterPlan) -> None:
    """cloud_reg_addrs is the default from 23.11 (24.11 logs an error for it); PrivateData=cloud a no-op from 23.02."""
    for version, present in (((22, 5), True), ((23, 2), True), ((23, 11), False), ((24, 11), False)):
        text = slurm_conf(stack_plan("p5-small"), version)
        assert ("SlurmctldParameters=cloud_reg_addrs" in text) == present, version
    assert "PrivateData=cloud" in slurm_conf(stack_plan("p5-small"), (22, 5))
    assert "PrivateData=cloud" not in slurm_conf(gb200_gcp, (24, 11))


def test_sites_with_nvlink_domains_use_blocks_and_no_partition_spans_the_wan(catalog: Catalog) -> None:
    """Owned racks that burst into a cloud: topology/block (the NVLink domains), so the default `hybrid` partition
    over every node would let a large job straddle the site and the cloud: it is not written."""
    data = data_stack("gb200-site")
    data["pools"].append(pool(name="p5", nodes=4))
    cp = plan_of(catalog, data)
    text = slurm_conf(cp, (24, 11))
    assert settings_of(text)["TopologyPlugin"] == "topology/block"
    parts = conf_lines(text, "PartitionName")
    assert [p["PartitionName"] for p in parts] == ["gb200", "p5"]
    assert [p["PartitionName"] for p in parts if p.get("Default") == "YES"] == ["gb200"]
    assert [b.name for b in blocks(cp)] == [d.id for d in cp.nvlink_domains]


def test_the_health_check_ends_a_reboot_slurm_waits_for_before_it_drains(tmp_path: Path) -> None:
    """slurmd's check at boot runs before the node registers after `scontrol reboot` (DOWN+REBOOT_ISSUED); the
    registration would clear a drain given then (Slurm 22.05: tests/integration/test_repair_reboot.py), so the
    shell check too ends the reboot (RESUME) before it drains."""
    bin_dir = fake_bin(tmp_path, **{
        "nvidia-smi": 'for i in 0 1 2 3 4 5 6; do echo "GPU $i: NVIDIA H100"; done',
        "scontrol": f'echo "$*" >> {tmp_path}/scontrol.log\n'
                    '[ "$1" = show ] && echo "NodeName=$3 State=DOWN+DRAIN+REBOOT_ISSUED NextState=RESUME"',
    })  # fmt: skip
    (bin_dir / "aicluster-health").unlink()
    done = run_script(healthcheck_sh(stack_plan("p5-small")), tmp_path, "h100-001", bin_dir)
    assert done.returncode == 1
    assert (tmp_path / "scontrol.log").read_text().splitlines() == [
        "show node h100-001",
        "update nodename=h100-001 state=resume",
        "update nodename=h100-001 state=drain reason=aicluster-health:GPU_COUNT healthcheck: expected 8 GPUs, "
        "nvidia-smi lists 7",
    ]
