"""The bursting configuration rendered for aicluster-resume/-suspend/-burst-sync: the plan's cloud nodes, the groups the
components create (from the stack outputs), loaded by the programs' own reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aicluster.burst.config import load
from aicluster.catalog import Catalog
from aicluster.inventory import inventory, read_yaml
from aicluster.plan import ClusterPlan
from aicluster.render.burst import BurstConfigUnknown, burst_config, burst_json
from aicluster.schedulers.slurm.render import SlurmSettings, slurm_conf
from tests.helpers import SSH_KEY, azure_pool, cluster, hybrid_site_cluster, onprem_cluster, plan_of
from tests.schedulers.slurm.test_render import golden

OUTPUTS: dict[str, Any] = {
    "pools": {
        "p5": {"asg_name": "hybrid-fra1-p5-asg-5d1e0c7"},
        "a3": {"group_names": {"a3-p0": "hybrid-fra1-a3-a3-p0-3b9f2a1"}},
    }
}
CONFIG = {"gcp:project": "ml-burst-1234"}


@pytest.fixture
def hybrid(catalog: Catalog) -> ClusterPlan:
    return plan_of(catalog, hybrid_site_cluster())


def test_golden_burst_config(hybrid: ClusterPlan) -> None:
    text = burst_json(hybrid, OUTPUTS, CONFIG)
    assert text is not None
    golden("hybrid-site/aicluster-burst.json", text)


def test_the_programs_read_it_and_it_names_the_cloud_nodes_and_their_groups(
    hybrid: ClusterPlan, tmp_path: Path
) -> None:
    path = tmp_path / "aicluster-burst.json"
    path.write_text(burst_json(hybrid, OUTPUTS, CONFIG, SlurmSettings(log_dir="/l", state_save_location="/s")) or "")
    config = load(path)  # the programs' own reader and schema
    assert config.cluster == "hybrid-fra1"
    assert (config.log_file, config.state_dir, config.scontrol) == (
        "/l/aicluster-burst.log",
        "/s/aicluster-burst",
        "/usr/bin/scontrol",  # slurmctld runs the programs with no PATH
    )
    aws, gcp = config.node_sets
    assert (aws.provider, aws.nodes, aws.group, aws.region) == (
        "aws",
        "p5-[000-003]",
        "hybrid-fra1-p5-asg-5d1e0c7",
        "us-east-1",
    )
    assert (aws.instance_type, aws.market) == ("p5.48xlarge", "spot")
    assert gcp.model_dump() == {
        "provider": "gcp",
        "nodes": "a3-[000-007]",
        "region": "us-east5",
        "group": "hybrid-fra1-a3-a3-p0-3b9f2a1",
        "instance_type": "a3-megagpu-8g",
        "market": "on-demand",
        "project": "ml-burst-1234",
        "zone": "us-east5-a",
    }
    # the hostlists are the ones of slurm.conf's CLOUD node lines, and no owned node is in a set
    text = slurm_conf(hybrid)
    assert {f"NodeName={s.nodes}" for s in config.node_sets} == {
        line.split()[0] for line in text.splitlines() if line.startswith("NodeName=") and "State=CLOUD" in line
    }
    # resume gives up before the shortest ResumeTimeout (GCP's 300 s), so it marks the nodes down with the reason
    assert config.launch_wait_s == 240


@pytest.mark.parametrize(
    ("outputs", "config", "message"),
    [
        pytest.param({}, CONFIG, "pool p5: the Auto Scaling group's name is not known yet", id="not-deployed"),
        pytest.param(
            {"pools": {"p5": {"asg_name": "<computed>"}}},
            CONFIG,
            "Auto Scaling group's name is not known yet",
            id="offline-preview",
        ),
        pytest.param(OUTPUTS, {}, r"pool a3 \(GCP\) needs gcp:project in the stack.s config", id="no-gcp-project"),
    ],
)
def test_nothing_is_rendered_while_the_stack_does_not_say_what_it_needs(
    hybrid: ClusterPlan, outputs: dict[str, Any], config: dict[str, str], message: str
) -> None:
    with pytest.raises(BurstConfigUnknown, match=message):
        burst_config(hybrid, outputs, config)


def test_azure_scale_sets_with_their_resource_group_and_subscription(catalog: Catalog) -> None:
    data = onprem_cluster(
        pools=[{"name": "h100", "provider": "onprem", "site": "fra1", "instance_type": "dgx-h100", "nodes": 32},
               azure_pool(name="nd", nodes=150)],
        access={"ssh_public_keys": [SSH_KEY]},
    )  # fmt: skip
    p = plan_of(catalog, data)
    nd = p.pools[1]
    assert nd.azure is not None
    outputs = {
        "pools": {"nd": {"scale_sets": {s.name: f"vmss-{s.name}" for s in nd.azure.scale_sets}}},
        "networks": {nd.network: {"resource_group": "rg-hybrid"}},
    }
    config = burst_config(p, outputs, {"azure-native:subscriptionId": "00000000-0000-0000-0000-000000000000"})
    assert config is not None
    assert [(s.nodes, s.group) for s in config.node_sets] == [
        ("nd-[000-099]", "vmss-nd-ib0"),  # one node set per scale set (one InfiniBand domain)
        ("nd-[100-149]", "vmss-nd-ib1"),
    ]
    assert {(s.provider, s.resource_group, s.subscription_id) for s in config.node_sets} == {  # type: ignore[union-attr]
        ("azure", "rg-hybrid", "00000000-0000-0000-0000-000000000000")
    }
    with pytest.raises(BurstConfigUnknown, match="azure-native:subscriptionId"):
        burst_config(p, outputs, {})


def test_clouds_without_a_site_do_not_burst(catalog: Catalog) -> None:
    assert burst_json(plan_of(catalog, cluster()), {}, {}) is None


def test_the_inventory_installs_it_with_the_slurm_files_once_the_groups_are_known(hybrid: ClusterPlan) -> None:
    files = inventory(hybrid, OUTPUTS, {}, "pulumi stack output", stack_config=CONFIG)
    all_vars = read_yaml(files["group_vars/all.yml"])
    assert json.loads(all_vars["slurm_files"]["/etc/slurm/aicluster-burst.json"])["cluster"] == "hybrid-fra1"
    assert "burst_config_missing" not in all_vars
    offline = read_yaml(inventory(hybrid, {}, {}, "offline preview", stack_config=CONFIG)["group_vars/all.yml"])
    assert "/etc/slurm/aicluster-burst.json" not in offline["slurm_files"]
    assert "is not known yet (deploy the stack with `pulumi up`" in offline["burst_config_missing"]


def test_the_inventory_names_the_providers_and_the_pyproject_pins_the_burst_role_installs(hybrid: ClusterPlan) -> None:
    import tomllib

    from aicluster.inventory import PYPROJECT

    project = tomllib.loads(PYPROJECT.read_text())["project"]
    pydantic = [r for r in project["dependencies"] if r.startswith("pydantic==")]
    extras = project["optional-dependencies"]
    all_vars = read_yaml(
        inventory(hybrid, OUTPUTS, {}, "pulumi stack output", stack_config=CONFIG)["group_vars/all.yml"]
    )
    assert all_vars["slurm_burst_providers"] == ["aws", "gcp"]
    assert all_vars["slurm_burst_requirements"] == [*pydantic, *extras["aws"], *extras["gcp"]]
    # no configuration yet (offline), or no burst pool: nothing for the role to install
    offline = read_yaml(inventory(hybrid, {}, {}, "offline preview", stack_config=CONFIG)["group_vars/all.yml"])
    assert "slurm_burst_providers" not in offline


def test_burst_requirements_come_from_the_installed_metadata_without_a_checkout(tmp_path: Path) -> None:
    from aicluster.inventory import program_requirements

    from_checkout = program_requirements(["azure", "aws"])
    assert from_checkout[0].startswith("pydantic==")
    assert program_requirements(["azure", "aws"], tmp_path / "pyproject.toml") == from_checkout


def test_burst_requirements_name_the_missing_extra(tmp_path: Path) -> None:
    from aicluster.inventory import program_requirements

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\ndependencies = ["pydantic==2.14.3"]\n[project.optional-dependencies]\naws = []\n')
    with pytest.raises(ValueError, match=r"an extra per bursting provider .* \(missing: gcp\)"):
        program_requirements(["aws", "gcp"], pyproject)


def test_the_burst_role_installs_the_programs_slurm_conf_names(root: Path) -> None:
    """Where: tests/playbooks/test_programs.py (the shared aicluster_programs role's bin_dir is burst_bin_dir)."""
    import yaml

    from aicluster.schedulers.slurm.render import RESUME_PROGRAM, SUSPEND_PROGRAM

    defaults = yaml.safe_load((root / "playbooks/roles/slurm_burst/defaults/main.yml").read_text())
    programs = defaults["slurm_burst_programs"]
    assert programs[RESUME_PROGRAM] == "aicluster.burst.resume"
    assert programs[SUSPEND_PROGRAM] == "aicluster.burst.suspend"
