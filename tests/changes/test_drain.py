"""A pool's `rollout` as Slurm applies it before `pulumi up` takes nodes (aicluster.changes.drain): the commands a
change needs, and those commands run against a real slurmctld (Debian's 22.05) loaded with the stack's slurm.conf."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

from aicluster.changes.drain import next_window
from aicluster.report import diff_markdown
from tests.changes.harness import base_preview, changed
from tests.integration.test_slurmctld import Controller, controller  # noqa: F401 - the fixture

SATURDAY_NOON = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)  # a Saturday


def shrink(nodes: int, rollout: dict[str, Any] | None = None) -> Any:
    def edit(cluster: dict[str, Any]) -> None:
        cluster["pools"][0]["nodes"] = nodes
        if rollout is not None:
            cluster["pools"][0]["rollout"] = rollout

    return edit


def test_the_next_window_is_the_next_opening_in_utc() -> None:
    window = {"days": ["sat", "sun"], "start": "02:00", "hours": 6}
    assert next_window(window, SATURDAY_NOON) == dt.datetime(2026, 11, 29, 2, 0)  # Sunday: Saturday's has passed
    assert next_window(window, SATURDAY_NOON.replace(hour=1)) == dt.datetime(2026, 11, 28, 2, 0)
    assert next_window({**window, "days": ["fri"]}, SATURDAY_NOON) == dt.datetime(2026, 12, 4, 2, 0)


def test_a_shrinking_slurm_pool_is_drained_first_and_the_markdown_says_what_to_run(tmp_path: Path) -> None:
    changes, head = changed(tmp_path, "p5-small", shrink(2))
    (drain,) = changes.to_json()["slurmDrains"]
    assert drain["pool"] == "h100"
    assert drain["nodes"] == "h100-[002-003]"
    assert drain["removed"] is True
    assert drain["before"] == [
        ["scontrol", "update", "nodename=h100-[002-003]", "state=DRAIN",
         "reason=aicluster rollout: pool h100 goes from 4 to 2 nodes"]
    ]  # fmt: skip
    assert drain["after"] == []  # the nodes go for good
    text = diff_markdown(base_preview("p5-small"), head, changes.to_json())
    assert "### Before `pulumi up`, on the Slurm controller" in text
    assert "scontrol update 'nodename=h100-[002-003]' state=DRAIN 'reason=aicluster rollout: pool h100 goes" in text


def test_a_pool_with_a_window_reserves_its_nodes_for_the_next_window(tmp_path: Path) -> None:
    rollout = {"strategy": "window", "window": {"days": ["sun"], "start": "03:30", "hours": 4}}
    changes, _ = changed(tmp_path, "p5-small", shrink(3, rollout))
    changes.now = SATURDAY_NOON
    (drain,) = changes.to_json()["slurmDrains"]
    assert drain["strategy"] == "window"
    assert drain["before"] == [
        ["scontrol", "create", "reservation", "reservationname=aicluster-h100", "starttime=2026-11-29T03:30:00",
         "duration=240", "nodes=h100-003", "flags=MAINT,IGNORE_JOBS", "users=root"]
    ]  # fmt: skip
    assert drain["after"] == [["scontrol", "delete", "reservationname=aicluster-h100"]]


def test_a_kubernetes_cluster_needs_no_slurm_drain(tmp_path: Path) -> None:
    changes, _ = changed(tmp_path, "eks-p5", shrink(1))
    assert changes.to_json()["slurmDrains"] == []


@pytest.mark.parametrize(
    ("rollout", "message"),
    [
        ({"strategy": "window"}, "strategy: window needs a window"),
        ({"window": {"days": ["sat"], "start": "02:00", "hours": 4}}, "set strategy: window, or drop the window"),
        ({"max_unavailable": "0%"}, "or a percentage from 1% to 100% (e.g. 10%)"),
        ({"max_unavailable": 0}, "got 0; must be a whole number of nodes from 1"),
        ({"strategy": "window", "window": {"days": ["sat"], "start": "25:00", "hours": 4}}, "HH:MM"),
        ({"strategy": "window", "window": {"days": ["someday"], "start": "02:00", "hours": 4}}, "someday"),
        ({"strategy": "window", "window": {"days": ["sat"], "start": "02:00", "hours": 2}}, "must be at least 4"),
    ],
)
def test_a_bad_rollout_is_refused_with_its_field(tmp_path: Path, rollout: dict[str, Any], message: str) -> None:
    from aicluster.spec import SpecError

    with pytest.raises(SpecError) as err:
        changed(tmp_path, "p5-small", shrink(4, rollout))
    assert "pools[0].rollout" in str(err.value)
    assert message in str(err.value)


def test_max_unavailable_sets_each_kubernetes_node_groups_update_settings(tmp_path: Path) -> None:
    for stack, type_, path in (
        ("eks-p5", "aws:eks/nodeGroup:NodeGroup", ("updateConfig", "maxUnavailable")),
        ("gke-a3mega", "gcp:container/nodePool:NodePool", ("upgradeSettings", "maxUnavailable")),
        ("aks-nd-h100", "azure-native:containerservice:AgentPool", ("upgradeSettings", "maxUnavailable")),
    ):
        changes, head = changed(tmp_path, stack, lambda c: c["pools"][0].update(rollout={"max_unavailable": "50%"}))
        values = set()
        for r in head["resources"]:
            inputs = r.get("inputs") or {}
            if r["type"] == type_ and (inputs.get(path[0]) or {}).get(path[1]) not in (None, 1, "1"):
                values.add(str(inputs[path[0]][path[1]]))
        assert values, f"{stack}: no node group takes more than one node at a time"
        rolled = [s for s in changes.steps if s.type == type_]
        assert rolled, stack
        assert all(s.op == "update" and not s.rollout for s in rolled), stack  # a setting, never a rollout itself


@pytest.mark.slow
@pytest.mark.parametrize("controller", ["p5-small"], indirect=True)
def test_the_drain_and_the_reservation_run_on_a_real_slurmctld(controller: Controller, tmp_path: Path) -> None:  # noqa: F811
    ctl = controller
    (tmp_path / "a").mkdir()
    changes, _ = changed(tmp_path / "a", "p5-small", shrink(2))
    (drain,) = changes.to_json()["slurmDrains"]
    for argv in drain["before"]:
        ctl.run(*argv)
    for node in ("h100-002", "h100-003"):
        out = ctl.run("scontrol", "-o", "show", "node", node).stdout
        assert re.search(r"State=\S*DRAIN", out), out
        assert "Reason=aicluster rollout: pool h100 goes from 4 to 2 nodes" in out
    assert "DRAIN" not in ctl.run("scontrol", "-o", "show", "node", "h100-000").stdout

    (tmp_path / "b").mkdir()
    rollout = {"strategy": "window", "window": {"days": ["sun"], "start": "03:30", "hours": 4}}
    changes, _ = changed(tmp_path / "b", "p5-small", shrink(3, rollout))
    (drain,) = changes.to_json()["slurmDrains"]
    for argv in drain["before"]:
        ctl.run(*argv)
    out = ctl.run("scontrol", "-o", "show", "reservation", "aicluster-h100").stdout
    assert "Nodes=h100-003" in out
    assert re.search(r"Flags=\S*MAINT", out), out
    assert re.search(r"Flags=\S*IGNORE_JOBS", out), out
    assert "Duration=04:00:00" in out
    assert re.search(r"StartTime=\d{4}-\d\d-\d\dT03:30:00", out), out
    for argv in drain["after"]:
        ctl.run(*argv)
    gone = ctl.run("scontrol", "show", "reservation", "aicluster-h100", check=False)
    assert "not found" in (gone.stdout + gone.stderr).lower()
