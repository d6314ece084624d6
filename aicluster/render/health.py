"""The node health checker's configuration (`aicluster-health.json` beside slurm.conf), read by `aicluster-health`
(aicluster/health) on every node. Schema: `aicluster.health.config.HealthConfig`.

A pure function of the plan and the catalog:
- per pool: the GPUs a node must list (the plan's accelerators per node) and the model nvidia-smi must name (the
  catalog accelerator's model token, e.g. `H100` from "NVIDIA H100 SXM5 80GB"); NVLink when the accelerator has
  a scale-up link; the RDMA fabric (InfiniBand or EFA) and, where data/health.yaml has the instance type, its port
  count and rate (AzNHC's figures); other instance types get "ports present and ACTIVE" with no rate;
- the XID table (each XID's name, NVIDIA's immediate action, whether it drains), and the check rules;
- the file systems of the plan, on the pools of their network: mounted; Lustre also written to (NFS is mounted
  only: its default root_squash makes a root write fail on a healthy server);
- node names that are not `<pool>-<index>` (a site's hosts) mapped to their pool.
"""

from __future__ import annotations

import re

from aicluster.catalog import Catalog, load_catalog
from aicluster.health.config import HealthConfig, Mount, PoolHealth, Tools, XidRule
from aicluster.plan import ClusterPlan, PlannedPool
from aicluster.plan.models import PlannedFilesystem

CONFIG_FILE = "aicluster-health.json"
RDMA_FABRICS = ("infiniband", "efa")


def gpu_model(accelerator_name: str | None) -> str | None:
    """The model token nvidia-smi's name carries: "NVIDIA H100 SXM5 80GB" -> "H100"; None: no token."""
    m = re.search(r"\b([A-Z]{1,2}\d{2,3}[A-Z]?)\b", (accelerator_name or "").removeprefix("NVIDIA "))
    return m.group(1) if m else None


def pool_health(pool: PlannedPool, catalog: Catalog, filesystems: tuple[PlannedFilesystem, ...] = ()) -> PoolHealth:
    gpu = pool.accelerator_kind == "gpu"
    acc = catalog.accelerators.get(pool.accelerator) if pool.accelerator else None
    fabric = pool.fabric if pool.fabric in RDMA_FABRICS else None
    known = catalog.health.thresholds_for(pool.provider, pool.instance_type) if catalog.health else None
    return PoolHealth(
        gpus=pool.accelerators_per_node if gpu else 0,
        gpu_model=gpu_model(pool.accelerator_name) if gpu else None,
        nvlink=gpu and acc is not None and acc.interconnect_gb_s is not None,
        fabric="infiniband" if fabric == "infiniband" else "efa" if fabric == "efa" else None,
        ib_device_prefix=known.ib_device_prefix if known and fabric == "infiniband" else None,
        ib_ports=known.ib_ports if known and fabric == "infiniband" else None,
        ib_rate_gbps=known.ib_rate_gbps if known and fabric == "infiniband" else None,
        mounts=tuple(
            Mount(path=fs.mount, write_check=fs.kind == "lustre") for fs in filesystems if fs.network == pool.network
        ),
    )


def health_config(
    plan: ClusterPlan, catalog: Catalog | None = None, scontrol: str = "/usr/bin/scontrol"
) -> HealthConfig:
    catalog = catalog or load_catalog()
    data = catalog.health
    nodes = {
        name: pool.name for pool in plan.pools for name in pool.node_names() if re.sub(r"-\d+$", "", name) != pool.name
    }
    return HealthConfig(
        tools=Tools(scontrol=scontrol),
        pools={p.name: pool_health(p, catalog, plan.filesystems) for p in plan.pools},
        nodes=nodes,
        xids={str(x.xid): XidRule(name=x.label, action=x.action, drain=x.drains) for x in data.xids} if data else {},
        **(data.rules.model_dump(exclude={"source", "field_sources"}) if data else {}),
    )


def health_json(plan: ClusterPlan, catalog: Catalog | None = None, scontrol: str = "/usr/bin/scontrol") -> str:
    return health_config(plan, catalog, scontrol).model_dump_json(indent=2) + "\n"
