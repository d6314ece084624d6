"""The node-side checker against a fake node: recorded nvidia-smi/dmesg outputs, a recorded /sys tree and a
stand-in scontrol. Each injected fault must drain the node with a parseable reason of the expected code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aicluster.health.cli import main
from aicluster.health.reasons import PREFIX, parse_reason
from tests.health.fakes import DATA, NODE, FakeNode, healthy_node

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def node(tmp_path: Path) -> FakeNode:
    return healthy_node(tmp_path)


def check(node: FakeNode, layer: str = "periodic") -> int:
    return main(["--layer", layer, "--config", str(node.root / "health.json"), "--node", NODE])


def replace_line(node: FakeNode, name: str, index: int, line: str) -> None:
    lines = (node.out / name).read_text().splitlines()
    lines[index] = line
    node.record(name, "\n".join(lines) + "\n")


def drained_code(node: FakeNode) -> str:
    updates = node.updates()
    assert len(updates) == 1, updates
    cmd = updates[0]
    assert cmd[:3] == ["update", f"nodename={NODE}", "state=DRAIN"]
    assert cmd[3].startswith("reason=")
    reason = cmd[3].removeprefix("reason=")
    assert reason.isprintable()
    assert "=" not in reason
    assert reason.startswith(PREFIX)
    parsed = parse_reason(reason)
    assert parsed is not None
    assert node.node() == {"state": "IDLE+DRAIN", "reason": reason}
    return parsed.code


def test_a_healthy_node_passes_every_layer(node: FakeNode) -> None:
    for layer in ("boot", "prolog", "epilog", "periodic"):
        assert check(node, layer) == 0, layer
    assert node.updates() == []
    assert node.node() == {"state": "IDLE", "reason": None}


Fault = Callable[[FakeNode], None]


def ib(device: str, **values: str) -> Fault:
    return lambda n: n.ib_port(device, **values)


FAULTS = [
    pytest.param(lambda n: shutil.copy(DATA / "dmesg-xid79.txt", n.out / "dmesg.txt"), "XID79", id="xid79-off-the-bus"),
    pytest.param(lambda n: shutil.copy(DATA / "dmesg-xid48.txt", n.out / "dmesg.txt"), "XID48", id="xid48-dbe"),
    pytest.param(
        lambda n: replace_line(n, "remap.csv", 3, "00000000:5D:00.0, 1, 0"), "ROW_REMAP_PENDING", id="remap-pending"
    ),
    pytest.param(
        lambda n: replace_line(n, "remap.csv", 3, "00000000:5D:00.0, Yes, No"), "ROW_REMAP_PENDING", id="remap-yes"
    ),
    pytest.param(
        lambda n: replace_line(n, "remap.csv", 0, "00000000:18:00.0, 0, 1"), "ROW_REMAP_FAILED", id="remap-failure"
    ),
    pytest.param(ib("mlx5_ib3", state="1: DOWN", phys_state="3: Disabled"), "IB_PORT_DOWN", id="ib-port-down"),
    pytest.param(ib("mlx5_ib3", phys_state="2: Polling"), "IB_PORT_DOWN", id="ib-phys-polling"),
    pytest.param(ib("mlx5_ib5", rate="200 Gb/sec (4X HDR)"), "IB_RATE", id="ib-rate-hdr"),
    pytest.param(
        lambda n: shutil.rmtree(n.sys / "class" / "infiniband" / "mlx5_ib7"), "IB_MISSING", id="ib-hca-missing"
    ),
    pytest.param(
        lambda n: n.record("gpus.csv", "".join((DATA / "gpus-h100.csv").read_text().splitlines(True)[:7])),
        "GPU_COUNT",
        id="gpu-missing",
    ),
    pytest.param(
        lambda n: replace_line(n, "gpus.csv", 2, "2, 00000000:3A:00.0, NVIDIA A100-SXM4-80GB, 16, 16, 0"),
        "GPU_MODEL",
        id="gpu-model",
    ),
    pytest.param(
        lambda n: replace_line(n, "gpus.csv", 4, "4, 00000000:9A:00.0, NVIDIA H100 80GB HBM3, 16, 16, 3"),
        "ECC_UNCORRECTED",
        id="ecc-uncorrected",
    ),
    pytest.param(
        lambda n: replace_line(n, "gpus.csv", 6, "6, 00000000:BA:00.0, NVIDIA H100 80GB HBM3, 8, 16, 0"),
        "PCIE_WIDTH",
        id="pcie-x8",
    ),
    pytest.param(
        lambda n: n.record(
            "nvlink.txt", (n.out / "nvlink.txt").read_text().replace("Link 5: 26.562 GB/s", "Link 5: <inactive>", 1)
        ),
        "NVLINK_INACTIVE",
        id="nvlink-inactive",
    ),
    pytest.param(lambda n: (n.root / "mounts").write_text("proc /proc proc rw 0 0\n"), "FS_MISSING", id="fs-missing"),
    pytest.param(
        lambda n: (n.root / "mounts").write_text(f"tmpfs {n.root / 'scratch'} tmpfs ro,relatime 0 0\n"),
        "FS_READONLY",
        id="fs-read-only",
    ),
]


@pytest.mark.parametrize(("fault", "code"), FAULTS)
def test_each_injected_fault_drains_with_its_code(node: FakeNode, fault: Fault, code: str) -> None:
    fault(node)
    assert check(node) == 1
    assert drained_code(node) == code


HOSTILE = [
    pytest.param(lambda n: n.record("gpus.csv", "lorem ipsum\n\x1b[31mred\n"), "gpus", id="garbage"),
    pytest.param(lambda n: n.record("gpus.csv", "0, 0000:18:00.0, H100, 16, 16, 0\n" * 200_000), "gpus", id="huge"),
    pytest.param(
        lambda n: n.record("gpus.csv", b"0, 00000000:18:00.0, \xff\xfe\xc3(, 16, 1\x96, 0\n"), "gpus", id="bad-utf8"
    ),
    pytest.param(lambda n: n.record("gpus.csv", b"\x00\x01\x02" * 100), "gpus", id="binary"),
    pytest.param(lambda n: n.record("exit-gpus.csv", "9"), "gpus", id="tool-fails"),
    pytest.param(lambda n: (n.tools / "nvidia-smi").unlink(), "gpus", id="tool-missing"),
    pytest.param(lambda n: n.record("remap.csv", "00000000:18:00.0, maybe, 0\n"), "row_remap", id="remap-garbage"),
    pytest.param(lambda n: n.record("nvlink.txt", "\tLink 0: <inactive>\n"), "nvlink", id="nvlink-garbage"),
    pytest.param(lambda n: n.record("dmesg.txt", "x" * (2 << 20)), "xids", id="dmesg-huge"),
    pytest.param(ib("mlx5_ib2", rate="fast"), "fabric", id="sysfs-rate-garbage"),
]


@pytest.mark.parametrize(("fault", "check_name"), HOSTILE)
def test_hostile_outputs_drain_saying_the_check_could_not_run(
    node: FakeNode, fault: Fault, check_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fault(node)
    assert check(node) == 1
    assert drained_code(node) == "CHECK_FAILED"
    reason = parse_reason(node.node()["reason"])
    assert reason is not None
    assert reason.detail.startswith(f"{check_name}: ")
    assert "Traceback" not in capsys.readouterr().err


def test_a_hung_tool_is_bounded_by_the_timeout(node: FakeNode) -> None:
    node.record("sleep", "120")
    node.config(timeout_s=0.5)
    assert check(node, "prolog") == 1
    reason = parse_reason(node.node()["reason"])
    assert reason is not None
    assert reason.code == "CHECK_FAILED"
    assert "timed out" in reason.detail


def test_invalid_utf8_in_the_kernel_log_is_read_past(node: FakeNode) -> None:
    node.record("dmesg.txt", (DATA / "dmesg-xid79.txt").read_bytes() + b"[ 9.1] \xff\xfe junk \xc3(\n")
    assert check(node) == 1
    assert drained_code(node) == "XID79"


@pytest.mark.parametrize(
    "text",
    [pytest.param("{not json", id="not-json"), pytest.param('{"version": 1, "bogus": 1}', id="unknown-key")],
)
def test_a_broken_config_drains_without_a_traceback(node: FakeNode, text: str) -> None:
    (node.root / "health.json").write_text(text)
    # the defaults name /usr/bin/scontrol; this test's scontrol is the fake, found through the environment
    env_cfg = node.root / "health.json"
    proc = subprocess.run(
        [sys.executable, "-m", "aicluster.health", "--layer", "prolog", "--config", str(env_cfg), "--node", NODE],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "CHECK_FAILED config:" in proc.stderr


def test_the_program_run_as_a_process_prints_no_traceback_on_hostile_input(node: FakeNode) -> None:
    node.record("gpus.csv", b"\xff" * 5000 + b"\n,,,,,\n")
    proc = subprocess.run(
        [sys.executable, "-m", "aicluster.health", "--layer", "periodic", "--config", str(node.root / "health.json")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "SLURMD_NODENAME": NODE},
        check=False,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert drained_code(node) == "CHECK_FAILED"


# ---------------------------------------------------------------------------------------------- whose drain


def test_someone_elses_drain_is_never_resumed(node: FakeNode) -> None:
    node.set_node("IDLE+DRAIN", "admin: replacing a fan")
    assert check(node) == 0
    assert node.updates() == []
    assert node.node()["reason"] == "admin: replacing a fan"


def test_someone_elses_drain_is_not_overwritten_by_a_fault(node: FakeNode) -> None:
    node.set_node("IDLE+DRAIN", "NHC: check_hw_ib failed")
    shutil.copy(DATA / "dmesg-xid79.txt", node.out / "dmesg.txt")
    assert check(node, "prolog") == 1  # the job must not start on it, but the reason stays theirs
    assert node.updates() == []
    assert node.node()["reason"] == "NHC: check_hw_ib failed"


def test_our_own_drain_is_resumed_when_its_check_passes(node: FakeNode) -> None:
    assert check(node, "boot") == 0
    node.set_node("IDLE+DRAIN", "aicluster-health:IB_PORT_DOWN mlx5_ib3 port 1 DOWN/Disabled")
    assert check(node, "periodic") == 0
    assert node.updates() == [["update", f"nodename={NODE}", "state=RESUME"]]
    assert node.node() == {"state": "IDLE", "reason": None}


def test_a_drain_whose_check_did_not_run_in_this_layer_stays(node: FakeNode) -> None:
    assert check(node, "boot") == 0
    node.set_node("IDLE+DRAIN", "aicluster-health:NVLINK_INACTIVE GPU 3 links 5 inactive")
    assert check(node, "prolog") == 0  # the prolog does not look at NVLink
    assert node.updates() == []


def test_an_xid_drain_is_cleared_only_after_a_reboot(node: FakeNode) -> None:
    shutil.copy(DATA / "dmesg-xid79.txt", node.out / "dmesg.txt")
    assert check(node, "periodic") == 1
    assert drained_code(node) == "XID79"
    # the next runs see no new XID, but the GPU has not been power-cycled: the reason stays
    for layer in ("periodic", "prolog", "epilog"):
        check(node, layer)
    assert len(node.updates()) == 1
    # a reboot (new boot id, fresh kernel log): slurmd's first health check is the boot layer, which clears it
    (node.root / "boot_id").write_text("6a1f0e0c-boot-0002\n")
    shutil.copy(DATA / "dmesg-healthy.txt", node.out / "dmesg.txt")
    assert check(node, "periodic") == 0
    assert node.updates()[-1] == ["update", f"nodename={NODE}", "state=RESUME"]


def test_an_xid_already_reported_does_not_drain_again(node: FakeNode) -> None:
    shutil.copy(DATA / "dmesg-xid48.txt", node.out / "dmesg.txt")
    assert check(node) == 1
    node.set_node("IDLE")  # an admin resumed the node after looking at it
    assert check(node) == 0
    assert len(node.updates()) == 1


def test_an_application_xid_does_not_drain(node: FakeNode, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(DATA / "dmesg-xid13.txt", node.out / "dmesg.txt")
    assert check(node) == 0
    assert node.updates() == []
    assert "warn XID13" in capsys.readouterr().err


def test_an_xid_missing_from_the_catalog_is_logged_not_drained(
    node: FakeNode, capsys: pytest.CaptureFixture[str]
) -> None:
    node.record("dmesg.txt", "[ 50.000001] NVRM: Xid (PCI:0000:18:00): 999, pid=1, something new\n")
    assert check(node) == 0
    assert "warn XID999" in capsys.readouterr().err


def test_a_second_fault_keeps_the_first_reason(node: FakeNode) -> None:
    shutil.copy(DATA / "dmesg-xid79.txt", node.out / "dmesg.txt")
    check(node)
    node.ib_port("mlx5_ib0", state="1: DOWN")
    check(node)
    assert len(node.updates()) == 1
    assert parse_reason(node.node()["reason"]).code == "XID79"  # type: ignore[union-attr]


def test_the_prolog_skips_the_slow_checks(node: FakeNode) -> None:
    node.record("nvlink.txt", "garbage that would fail the NVLink check\n")
    node.record("clocks.csv", "garbage\n")
    assert check(node, "prolog") == 0


def test_with_drain_off_it_reports_only(node: FakeNode) -> None:
    node.config(drain=False)
    shutil.copy(DATA / "dmesg-xid79.txt", node.out / "dmesg.txt")
    assert check(node) == 1
    assert node.updates() == []


def test_a_node_of_another_pool_gets_only_the_common_checks(node: FakeNode) -> None:
    node.record("gpus.csv", "garbage\n")  # a CPU node has no nvidia-smi to ask
    assert main(["--layer", "periodic", "--config", str(node.root / "health.json"), "--node", "login-001"]) == 0


@pytest.mark.parametrize("layer", ["boot", "periodic", "prolog"])
def test_a_node_held_by_repair_is_never_resumed_by_a_check(node: FakeNode, layer: str) -> None:
    """aicluster-repair holds a node for a person (repeat offender, no automatic repair): a healthy check, even the
    first one after a reboot, leaves it drained with its reason."""
    held = "aicluster-health:HELD repeat offender: 5 repairs in 7 d (limit 5); XID79 GPU 0000:3a:00"
    node.set_node("IDLE+DRAIN", held)
    (node.root / "boot_id").write_text("6a1f0e0c-boot-0009\n")
    assert check(node, layer) == 0
    assert node.updates() == []
    assert node.node() == {"state": "IDLE+DRAIN", "reason": held}


def test_a_node_repair_rebooted_is_resumed_by_its_boot_check(node: FakeNode) -> None:
    """The repair program marks the node REPAIR while it reboots or power-cycles it; slurmd's first health check
    after the boot (the boot layer) resumes it when the node is healthy, and only that one."""
    assert check(node, "boot") == 0
    node.set_node("IDLE+DRAIN", "aicluster-health:REPAIR power_cycle XID79 GPU 0000:3a:00 GPU has fallen off the bus")
    assert check(node, "periodic") == 0  # the same boot: still in repair
    assert node.updates() == []
    (node.root / "boot_id").write_text("6a1f0e0c-boot-0010\n")
    assert check(node, "periodic") == 0
    assert node.updates() == [["update", f"nodename={NODE}", "state=RESUME"]]


def test_a_fault_found_while_slurm_waits_for_the_reboot_ends_the_reboot_then_drains(node: FakeNode) -> None:
    """After `scontrol reboot`, slurmd's check at boot runs before the node registers (DOWN+DRAIN+REBOOT_ISSUED);
    a drain given then is cleared by the registration (Slurm 22.05, tests/integration/test_repair_reboot.py), so
    the reboot is ended first (RESUME) and the drain given after it."""
    node.set_node("DOWN+DRAIN+REBOOT_ISSUED", "aicluster-health:REPAIR reboot XID48 GPU 0000:3a:00 : reboot issued")
    shutil.copy(DATA / "dmesg-xid48.txt", node.out / "dmesg.txt")
    (node.root / "boot_id").write_text("6a1f0e0c-boot-0011\n")
    assert check(node, "periodic") == 1
    resume, drain = node.updates()
    assert resume == ["update", f"nodename={NODE}", "state=RESUME"]
    assert drain[:3] == ["update", f"nodename={NODE}", "state=DRAIN"]
    assert parse_reason(drain[3].removeprefix("reason=")).code == "XID48"  # type: ignore[union-attr]
