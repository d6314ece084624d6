"""`aicluster inventory --discover` end to end on AWS: Ansible's own amazon.aws.aws_ec2 plugin (from the `ansible`
package) asks a local EC2 API (moto's server) for the cluster's VMs, and the inventory gets their addresses under
the plan's node names. A replaced VM's name goes to its replacement while the others keep theirs; VMs of another
cluster or an unknown pool are reported, not used; a missing plugin is one clear error."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster.inventory import read_yaml
from tests.targets import ansible_collections

boto3 = pytest.importorskip("boto3", reason="install the dev extras: pip install -e '.[dev]'")
moto_server = pytest.importorskip("moto.server", reason="install the dev extras: pip install -e '.[dev]'")

REGION = "us-east-1"  # the p5-small stack's region
CLUSTER = "llm-dev"  # its cluster name


@pytest.fixture
def ec2() -> Iterator[tuple[Any, dict[str, str]]]:
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    env = {
        "AWS_URL": url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }
    client = boto3.client("ec2", endpoint_url=url, region_name=REGION, aws_access_key_id="testing",
                          aws_secret_access_key="testing")  # fmt: skip
    try:
        yield client, env
    finally:
        server.stop()


def launch(client: Any, count: int, **tags: str) -> list[dict[str, Any]]:
    image = client.describe_images()["Images"][0]["ImageId"]
    spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    r = client.run_instances(ImageId=image, MinCount=count, MaxCount=count, InstanceType="p5.48xlarge",
                             TagSpecifications=spec)  # fmt: skip
    return list(r["Instances"])


def discover(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aicluster.cli", "inventory", "good", "--discover"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "200", **env},
        timeout=300,
    )


def addresses(project: Path) -> dict[str, str]:
    hosts = read_yaml((project / ".work/good/inventory/hosts.yml").read_text())
    pool = hosts["all"]["children"]["pool_h100"]["hosts"]
    return {name: hv["ansible_host"] for name, hv in pool.items() if "ansible_host" in hv}


def test_discover_names_the_stack_vms_and_keeps_names_across_replacements(
    project: Path, ec2: tuple[Any, dict[str, str]]
) -> None:
    client, env = ec2
    env["ANSIBLE_COLLECTIONS_PATH"] = str(ansible_collections())
    mine = launch(client, 4, **{"aicluster:cluster": CLUSTER, "aicluster:pool": "h100"})
    launch(client, 1, **{"aicluster:cluster": "someone-else", "aicluster:pool": "h100"})  # filtered by the plugin
    (old,) = launch(client, 1, **{"aicluster:cluster": CLUSTER, "aicluster:pool": "a100"})

    first = discover(project, env)
    assert first.returncode == 0, first.stdout + first.stderr
    summary = "discovered 5 VM(s) with amazon.aws.aws_ec2: 4 named, 0 planned node(s) missing, 1 not placed"
    assert summary in first.stdout
    stray = f"not placed: aws {old['InstanceId']} ({old['InstanceId']}): pool tag 'a100' names no aws pool"
    assert stray in first.stdout
    named = addresses(project)
    assert sorted(named) == ["h100-000", "h100-001", "h100-002", "h100-003"]
    assert sorted(named.values()) == sorted(i["PrivateIpAddress"] for i in mine)
    state = project / ".work/good/nodes.yml"
    ids = yaml.safe_load(state.read_text())
    assert sorted(ids.values()) == sorted(i["InstanceId"] for i in mine)
    assert state.stat().st_mode & 0o777 == 0o600
    config = read_yaml((project / ".work/good/discover/aws_ec2.yml").read_text())
    assert config["filters"]["tag:aicluster:cluster"] == CLUSTER

    # h100-001's VM dies and the Auto Scaling group launches another
    client.terminate_instances(InstanceIds=[ids["h100-001"]])
    (new,) = launch(client, 1, **{"aicluster:cluster": CLUSTER, "aicluster:pool": "h100"})
    second = discover(project, env)
    assert second.returncode == 0, second.stdout + second.stderr
    after = addresses(project)
    assert after["h100-001"] == new["PrivateIpAddress"]
    assert {n: a for n, a in after.items() if n != "h100-001"} == {n: a for n, a in named.items() if n != "h100-001"}

    # one VM fewer than planned: its node is named as missing, the rest still get addresses
    client.terminate_instances(InstanceIds=[new["InstanceId"]])
    state.write_text("- not: [a mapping\n")  # hand-edited and broken: a warning, then names afresh
    third = discover(project, env)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "is not a node -> VM id mapping; naming the VMs afresh" in third.stderr
    assert "no VM yet for: h100-003" in third.stdout  # named afresh: the three VMs take the first three names
    assert sorted(addresses(project)) == ["h100-000", "h100-001", "h100-002"]


def test_discover_without_the_collection_is_one_clear_error(
    project: Path, ec2: tuple[Any, dict[str, str]], tmp_path: Path
) -> None:
    _, env = ec2
    (tmp_path / "empty").mkdir()
    proc = discover(project, {**env, "ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "empty")})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "discovery failed" in proc.stderr
    assert "ansible-galaxy collection install -r playbooks/requirements.yml" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (project / ".work/good/inventory/hosts.yml").exists()
