"""Slurm configuration from the plan: pure `plan -> str` functions over the templates in templates/slurm/.

What the files say, and why:

- Nodes: one `NodeName=` line per pool, names only from `PlannedPool.node_names()` written as Slurm hostlist
  ranges (`h100-[000-015]`). `State=CLOUD`: the pools are created by Pulumi, so a node has no address until
  its slurmd registers (`SlurmctldParameters=cloud_reg_addrs`). Slurm never creates or suspends nodes itself
  (`SuspendTime=INFINITE`); `ResumeProgram` only lets a job wait `ResumeTimeout` for a node Pulumi is still
  creating. `PrivateData=cloud`: without it Slurm 22.05 hides CLOUD nodes from sinfo/scontrol.
- Memory: `RealMemory` is the instance memory in MiB less 5% (at least 4 GiB) for the kernel, the OS,
  file-system clients and the GPU driver: a node that reports less memory than `RealMemory` is drained, and
  the nominal instance memory is always a little more than the kernel reports (AWS ParallelCluster uses the
  same 95%).
- CPUs: `CPUs=` is the instance's vCPUs (hardware threads), so Slurm counts CPUs as threads everywhere
  (`--cpus-per-task`, `DefCpuPerGPU`). Where the catalog has the whole layout the guest sees (lscpu), the line
  adds `Sockets= CoresPerSocket= ThreadsPerCore=` (their product is `CPUs`): with `SelectTypeParameters=
  CR_Core_Memory` Slurm then allocates whole cores and task/affinity and task/cgroup bind to real cores and
  sockets, and slurmd's `-C` report matches the configuration. Where any figure is unpublished (null in the
  catalog) the line keeps `CPUs=` alone rather than an invented layout. `DefCpuPerGPU` is the node's CPUs
  divided by its GPUs, rounded down to whole cores when the threads per core are known.
- GPUs: `Gres=gpu:<type>:<n>`, the type is the catalog accelerator id up to its first dash (`h100-sxm-80gb`
  -> `h100`, `a100-sxm-40gb` -> `a100`), so `--gres=gpu:h100:8` works on every cloud. gres.conf is static
  (`AutoDetect=off`, `File=/dev/nvidia[0-N]`): NVML autodetection depends on how Slurm was built.
- TPU and Trainium pools get no gres: Slurm has no device plugin for them and a TPU VM's chips are used by one
  job at a time (libtpu takes them all). Their partitions are `OverSubscribe=EXCLUSIVE` (whole hosts) and
  their features carry the accelerator (`v5p`, `v5p-256`), so `--constraint=v5p-256` selects them.
- Partitions: one per pool (the first pool's is the default), plus one per network (provider-region, e.g.
  `aws-us-east-1`) that holds more than one pool. No partition spans two networks: Slurm's topology guide
  recommends "placing nodes in separate network segments in disjoint partitions", and a job submitted to
  several partitions runs in one of them.
- Topology (tree, the only one Slurm 22.05 has): a leaf switch per fabric domain of a pool
  (`PlannedPool.fabric_domains()`: an Azure scale set, a GCP placement group, a TPU slice; an AWS pool is one
  domain, its cluster placement group, and its leaf is named after the pool), a pool switch above its leaves
  when it has more than one, and a root switch per network above its pools. Nothing joins the roots: per
  topology.conf(5) "jobs can only span nodes connected by the same switch fabric, even if there are available
  idle nodes", so Slurm never places one job across clouds or regions (checked with slurmctld 22.05: a
  3-node job over two 2-node switches without a common parent is refused, "Requested node configuration is
  not available").
- Block topology (Slurm >= 23.11, the default there): one block per fabric domain; `BlockSizes` starts at the
  smallest domain and doubles while a network still holds that many nodes. Cross-network placement is then
  prevented by the partitions alone. Slurm 23.11 spells the sizes `BlockLevels=` (levels: 2^k blocks) and stops
  with "children count no equal bblock_node_cnt" unless every block holds the same number of nodes; BlockSizes
  (24.05) only needs each block to hold at least the first size. So on 23.x blocks of unequal size fall back to
  the tree (an explicit `SlurmSettings.topology="block"` is refused).
- Rack-scale pools (GB200/GB300 NVL72: `ClusterPlan.nvlink_domains`, never recomputed here): one block per NVLink
  domain, named by the plan (`<pool>-nvl<k>`), in plan order within each network; `BlockSizes` starts at the
  smallest domain (18 nodes, or a 9-node partial UltraServer) and doubles while one network holds that many domain
  nodes, so a job that needs two racks gets two neighbouring ones (on-prem: the racks of one scalable unit, listed
  in order). Slurm before 25.05 has one topology plugin per cluster (topology.yaml, 25.05, has one per partition),
  and the NVLink domain is the boundary that matters most to a job on such a cluster (MNNVL and IMEX stop there;
  `--segment=18` asks for whole racks), so topology/block wins over the scale-out fabric's tree, whose remaining
  duty, keeping a job inside one network or site fabric, is left to the partitions: none spans two (with sites,
  the default `hybrid` partition over every node is then not written; `-p gb200,gb200-cloud` still bursts). Pools
  without NVLink domains stay outside the blocks: Slurm (23.11 and 24.11 topology_p_eval_nodes) schedules a job
  whose partition holds no block node without the block plugin, so their partitions work as before. Slurm 22.05 has
  no topology/block: such plans are refused (`rack_scale_problems`), never written with a tree. IMEX: from 24.05
  `SwitchType=switch/nvidia_imex` gives each job step across nodes an IMEX channel of its own; on 23.x the prolog
  makes channel 0 on the job's rack-scale nodes (what ParallelCluster's and CycleCloud's prologs do; one channel
  for every job of the domain, so no isolation between users). The IMEX daemon itself runs per NVLink domain (the
  guide's "NVLink domain wide" model), configured by the nvidia_imex role from the inventory's domain groups.
- Sites (a stack with owned data centres; cloud-only stacks keep the text above byte for byte). One controller on
  the site host the stack names (`SlurmctldHost=<host>(<address>)`). Owned pools are static nodes named by their
  hosts with `NodeAddr=` (or `<pool>-NNN`, resolved by the site's DNS) and `Weight=1`, so Slurm fills them first.
  Cloud pools are burst capacity: `State=CLOUD` nodes, powered down until a job needs them, with
  `Feature=cloud,<provider>,...,<instance type>` and `Weight=1000` (ParallelCluster's weight for dynamic nodes).
  Power saving follows power_save.shtml: global `SuspendTime=INFINITE` (an owned node is never powered down), and
  `SuspendTime`/`ResumeTimeout`/`SuspendTimeout` only on the cloud pools' partitions, from the catalog's figures for
  that cloud (its own Slurm integration's defaults: ParallelCluster, slurm-gcp, CycleCloud);
  `ResumeRate=0`/`SuspendRate=0` (unlimited, as all three set); `ResumeProgram`/`SuspendProgram` are aicluster's
  burst programs (`aicluster-resume`, `aicluster-suspend`, installed under `SlurmSettings.burst_bin_dir`) and
  `ResumeFailProgram` is the suspend program, as ParallelCluster and slurm-gcp do, so a node that never registered
  is given back to the cloud. `TreeWidth=65533`: cloud nodes are not in the site's DNS, so slurmd must not fan
  messages out through them. `ReconfigFlags=KeepPowerSaveSettings` (Slurm 23.02 and later, which added `scontrol
  update SuspendExcNodes=`; 22.05 refuses the flag) keeps an admin's exclusions across reconfigure.
  `SlurmctldParameters=idle_on_node_suspend` (ParallelCluster, slurm-gcp and CycleCloud): a cloud node that failed
  (the cloud said no, spot took it back) is IDLE again once powered down, so the next job may try again;
  `cloud_reg_addrs` before Slurm 23.11 only (a CLOUD node registers its address; 23.11 made that the default and
  removed the option). `PrivateData=cloud` before Slurm 23.02 only: older releases hide powered-down CLOUD nodes
  from sinfo and scontrol without it; 23.02 shows them by default and the option is a no-op there, so it is not
  written. Topology: a tree per owned fabric (a leaf per scalable unit of `nodes_per_leaf_group` nodes, the fabric's
  root over them) and one per cloud pool (its fabric domains), with no common root, so no job straddles the WAN;
  topology/block is refused here (aggregated blocks could join a site's block with a cloud's). Partitions: one per
  pool, and a default `hybrid` partition of every node: users submit without `-p` and Slurm fills the owned nodes
  first and bursts by weight when they are busy (the hybrid example of power_save.shtml).
- Prolog/Epilog/HealthCheckProgram: each first runs `aicluster-health --layer prolog|epilog|periodic` (aicluster/
  health: GPU count and model, new XIDs, row remapping, ECC, NVLink, PCIe width, fabric ports and mounts, by layer;
  its configuration is aicluster-health.json, rendered from the plan and the catalog's data/health.yaml), then DCGM
  diagnostics on GPU nodes; on failure they drain the node with a reason of the grammar `aicluster-health:<CODE>
  <detail>` (aicluster/health/reasons.py) and exit non-zero. slurmd starts them with no PATH, so they set their
  own. On rack-scale nodes the health check also wants the NVLink domain whole: the IMEX daemon READY
  (`nvidia-imex-ctl -q`) and every GPU's fabric state Completed with status Success (`nvidia-smi -q`, section
  Fabric).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from aicluster.catalog import Catalog, SlurmCloudTimes, load_catalog
from aicluster.plan import ClusterPlan, PlannedPool
from aicluster.plan.models import hostlist
from aicluster.render import render
from aicluster.render.health import CONFIG_FILE as HEALTH_CONFIG
from aicluster.render.health import health_json
from aicluster.render.repair import CONFIG_FILE as REPAIR_CONFIG
from aicluster.render.repair import repair_json

Version = tuple[int, int]
TopologyPlugin = Literal["tree", "block"]

BLOCK_SINCE: Version = (23, 11)
BLOCK_SIZES_SINCE: Version = (24, 5)  # BlockSizes= (23.11: BlockLevels=, and every block of one size)
IMEX_SWITCH_SINCE: Version = (24, 5)  # SwitchType=switch/nvidia_imex
PRIVATE_DATA_CLOUD_UNTIL: Version = (23, 2)  # PrivateData=cloud: CLOUD nodes are shown by default from 23.02
CLOUD_REG_ADDRS_UNTIL: Version = (23, 11)  # SlurmctldParameters=cloud_reg_addrs: removed (made the default) in 23.11
KEEP_POWER_SAVE_SINCE: Version = (23, 2)  # ReconfigFlags=KeepPowerSaveSettings (with `scontrol update SuspendExc*`)
ONPREM_WEIGHT = 1  # owned nodes first
CLOUD_WEIGHT = 1000  # cloud nodes last (ParallelCluster's DynamicNodePriority)
HYBRID_PARTITION = "hybrid"
RESUME_PROGRAM = "aicluster-resume"
SUSPEND_PROGRAM = "aicluster-suspend"
MEMORY_HEADROOM = 0.05  # share of the instance memory kept from Slurm
MEMORY_HEADROOM_MIN_MIB = 4096
# Catalog accelerator ids that are not GPUs (no gres/gpu): AWS Trainium and Cloud TPU chips.


@dataclass(frozen=True)
class SlurmSettings:
    """How and where the daemons run. The defaults are production (Debian's paths, munge, cgroups); the
    integration test swaps in private directories, a free port, auth/none and plugins that need no cgroups."""

    conf_dir: str = "/etc/slurm"  # slurm.conf, gres.conf, cgroup.conf, topology.conf and the scripts
    controller_host: str | None = None  # None: the inventory's name, "<cluster>-slurmctld"
    slurm_user: str = "slurm"
    slurmctld_port: int = 6817
    slurmd_port: int = 6818
    state_save_location: str = "/var/spool/slurmctld"
    slurmd_spool_dir: str = "/var/spool/slurmd"
    run_dir: str = "/run"  # pid files
    log_dir: str = "/var/log/slurm"
    auth_type: str = "auth/munge"
    cred_type: str = "cred/munge"
    proctrack_type: str = "proctrack/cgroup"
    task_plugin: str = "task/affinity,task/cgroup"
    # A coherent pair: the stack runs no slurmdbd, so nothing is stored, and nothing is gathered either
    # (slurmctld logs "error: Job accounting information gathered, but not stored" for cgroup + none).
    job_acct_gather_type: str = "jobacct_gather/none"
    accounting_storage_type: str = "accounting_storage/none"
    mail_prog: str = "/bin/true"  # cluster nodes have no MTA
    resume_program: str = "/bin/true"  # Pulumi creates the nodes; Slurm only waits for them to register
    suspend_program: str = "/bin/true"
    resume_timeout_s: int = 900
    health_check_interval_s: int = 300
    # `scontrol reboot` (aicluster-repair's reboots) runs it on the node once idle; Slurm refuses a reboot without it
    reboot_program: str = "/usr/sbin/reboot"
    device_dir: str = "/dev"  # where gres.conf finds /dev/nvidia0.. (the test points it at fake devices)
    topology: TopologyPlugin | None = None  # None: tree before Slurm 23.11, block from 23.11
    # Sites: where the slurm_burst role installs aicluster-resume and aicluster-suspend on the controller (through
    # the aicluster_programs role: its aicluster_programs_bin_dir)
    burst_bin_dir: str = "/opt/aicluster/bin"
    scontrol: str = "/usr/bin/scontrol"  # for the burst programs: slurmctld runs them with no PATH
    # where the slurm_health role installs aicluster-health on every compute node (the same aicluster_programs_bin_dir;
    # Prolog, Epilog and HealthCheckProgram call it; its configuration is aicluster-health.json beside slurm.conf)
    health_bin_dir: str = "/opt/aicluster/bin"
    # SlurmdParameters (None: not written). A test machine sets `config_overrides`, so that slurmd registers a node
    # with the CPUs and memory slurm.conf gives it rather than draining it for having less.
    slurmd_parameters: str | None = None
    # SwitchParameters for switch/nvidia_imex (None: Slurm's defaults, 2048 channels and the device's major number
    # from /proc/devices); a test machine without the NVIDIA driver names a major number (`imex_dev_major=`).
    switch_parameters: str | None = None

    def __post_init__(self) -> None:
        if (
            self.accounting_storage_type == "accounting_storage/none"
            and self.job_acct_gather_type != "jobacct_gather/none"
        ):
            raise ValueError(
                f"JobAcctGatherType={self.job_acct_gather_type} with AccountingStorageType=accounting_storage/none: "
                "job accounting gathered but never stored; gather with jobacct_gather/none, or store it (slurmdbd)"
            )


DEFAULT_SETTINGS = SlurmSettings()


@dataclass(frozen=True)
class Switch:
    """One topology/tree switch: a leaf lists nodes, the others list child switches."""

    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()


@dataclass(frozen=True)
class Block:
    """One topology/block block: the nodes of one fabric domain."""

    name: str
    nodes: tuple[str, ...]


# ----------------------------------------------------------------------------------------------- helpers


def is_gpu_pool(pool: PlannedPool) -> bool:
    return pool.accelerator_kind == "gpu"


def gres_type(pool: PlannedPool) -> str | None:
    """The gres/gpu type of a GPU pool: the catalog accelerator id up to its first dash (`h100-sxm-80gb` ->
    `h100`); None for pools without GPUs."""
    if not is_gpu_pool(pool):
        return None
    assert pool.accelerator is not None
    return pool.accelerator.split("-")[0]


def real_memory_mib(pool: PlannedPool) -> int:
    """RealMemory: the instance memory in MiB less 5% (at least 4 GiB) for the OS."""
    total = int(pool.memory_gib_per_node * 1024)
    return total - max(MEMORY_HEADROOM_MIN_MIB, math.ceil(total * MEMORY_HEADROOM))


def cpu_layout(pool: PlannedPool) -> tuple[int, int, int] | None:
    """(Sockets, CoresPerSocket, ThreadsPerCore) for the node line, or None where a figure is unpublished."""
    t = pool.cpu_topology
    if t.sockets is None or t.cores_per_socket is None or t.threads_per_core is None:
        return None
    return t.sockets, t.cores_per_socket, t.threads_per_core


def def_cpu_per_gpu(pool: PlannedPool) -> int | None:
    """DefCpuPerGPU: the node's CPUs over its GPUs, in whole cores where the threads per core are known (Slurm
    allocates whole cores under CR_Core_Memory); None for pools without GPUs."""
    gpus = pool.accelerators_per_node if is_gpu_pool(pool) else 0
    if not gpus:
        return None
    threads = pool.cpu_topology.threads_per_core or 1
    return pool.vcpus_per_node // gpus // threads * threads


def features(pool: PlannedPool, site_layout: bool = False) -> list[str]:
    """Node features: provider, region, zone, instance type, fabric, accelerator, market. With sites, a cloud
    pool's nodes lead with `cloud` (`--constraint=cloud`, or `--constraint=onprem` to stay at the site)."""
    found = ["cloud"] if site_layout and not is_owned(pool) else []
    found += [pool.provider, pool.region]
    if pool.zone is not None:  # Azure zones are "1".."3": prefix the region
        found.append(pool.zone if pool.zone.startswith(pool.region) else f"{pool.region}-{pool.zone}")
    found += [pool.instance_type, pool.fabric]
    gres = gres_type(pool)
    if gres is not None:
        found.append(gres)
    elif pool.tpu is not None:
        found += [pool.tpu.generation, pool.tpu.accelerator_type]
    elif pool.accelerator is not None:
        found.append(pool.accelerator)
    found.append(pool.market)
    return list(dict.fromkeys(found))


def plugin_for(plan: ClusterPlan, version: Version, settings: SlurmSettings = DEFAULT_SETTINGS) -> TopologyPlugin:
    """The topology plugin for the plan: topology/block for a plan with NVLink domains (refused where Slurm has
    none); else with sites always the tree, whose disjoint roots keep every job inside one site fabric or one cloud
    pool (aggregated blocks of topology/block could join a site's block with a cloud's)."""
    if plan.nvlink_domains:
        return _nvlink_plugin(plan, version, settings)
    if not has_sites(plan):
        return topology_plugin(version, settings, _block_node_counts(blocks(plan)))
    if settings.topology == "block":
        raise ValueError(
            f"cluster {plan.name} has sites: topology/block could place one job across a site and a cloud; "
            "use topology/tree (leave SlurmSettings.topology unset)"
        )
    return "tree"


def topology_plugin(
    version: Version, settings: SlurmSettings = DEFAULT_SETTINGS, block_nodes: Sequence[int] = ()
) -> TopologyPlugin:
    """The plugin for a plan without NVLink domains: block from 23.11 unless the settings say otherwise. Slurm 23.x
    needs every block of one size (`block_nodes`, the blocks' node counts), so there blocks of unequal size keep the
    tree."""
    uneven = version < BLOCK_SIZES_SINCE and len(set(block_nodes)) > 1
    chosen: TopologyPlugin = settings.topology or ("block" if version >= BLOCK_SINCE and not uneven else "tree")
    if chosen == "block" and version < BLOCK_SINCE:
        raise ValueError(f"topology/block needs Slurm 23.11 or newer, not {_show(version)}")
    if chosen == "block" and uneven:
        raise ValueError(
            f"Slurm {_show(version)}'s topology/block needs every block of one size, not "
            f"{', '.join(map(str, sorted(set(block_nodes))))} nodes; Slurm 24.05 and later take blocks of unequal size"
        )
    return chosen


def rack_scale_problems(plan: ClusterPlan, version: Version, release: str | None = None) -> list[tuple[str, str, str]]:
    """(pool, instance type, why) for each pool of NVLink domains that Slurm `version` cannot schedule as blocks:
    before 23.11 it has no topology/block; 23.x needs every block of one size (a partial domain beside whole ones).
    `why` follows "<instance type> is "; `release` is how it names the version (default "22.05"). Empty: the
    release takes them."""
    if not plan.nvlink_domains:
        return []
    release = release or _show(version)
    out: list[tuple[str, str, str]] = []
    by_pool: dict[str, list[int]] = {}
    for d in plan.nvlink_domains:
        by_pool.setdefault(d.pool, []).append(len(d.nodes))
    types = {p.name: p.instance_type for p in plan.pools}
    sizes = {n for counts in by_pool.values() for n in counts}
    for pool, counts in by_pool.items():
        what = (
            f"a rack-scale type: the pool's {len(counts)} NVLink domain(s) of "
            f"{'/'.join(map(str, sorted(set(counts), reverse=True)))} nodes are Slurm blocks (topology/block)"
        )
        if version < BLOCK_SINCE:
            why = (
                f"{what}, which Slurm {release} does not have; render the Slurm files for the release the "
                "nodes run, 23.11 or later (--slurm-version 23.11: Ubuntu 24.04's Slurm; 24.11: Debian 13's)"
            )
        elif version < BLOCK_SIZES_SINCE and len(sizes) > 1:
            why = (
                f"{what}, and Slurm {release} needs every block of one size, not "
                f"{', '.join(map(str, sorted(sizes)))} nodes (a partial domain beside whole ones); render for "
                "Slurm 24.05 or later (--slurm-version 24.05), or plan whole domains only"
            )
        else:
            continue
        out.append((pool, types.get(pool, pool), why))
    return out


def _nvlink_plugin(plan: ClusterPlan, version: Version, settings: SlurmSettings) -> TopologyPlugin:
    problems = rack_scale_problems(plan, version)
    if problems:
        raise ValueError("; ".join(f"pool {pool}: {kind} is {why}" for pool, kind, why in problems))
    if settings.topology == "tree":
        raise ValueError(
            f"cluster {plan.name} has NVLink domains: they are Slurm blocks (topology/block), which a tree cannot "
            "stand for; leave SlurmSettings.topology unset"
        )
    return "block"


def _show(version: Version) -> str:
    return f"{version[0]}.{version[1]:02d}"


def imex_switch(plan: ClusterPlan, version: Version) -> bool:
    """Whether slurm.conf names `SwitchType=switch/nvidia_imex` (NVLink domains, Slurm 24.05 and later)."""
    return bool(plan.nvlink_domains) and version >= IMEX_SWITCH_SINCE


def controller_host(plan: ClusterPlan, settings: SlurmSettings = DEFAULT_SETTINGS) -> str:
    """The inventory's name for the controller (`<cluster>-slurmctld`) unless the settings override it."""
    return settings.controller_host or plan.controller_host()


def controller_address(plan: ClusterPlan, settings: SlurmSettings = DEFAULT_SETTINGS) -> str | None:
    """The site host's address the stack gives (`SlurmctldHost=name(address)`); None when the settings name another
    host (its address is then the host's own) or the controller is a cloud VM (slurmd resolves its name)."""
    if settings.controller_host is not None or plan.controller is None:
        return None
    return plan.controller.address


# ----------------------------------------------------------------------------------------------- sites


def is_owned(pool: PlannedPool) -> bool:
    """An on-prem pool: static nodes at a site, never powered down by Slurm."""
    return pool.onprem is not None


def has_sites(plan: ClusterPlan) -> bool:
    """The plan has owned sites: render the site layout (static owned nodes, cloud pools as burst capacity)."""
    return bool(plan.sites)


def cloud_pools(plan: ClusterPlan) -> list[PlannedPool]:
    return [p for p in plan.pools if not is_owned(p)]


def cloud_times(pool: PlannedPool, catalog: Catalog) -> SlurmCloudTimes:
    """ResumeTimeout, SuspendTimeout and SuspendTime of a cloud pool's partition (catalog, per provider)."""
    times = catalog.slurm_cloud(pool.provider)
    if times is None:
        raise ValueError(
            f"pool {pool.name}: no Slurm power-saving times for provider {pool.provider} in the catalog; add "
            "slurm_cloud.<provider> (resume_timeout_s, suspend_timeout_s, suspend_time_s, source) to constants.yaml"
        )
    return times


def burst_programs(settings: SlurmSettings = DEFAULT_SETTINGS) -> dict[str, str]:
    """Absolute paths of the burst programs slurmctld runs (it runs them with no PATH)."""
    bin_dir = settings.burst_bin_dir.rstrip("/")
    return {"resume": f"{bin_dir}/{RESUME_PROGRAM}", "suspend": f"{bin_dir}/{SUSPEND_PROGRAM}"}


def onprem_leaves(plan: ClusterPlan) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """(fabric, [(leaf, node names)]) per owned fabric: the nodes of the fabric's pools in plan order, a leaf per
    scalable unit (`nodes_per_leaf_group` nodes sharing one set of rail leaves), named `<fabric>-su<N>`. A pool whose
    fabric the plan does not list (its fabric was refused) is one leaf, named after the pool."""
    fabrics = {f.name: f for site in plan.sites for f in site.fabrics}
    members: dict[str, list[str]] = {}
    for pool in plan.pools:
        if pool.onprem is not None:
            key = pool.onprem.fabric if pool.onprem.fabric in fabrics else pool.name
            members.setdefault(key, []).extend(pool.node_names())
    out: list[tuple[str, list[tuple[str, list[str]]]]] = []
    for name, nodes in members.items():
        fabric = fabrics.get(name)
        size = fabric.nodes_per_leaf_group if fabric is not None else len(nodes)
        groups = [nodes[i : i + size] for i in range(0, len(nodes), max(1, size))]
        if len(groups) == 1:
            out.append((name, [(name, groups[0])]))
        else:
            out.append((name, [(f"{name}-su{i + 1}", g) for i, g in enumerate(groups)]))
    return out


def _check(plan: ClusterPlan) -> None:
    if plan.scheduler != "slurm" or plan.controller is None:
        raise ValueError(f"cluster {plan.name} has no Slurm controller (scheduler: {plan.scheduler})")


def _unique(kind: str, names: Sequence[str]) -> None:
    clashes = sorted(n for n, count in Counter(names).items() if count > 1)
    if clashes:
        raise ValueError(f"Slurm {kind} names clash: {', '.join(clashes)}; rename the pool")


def _domains(pool: PlannedPool) -> list[tuple[str, list[str]]]:
    """(name, node names) per fabric domain; a pool without domains is one, named after the pool."""
    names = pool.node_names()
    domains = pool.fabric_domains()
    if not domains:
        return [(pool.name, names)]
    return [(name, names[r.start : r.stop]) for name, r in domains]


def _networks(plan: ClusterPlan) -> list[tuple[str, list[PlannedPool]]]:
    """Networks that hold pools, in the plan's order, with their pools."""
    keys = [n.key for n in plan.networks if any(p.network == n.key for p in plan.pools)]
    keys += [p.network for p in plan.pools if p.network not in keys]
    return [(key, [p for p in plan.pools if p.network == key]) for key in dict.fromkeys(keys)]


# ----------------------------------------------------------------------------------------------- topology


def _pool_tree(pool: PlannedPool) -> tuple[list[Switch], str]:
    """A pool's switches (a leaf per fabric domain, a pool switch over several) and the name of its top switch."""
    leaves = [Switch(name, nodes=tuple(nodes)) for name, nodes in _domains(pool)]
    if len(leaves) == 1:
        return leaves, leaves[0].name
    return [*leaves, Switch(pool.name, switches=tuple(s.name for s in leaves))], pool.name


def site_tree_switches(plan: ClusterPlan) -> list[Switch]:
    """topology/tree with sites: a tree per owned fabric (a leaf per scalable unit under the fabric's root) and a
    tree per cloud pool (its fabric domains). No switch joins two trees, so no job spans a site and a cloud."""
    switches: list[Switch] = []
    for fabric, leaves in onprem_leaves(plan):
        switches += [Switch(name, nodes=tuple(nodes)) for name, nodes in leaves]
        if len(leaves) > 1:
            switches.append(Switch(fabric, switches=tuple(name for name, _ in leaves)))
    for pool in cloud_pools(plan):
        switches += _pool_tree(pool)[0]
    _unique("switch", [s.name for s in switches])
    return switches


def tree_switches(plan: ClusterPlan) -> list[Switch]:
    """topology/tree: leaves per fabric domain, a pool switch over more than one leaf, a root per network (with
    sites: `site_tree_switches`)."""
    if has_sites(plan):
        return site_tree_switches(plan)
    switches: list[Switch] = []
    for network, pools in _networks(plan):
        children: list[str] = []
        for pool in pools:
            leaves = [Switch(name, nodes=tuple(nodes)) for name, nodes in _domains(pool)]
            switches += leaves
            if len(leaves) > 1:
                switches.append(Switch(pool.name, switches=tuple(s.name for s in leaves)))
                children.append(pool.name)
            else:
                children.append(leaves[0].name)
        switches.append(Switch(network, switches=tuple(children)))
    _unique("switch", [s.name for s in switches])
    return switches


def blocks(plan: ClusterPlan) -> list[Block]:
    """topology/block: one block per NVLink domain where the plan has them (`plan.nvlink_domains`, by network, in
    plan order), else one per fabric domain, grouped by network."""
    if plan.nvlink_domains:
        pools = {p.name: p for p in plan.pools}
        found = [
            Block(d.id, d.nodes)
            for network, _ in _networks(plan)
            for d in plan.nvlink_domains
            if pools[d.pool].network == network
        ]
    else:
        found = [
            Block(name, tuple(nodes)) for _, pools in _networks(plan) for p in pools for name, nodes in _domains(p)
        ]
    _unique("block", [b.name for b in found])
    return found


def _block_node_counts(found: Sequence[Block]) -> list[int]:
    return [len(b.nodes) for b in found]


def block_sizes(plan: ClusterPlan) -> list[int]:
    """BlockSizes: the smallest block (every block must hold at least that many nodes), doubled while one network
    still has that many nodes in blocks (larger aggregates would only pair blocks of different clouds)."""
    found = blocks(plan)
    base = min(len(b.nodes) for b in found)
    in_blocks = {n for b in found for n in b.nodes}
    largest_network = max(
        sum(1 for p in pools for n in p.node_names() if n in in_blocks) for _, pools in _networks(plan)
    )
    sizes = [base]
    while sizes[-1] * 2 <= largest_network:
        sizes.append(sizes[-1] * 2)
    return sizes


def block_levels(sizes: Sequence[int]) -> str:
    """Slurm 23.11's spelling of the sizes: `BlockLevels=`, a bitmap of levels k = 2^k blocks (`0-2` for 18,36,72)."""
    return "0" if len(sizes) == 1 else f"0-{len(sizes) - 1}"


def topology_conf(plan: ClusterPlan, version: Version = (22, 5), settings: SlurmSettings = DEFAULT_SETTINGS) -> str:
    _check(plan)
    plugin = plugin_for(plan, version, settings)
    if plugin == "block":
        rows = [(b.name, hostlist(b.nodes)) for b in blocks(plan)]
        sizes = block_sizes(plan)
        return render(
            "slurm/topology-block.conf.j2",
            plan=plan,
            blocks=rows,
            nvlink=bool(plan.nvlink_domains),
            block_sizes=sizes if version >= BLOCK_SIZES_SINCE else None,
            block_levels=block_levels(sizes),
        )
    if has_sites(plan):
        tree = [
            (s.name, hostlist(s.nodes) if s.nodes else None, ",".join(s.switches) if s.switches else None)
            for s in site_tree_switches(plan)
        ]
        return render("slurm/topology-sites.conf.j2", plan=plan, switches=tree)
    tree = [
        (s.name, hostlist(s.nodes) if s.nodes else None, ",".join(s.switches) if s.switches else None)
        for s in tree_switches(plan)
    ]
    return render("slurm/topology-tree.conf.j2", plan=plan, switches=tree)


# ----------------------------------------------------------------------------------------------- slurm.conf


def _node_line(pool: PlannedPool, nodes: str, site_layout: bool = False) -> dict[str, object]:
    owned = is_owned(pool)
    return {
        "pool": pool.name,
        "nodes": nodes,
        "addr": None,
        "cpus": pool.vcpus_per_node,
        "layout": cpu_layout(pool),
        "real_memory": real_memory_mib(pool),
        "gres": f"gpu:{gres_type(pool)}:{pool.accelerators_per_node}" if is_gpu_pool(pool) else None,
        "features": ",".join(features(pool, site_layout)),
        "weight": (ONPREM_WEIGHT if owned else CLOUD_WEIGHT) if site_layout else None,
        "state": "UNKNOWN" if owned else "CLOUD",
    }


def _node_lines(plan: ClusterPlan) -> list[dict[str, object]]:
    """A line per pool; with sites, an owned pool's listed hosts get a line each, with their address."""
    site_layout = has_sites(plan)
    lines: list[dict[str, object]] = []
    for pool in plan.pools:
        if pool.onprem is not None and pool.onprem.hosts:
            for h in pool.onprem.hosts:
                lines.append({**_node_line(pool, h.name, site_layout), "addr": h.address})
        else:
            lines.append(_node_line(pool, hostlist(pool.node_names()), site_layout))
    return lines


def _pool_partition(pool: PlannedPool, default: bool) -> dict[str, object]:
    gpus = pool.accelerators_per_node if is_gpu_pool(pool) else 0
    return {
        "name": pool.name,
        "nodes": hostlist(pool.node_names()),
        "default": default,
        "def_cpu_per_gpu": def_cpu_per_gpu(pool),
        "def_mem_per_gpu": real_memory_mib(pool) // gpus if gpus else None,
        "exclusive": not gpus,
        "power": None,
    }


def _partitions(plan: ClusterPlan, catalog: Catalog | None = None) -> list[dict[str, object]]:
    if has_sites(plan):
        return _site_partitions(plan, catalog or load_catalog(), hybrid_allowed=not plan.nvlink_domains)
    rows = [_pool_partition(pool, i == 0) for i, pool in enumerate(plan.pools)]
    for network, pools in _networks(plan):
        if len(pools) > 1:
            rows.append(
                {
                    "name": network,
                    "nodes": hostlist(n for p in pools for n in p.node_names()),
                    "default": False,
                    "def_cpu_per_gpu": None,
                    "def_mem_per_gpu": None,
                    "exclusive": not any(is_gpu_pool(p) for p in pools),
                    "power": None,
                }
            )
    _unique("partition", [str(r["name"]) for r in rows])
    return rows


def _site_partitions(plan: ClusterPlan, catalog: Catalog, hybrid_allowed: bool = True) -> list[dict[str, object]]:
    """A partition per pool (a cloud pool's with its power-saving times) and, when the stack has both owned and
    cloud pools, the default `hybrid` partition of every node (per-GPU defaults that fit every pool). Under
    topology/block (`hybrid_allowed` False) no partition may span the site and a cloud, so there is no `hybrid`."""
    clouds = cloud_pools(plan)
    hybrid = hybrid_allowed and bool(clouds) and len(clouds) < len(plan.pools)
    rows: list[dict[str, object]] = []
    for i, pool in enumerate(plan.pools):
        row = _pool_partition(pool, i == 0 and not hybrid)
        if not is_owned(pool):
            t = cloud_times(pool, catalog)
            row["power"] = {
                "suspend_time": t.suspend_time_s,
                "resume_timeout": t.resume_timeout_s,
                "suspend_timeout": t.suspend_timeout_s,
            }
        rows.append(row)
    if hybrid:
        gpu_pools = [p for p in plan.pools if is_gpu_pool(p)]
        rows.append(
            {
                "name": HYBRID_PARTITION,
                "nodes": hostlist(n for p in plan.pools for n in p.node_names()),
                "default": True,
                "def_cpu_per_gpu": min((def_cpu_per_gpu(p) or 0) for p in gpu_pools) if gpu_pools else None,
                "def_mem_per_gpu": (
                    min(real_memory_mib(p) // p.accelerators_per_node for p in gpu_pools) if gpu_pools else None
                ),
                "exclusive": not gpu_pools,
                "power": None,
            }
        )
    _unique("partition", [str(r["name"]) for r in rows])
    return rows


def _power(plan: ClusterPlan, version: Version, settings: SlurmSettings) -> dict[str, object] | None:
    """Global power-saving lines of a plan with sites (None: the cloud-only layout)."""
    if not has_sites(plan):
        return None
    programs = burst_programs(settings)
    bursting = bool(cloud_pools(plan))
    params = ["idle_on_node_suspend"] if bursting else []
    if bursting and version < CLOUD_REG_ADDRS_UNTIL:
        params.insert(0, "cloud_reg_addrs")
    return {
        "bursting": bursting,
        "private_data_cloud": bursting and version < PRIVATE_DATA_CLOUD_UNTIL,
        "keep_power_save": bursting and version >= KEEP_POWER_SAVE_SINCE,
        "resume_program": programs["resume"],
        "suspend_program": programs["suspend"],
        "slurmctld_parameters": ",".join(params),
    }


def slurm_conf(
    plan: ClusterPlan,
    version: Version = (22, 5),
    settings: SlurmSettings = DEFAULT_SETTINGS,
    catalog: Catalog | None = None,
) -> str:
    _check(plan)
    plugin = plugin_for(plan, version, settings)
    return render(
        "slurm/slurm.conf.j2",
        plan=plan,
        version=_show(version),
        s=settings,
        controller_host=controller_host(plan, settings),
        controller_address=controller_address(plan, settings),
        topology_plugin=f"topology/{plugin}",
        nvlink=bool(plan.nvlink_domains),
        imex_switch=imex_switch(plan, version),
        nodes=_node_lines(plan),
        partitions=_partitions(plan, catalog),
        scripts=scripts(settings),
        power=_power(plan, version, settings),
        cloud=_cloud_layout(version),
    )


def _cloud_layout(version: Version) -> dict[str, bool]:
    """What the cloud-only layout writes for the release: `PrivateData=cloud` before 23.02 (a no-op after) and
    `SlurmctldParameters=cloud_reg_addrs` before 23.11 (24.11 logs "error: ... cloud_reg_addrs is defunct")."""
    return {"private_data": version < PRIVATE_DATA_CLOUD_UNTIL, "reg_addrs": version < CLOUD_REG_ADDRS_UNTIL}


def scripts(settings: SlurmSettings = DEFAULT_SETTINGS) -> dict[str, str]:
    return {kind: f"{settings.conf_dir}/{kind}.sh" for kind in ("prolog", "epilog", "healthcheck")}


# ----------------------------------------------------------------------------------------------- other files


def gres_conf(plan: ClusterPlan, settings: SlurmSettings = DEFAULT_SETTINGS) -> str:
    _check(plan)
    rows = [
        (hostlist(p.node_names()), gres_type(p), f"{settings.device_dir}/nvidia[0-{p.accelerators_per_node - 1}]")
        for p in plan.pools
        if is_gpu_pool(p)
    ]
    return render("slurm/gres.conf.j2", plan=plan, rows=rows)


def cgroup_conf(plan: ClusterPlan) -> str:
    _check(plan)
    return render("slurm/cgroup.conf.j2", plan=plan)


def _gpu_pools(plan: ClusterPlan) -> list[tuple[str, int]]:
    return [(p.name, p.accelerators_per_node) for p in plan.pools if is_gpu_pool(p)]


def _nvlink_pools(plan: ClusterPlan) -> list[str]:
    """The pools with NVLink domains, in plan order."""
    return list(dict.fromkeys(d.pool for d in plan.nvlink_domains))


def _health(settings: SlurmSettings, layer: str) -> dict[str, str]:
    return {
        "script_layer": layer,
        "health_bin_dir": settings.health_bin_dir,
        "health_config": f"{settings.conf_dir}/{HEALTH_CONFIG}",
    }


def prolog_sh(plan: ClusterPlan, version: Version = (22, 5), settings: SlurmSettings = DEFAULT_SETTINGS) -> str:
    """Prolog (PrologFlags=Alloc: at allocation, on every node of the job): aicluster-health's prolog layer, then
    DCGM diag level 1 on GPU nodes; on rack-scale nodes under a Slurm without switch/nvidia_imex, IMEX channel 0."""
    _check(plan)
    channels = [] if imex_switch(plan, version) else _nvlink_pools(plan)
    return render(
        "slurm/prolog.sh.j2",
        plan=plan,
        gpu_pools=_gpu_pools(plan),
        imex_channel_pools=channels,
        script="prolog",
        **_health(settings, "prolog"),
    )


def epilog_sh(plan: ClusterPlan, settings: SlurmSettings = DEFAULT_SETTINGS) -> str:
    """Epilog: aicluster-health's epilog layer; GPU processes left behind drain the node; after a failed job, DCGM
    diag level 2."""
    _check(plan)
    return render(
        "slurm/epilog.sh.j2", plan=plan, gpu_pools=_gpu_pools(plan), script="epilog", **_health(settings, "epilog")
    )


def healthcheck_sh(plan: ClusterPlan, settings: SlurmSettings = DEFAULT_SETTINGS) -> str:
    """HealthCheckProgram (every HealthCheckInterval on idle nodes): aicluster-health's periodic layer (GPU count
    and model, XIDs, ECC, row remapping, NVLink, PCIe width, fabric ports, mounts); on rack-scale nodes the IMEX
    daemon is READY and every GPU has joined the NVLink fabric."""
    _check(plan)
    return render(
        "slurm/healthcheck.sh.j2",
        plan=plan,
        gpu_pools=_gpu_pools(plan),
        nvlink_pools=_nvlink_pools(plan),
        script="healthcheck",
        **_health(settings, "periodic"),
    )


def files(
    plan: ClusterPlan,
    version: Version = (22, 5),
    settings: SlurmSettings = DEFAULT_SETTINGS,
    catalog: Catalog | None = None,
) -> dict[str, str]:
    """Target path -> content of every Slurm file the controller and the nodes need."""
    conf = settings.conf_dir
    paths = scripts(settings)
    return {
        f"{conf}/slurm.conf": slurm_conf(plan, version, settings, catalog),
        f"{conf}/gres.conf": gres_conf(plan, settings),
        f"{conf}/cgroup.conf": cgroup_conf(plan),
        f"{conf}/topology.conf": topology_conf(plan, version, settings),
        paths["prolog"]: prolog_sh(plan, version, settings),
        paths["epilog"]: epilog_sh(plan, settings),
        paths["healthcheck"]: healthcheck_sh(plan, settings),
        f"{conf}/{HEALTH_CONFIG}": health_json(plan, catalog, settings.scontrol),
        f"{conf}/{REPAIR_CONFIG}": repair_json(plan, catalog, settings.scontrol, conf),
    }
