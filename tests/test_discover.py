"""Discovery: the inventory-plugin configurations per cloud, reading what the plugins answer, and naming the VMs
found after the plan's nodes (in their fabric domain, stable from one discovery to the next, nothing guessed).
The plugins themselves run against a local EC2 in tests/integration/test_discover_aws.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aicluster.catalog import Catalog
from aicluster.discover import DiscoveryError, Instance, assign, instances, list_hosts, plugin_configs
from aicluster.plan import ClusterPlan
from tests.conftest import ROOT, run_cli, write_stack
from tests.helpers import azure_cluster, azure_pool, gcp_pool, plan_of, pool, tpu_pool
from tests.targets import ansible_collections


def vm(provider: str, name: str, *, pool: str | None = "h100", cluster: str | None = None, **kw: str) -> Instance:
    return Instance(
        provider=provider,
        id=kw.pop("id", f"id-{name}"),
        name=name,
        address=kw.pop("address", f"10.0.0.{abs(hash(name)) % 250 + 1}"),
        pool=pool,
        cluster=cluster,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def three_clouds(catalog: Catalog) -> ClusterPlan:
    data = azure_cluster(
        pools=[
            pool(nodes=2),
            azure_pool(name="nd", nodes=150),
            gcp_pool(name="a3", nodes=2),
            tpu_pool(region="us-central1", zone="us-central1-a"),
        ],
        storage=[],
    )
    return plan_of(catalog, data)


def test_one_config_per_cloud_filtered_to_the_cluster(three_clouds: ClusterPlan) -> None:
    configs = plugin_configs(three_clouds, {"gcp:project": "ml-prod"})
    assert set(configs) == {"aws_ec2.yml", "azure_rm.yml", "gcp_compute.yml"}
    aws = configs["aws_ec2.yml"]
    assert aws["plugin"] == "amazon.aws.aws_ec2"
    assert aws["regions"] == ["us-east-1"]
    assert aws["filters"] == {"tag:aicluster:cluster": "nd-train", "instance-state-name": "running"}
    gcp = configs["gcp_compute.yml"]
    assert gcp["projects"] == ["ml-prod"]
    assert gcp["zones"] == ["us-central1-a"]  # the GPU pool's zone only: TPU VMs are not Compute Engine VMs
    assert gcp["filters"] == ['labels.aicluster_cluster = "nd-train"', "status = RUNNING"]
    assert configs["azure_rm.yml"]["include_vm_resource_groups"] == []  # pools are scale sets
    for config in configs.values():  # every cloud composes the same variables
        variables = config.get("compose") or config.get("hostvar_expressions")
        assert set(variables) == {
            "aicluster_provider",
            "aicluster_id",
            "aicluster_name",
            "aicluster_address",
            "aicluster_pool",
            "aicluster_cluster",
            "aicluster_created",
        } | ({"aicluster_group"} if config["plugin"].endswith("azure_rm") else set())


def test_gcp_discovery_needs_the_project(three_clouds: ClusterPlan) -> None:
    with pytest.raises(DiscoveryError, match="gcp:project"):
        plugin_configs(three_clouds, {})


def test_tpu_only_stack_has_nothing_to_discover(catalog: Catalog) -> None:
    assert plugin_configs(plan_of(catalog, {"name": "pod", "pools": [tpu_pool()]}), {}) == {}


def test_reads_the_composed_variables_and_ignores_other_hosts() -> None:
    listing = {
        "_meta": {
            "hostvars": {
                "i-1": {
                    "aicluster_provider": "aws",
                    "aicluster_id": "i-1",
                    "aicluster_name": "i-1",
                    "aicluster_address": "10.1.0.5",
                    "aicluster_pool": "h100",
                    "aicluster_cluster": "llm",
                    "aicluster_created": "2026-11-01T10:00:00+00:00",
                },
                "other": {"ansible_host": "10.9.9.9"},
            }
        }
    }
    (found,) = instances(listing)
    assert found == Instance("aws", "i-1", "i-1", "10.1.0.5", "h100", "llm", None, "2026-11-01T10:00:00+00:00")


def test_aws_vms_are_named_in_launch_order(catalog: Catalog) -> None:
    plan = plan_of(catalog, azure_cluster(pools=[pool(nodes=3)], storage=[]))
    found = [
        vm("aws", "i-c", created="2026-11-01T10:02:00Z"),
        vm("aws", "i-a", created="2026-11-01T10:00:00Z"),
        vm("aws", "i-b", created="2026-11-01T10:01:00Z"),
    ]
    result = assign(plan, found)
    assert {n: i.name for n, i in result.nodes.items()} == {"h100-000": "i-a", "h100-001": "i-b", "h100-002": "i-c"}
    assert result.addresses["h100-000"] == found[1].address
    assert not result.strays
    assert not result.missing


def test_a_vm_keeps_its_name_and_a_replacement_takes_the_free_one(catalog: Catalog) -> None:
    plan = plan_of(catalog, azure_cluster(pools=[pool(nodes=3)], storage=[]))
    previous = {"h100-000": "id-i-a", "h100-001": "id-i-b", "h100-002": "id-i-c"}
    # i-b was replaced by i-new, launched before i-a's neighbours would sort it first
    found = [vm("aws", "i-new", created="2026-01-01T00:00:00Z"), vm("aws", "i-a"), vm("aws", "i-c")]
    result = assign(plan, found, previous=previous)
    assert {n: i.name for n, i in result.nodes.items()} == {"h100-000": "i-a", "h100-001": "i-new", "h100-002": "i-c"}
    assert result.ids() == {"h100-000": "id-i-a", "h100-001": "id-i-new", "h100-002": "id-i-c"}


def test_azure_vms_take_names_of_their_own_scale_set(catalog: Catalog) -> None:
    plan = plan_of(catalog, azure_cluster(pools=[azure_pool(nodes=150)], storage=[]))
    sets = plan.pools[0].azure.scale_sets  # type: ignore[union-attr]
    assert [(s.first_node, s.nodes) for s in sets] == [(0, 100), (100, 50)]
    found = [
        vm("azure", f"{sets[1].computer_name_prefix}000001", pool=None),  # no tags on the instance: prefix decides
        vm("azure", f"{sets[0].computer_name_prefix}000000", pool=None),
        vm("azure", f"{sets[1].computer_name_prefix}000000", pool=None),
    ]
    result = assign(plan, found)
    assert {n: i.name for n, i in result.nodes.items()} == {
        "h100-000": found[1].name,
        "h100-100": found[2].name,  # same creation time: in id order
        "h100-101": found[0].name,
    }
    assert len(result.missing) == 147


def test_azure_scale_set_named_by_the_outputs_wins_over_the_prefix(catalog: Catalog) -> None:
    plan = plan_of(catalog, azure_cluster(pools=[azure_pool(nodes=150)], storage=[]))
    outputs = {"pools": {"h100": {"scale_sets": {"h100-ib0": "vmss-a1b2", "h100-ib1": "vmss-c3d4"}}}}
    found = [vm("azure", "renamed000000", group="vmss-c3d4", cluster="nd-train")]
    assert list(assign(plan, found, outputs).nodes) == ["h100-100"]


def test_gcp_vms_take_names_of_their_placement_group(catalog: Catalog) -> None:
    big = {"cidrs": {"gcp/us-central1": "10.200.0.0/14"}}  # room for 1,600 VMs' GPU NICs
    plan = plan_of(catalog, azure_cluster(pools=[gcp_pool(name="a3", nodes=1600)], storage=[], network=big))
    groups = plan.pools[0].gcp.groups  # type: ignore[union-attr]
    assert len(groups) == 2
    second = vm("gcp", f"{groups[1].hostname_prefix}-x7k2", pool="a3", cluster="nd-train")
    first = vm("gcp", f"{groups[0].hostname_prefix}-9abc", pool="a3", cluster="nd-train")
    result = assign(plan, [second, first])
    width = len(plan.pools[0].node_names()[0]) - len("a3-")
    assert result.nodes[f"a3-{0:0{width}d}"] == first
    assert result.nodes[f"a3-{groups[1].first_node:0{width}d}"] == second


def test_strays_are_reported_with_the_reason(catalog: Catalog) -> None:
    plan = plan_of(catalog, azure_cluster(pools=[pool(nodes=1)], storage=[]))
    found = [
        vm("aws", "i-mine", cluster="nd-train", created="1"),
        vm("aws", "i-extra", cluster="nd-train", created="2"),
        vm("aws", "i-theirs", cluster="other"),
        vm("aws", "i-old", pool="a100", cluster="nd-train"),
        vm("aws", "i-controller", pool=None, cluster="nd-train"),  # not a pool VM: left out, not a stray
    ]
    result = assign(plan, found)
    assert list(result.nodes) == ["h100-000"]
    reasons = {i.name: why for i, why in result.strays}
    assert reasons == {
        "i-extra": "more VMs than the 1 planned for pool h100",
        "i-theirs": "belongs to cluster 'other'",
        "i-old": "pool tag 'a100' names no aws pool of this stack",
    }


def test_gcp_hostname_outside_every_group_is_a_stray(catalog: Catalog) -> None:
    plan = plan_of(catalog, azure_cluster(pools=[gcp_pool(name="a3", nodes=2)], storage=[]))
    result = assign(plan, [vm("gcp", "hand-made-vm", pool="a3")])
    assert result.strays[0][1].startswith("hostname 'hand-made-vm' matches no scale set or placement group")
    assert result.missing == ["a3-000", "a3-001"]


def test_every_config_uses_only_options_its_plugin_documents(three_clouds: ClusterPlan) -> None:
    """The plugins' own documentation (ansible-doc over the collections of the `ansible` package) accepts every
    option and choice the configs use, so a renamed option fails here rather than at a user's `--discover`."""
    collections = ansible_collections()
    here = Path(sys.executable).parent / "ansible-doc"
    for config in plugin_configs(three_clouds, {"gcp:project": "ml-prod"}).values():
        proc = subprocess.run(
            [str(here) if here.exists() else "ansible-doc", "-t", "inventory", config["plugin"], "--json"],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections)},
        )
        assert proc.returncode == 0, proc.stderr
        options = json.loads(proc.stdout)[config["plugin"]]["doc"]["options"]
        for key, value in config.items():
            if key == "plugin":
                continue
            assert key in options, f"{config['plugin']} has no option {key}"
            choices = options[key].get("choices")
            if choices:
                assert value in choices, f"{config['plugin']} {key}={value!r} not in {choices}"


# Host variables as each plugin hands them to Ansible's Constructable before `compose` (the plugin code of the
# `ansible` 12.3.0 collections): gcp_compute the Compute API instance resource, azure_rm AzureHost.hostvars,
# aws_ec2 the snake-cased DescribeInstances record with tags as a dict.
PLUGIN_HOSTVARS = {
    "gcp": {
        "name": "a3-p0-x7k2",
        "id": "4410253977134211234",
        "creationTimestamp": "2026-11-20T09:14:03.512-08:00",
        "networkInterfaces": [{"name": "nic0", "networkIP": "10.128.0.7"}, {"name": "nic1", "networkIP": "10.0.4.7"}],
        "labels": {"aicluster_cluster": "nd-train", "aicluster_pool": "a3", "owner": "ml-platform"},
        "status": "RUNNING",
    },
    "azure": {
        "name": "nd-train-h100-ib0_3",
        "computer_name": "h100-ib0-000003",
        "vmid": "5f0c2a51-7e0a-4f7e-9d6a-0c4a4d1f4a11",
        "private_ipv4_addresses": ["10.2.0.8"],
        "public_ipv4_address": [],
        "tags": {"aicluster:cluster": "nd-train", "aicluster:pool": "h100"},
        "vmss": {
            "id": "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/s",
            "name": "nd-train-h100-ib0-vmss",
        },
        "creation_time": "2026-11-20T17:14:03.5+00:00",
        "powerstate": "running",
    },
    "aws": {
        "instance_id": "i-0a1b2c3d4e5f60718",
        "private_ip_address": "10.1.0.12",
        "launch_time": "2026-11-20T17:14:03+00:00",
        "tags": {"aicluster:cluster": "nd-train", "aicluster:pool": "h100"},
        "state": {"name": "running"},
    },
}


def compose(config: dict[str, object], hostvars: dict[str, object]) -> dict[str, object]:
    """What the plugin's Constructable step makes of `hostvars` under `config` (strict: every expression must
    evaluate)."""
    from ansible.inventory.data import InventoryData
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.inventory import BaseInventoryPlugin, Constructable
    from ansible.template import Templar, trust_as_template

    class Plugin(BaseInventoryPlugin, Constructable):  # type: ignore[misc]
        NAME = "compose-check"

    plugin = Plugin()
    plugin.inventory = InventoryData()
    plugin.templar = Templar(loader=DataLoader())
    plugin.inventory.add_host("h")
    expressions = config.get("compose") or config.get("hostvar_expressions")
    assert isinstance(expressions, dict)
    plugin._set_composite_vars({k: trust_as_template(v) for k, v in expressions.items()}, hostvars, "h", strict=True)
    return dict(plugin.inventory.get_host("h").vars)


@pytest.mark.parametrize("provider", ["gcp", "azure", "aws"])
def test_composed_variables_evaluate_on_the_plugins_host_records(three_clouds: ClusterPlan, provider: str) -> None:
    filename = {"gcp": "gcp_compute.yml", "azure": "azure_rm.yml", "aws": "aws_ec2.yml"}[provider]
    config = plugin_configs(three_clouds, {"gcp:project": "ml-prod"})[filename]
    (found,) = instances({"_meta": {"hostvars": {"h": compose(config, PLUGIN_HOSTVARS[provider])}}})
    expected = {
        "gcp": Instance("gcp", "4410253977134211234", "a3-p0-x7k2", "10.128.0.7", "a3", "nd-train", None,
                        "2026-11-20T09:14:03.512-08:00"),
        "azure": Instance("azure", "5f0c2a51-7e0a-4f7e-9d6a-0c4a4d1f4a11", "h100-ib0-000003", "10.2.0.8", "h100",
                          "nd-train", "nd-train-h100-ib0-vmss", "2026-11-20T17:14:03.5+00:00"),
        "aws": Instance("aws", "i-0a1b2c3d4e5f60718", "i-0a1b2c3d4e5f60718", "10.1.0.12", "h100", "nd-train", None,
                        "2026-11-20T17:14:03+00:00"),
    }[provider]  # fmt: skip
    assert found == expected


def test_cli_discovery_of_gcp_without_the_project_is_bad_input(project: Path) -> None:
    stack = (ROOT / "stacks" / "Pulumi.gcp-a3mega-slurm.yaml").read_text()
    assert "gcp:project" not in stack
    write_stack(project, "gcp", stack)
    proc = run_cli("inventory", "gcp", "--discover", cwd=project)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "discovering GCP nodes needs the project: set gcp:project" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (project / ".work" / "gcp").exists()  # nothing written


def test_a_missing_collection_names_the_plugin_and_the_install_line(tmp_path: Path) -> None:
    """Without the cloud's collection the message names the plugin and what to install, whole lines (it used to
    keep the last 600 characters of Ansible's output, starting mid-word: "ws_ec2': No module named ...")."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "aws_ec2.yml").write_text("plugin: amazon.aws.aws_ec2\nregions: [us-east-1]\n")
    (tmp_path / "collections").mkdir()
    env = {"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"), "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "False"}
    with pytest.raises(DiscoveryError) as raised:
        list_hosts(tmp_path / "configs", env=env)
    message = str(raised.value)
    assert message.splitlines()[0] == "discovery failed:"
    assert (
        "  the inventory plugin amazon.aws.aws_ec2 did not load (No module named 'ansible_collections.amazon'); "
        "install it: ansible-galaxy collection install -r playbooks/requirements.yml, then pip install boto3"
    ) in message.splitlines()
