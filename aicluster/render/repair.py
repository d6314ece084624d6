"""The repair configuration (`aicluster-repair.json` beside slurm.conf) that `aicluster-repair` reads on the Slurm
controller. Schema: `aicluster.repair.config.RepairConfig`.

A pure function of the plan and the catalog:
- the action per drain reason code: every XID whose immediate-action bucket data/health.yaml gives a repair for,
  and the checks' own codes (`Catalog.health.repair_actions`);
- the guard rails' defaults (circuit breaker share, repeat-offender count and window, repair timeout), from the
  same catalog section;
- the groups Pulumi keeps at their size (the cloud pools that do not burst), when `aicluster inventory` knows
  them from the stack outputs (aicluster.render.burst.fixed_node_sets): a node of one is replaced through its group;
  and those pools' nodes from the plan (`cloud_pools`), so that before then a node's replacement is held saying why;
- each owned host with a Redfish BMC (`redfish://host[/redfish/v1/Systems/ID]`, reached with https): its user name
  and the root-only file the controller's role writes its password to, named after the Pulumi secret's key
  (`aicluster:bmcPassword` -> /etc/aicluster/bmc/bmcPassword). IPMI BMCs are left out: their nodes' power cycles
  are held for a person. The password itself is never here.
"""

from __future__ import annotations

from collections.abc import Sequence

from aicluster.burst.config import AwsNodeSet, AzureNodeSet, GcpNodeSet
from aicluster.catalog import Catalog, load_catalog
from aicluster.plan import ClusterPlan
from aicluster.plan.models import OnpremHost, hostlist
from aicluster.repair.config import Bmc, RepairConfig

CONFIG_FILE = "aicluster-repair.json"
BMC_SECRET_DIR = "/etc/aicluster/bmc"


def password_file(secret_key: str) -> str:
    """The file the BMC password of a Pulumi secret key lands in on the controller."""
    return f"{BMC_SECRET_DIR}/{secret_key.partition(':')[2] or secret_key}"


def _redfish_hosts(plan: ClusterPlan) -> list[OnpremHost]:
    return [
        host
        for pool in plan.pools
        for host in (pool.onprem.hosts if pool.onprem is not None else ())
        if host.bmc and host.bmc.startswith("redfish://") and host.bmc_username and host.bmc_secret
    ]


def bmc_secrets(plan: ClusterPlan) -> list[str]:
    """The config keys of the Pulumi secrets the controller's role writes to password files (never their values)."""
    return sorted({host.bmc_secret for host in _redfish_hosts(plan) if host.bmc_secret})


def bmcs(plan: ClusterPlan) -> dict[str, Bmc]:
    out = {}
    for host in _redfish_hosts(plan):
        if host.bmc and host.bmc_username and host.bmc_secret:
            out[host.name] = Bmc(
                url="https://" + host.bmc.removeprefix("redfish://"),
                username=host.bmc_username,
                password_file=password_file(host.bmc_secret),
            )
    return out


def fixed_cloud_pools(plan: ClusterPlan) -> dict[str, str]:
    """The cloud pools Pulumi keeps at their size (not bursting, not owned, not TPU slices, which have no group to
    replace through) -> their nodes as a Slurm hostlist, from the plan (known offline too)."""
    return {
        p.name: hostlist(p.node_names())
        for p in plan.pools
        if not p.burst and p.onprem is None and p.accelerator_kind != "tpu" and p.nodes
    }


def repair_config(
    plan: ClusterPlan,
    catalog: Catalog | None = None,
    scontrol: str = "/usr/bin/scontrol",
    conf_dir: str = "/etc/slurm",
    node_sets: Sequence[AwsNodeSet | GcpNodeSet | AzureNodeSet] = (),
) -> RepairConfig:
    catalog = catalog or load_catalog()
    data = catalog.health
    limits = data.repair.limits if data is not None and data.repair is not None else None
    return RepairConfig(
        cluster=plan.name,
        scontrol=scontrol,
        log_file="/var/log/slurm/aicluster-repair.log",
        burst_config=f"{conf_dir}/aicluster-burst.json",
        actions=dict(data.repair_actions()) if data is not None else {},
        bmcs=bmcs(plan),
        node_sets=list(node_sets),
        cloud_pools=fixed_cloud_pools(plan),
        **(limits.model_dump(exclude={"source", "field_sources"}) if limits is not None else {}),
    )


def repair_json(
    plan: ClusterPlan,
    catalog: Catalog | None = None,
    scontrol: str = "/usr/bin/scontrol",
    conf_dir: str = "/etc/slurm",
    node_sets: Sequence[AwsNodeSet | GcpNodeSet | AzureNodeSet] = (),
) -> str:
    return repair_config(plan, catalog, scontrol, conf_dir, node_sets).model_dump_json(indent=2) + "\n"
