"""aicluster-repair against a real slurmctld (Debian's 22.05, the hybrid site's rendered configuration: 128 owned
nodes, 4 AWS and 8 GCP cloud nodes), a Redfish BMC (sushy-tools' emulator) and a local EC2 + Auto Scaling API (moto's
server). Faults drain nodes with parseable reasons, as aicluster-health writes them; one pass of `aicluster-repair`
(its real main(), its real scontrol calls) then repairs them: an owned node power-cycled through its BMC, another
rebooted through Slurm, a burst node's instance deleted through its group, a node of a fixed-size group replaced,
and holds for a person. Someone else's drain is left alone. The circuit breaker and the repeat-offender rule hold.

Needs Slurm (apt-get install slurmctld slurm-client) and the dev extras (boto3, moto[server], sushy-tools); skipped
without them, except with CI=true."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicluster.burst.cloud import NODE_TAG
from aicluster.health.reasons import format_reason, parse_reason
from aicluster.render.repair import repair_config
from aicluster.repair.cli import main
from tests.integration.test_slurmctld import HYBRID_SITE, Controller, controller
from tests.repair.bmc import USER, Emulator, emulator
from tests.targets import unavailable

pytestmark = pytest.mark.slow
__all__ = ["controller"]  # the fixture, imported for use here

REGION = "us-east-1"
TYPE = "m5.large"


def show(ctl: Controller, node: str) -> tuple[set[str], str | None]:
    out = ctl.run("scontrol", "-o", "show", "node", node).stdout
    state = re.search(r"\bState=(\S+)", out)
    assert state is not None, out
    reason = re.search(r"\bReason=(.*?) \[[^\]]+\]", out)
    return {s.rstrip("*") for s in state.group(1).split("+")}, reason.group(1) if reason else None


def drain(ctl: Controller, node: str, reason: str) -> None:
    ctl.run("scontrol", "update", f"nodename={node}", "state=DRAIN", f"reason={reason}")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    try:
        import boto3
        from moto import server
    except ImportError:
        unavailable("boto3 and moto[server] are not installed", "install the dev extras: pip install -e '.[dev]'")
        raise
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    moto = server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    url = f"http://{host}:{port}"
    kw = {"endpoint_url": url, "region_name": REGION}
    ec2, asg = boto3.client("ec2", **kw), boto3.client("autoscaling", **kw)
    image = ec2.describe_images()["Images"][0]["ImageId"]
    for group in ("burst", "fixed"):
        ec2.create_launch_template(
            LaunchTemplateName=group, LaunchTemplateData={"ImageId": image, "InstanceType": TYPE}
        )
        asg.create_auto_scaling_group(AutoScalingGroupName=group, MinSize=0, MaxSize=4, DesiredCapacity=1,
                                      LaunchTemplate={"LaunchTemplateName": group, "Version": "$Latest"},
                                      AvailabilityZones=[f"{REGION}a"])  # fmt: skip
    try:
        yield {"url": url, "ec2": ec2, "asg": asg}
    finally:
        moto.stop()


def members(aws: dict[str, Any], group: str) -> list[dict[str, Any]]:
    found = aws["asg"].describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"][0]
    return list(found["Instances"])


def state_of(aws: dict[str, Any], instance: str) -> str:
    return str(
        aws["ec2"].describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0]["State"]["Name"]
    )


def write_config(ctl: Controller, base: Path, aws: dict[str, Any] | None, emu: Emulator | None, **extra: Any) -> Path:
    """The configuration `aicluster inventory` renders for the plan, pointed at this test's scontrol, state
    directory, BMC and cloud groups."""
    node_set = {"provider": "aws", "region": REGION, "instance_type": TYPE}
    burst = base / "aicluster-burst.json"
    fields: dict[str, Any] = {"scontrol": "scontrol", "state_dir": str(base / "repair"), "log_file": None}
    if aws is not None:
        burst.write_text(json.dumps({
            "cluster": "repair-test", "state_dir": str(base / "burst"), "lock_wait_s": 30,
            "node_sets": [{**node_set, "nodes": "p5-[000-001]", "group": "burst", "endpoint_url": aws["url"]}],
        }))  # fmt: skip
        fields["burst_config"] = str(burst)
        fields["node_sets"] = [{**node_set, "nodes": "p5-[002-003]", "group": "fixed", "endpoint_url": aws["url"]}]
    if emu is not None:
        sid = emu.systems["dgx-000"]
        fields["bmcs"] = {"dgx-000": {"url": f"{emu.url}/redfish/v1/Systems/{sid}", "username": USER,
                                      "password_file": str(emu.password_file)}}  # fmt: skip
    rendered = repair_config(ctl.plan).model_dump(mode="json")
    path = base / "aicluster-repair.json"
    path.write_text(json.dumps({**rendered, **fields, **extra}, indent=1))
    return path


def report(base: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((base / "repair" / "report.json").read_text())
    return out


@pytest.mark.parametrize("controller", [HYBRID_SITE], indirect=True)
def test_repair_repairs_its_own_drains_and_leaves_the_others(
    controller: Controller, aws: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    ctl = controller
    monkeypatch.setenv("SLURM_CONF", ctl.env["SLURM_CONF"])
    # the burst node p5-000 has a live instance; the fixed group's instance is the node p5-002 (its address)
    burst_instance = members(aws, "burst")[0]["InstanceId"]
    aws["ec2"].create_tags(Resources=[burst_instance], Tags=[{"Key": NODE_TAG, "Value": "p5-000"}])
    fixed_instance = members(aws, "fixed")[0]["InstanceId"]
    address = aws["ec2"].describe_instances(InstanceIds=[fixed_instance])["Reservations"][0]["Instances"][0][
        "PrivateIpAddress"]  # fmt: skip
    ctl.run("scontrol", "update", "nodename=p5-002", f"nodeaddr={address}")

    faults = {
        "dgx-000": format_reason("XID79", "GPU 0000:3a:00 GPU has fallen off the bus (RESTART_BM)"),
        "dgx-001": format_reason("XID48", "GPU 0000:3a:00 Double-bit (uncorrectable) ECC error (WORKFLOW_XID_48)"),
        "dgx-003": format_reason("XID54", "GPU 0000:3a:00 Auxiliary power not connected (CHECK_MECHANICALS)"),
        "dgx-004": format_reason("GPU_COUNT", "expected 8 GPUs, nvidia-smi lists 7"),  # power cycle, but no BMC
        "p5-000": format_reason("XID79", "GPU 0000:3a:00 GPU has fallen off the bus (RESTART_BM)"),
        "p5-002": format_reason("GPU_COUNT", "expected 8 GPUs, nvidia-smi lists 7"),
    }
    for node, reason in faults.items():
        drain(ctl, node, reason)
    drain(ctl, "dgx-002", "admin: replacing a fan")

    with emulator(tmp_path / "bmc", ["dgx-000"]) as emu:
        config = write_config(ctl, tmp_path, aws, emu)
        assert main(["--config", str(config)]) == 0
        assert emu.resets() == 2  # ForceOff, then On: the emulator allows no PowerCycle
        emu.wait_power("dgx-000", "On")

    # the owned node with a BMC: power-cycled, marked in repair until its first health check after the boot
    states, reason = show(ctl, "dgx-000")
    assert "DRAIN" in states
    assert parse_reason(reason) is not None
    assert reason == format_reason("REPAIR", "power_cycle " + faults["dgx-000"].removeprefix("aicluster-health:"))
    # RESET_GPU-class fault: rebooted through Slurm (nextstate=RESUME)
    states, reason = show(ctl, "dgx-001")
    assert {"DRAIN", "REBOOT_REQUESTED"} <= states
    assert reason is not None
    assert reason.startswith("aicluster-health:REPAIR reboot XID48 ")
    # someone else's drain: as it was
    states, reason = show(ctl, "dgx-002")
    assert "DRAIN" in states
    assert reason == "admin: replacing a fan"
    # needs a person (CHECK_MECHANICALS), and a power cycle without a BMC: held, with a reason that parses
    for node, why in (("dgx-003", "XID54: needs a person"),
                      ("dgx-004", "GPU_COUNT: needs a power cycle and the node has no Redfish BMC")):  # fmt: skip
        held = parse_reason(show(ctl, node)[1])
        assert held is not None
        assert held.code == "HELD"
        assert held.detail.startswith(why + "; ")
    # the burst node: its instance deleted through its group (desired size lowered), the node powered down again
    assert state_of(aws, burst_instance) in ("shutting-down", "terminated")
    assert members(aws, "burst") == []
    assert "DRAIN" not in show(ctl, "p5-000")[0]
    # the fixed group's node: its instance replaced, the group back at its size with a new one
    assert state_of(aws, fixed_instance) in ("shutting-down", "terminated")
    fresh = [i["InstanceId"] for i in members(aws, "fixed")]
    assert len(fresh) == 1
    assert fresh != [fixed_instance]
    assert show(ctl, "p5-002")[1] == format_reason("REPAIR", "replace " + faults["p5-002"].removeprefix(
        "aicluster-health:"))  # fmt: skip

    rep = report(tmp_path)
    assert sorted(rep["repaired_now"]) == ["dgx-000", "dgx-001", "p5-000", "p5-002"]
    assert sorted(rep["held"]) == ["dgx-003", "dgx-004"]
    assert rep["errors"] == []
    assert emu.password not in capsys.readouterr().err

    # a second pass: nothing new to do; the burst node is back (undrained), its repair closed
    assert main(["--config", str(config)]) == 0
    rep = report(tmp_path)
    assert rep["repaired_now"] == []
    assert sorted(rep["circuit_breaker"]["in_repair"]) == ["dgx-000", "dgx-001", "p5-002"]

    # a replacement the cloud cannot do (no instance at the node's address): logged, exit status 1, the fault's
    # reason back on the node for the next pass, and the pass went on with the others
    fault = format_reason("GPU_COUNT", "expected 8 GPUs, nvidia-smi lists 6")
    drain(ctl, "p5-003", fault)
    ctl.run("scontrol", "update", "nodename=p5-003", "nodeaddr=10.99.0.3")
    drain(ctl, "dgx-005", format_reason("XID119", "GPU 0000:3a:00 GSP RPC timeout (RESET_GPU)"))
    assert main(["--config", str(config)]) == 1
    rep = report(tmp_path)
    assert rep["errors"] == ["p5-003: replace: group fixed: 0 live instances at the node's address ['10.99.0.3']"]
    assert show(ctl, "p5-003")[1] == fault
    assert rep["repaired_now"] == ["dgx-005"]


@pytest.mark.parametrize("controller", [HYBRID_SITE], indirect=True)
def test_circuit_breaker_and_repeat_offender_hold(
    controller: Controller, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctl = controller
    monkeypatch.setenv("SLURM_CONF", ctl.env["SLURM_CONF"])
    total = len(ctl.records("node"))
    # at most 2 nodes in repair at once; a node repaired twice in the window is held
    config = write_config(ctl, tmp_path, None, None, max_share_in_repair=2.5 / total, repeat_count=2)
    faulty = ["dgx-010", "dgx-011", "dgx-012", "dgx-013"]
    for node in faulty:
        drain(ctl, node, format_reason("XID95", "GPU 0000:3a:00 Uncontained ECC error (RESET_GPU)"))

    # --dry-run: what would be done is logged and the report printed; nothing changes, its own files included
    assert main(["--config", str(config), "--dry-run"]) == 0
    assert [show(ctl, n)[1] for n in faulty] == [show(ctl, "dgx-010")[1]] * 4
    assert all("REBOOT_REQUESTED" not in show(ctl, n)[0] for n in faulty)
    assert not (tmp_path / "repair" / "report.json").exists()
    assert not (tmp_path / "repair" / "state.json").exists()

    assert main(["--config", str(config)]) == 0
    rebooting = [n for n in faulty if "REBOOT_REQUESTED" in show(ctl, n)[0]]
    assert rebooting == ["dgx-010", "dgx-011"]
    rep = report(tmp_path)
    assert rep["circuit_breaker"]["limit"] == 2
    assert rep["circuit_breaker"]["waiting"] == ["dgx-012", "dgx-013"]

    # dgx-010's operator takes it over with a reason of their own: its repair is closed, the breaker lets dgx-012 in
    ctl.run("scontrol", "cancel_reboot", "dgx-010")
    drain(ctl, "dgx-010", "admin: reseating GPU 3")
    assert main(["--config", str(config)]) == 0
    assert "REBOOT_REQUESTED" in show(ctl, "dgx-012")[0]
    assert report(tmp_path)["circuit_breaker"]["waiting"] == ["dgx-013"]
    assert show(ctl, "dgx-010")[1] == "admin: reseating GPU 3"

    # dgx-010 back in service and drained by aicluster-health again: its second repair (room made under the breaker)
    ctl.run("scontrol", "cancel_reboot", "dgx-011")
    drain(ctl, "dgx-011", "admin: RMA")
    drain(ctl, "dgx-010", format_reason("XID95", "GPU 0000:3a:00 Uncontained ECC error (again)"))
    assert main(["--config", str(config)]) == 0
    assert "REBOOT_REQUESTED" in show(ctl, "dgx-010")[0]

    # and a third time: 2 repairs within the window, a repeat offender, held for a person
    ctl.run("scontrol", "cancel_reboot", "dgx-010")
    drain(ctl, "dgx-010", format_reason("XID95", "GPU 0000:3a:00 Uncontained ECC error (a third time)"))
    assert main(["--config", str(config)]) == 0
    held = parse_reason(show(ctl, "dgx-010")[1])
    assert held is not None
    assert held.code == "HELD"
    assert held.detail.startswith("repeat offender: 2 repairs in 7 d (limit 2); XID95 ")
    assert "REBOOT_REQUESTED" not in show(ctl, "dgx-010")[0]
    rep = report(tmp_path)
    assert rep["repeat_offenders"] == ["dgx-010"]
    assert rep["held"]["dgx-010"]["repairs_in_window"] == 2

    # the state file lost: Slurm's view alone (REBOOT_REQUESTED, the REPAIR reasons) still fills the breaker
    assert sorted(rep["circuit_breaker"]["in_repair"]) == ["dgx-012", "dgx-013"]
    drain(ctl, "dgx-014", format_reason("XID95", "GPU 0000:3a:00 Uncontained ECC error (RESET_GPU)"))
    (tmp_path / "repair" / "state.json").unlink()
    assert main(["--config", str(config)]) == 0
    rep = report(tmp_path)
    assert sorted(rep["circuit_breaker"]["in_repair"]) == ["dgx-012", "dgx-013"]
    assert rep["circuit_breaker"]["waiting"] == ["dgx-014"]
    assert "REBOOT_REQUESTED" not in show(ctl, "dgx-014")[0]
    # the held node is still named, from its reason in Slurm
    assert rep["repeat_offenders"] == ["dgx-010"]


@pytest.mark.parametrize("controller", ["p5-small"], indirect=True)
def test_a_cloud_node_whose_group_is_not_known_yet_is_held_saying_so(
    controller: Controller, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The configuration rendered before `pulumi up` (no stack outputs) knows p5-small's pool from the plan but not
    its Auto Scaling group: a node needing a replacement is held with that reason, not "no Redfish BMC"."""
    ctl = controller
    monkeypatch.setenv("SLURM_CONF", ctl.env["SLURM_CONF"])
    rendered = repair_config(ctl.plan).model_dump(mode="json")
    assert rendered["node_sets"] == []
    pool = ctl.plan.pools[0]
    assert rendered["cloud_pools"] == {pool.name: f"{pool.name}-[000-{pool.nodes - 1:03d}]"}
    config = tmp_path / "aicluster-repair.json"
    state_dir = tmp_path / "repair"
    config.write_text(json.dumps({**rendered, "scontrol": "scontrol", "state_dir": str(state_dir), "log_file": None}))
    node = pool.node_names()[1]
    drain(ctl, node, format_reason("XID79", "GPU 0000:3a:00 GPU has fallen off the bus (RESTART_BM)"))

    assert main(["--config", str(config), "--dry-run"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["held"] == {}  # nothing was held: a dry run
    assert (show(ctl, node)[1] or "").startswith("aicluster-health:XID79")

    assert main(["--config", str(config)]) == 0
    reason = parse_reason(show(ctl, node)[1] or "")
    assert reason is not None
    assert reason.code == "HELD"
    assert f"cloud pool {pool.name}'s group unknown (inventory after pulumi up)" in reason.detail
    assert "Redfish" not in reason.detail
    assert json.loads((state_dir / "report.json").read_text())["held"][node]
