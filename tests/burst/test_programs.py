"""The programs' logic against fakes of scontrol and of a cloud group: grouping, growing within the maximum, binding,
error mapping to DOWN reasons, suspend's exact deletions and the sync's reconciliation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aicluster.burst import resume as resume_mod
from aicluster.burst import suspend as suspend_mod
from aicluster.burst import sync as sync_mod
from aicluster.burst.cloud import CloudError, Group, Instance
from aicluster.burst.common import group_nodes
from aicluster.burst.config import BurstConfig
from aicluster.burst.resume import resume, resume_group
from aicluster.burst.suspend import suspend
from aicluster.burst.sync import sync_group
from tests.burst.fakes import FakeGroup, FakeSlurm, expand


def config(tmp_path: Path, **extra: object) -> BurstConfig:
    return BurstConfig.model_validate(
        {
            "cluster": "c",
            "state_dir": str(tmp_path / "state"),
            "launch_wait_s": 5,
            "poll_s": 1,
            "node_sets": [
                {"provider": "aws", "nodes": "aws-[00-03]", "region": "us-east-1", "group": "ga",
                 "instance_type": "p5.48xlarge"},
                {"provider": "aws", "nodes": "spot-[00-01]", "region": "us-east-1", "group": "gs",
                 "instance_type": "p5.48xlarge", "market": "spot"},
            ],
            **extra,
        }
    )  # fmt: skip


def opener_for(groups: dict[str, FakeGroup]) -> resume_mod.Opener:
    def opener(node_set: object, cluster: str) -> Group:
        return groups[node_set.group]  # type: ignore[attr-defined]

    return opener


def test_the_fake_expands_hostlists_like_scontrol() -> None:
    assert expand("a-[00-02,05],b-1") == ["a-00", "a-01", "a-02", "a-05", "b-1"]


def test_nodes_group_by_their_node_set_and_unknown_ones_are_kept_apart(tmp_path: Path) -> None:
    plan = group_nodes(config(tmp_path), FakeSlurm(), ["spot-01", "aws-02", "aws-00", "gpu-7", "aws-02"])
    assert plan.by_set == {1: ["spot-01"], 0: ["aws-02", "aws-00"]}
    assert plan.unknown == ["gpu-7"]


def test_resume_grows_each_group_by_its_nodes_binds_them_and_tells_slurm(tmp_path: Path) -> None:
    groups = {"ga": FakeGroup("ga"), "gs": FakeGroup("gs")}
    slurm = FakeSlurm()
    failed = resume(config(tmp_path), slurm, expand("aws-[00-01],spot-00"), opener_for(groups))
    assert failed == {}
    assert groups["ga"].resizes == [2]
    assert groups["gs"].resizes == [1]
    assert {i.node: i.id for i in groups["ga"].pool} == {"aws-00": "i-1", "aws-01": "i-2"}
    assert (("aws-00",), {"nodeaddr": "10.0.0.1", "nodehostname": "ip-1"}) in slurm.updates
    assert (("spot-00",), {"nodeaddr": "10.0.0.1", "nodehostname": "ip-1"}) in slurm.updates


def test_resume_reuses_the_instance_already_bound_to_a_node_and_free_ones(tmp_path: Path) -> None:
    group = FakeGroup(
        "ga",
        desired=2,
        pool=[Instance("i-a", "aws-01", "10.1.0.1", None, True), Instance("i-b", None, "10.1.0.2", None, True)],
    )
    slurm = FakeSlurm()
    assert resume_group(group, ["aws-01", "aws-02"], slurm, 5, 1) == {}
    assert group.resizes == []  # nothing new asked of the cloud
    assert slurm.updates == [
        (("aws-01",), {"nodeaddr": "10.1.0.1", "nodehostname": "aws-01"}),
        (("aws-02",), {"nodeaddr": "10.1.0.2", "nodehostname": "aws-02"}),
    ]


def test_resume_never_asks_above_the_maximum_and_reports_exactly_the_refused_nodes(tmp_path: Path) -> None:
    group = FakeGroup("ga", desired=3, maximum=4)
    slurm = FakeSlurm()
    failed = resume_group(group, ["aws-00", "aws-01", "aws-02"], slurm, 5, 1)
    assert group.resizes == [4]
    assert sorted(failed) == ["aws-01", "aws-02"]
    assert failed["aws-01"] == "group ga at its maximum size 4 (desired 3): 2 of 3 new instance(s) refused"
    assert [n for (n,), f in slurm.updates if "nodeaddr" in f] == ["aws-00"]


@pytest.mark.parametrize(
    ("refusal", "reason"),
    [
        pytest.param(
            CloudError("InsufficientInstanceCapacity", "We currently do not have sufficient p5.48xlarge capacity"),
            "aicluster-resume: InsufficientInstanceCapacity: We currently do not have sufficient p5.48xlarge capacity",
            id="capacity",
        ),
        pytest.param(
            CloudError("ValidationError", "New SetDesiredCapacity value 5 is above max value 4"),
            "aicluster-resume: ValidationError: New SetDesiredCapacity value 5 is above max value 4",
            id="max-size-race",
        ),
    ],
)
def test_a_refused_resize_marks_the_nodes_down_with_the_clouds_words(
    tmp_path: Path, refusal: CloudError, reason: str
) -> None:
    groups = {"ga": FakeGroup("ga", refuse=refusal), "gs": FakeGroup("gs")}
    slurm = FakeSlurm()
    failed = resume(config(tmp_path), slurm, ["aws-00", "aws-01", "spot-00"], opener_for(groups))
    resume_mod.report_down(slurm, failed)
    assert ((("aws-00", "aws-01"), {"state": "DOWN", "reason": reason})) in slurm.updates
    assert not any(f.get("state") == "DOWN" for (n, *_), f in slurm.updates if n == "spot-00")


def test_a_launch_failure_stops_the_wait_and_gives_back_the_capacity_not_delivered(tmp_path: Path) -> None:
    spot = "Could not launch Spot Instances. InsufficientInstanceCapacity - There is no Spot capacity available"
    group = FakeGroup("gs", deliver=1, failure_messages=[spot])
    slurm = FakeSlurm()
    failed = resume_group(group, ["spot-00", "spot-01"], slurm, 300, 1, clock=lambda: 0.0, sleep=lambda s: None)
    assert failed == {"spot-01": spot}
    assert group.resizes == [2, 1]  # asked for two, got one: the second is given back
    assert [i.node for i in group.pool] == ["spot-00"]


def test_the_wait_is_bounded(tmp_path: Path) -> None:
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    group = FakeGroup("ga", deliver=0)
    failed = resume_group(group, ["aws-00"], FakeSlurm(), 30, 5, clock=lambda: now[0], sleep=sleep)
    assert failed == {"aws-00": "no instance of group ga got an address within 30 s"}
    assert 30 <= now[0] <= 35
    assert group.resizes == [1, 0]


def test_a_node_in_no_node_set_goes_down_with_a_reason(tmp_path: Path) -> None:
    slurm = FakeSlurm()
    failed = resume(config(tmp_path), slurm, ["gpu-7"], opener_for({}))
    assert failed == {"gpu-7": "node is in no node set of the bursting configuration"}


def test_resume_main_copies_the_resume_file_and_reports_a_bad_config_as_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm = FakeSlurm()
    monkeypatch.setattr(resume_mod, "scontrol_for", lambda config: slurm)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"cluster": "c", "node_sets": [{"provider": "aws", "nodes": "a-[0-1]"}]}))
    assert resume_mod.main(["--config", str(bad), "a-[0-1]"]) == 2
    ((nodes, fields),) = slurm.updates
    assert nodes == ("a-0", "a-1")
    assert fields["state"] == "DOWN"
    assert "node_sets[0].region: Field required" in fields["reason"]

    good = tmp_path / "good.json"
    good.write_text(config(tmp_path, log_file=str(tmp_path / "burst.log")).model_dump_json())
    resume_file = tmp_path / "resume_file"
    resume_file.write_text(json.dumps({"all_nodes": "aws-00", "jobs": [{"job_id": 7, "nodes": "aws-00"}]}))
    monkeypatch.setenv("SLURM_RESUME_FILE", str(resume_file))
    slurm.updates.clear()
    groups = {"ga": FakeGroup("ga"), "gs": FakeGroup("gs")}
    assert resume_mod.main(["--config", str(good), "aws-00"], opener=opener_for(groups)) == 0
    assert slurm.updates == [(("aws-00",), {"nodeaddr": "10.0.0.1", "nodehostname": "ip-1"})]
    log = (tmp_path / "burst.log").read_text()
    assert "job 7 (partition -, features -) needs aws-00" in log
    assert list((tmp_path / "state" / "resume").iterdir()) == []  # the copy is gone once read


def test_suspend_deletes_exactly_the_instances_bound_to_the_nodes(tmp_path: Path) -> None:
    ga = FakeGroup(
        "ga",
        desired=3,
        pool=[
            Instance("i-0", "aws-00", "10.0.0.1", None, True),
            Instance("i-1", "aws-01", "10.0.0.2", None, True),
            Instance("i-2", None, "10.0.0.3", None, True),
            Instance("i-9", "aws-02", "10.0.0.9", None, False, "EC2 state terminated"),
        ],
    )
    errors = suspend(config(tmp_path), FakeSlurm(), ["aws-01", "aws-02"], opener_for({"ga": ga, "gs": FakeGroup()}))
    assert errors == []
    assert ga.removed == ["i-1"]
    assert ga.desired == 2


def test_suspend_reports_a_refusal(tmp_path: Path) -> None:
    class Refusing(FakeGroup):
        def remove(self, instance_ids: list[str]) -> None:
            raise CloudError("UnauthorizedOperation", "not allowed")

    ga = Refusing("ga", pool=[Instance("i-0", "aws-00", "10.0.0.1", None, True)])
    errors = suspend(config(tmp_path), FakeSlurm(), ["aws-00"], opener_for({"ga": ga}))
    assert errors == ["ga: UnauthorizedOperation: not allowed"]


def test_sync_powers_down_a_node_whose_instance_was_reclaimed_and_nothing_else() -> None:
    slurm = FakeSlurm()
    slurm.node("spot-00", "ALLOCATED+CLOUD")
    slurm.node("spot-01", "IDLE+CLOUD")
    slurm.node("spot-02", "IDLE+CLOUD+POWERING_UP")
    slurm.node("spot-03", "IDLE+CLOUD+POWERED_DOWN")
    group = FakeGroup(
        "gs",
        pool=[
            Instance("i-0", "spot-00", "10.0.0.1", None, False, "EC2 state terminated, Server.SpotInstanceTermination"),
            Instance("i-1", "spot-01", "10.0.0.2", None, True),
        ],
    )
    assert sync_group(group, slurm, "spot-[00-03]", 600, clock=lambda: 0.0) == ["spot-00"]
    reason = "aicluster-burst-sync: instance i-0 EC2 state terminated, Server.SpotInstanceTermination"
    assert slurm.updates == [(("spot-00",), {"state": "POWER_DOWN_FORCE", "reason": reason})]
    assert group.removed == []
    # idempotent: once Slurm powers it down, a second run changes nothing
    slurm.updates.clear()
    slurm.node("spot-00", "IDLE+CLOUD+POWERING_DOWN")
    assert sync_group(group, slurm, "spot-[00-03]", 600, clock=lambda: 0.0) == []
    assert slurm.updates == []


def test_sync_returns_resume_failures_to_service_in_two_steps() -> None:
    slurm = FakeSlurm()
    why = "aicluster-resume: InsufficientInstanceCapacity: none left [slurm@2026-11-24T00:18:54]"
    slurm.node("aws-00", "DOWN+CLOUD+NOT_RESPONDING+POWERING_UP", why)
    group = FakeGroup("ga")
    sync_group(group, slurm, "aws-00", 600)
    ((_, fields),) = slurm.updates
    assert fields == {
        "state": "POWER_DOWN_FORCE",
        "reason": "aicluster-burst-sync: retry later after aicluster-resume: InsufficientInstanceCapacity: none left",
    }
    slurm.updates.clear()
    slurm.node("aws-00", "DOWN+CLOUD+POWERED_DOWN", fields["reason"] + " [slurm@2026-11-24T00:18:55]")
    sync_group(group, slurm, "aws-00", 600)
    assert slurm.updates == [(("aws-00",), {"state": "RESUME"})]


def test_sync_leaves_an_admins_down_node_alone() -> None:
    slurm = FakeSlurm()
    slurm.node("aws-00", "DOWN+CLOUD+POWERED_DOWN", "bad GPU, RMA 1234 [alice@2026-11-01T10:00:00]")
    sync_group(FakeGroup("ga"), slurm, "aws-00", 600)
    assert slurm.updates == []


def test_sync_deletes_orphans_and_instances_left_on_powered_down_nodes() -> None:
    slurm = FakeSlurm()
    slurm.node("aws-00", "IDLE+CLOUD+POWERED_DOWN")
    slurm.node("aws-01", "IDLE+CLOUD+POWERING_UP")
    group = FakeGroup(
        "ga",
        desired=4,
        pool=[
            Instance("i-0", "aws-00", "10.0.0.1", None, True, launched_s=0),  # suspend failed to delete it
            Instance("i-1", "aws-01", "10.0.0.2", None, True, launched_s=0),  # resuming: kept
            Instance("i-2", None, "10.0.0.3", None, True, launched_s=100),  # young and unbound: resume may take it
            Instance("i-3", None, "10.0.0.4", None, True, launched_s=0),  # old and unbound: an orphan
        ],
    )
    sync_group(group, slurm, "aws-[00-01]", 600, clock=lambda: 650.0)
    assert group.removed == ["i-0", "i-3"]
    assert group.desired == 2


def test_sync_main_exits_nonzero_when_the_cloud_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(FakeGroup):
        def instances(self) -> list[Instance]:
            raise CloudError("RequestExpired", "Request has expired")

    slurm = FakeSlurm()
    monkeypatch.setattr(sync_mod, "scontrol_for", lambda config: slurm)
    path = tmp_path / "c.json"
    path.write_text(config(tmp_path, log_file=str(tmp_path / "log")).model_dump_json())
    assert sync_mod.main(["--config", str(path)], opener=opener_for({"ga": Broken("ga"), "gs": FakeGroup("gs")})) == 1
    assert "group ga: RequestExpired: Request has expired" in (tmp_path / "log").read_text()


def test_suspend_main_with_a_missing_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert suspend_mod.main(["--config", str(tmp_path / "none.json"), "aws-00"]) == 2
    assert "none.json: not found" in capsys.readouterr().err


def test_a_retry_waits_for_the_address_of_the_instance_already_bound(tmp_path: Path) -> None:
    group = FakeGroup("ga", desired=1, pool=[Instance("i-a", "aws-01", None, None, True)])
    polls = [0]

    def sleep(s: float) -> None:  # the cloud gives the address on the second look
        polls[0] += 1
        group.pool = [Instance("i-a", "aws-01", "10.1.0.1", "ip-a", True)]

    slurm = FakeSlurm()
    assert resume_group(group, ["aws-01"], slurm, 30, 1, clock=lambda: 0.0, sleep=sleep) == {}
    assert group.resizes == []
    assert polls == [1]
    assert slurm.updates == [(("aws-01",), {"nodeaddr": "10.1.0.1", "nodehostname": "ip-a"})]
