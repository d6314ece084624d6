"""aicluster-repair's Redfish client against sushy-tools' BMC emulator (fake driver, Basic authentication)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from aicluster.repair.config import Bmc
from aicluster.repair.redfish import Redfish, RedfishError, choose, read_password
from tests.repair.bmc import USER, emulator


@pytest.mark.parametrize(
    ("allowed", "plan"),
    [
        pytest.param(["On", "ForceOff", "ForceRestart", "PowerCycle"], ("PowerCycle",), id="power-cycle-first"),
        pytest.param(["On", "ForceOff", "GracefulRestart", "ForceRestart"], ("ForceOff", "On"), id="off-then-on"),
        pytest.param(["ForceOff", "ForceOn"], ("ForceOff", "ForceOn"), id="off-then-force-on"),
        pytest.param(["GracefulRestart", "ForceRestart"], ("ForceRestart",), id="restart-last"),
        pytest.param(["GracefulRestart", "Nmi"], None, id="nothing-that-power-cycles"),
    ],
)
def test_the_best_reset_the_bmc_allows_is_chosen(allowed: list[str], plan: tuple[str, ...] | None) -> None:
    assert choose(allowed) == plan


@pytest.mark.slow
def test_power_cycle_through_the_emulated_bmc(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The emulator allows On, ForceOff, ..., ForceRestart, ForceOn (no PowerCycle): the client reads that list,
    powers the system off, waits for PowerState Off, and powers it on."""
    with emulator(tmp_path / "bmc", ["dgx-000", "dgx-001"]) as emu:
        sid = emu.systems["dgx-000"]
        bmc = Bmc(url=f"{emu.url}/redfish/v1/Systems/{sid}", username=USER, password_file=str(emu.password_file))
        caplog.set_level(logging.DEBUG)
        done = Redfish.connect(bmc, timeout_s=10).power_cycle(power_off_wait_s=60)
        assert done == f"/redfish/v1/Systems/{sid}: ForceOff, then On"
        assert emu.resets() == 2
        emu.wait_power("dgx-000", "On")
        assert emu.power("dgx-001") == "On"  # the other system was not touched
        assert emu.password not in caplog.text
        assert emu.password not in done

        # two systems and no system path in the URL: which one is not guessed
        with pytest.raises(RedfishError, match="lists 2 systems; name the node's in the BMC URL"):
            Redfish.connect(bmc.model_copy(update={"url": emu.url}), 10).power_cycle(60)

        # a wrong password: the BMC's refusal, without the password
        wrong = tmp_path / "wrong"
        wrong.write_text("not-it")
        wrong.chmod(0o600)
        with pytest.raises(RedfishError, match="HTTP 401") as err:
            Redfish.connect(bmc.model_copy(update={"password_file": str(wrong)}), 10).power_cycle(60)
        assert "not-it" not in str(err.value)


def test_a_password_file_others_may_read_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text("s3cret\n")
    f.chmod(0o644)
    with pytest.raises(RedfishError, match=r"mode 0644 lets others read it; make it root's alone \(chmod 600\)") as e:
        read_password(str(f))
    assert "s3cret" not in str(e.value)
    f.chmod(0o600)
    assert read_password(str(f)) == "s3cret"
