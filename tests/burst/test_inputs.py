"""What the programs read: the configuration, SLURM_RESUME_FILE, `scontrol -o show node`, and the AWS API's answers."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import pytest

from aicluster.burst.aws import _instance, client_error
from aicluster.burst.config import BurstConfig, ConfigError, config_path, load
from aicluster.burst.slurm import (
    MAX_REASON,
    copy_resume_file,
    node_states,
    one_line,
    own_reason,
    parse_node_line,
    read_resume_file,
)

AWS = {"provider": "aws", "nodes": "aws-[00-03]", "region": "us-east-1", "group": "g", "instance_type": "p5.48xlarge"}


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "aicluster-burst.json"
    path.write_text(json.dumps(data))
    return path


def test_a_config_with_each_provider_loads(tmp_path: Path) -> None:
    gcp = {
        **AWS,
        "provider": "gcp",
        "region": "us-central1",
        "group": "m",
        "project": "my-project",
        "zone": "us-central1-a",
        "market": "spot",
    }
    azure = {
        **AWS,
        "provider": "azure",
        "region": "eastus",
        "group": "s",
        "subscription_id": "00000000-0000-0000-0000-000000000000",
        "resource_group": "rg",
    }
    config = load(write(tmp_path, {"cluster": "c", "node_sets": [AWS, gcp, azure]}))
    assert [s.provider for s in config.node_sets] == ["aws", "gcp", "azure"]
    assert config.node_sets[0].market == "on-demand"
    assert config.launch_wait_s == 300


@pytest.mark.parametrize(
    ("node_set", "message"),
    [
        pytest.param(
            {**AWS, "provider": "ibm"},
            "node_sets[0].provider: got 'ibm'; expected one of 'aws', 'gcp', 'azure'",
            id="unknown-provider",
        ),
        pytest.param({**AWS, "market": "reserved"}, "node_sets[0].market: got 'reserved'; Input", id="market"),
        pytest.param(
            {**AWS, "nodes": "aws 00"}, "node_sets[0].nodes: got 'aws 00'; write a Slurm hostlist", id="nodes"
        ),
        pytest.param({**AWS, "provider": "gcp"}, "node_sets[0].zone: Field required", id="gcp-needs-zone"),
        pytest.param(
            {**AWS, "groupe": "x"}, "node_sets[0].groupe: not a field of the configuration (remove it)", id="typo"
        ),
    ],
)
def test_a_bad_config_names_the_file_the_field_and_the_value(tmp_path: Path, node_set: dict, message: str) -> None:
    path = write(tmp_path, {"cluster": "c", "node_sets": [node_set]})
    with pytest.raises(ConfigError) as err:
        load(path)
    assert f"{path}: {message}" in str(err.value)


def test_two_node_sets_may_not_share_a_group(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"node_sets\[1\]\.group: got 'g'; node_sets\[0\] already uses this group"):
        load(write(tmp_path, {"cluster": "c", "node_sets": [AWS, {**AWS, "nodes": "aws-[04-07]"}]}))


def test_not_json_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{nope")
    with pytest.raises(ConfigError, match=r"x\.json: not readable JSON"):
        load(path)


def test_the_config_is_found_beside_slurm_conf_unless_named() -> None:
    assert config_path(None, {"SLURM_CONF": "/etc/slurm/slurm.conf"}) == Path("/etc/slurm/aicluster-burst.json")
    assert config_path(None, {"AICLUSTER_BURST_CONFIG": "/x.json", "SLURM_CONF": "/e/slurm.conf"}) == Path("/x.json")
    assert config_path("/y.json", {"AICLUSTER_BURST_CONFIG": "/x.json"}) == Path("/y.json")
    assert config_path(None, {}) == Path("/etc/slurm/aicluster-burst.json")


def test_the_schema_is_published_from_the_model() -> None:
    schema = BurstConfig.model_json_schema()
    assert set(schema["properties"]["node_sets"]["items"]["discriminator"]["mapping"]) == {"aws", "gcp", "azure"}


@pytest.mark.parametrize(
    ("text", "every", "jobs"),
    [
        pytest.param(  # Slurm 22.05 (what Debian's slurmctld wrote in tests/integration/test_burst.py)
            '{"jobs":[{"job_id":2,"nodes":"aws-m5-00"}],"all_nodes":"aws-m5-00"}',
            "aws-m5-00",
            [(2, "", "", "aws-m5-00")],
            id="22.05",
        ),
        pytest.param(  # later releases (power_save.shtml)
            json.dumps({"all_nodes_resume": "c-[1-3]", "jobs": [{"job_id": 9, "partition": "cloud", "features": "aws",
                        "nodes_alloc": "c-[1-4]", "nodes_resume": "c-[1-3]", "exclusive": "NO"}]}),
            "c-[1-3]",
            [(9, "cloud", "aws", "c-[1-3]")],
            id="23.02+",
        ),
    ],
)  # fmt: skip
def test_both_resume_file_layouts_are_read(text: str, every: str, jobs: list[tuple[int, str, str, str]]) -> None:
    got_every, got_jobs = read_resume_file(text)
    assert got_every == every
    assert [(j.job_id, j.partition, j.features, j.nodes_resume) for j in got_jobs] == jobs


@pytest.mark.parametrize("text", ["[]", '{"jobs": []}', '{"all_nodes": "a", "jobs": [{"nodes": "a"}]}'])
def test_a_file_that_is_not_a_resume_file_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a Slurm resume file"):
        read_resume_file(text)


def test_the_resume_file_is_copied_and_a_vanished_one_is_no_error(tmp_path: Path) -> None:
    src = tmp_path / "resume.1"
    src.write_text('{"all_nodes": "a"}')
    data, copy, problem = copy_resume_file({"SLURM_RESUME_FILE": str(src)}, tmp_path / "copies")
    assert (data, problem) == (b'{"all_nodes": "a"}', "")
    assert copy is not None
    assert copy.read_text() == '{"all_nodes": "a"}'
    src.unlink()
    data, copy, problem = copy_resume_file({"SLURM_RESUME_FILE": str(src)}, tmp_path / "copies")
    assert (data, copy) == (None, None)
    assert "No such file or directory" in problem
    assert copy_resume_file({}, tmp_path / "copies") == (None, None, "")


def test_a_node_line_keeps_a_reason_with_spaces() -> None:
    line = (
        "NodeName=aws-00 Arch=x86_64 CoresPerSocket=1 State=DOWN+CLOUD+POWERED_DOWN* NodeAddr=10.0.0.1 "
        "Reason=aicluster-resume: group g at its maximum size 0 (desired 0) [root@2026-11-24T00:17:14] Comment=(null)"
    )
    rec = parse_node_line(line)
    assert rec["NodeAddr"] == "10.0.0.1"
    assert rec["Reason"] == "aicluster-resume: group g at its maximum size 0 (desired 0) [root@2026-11-24T00:17:14]"
    assert own_reason(rec["Reason"]) == "aicluster-resume: group g at its maximum size 0 (desired 0)"
    assert node_states(rec) == {"DOWN", "CLOUD", "POWERED_DOWN"}


def test_a_reason_is_one_short_line() -> None:
    assert one_line("a\nb\t c") == "a b c"
    long = one_line("x" * 500)
    assert len(long) == MAX_REASON
    assert long.endswith("...")


def test_aws_errors_keep_the_clouds_code_and_words() -> None:
    from botocore.exceptions import ClientError

    exc = ClientError(
        {"Error": {"Code": "InsufficientInstanceCapacity", "Message": "no p5.48xlarge capacity in us-east-1a"}},
        "SetDesiredCapacity",
    )
    err = client_error(exc)
    assert err.code == "InsufficientInstanceCapacity"
    assert str(err) == "InsufficientInstanceCapacity: no p5.48xlarge capacity in us-east-1a"
    assert str(client_error(ConnectionError("refused"))) == "ConnectionError: refused"


def test_an_aws_instance_being_reclaimed_is_not_alive() -> None:
    when = datetime.datetime(2026, 11, 24, tzinfo=datetime.UTC)
    base = {"InstanceId": "i-1", "PrivateIpAddress": "10.0.0.1", "PrivateDnsName": "ip-10-0-0-1", "LaunchTime": when,
            "Tags": [{"Key": "aicluster:slurm-node", "Value": "spot-00"}]}  # fmt: skip
    running = _instance({**base, "State": {"Name": "running"}}, {"LifecycleState": "InService"})
    assert (running.alive, running.node, running.launched_s) == (True, "spot-00", when.timestamp())
    reclaimed = _instance(
        {**base, "State": {"Name": "shutting-down"}, "StateReason": {"Code": "Server.SpotInstanceTermination"}}, None
    )
    assert not reclaimed.alive
    assert reclaimed.why_not == "EC2 state shutting-down, Server.SpotInstanceTermination"
    leaving = _instance({**base, "State": {"Name": "running"}}, {"LifecycleState": "Terminating:Wait"})
    assert not leaving.alive
    assert leaving.why_not == "EC2 state running, Auto Scaling Terminating:Wait"


def test_the_programs_import_no_engine_and_no_cloud_sdk_until_a_group_is_opened() -> None:
    """They run on the Slurm controller, started by slurmctld for every resume: no Pulumi, no SDK they do not use."""
    import subprocess
    import sys

    code = (
        "import sys, aicluster.burst.resume, aicluster.burst.suspend, aicluster.burst.sync;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pulumi', 'boto3', 'google', 'azure', 'jinja2'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_published_schema_is_current_and_accepts_the_docstring_example() -> None:
    import jsonschema

    from aicluster.burst import config as module
    from aicluster.burst.config import json_schema

    root = Path(__file__).resolve().parents[2]
    published = json.loads((root / "schema" / "aicluster-burst.schema.json").read_text())
    assert published == json_schema(), "run `make schema` and commit the result"
    doc = module.__doc__ or ""
    example = doc[doc.index("    {\n") : doc.index("\n    }\n") + 6]
    lines = [re.sub(r"\s+#.*$", "", line) for line in example.splitlines()]
    data = json.loads("\n".join(lines).replace('"...",', '"00000000-0000-0000-0000-000000000000",'))
    jsonschema.validate(data, published, cls=jsonschema.Draft202012Validator)
    assert BurstConfig.model_validate(data).node_sets[1].provider == "gcp"
