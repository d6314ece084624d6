"""`aicluster inventory` carries what the monitoring roles need, for every example Slurm stack: the exporters'
ports and dcgm-exporter's counters for every node, and the controller's Prometheus files rendered by
aicluster.monitoring (the files `aicluster monitoring` writes, byte for byte), with remote_write to the managed
workspace once the stack outputs name it. The rendered configuration passes promtool."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.inventory import inventory, read_yaml, stack_addresses
from aicluster.monitoring import render
from aicluster.monitoring.scrape import counters_csv
from tests.conftest import KUBERNETES_STACKS, ROOT, SLURM_STACKS
from tests.helpers import cluster, plan_of
from tests.targets import system_tool

SLURM_VERSION = (25, 5)  # every example stack's pools, rack-scale blocks included
URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0123/api/v1/remote_write"


def stack_cluster(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text(encoding="utf-8"))
    return copy.deepcopy(doc["config"]["aicluster:cluster"])


def group_vars(files: dict[str, str], group: str) -> dict[str, Any]:
    doc = read_yaml(files[f"group_vars/{group}.yml"])
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("stack", SLURM_STACKS)
def test_every_slurm_stack_renders_the_monitoring_roles_variables(catalog: Catalog, stack: str) -> None:
    plan = plan_of(catalog, stack_cluster(stack))
    files = inventory(plan, {}, {}, "offline preview", slurm_version=SLURM_VERSION, catalog=catalog)
    every = group_vars(files, "all")
    exporters = catalog.monitoring.exporters  # type: ignore[union-attr]
    assert every["node_exporter_port"] == exporters.node_exporter_port
    assert every["dcgm_exporter_port"] == exporters.dcgm_exporter_port
    assert every["dcgm_exporter_counters"] == counters_csv()
    assert every["monitoring_prometheus"] == plan.monitoring.prometheus
    controller = group_vars(files, "slurm_controller")
    written = render(plan, catalog, addresses=stack_addresses(plan))  # owned hosts are scraped at their address
    expected = {k: v for k, v in written.items() if k == "prometheus.yml" or k.split("/")[0] in ("rules", "targets")}
    assert controller["prometheus_files"] == expected
    # the role installs what prometheus.yml scrapes: both read monitoring.slurm_exporter (none by default)
    assert controller["slurm_exporter_source"] == plan.monitoring.slurm_exporter
    assert controller["slurm_exporter_port"] == exporters.slurm_exporter_port
    assert ("targets/slurm.yml" in expected) == (plan.monitoring.slurm_exporter != "none")
    # a managed stack's controller writes to a workspace the offline preview cannot name yet (p5-large)
    waiting = plan.monitoring.collector == "remote-write"
    assert ("prometheus_remote_write_missing" in controller) == waiting


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_kubernetes_stacks_have_no_inventory_to_carry_them(catalog: Catalog, stack: str) -> None:
    from aicluster.inventory import NoInventoryError

    with pytest.raises(NoInventoryError):
        inventory(plan_of(catalog, stack_cluster(stack)), {}, {}, "offline preview", catalog=catalog)


def test_managed_writes_to_the_workspace_the_outputs_name(catalog: Catalog, tmp_path: Path) -> None:
    plan = plan_of(catalog, cluster(monitoring={"prometheus": "managed"}))
    outputs = {"monitoring": {"service": "amazon-managed-prometheus", "remote_write_url": URL}}
    addresses = {"h100-000": "10.0.1.5", "h100-001": "fd00::7"}
    files = inventory(plan, outputs, addresses, "pulumi stack output", catalog=catalog)
    controller = group_vars(files, "slurm_controller")
    assert "prometheus_remote_write_missing" not in controller
    config = yaml.safe_load(controller["prometheus_files"]["prometheus.yml"])
    assert config["remote_write"] == [{"url": URL, "sigv4": {"region": "us-east-1"}}]
    assert group_vars(files, "all")["monitoring_prometheus"] == "managed"
    # nodes the inventory has an address for are scraped there, named; the others by name
    node_targets = yaml.safe_load(controller["prometheus_files"]["targets/node.yml"])
    assert {"targets": ["10.0.1.5:9100"], "labels": {"pool": "h100", "node": "h100-000"}} in node_targets
    assert {"targets": ["[fd00::7]:9100"], "labels": {"pool": "h100", "node": "h100-001"}} in node_targets
    assert {"targets": ["h100-002:9100", "h100-003:9100"], "labels": {"pool": "h100"}} in node_targets

    promtool = system_tool("promtool", "prometheus")
    for rel, text in controller["prometheus_files"].items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    check = subprocess.run(
        [promtool, "check", "config", str(tmp_path / "prometheus.yml")], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_managed_before_up_says_the_workspace_is_not_known_yet(catalog: Catalog) -> None:
    plan = plan_of(catalog, cluster(monitoring={"prometheus": "managed"}))
    files = inventory(plan, {"monitoring": {"remote_write_url": "<computed>"}}, {}, "offline preview", catalog=catalog)
    controller = group_vars(files, "slurm_controller")
    assert "run `pulumi up`" in controller["prometheus_remote_write_missing"]
    assert "Amazon Managed Service for Prometheus" in controller["prometheus_remote_write_missing"]
    assert "remote_write" not in yaml.safe_load(controller["prometheus_files"]["prometheus.yml"])


def test_a_chosen_slurm_exporter_reaches_the_role_and_prometheus_alike(catalog: Catalog) -> None:
    plan = plan_of(catalog, stack_cluster("p5-small") | {"monitoring": {"slurm_exporter": "url"}})
    files = inventory(plan, {}, {}, "offline preview", slurm_version=SLURM_VERSION, catalog=catalog)
    controller = group_vars(files, "slurm_controller")
    assert controller["slurm_exporter_source"] == "url"
    assert {"targets/slurm.yml", "rules/slurm.yml"} <= set(controller["prometheus_files"])
    scrape = yaml.safe_load(controller["prometheus_files"]["prometheus.yml"])["scrape_configs"]
    assert "slurm" in {j["job_name"] for j in scrape}
    # the role gets the catalog's release and the exporter's arguments: listening where Prometheus scrapes, and
    # without the collectors whose commands need slurmdbd (the controller runs none)
    release = catalog.monitoring.slurm_exporter if catalog.monitoring else None
    assert release is not None
    target = yaml.safe_load(controller["prometheus_files"]["targets/slurm.yml"])[0]["targets"][0]
    assert controller["slurm_exporter_args"] == [
        f"--web.listen-address=:{target.rsplit(':', 1)[1]}",
        "--no-collector.fairshare",
        "--no-collector.sacct_efficiency",
    ]
    assert controller["slurm_exporter_version"] == release.version
    assert controller["slurm_exporter_archives"] == release.archives
    assert set(release.archives) == {"x86_64", "aarch64"}
    assert controller["slurm_exporter_checksums"].endswith(f"/v{release.version}/slurm_exporter_checksums.txt")
    # none: the role installs nothing, so it is handed nothing to install
    plan = plan_of(catalog, stack_cluster("p5-small"))
    files = inventory(plan, {}, {}, "offline preview", slurm_version=SLURM_VERSION, catalog=catalog)
    controller = group_vars(files, "slurm_controller")
    assert controller["slurm_exporter_source"] == "none"
    handed = {k for k in controller if k.startswith("slurm_exporter_")}
    assert handed == {"slurm_exporter_source", "slurm_exporter_port"}
