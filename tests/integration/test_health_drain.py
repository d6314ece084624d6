"""aicluster-health against a real slurmctld (Debian's 22.05): the drain reason lands on the node as written and
parses back; resume clears only aicluster's own reason, never an operator's. The node's tools are the fake node's
recorded outputs (tests/health/fakes.py); scontrol is the real one, talking to the controller of the p5-small plan
that tests/integration/test_slurmctld.py starts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aicluster.health.cli import main
from aicluster.health.reasons import parse_reason
from tests.health.fakes import DATA, healthy_node
from tests.integration.test_slurmctld import Controller, controller

pytestmark = pytest.mark.slow
__all__ = ["controller"]  # the fixture, imported for use here

STACK = "p5-small"


def show(ctl: Controller, node: str) -> tuple[str, str | None]:
    """State and reason of a node, as `scontrol show node` prints them (reason without the [user@time] suffix)."""
    rec = ctl.run("scontrol", "show", "node", node).stdout
    state = next(w.split("=", 1)[1] for w in rec.split() if w.startswith("State="))
    reason = next(
        (line.strip()[len("Reason=") :] for line in rec.splitlines() if line.strip().startswith("Reason=")), None
    )
    return state, reason.rsplit(" [", 1)[0] if reason else None


@pytest.mark.parametrize("controller", [STACK], indirect=True)
def test_drain_reasons_land_on_a_real_node_and_only_ours_are_cleared(
    controller: Controller, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctl = controller
    first, second = ctl.plan.pools[0].node_names()[:2]
    monkeypatch.setenv("SLURM_CONF", ctl.env["SLURM_CONF"])
    scontrol = shutil.which("scontrol")
    assert scontrol is not None
    fake = healthy_node(tmp_path)
    config = fake.config(
        tools={**{k: str(fake.tools / k.replace("_", "-")) for k in ("nvidia_smi", "dmesg")}, "scontrol": scontrol},
        nodes={first: "gpu", second: "gpu"},
    )

    def check(node: str, layer: str = "periodic") -> int:
        return main(["--layer", layer, "--config", str(config), "--node", node])

    assert check(first) == 0  # healthy: the node is left as it is
    assert "DRAIN" not in show(ctl, first)[0]

    # a GPU fell off the bus: drained with the reason as the grammar writes it
    shutil.copy(DATA / "dmesg-xid79.txt", fake.out / "dmesg.txt")
    assert check(first) == 1
    state, reason = show(ctl, first)
    assert "DRAIN" in state
    parsed = parse_reason(reason)
    assert parsed is not None
    assert parsed.code == "XID79"
    assert parsed.detail == "GPU 0000:3a:00 GPU has fallen off the bus (RESTART_BM)"

    # an operator's drain on the other node: a healthy check leaves it, and so does a failing one
    ctl.run("scontrol", "update", f"nodename={second}", "state=DRAIN", "reason=admin: replacing a fan")
    shutil.copy(DATA / "dmesg-healthy.txt", fake.out / "dmesg.txt")
    assert check(second) == 0
    state, reason = show(ctl, second)
    assert "DRAIN" in state
    assert reason == "admin: replacing a fan"

    # the XID stays until a reboot; after one (new boot id), slurmd's first health check clears it
    assert check(first) == 0
    assert parse_reason(show(ctl, first)[1]) == parsed
    (fake.root / "boot_id").write_text("6a1f0e0c-boot-0002\n")
    assert check(first) == 0
    state, reason = show(ctl, first)
    assert "DRAIN" not in state
    assert reason is None

    # a port that goes down drains; once it is back the periodic check resumes the node by itself
    fake.ib_port("mlx5_ib4", state="1: DOWN", phys_state="3: Disabled")
    assert check(first) == 1
    assert parse_reason(show(ctl, first)[1]).code == "IB_PORT_DOWN"  # type: ignore[union-attr]
    fake.ib_port("mlx5_ib4")
    assert check(first) == 0
    assert "DRAIN" not in show(ctl, first)[0]
    assert show(ctl, second)[1] == "admin: replacing a fan"
