"""The CLI end to end: every example stack, exit codes, JSON shape, bad input and atomic writes."""

from __future__ import annotations

import errno
import json
import re
from pathlib import Path

import pytest

from aicluster import files
from aicluster.cli import main
from tests.conftest import STACKS, run_cli, write_stack

SUMMARY_KEYS = {
    "nodes",
    "gpus",
    "cost_usd_per_hour",
    "cost_usd_per_month",
    "unpriced",
    "power_kw_it",
    "power_kw_facility",
    "carbon_t_per_month",
    "resources",
}
POOL_KEYS = {
    "name",
    "unpriced",
    "provider",
    "region",
    "zone",
    "ib_domains",
    "rollout",
    "fabric_domains",
    "instance_type",
    "market",
    "nodes",
    "gpus",
    "cost_usd_per_hour",
    "cost_usd_per_month",
    "power_kw_it",
    "power_kw_facility",
}
RESOURCE_KEYS = {"urn", "type", "name", "parent", "custom", "inputs"}
OPTIONAL_RESOURCE_KEYS = {"protect", "propertyDependencies", "ignoreChanges"}  # as in Pulumi's state, where set


def test_there_are_example_stacks() -> None:
    assert {"p5-small", "p5-capacity-block", "mixed-spot", "p5-large"} <= set(STACKS)
    assert {"gcp-a3mega-slurm", "gcp-a3ultra-reservation", "gcp-tpu-v5p", "hybrid-aws-gcp", "three-cloud"} <= set(
        STACKS
    )


@pytest.mark.parametrize("stack", STACKS)
def test_every_example_stack_validates_plans_and_previews(stack: str, tmp_path: Path) -> None:
    assert main(["validate", stack]) == 0
    assert main(["plan", stack, "--json", str(tmp_path / "plan.json")]) == 0
    out = tmp_path / "preview.json"
    assert main(["preview", stack, "--json", str(out)]) == 0

    data = json.loads(out.read_text())
    assert data["stack"] == stack
    assert data["project"] == "aicluster"
    assert set(data["summary"]) == SUMMARY_KEYS
    assert data["summary"]["resources"] == len(data["resources"]) > 0
    assert data["summary"]["gpus"] == sum(p["gpus"] for p in data["pools"]) > 0
    assert all(POOL_KEYS <= set(p) <= POOL_KEYS | {"hosts"} for p in data["pools"])
    assert all(RESOURCE_KEYS <= set(r) <= RESOURCE_KEYS | OPTIONAL_RESOURCE_KEYS for r in data["resources"])
    urns = {r["urn"] for r in data["resources"]}
    for r in data["resources"]:
        if r["type"].startswith("pulumi:providers:") and r["name"].startswith("default_"):
            assert r["parent"] is None  # the engine's default providers
        elif r["type"].startswith("pulumi:providers:"):
            assert r["parent"] in urns  # an explicit provider: the Kubernetes add-ons' own, from the kubeconfig
        else:
            assert r["parent"] in urns or r["parent"].endswith("::pulumi:pulumi:Stack::aicluster-" + stack)
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["totals"]["cost_usd_per_month"] == data["summary"]["cost_usd_per_month"]
    # every example stack passes every mandatory policy of the pack
    policy = data["policy"]
    assert [v for v in policy["violations"] if v["enforcement"] == "mandatory"] == []
    assert len(policy["passed"]) + len({v["policy"] for v in policy["violations"]}) + len(
        policy["not_applicable"]
    ) == len(policy["policies"])


def test_large_stack_has_3072_gpus(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    assert main(["preview", "p5-large", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["summary"]["gpus"] == 3072


def test_250_vm_azure_stack_is_three_infiniband_scale_sets(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    assert main(["preview", "azure-nd-h100-250", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    vmss = [r for r in data["resources"] if r["type"] == "azure-native:compute:VirtualMachineScaleSet"]
    assert sorted(r["inputs"]["sku"]["capacity"] for r in vmss) == [50, 100, 100]
    assert all(r["inputs"]["singlePlacementGroup"] is True for r in vmss)
    (pool,) = data["pools"]
    assert pool["ib_domains"] == [
        {"name": "h100-ib0", "first_node": 0, "nodes": 100},
        {"name": "h100-ib1", "first_node": 100, "nodes": 100},
        {"name": "h100-ib2", "first_node": 200, "nodes": 50},
    ]
    assert data["summary"]["gpus"] == 2000


@pytest.mark.parametrize(
    ("stack", "counts"),
    [
        pytest.param(
            "azure-nd-h100",
            {"VirtualMachineScaleSet": 1, "AmlFilesystem": 1, "CapacityPoolVolume": 1, "Subnet": 3, "NatGateway": 1},
            id="nd-h100",
        ),
        pytest.param("azure-spot", {"VirtualMachineScaleSet": 1, "AmlFilesystem": 0, "Subnet": 2}, id="spot"),
        pytest.param(
            "hybrid-aws-azure",
            {"VirtualMachineScaleSet": 1, "AmlFilesystem": 1, "LustreFileSystem": 1, "Group": 1, "Vpc": 1},
            id="hybrid",
        ),
    ],
)
def test_azure_example_stacks_have_the_expected_resources(stack: str, counts: dict[str, int], tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    assert main(["preview", stack, "--json", str(out)]) == 0
    types = [r["type"].rsplit(":", 1)[-1] for r in json.loads(out.read_text())["resources"] if r["custom"]]
    assert {k: types.count(k) for k in counts} == counts


@pytest.mark.parametrize(
    ("stack", "counts"),
    [
        pytest.param(
            "gcp-a3mega-slurm",
            # host VPC + 8 GPU VPCs, a subnet and an allow-internal rule each, plus IAP SSH
            {
                "Network": 9,
                "Subnetwork": 9,
                "Firewall": 10,
                "InstanceTemplate": 1,
                "InstanceGroupManager": 1,
                "ResourcePolicy": 1,
                "RouterNat": 1,
                "Connection": 1,
                "IAMAuditConfig": 1,
            },
            id="a3mega",
        ),
        pytest.param(
            "gcp-a3ultra-reservation",
            # host VPC, second gVNIC VPC, RoCE VPC with 8 subnets; no placement policy, no firewall on RoCE
            {
                "Network": 3,
                "Subnetwork": 10,
                "Firewall": 3,
                "InstanceTemplate": 1,
                "InstanceGroupManager": 1,
                "ResourcePolicy": 0,
            },
            id="a3ultra",
        ),
        pytest.param(
            "gcp-tpu-v5p",
            {"V2QueuedResource": 2, "V2Vm": 0, "Network": 1, "Subnetwork": 1, "InstanceTemplate": 0},
            id="v5p",
        ),
        pytest.param(
            "hybrid-aws-gcp",
            {"Group": 1, "LustreFileSystem": 1, "Vpc": 1, "InstanceGroupManager": 1, "Network": 9},
            id="hybrid-gcp",
        ),
        pytest.param(
            "three-cloud",
            {
                "Group": 1,
                "VirtualMachineScaleSet": 1,
                "InstanceGroupManager": 1,
                "AmlFilesystem": 1,
                "LustreFileSystem": 1,
            },
            id="three-cloud",
        ),
    ],
)
def test_gcp_example_stacks_have_the_expected_resources(stack: str, counts: dict[str, int], tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    assert main(["preview", stack, "--json", str(out)]) == 0
    types = [r["type"].rsplit(":", 1)[-1] for r in json.loads(out.read_text())["resources"] if r["custom"]]
    assert {k: types.count(k) for k in counts} == counts


def test_tpu_preview_shows_slices_and_unpublished_power(tmp_path: Path) -> None:
    proc = run_cli("preview", "gcp-tpu-v5p", "--json", str(tmp_path / "p.json"))
    assert "2 x v5p-256 = 128 chips on 32 TPU VM(s) per slice (4 chips each)" in " ".join(proc.stdout.split())
    data = json.loads((tmp_path / "p.json").read_text())
    (pool,) = data["pools"]
    assert pool["fabric_domains"] == [
        {"name": "v5p-s0", "first_node": 0, "nodes": 32},
        {"name": "v5p-s1", "first_node": 32, "nodes": 32},
    ]
    assert (pool["gpus"], pool["nodes"]) == (256, 64)


def test_preview_prints_resources_pools_cost_and_power() -> None:
    proc = run_cli("preview", "p5-small")
    assert proc.returncode == 0, proc.stderr
    for text in ("aws:ec2/launchTemplate:LaunchTemplate", "p5.48xlarge", "$/month", "kW IT", "no cloud account"):
        assert text in proc.stdout


def test_preview_json_is_identical_across_runs() -> None:
    first, second = run_cli("preview", "mixed-spot", "--json", "-"), run_cli("preview", "mixed-spot", "--json", "-")
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout


def test_json_to_stdout() -> None:
    proc = run_cli("preview", "p5-small", "--json", "-")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["summary"]["gpus"] == 32


# --- bad input -------------------------------------------------------------------------------------


BAD = """\
config:
  aicluster:cluster:
    name: llm
    pools:
      - name: h100
        provider: aws
        region: us-east-1
        zone: us-east-1a
        instance_type: p5.48xlarg
        nodes: 4
        market: spott
"""


def test_bad_stack_exits_2_with_located_messages_and_writes_nothing(project: Path) -> None:
    write_stack(project, "bad", BAD)
    out = project / "out" / "p.json"
    proc = run_cli("-C", str(project), "preview", "bad", "--json", str(out), "--parents")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert (
        'stacks/Pulumi.bad.yaml:11: pools[0].market: got "spott"; allowed: on-demand, spot, capacity-block, '
        'reserved (did you mean "spot"?)' in proc.stderr
    )
    assert not out.exists()
    assert not (project / "out").exists()


def test_catalog_problems_are_located_too(project: Path) -> None:
    write_stack(project, "bad", BAD.replace("spott", "spot"))
    proc = run_cli("-C", str(project), "validate", "bad")
    assert proc.returncode == 2
    assert (
        'stacks/Pulumi.bad.yaml:9: pools[0].instance_type: got "p5.48xlarg"; the catalog has no aws instance type '
        "of that name" in proc.stderr
    )
    assert 'did you mean "p5.48xlarge"?' in proc.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("config: [\n", "stacks/Pulumi.bad.yaml:2: (top level): not valid YAML", id="broken-yaml"),
        pytest.param("config:\n  aws:region: us-east-1\n", "config has no `aicluster:cluster` key", id="no-cluster"),
        pytest.param(
            "config:\n  aicluster:cluster:\n    secure: v1:abcdef\n",
            "aicluster:cluster must not be a secret",
            id="secret-cluster",
        ),
        pytest.param("- a\n- b\n", "a stack file must be a mapping", id="not-a-mapping"),
    ],
)
def test_malformed_stack_files(project: Path, text: str, message: str) -> None:
    write_stack(project, "bad", text)
    proc = run_cli("-C", str(project), "validate", "bad")
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "v1:abcdef" not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


def test_stack_file_that_is_not_utf8(project: Path) -> None:
    (project / "stacks" / "Pulumi.bad.yaml").write_bytes(b"config:\n  aicluster:cluster: \xff\xfe\n")
    proc = run_cli("-C", str(project), "validate", "bad")
    assert proc.returncode == 2
    assert "stacks/Pulumi.bad.yaml: (top level): not UTF-8 text (byte 29); save the file as UTF-8" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_broken_pulumi_yaml(project: Path) -> None:
    (project / "Pulumi.yaml").write_text("name: [\n")
    proc = run_cli("-C", str(project), "validate", "good")
    assert proc.returncode == 2
    assert "not a valid Pulumi.yaml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unwritable_json_target_is_a_clear_error(project: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = run_cli("-C", str(project), "plan", "good", "--json", str(blocker / "plan.json"))
    assert proc.returncode == 2
    assert f"error: --json {blocker}/plan.json: cannot write: {blocker} is a file, not a directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_stack_lists_the_stacks_that_exist(project: Path) -> None:
    proc = run_cli("-C", str(project), "preview", "nope")
    assert proc.returncode == 2
    assert 'stack "nope" not found' in proc.stderr
    assert "stacks that exist: good" in proc.stderr


def test_unknown_command_is_a_usage_error() -> None:
    proc = run_cli("frobnicate")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_json_path_that_is_a_directory_is_refused(project: Path) -> None:
    proc = run_cli("-C", str(project), "preview", "good", "--json", str(project))
    assert proc.returncode == 2
    assert "is a directory" in proc.stderr


def test_secure_config_values_never_appear_in_any_output(project: Path, tmp_path: Path) -> None:
    text = (project / "stacks" / "Pulumi.good.yaml").read_text()
    text = text.replace("config:\n", "config:\n  aicluster:slurmDbPassword:\n    secure: v1:c2VjcmV0LWNpcGhlcnRleHQ=\n")
    write_stack(project, "sec", text)
    out = tmp_path / "p.json"
    plan_out = tmp_path / "plan.json"
    outputs = []
    for args in (("validate", "sec"), ("plan", "sec", "--json", str(plan_out)), ("preview", "sec", "--json", str(out))):
        proc = run_cli("-C", str(project), *args)
        assert proc.returncode == 0, proc.stderr
        outputs += [proc.stdout, proc.stderr]
    outputs += [out.read_text(), plan_out.read_text()]
    assert not any("c2VjcmV0LWNpcGhlcnRleHQ" in o for o in outputs)


def test_azure_preview_names_zones_ib_domains_and_unpriced_storage() -> None:
    proc = run_cli("preview", "azure-nd-h100")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "eastus/1" in text  # Azure zones are bare numbers: shown with their region
    assert "h100: one InfiniBand domain per scale set, at most 100 VMs each: h100-ib0 (16 VMs: nodes 0-15)" in text
    assert "unpriced" in text  # Managed Lustre has no catalog price: not shown as $0.00
    assert "image microsoft-dsvm:ubuntu-hpc:2204:latest is not pinned" in text
    assert "network azure-eastus: 10.65.0.0/16 (compute 10.65.0.0/19, lustre 10.65.192.0/19" in text


# --- writing files: the user's path and the cause, never a temporary name, nothing left behind ----------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("plan", "good", "--json", "/proc/nope.json"),
            "error: --json /proc/nope.json: cannot write: the directory /proc does not take new files",
            id="json-where-no-file-can-be-created",
        ),
        pytest.param(
            ("schema", "-o", "/proc/nope/schema.json"),
            "error: -o /proc/nope/schema.json: the directory /proc/nope does not exist; create it first, or give "
            "--parents to have aicluster create it",
            id="missing-directory",
        ),
        pytest.param(
            ("report", "good", "--format", "html", "-o", "{tmp}/no/such/r.html"),
            "error: -o {tmp}/no/such/r.html: the directory {tmp}/no/such does not exist; create it first, or give "
            "--parents to have aicluster create it",
            id="report-into-a-mistyped-directory",
        ),
        pytest.param(
            ("schema", "-o", "/proc/nope/schema.json", "--parents"),
            "error: -o /proc/nope/schema.json: cannot create the directory /proc/nope",
            id="missing-directory-that-cannot-be-created",
        ),
        pytest.param(("schema", "-o", "{tmp}"), "error: -o {tmp}: is a directory; give a file name", id="schema-dir"),
        pytest.param(
            ("report", "good", "--format", "md", "-o", "{tmp}"),
            "error: -o {tmp}: is a directory; give a file name",
            id="report-dir",
        ),
        pytest.param(
            ("preview", "good", "--json", "{tmp}/file/p.json"),
            "error: --json {tmp}/file/p.json: cannot write: {tmp}/file is a file, not a directory",
            id="under-a-file",
        ),
    ],
)
def test_write_errors_name_the_users_path_and_the_cause(
    project: Path, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    (tmp_path / "file").write_text("x")
    before = sorted(tmp_path.rglob("*"))
    proc = run_cli("-C", str(project), *(a.format(tmp=tmp_path) for a in args))
    assert proc.returncode == 2, proc.stderr
    assert message.format(tmp=tmp_path) in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
    assert not re.search(r"\.(nope|schema|p)\.json\.\w+|/\.\w+\.\w{8}", proc.stderr)  # no temporary file name
    assert sorted(tmp_path.rglob("*")) == before


def test_a_failed_write_removes_its_temporary_file_and_the_directories_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(src: str, dst: Path) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", src)

    monkeypatch.setattr(files.os, "replace", refuse)
    target = tmp_path / "new" / "deeper" / "out.json"
    with pytest.raises(files.WriteError) as caught:
        files.write_atomic(target, "{}\n", flag="--json")
    assert str(caught.value) == f"--json {target}: cannot write: permission denied (cannot write in {target.parent})"
    assert list(tmp_path.iterdir()) == []


def test_write_atomic_replaces_a_file_and_sets_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "a" / "out.txt"
    files.write_atomic(target, "one\n")
    files.write_atomic(target, "two\n", mode=0o600)
    assert target.read_text() == "two\n"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["out.txt"]
