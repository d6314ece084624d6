"""The repair configuration rendered for aicluster-repair: for every example stack with Slurm, beside
aicluster-health.json, loaded by the program's own reader; the catalog's actions, the owned hosts' Redfish BMCs, and
the groups of the cloud pools Pulumi keeps at their size once the stack outputs name them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aicluster.catalog import Catalog
from aicluster.health.checks import CHECKS
from aicluster.inventory import inventory, read_yaml
from aicluster.render.repair import repair_config, repair_json
from aicluster.repair.config import load
from aicluster.schedulers.slurm.render import files
from tests.conftest import SLURM_STACKS
from tests.helpers import cluster, hybrid_site_cluster, onprem_cluster, onprem_pool, plan_of
from tests.schedulers.slurm.test_render import golden, stack_plan


@pytest.mark.parametrize("stack", SLURM_STACKS)
def test_every_slurm_stack_renders_a_configuration_the_program_loads(stack: str, tmp_path: Path) -> None:
    rendered = files(stack_plan(stack), (24, 11))  # every stack, rack-scale ones too
    path = tmp_path / "aicluster-repair.json"
    path.write_text(rendered["/etc/slurm/aicluster-repair.json"])
    config = load(path)
    assert config.actions["XID79"] == "power_cycle"  # RESTART_BM: a full power cycle
    assert config.actions["XID48"] == "reset_gpu"
    assert config.actions["XID54"] == "hold"  # CHECK_MECHANICALS
    assert (config.max_share_in_repair, config.repeat_count, config.repeat_window_s) == (0.5, 5, 7 * 86400)
    assert config.burst_config == "/etc/slurm/aicluster-burst.json"


def test_every_code_the_checker_drains_with_has_a_repair_decision(catalog: Catalog) -> None:
    """A code with no action is held; the checks' own codes all have a decision with a source, and so does every
    XID whose bucket is a node fault."""
    assert catalog.health is not None
    actions = catalog.health.repair_actions()
    codes = {"CHECK_FAILED", *(c for _, owned in CHECKS.values() for c in owned)} - {"GPU_THROTTLE"}  # never drains
    assert sorted(codes - set(actions)) == []
    no_bucket = sorted(x.xid for x in catalog.health.xids if x.drains and f"XID{x.xid}" not in actions)
    # XIDs some tool treats as fatal but no source read gives an immediate action: held for a person
    assert all(x.action is None for x in catalog.health.xids if x.xid in no_bucket)


def test_golden_hybrid_site(catalog: Catalog) -> None:
    golden("hybrid-site/aicluster-repair.json", repair_json(plan_of(catalog, hybrid_site_cluster())))


def test_owned_hosts_with_a_redfish_bmc_get_its_url_user_and_password_file(catalog: Catalog) -> None:
    hosts = [
        {"name": "dgx-000", "address": "10.200.1.10", "bmc": "redfish://10.200.9.10/redfish/v1/Systems/1",
         "bmc_username": "admin", "bmc_secret": "aicluster:bmcPassword"},
        {"name": "dgx-001", "address": "10.200.1.11", "bmc": "redfish://10.200.9.11", "bmc_username": "ops",
         "bmc_secret": "aicluster:rackB"},
        {"name": "dgx-002", "address": "10.200.1.12", "bmc": "ipmi://10.200.9.12:623", "bmc_username": "admin",
         "bmc_secret": "aicluster:bmcPassword"},
        {"name": "dgx-003", "address": "10.200.1.13"},
    ]  # fmt: skip
    plan = plan_of(catalog, onprem_cluster(pools=[onprem_pool(nodes=4, hosts=hosts)]))
    bmcs = repair_config(plan, catalog).bmcs
    assert sorted(bmcs) == ["dgx-000", "dgx-001"]  # IPMI and no BMC: their power cycles are held
    assert bmcs["dgx-000"].url == "https://10.200.9.10/redfish/v1/Systems/1"
    assert bmcs["dgx-000"].username == "admin"
    assert bmcs["dgx-000"].password_file == "/etc/aicluster/bmc/bmcPassword"
    assert bmcs["dgx-001"].url == "https://10.200.9.11"
    assert bmcs["dgx-001"].password_file == "/etc/aicluster/bmc/rackB"


def test_the_inventory_adds_the_groups_pulumi_keeps_at_their_size(catalog: Catalog) -> None:
    plan = plan_of(catalog, cluster())
    pool = plan.pools[0]
    outputs = {"pools": {pool.name: {"asg_name": f"{plan.name}-{pool.name}-asg-5d1e0c7"}}}
    slurm_files = read_yaml(inventory(plan, outputs, {}, "pulumi stack output")["group_vars/all.yml"])["slurm_files"]
    config = json.loads(slurm_files["/etc/slurm/aicluster-repair.json"])
    assert config["node_sets"] == [
        {"provider": "aws", "nodes": f"{pool.name}-[000-{pool.nodes - 1:03d}]", "region": pool.region,
         "group": f"{plan.name}-{pool.name}-asg-5d1e0c7", "instance_type": pool.instance_type,
         "market": "on-demand", "endpoint_url": None},
    ]  # fmt: skip
    # not deployed yet: no group known, the configuration without it (those nodes' replacements are held)
    offline = read_yaml(inventory(plan, {}, {}, "offline preview")["group_vars/all.yml"])["slurm_files"]
    assert json.loads(offline["/etc/slurm/aicluster-repair.json"])["node_sets"] == []
