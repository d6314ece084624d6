"""Where aicluster-repair logs: its log file; with --dry-run (a person at a terminal) stderr as well."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from aicluster.repair.cli import setup_logging
from aicluster.repair.config import RepairConfig


@pytest.mark.parametrize(
    ("echo", "on_stderr"), [pytest.param(True, True, id="dry-run"), pytest.param(False, False, id="timer")]
)
def test_a_dry_run_logs_to_stderr_as_well_as_to_its_log_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], echo: bool, on_stderr: bool
) -> None:
    log_file = tmp_path / "log" / "aicluster-repair.log"
    config = RepairConfig.model_validate({"cluster": "llm-dev", "log_file": str(log_file)})
    setup_logging(config, echo=echo)
    logging.getLogger("aicluster.repair.cli").info("node %s: would %s (%s)", "dgx-010", "reboot", "XID95")
    for handler in logging.getLogger("aicluster.repair").handlers:
        handler.flush()
    line = "node dgx-010: would reboot (XID95)"
    assert line in log_file.read_text()
    assert (line in capsys.readouterr().err) is on_stderr
