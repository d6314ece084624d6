"""Cost and accelerator cells of the CLI tables: unpriced is never $0.00, TPU chips are not GPUs."""

from __future__ import annotations

import pytest
from rich.console import Console

from aicluster.catalog import Catalog
from aicluster.cli import main
from aicluster.cli.console import out as cli_out
from aicluster.cli.views.plan import pools_table
from tests.helpers import cluster, plan_of
from tests.plan.test_unpriced import without_service


def rendered(table: object) -> str:
    console = Console(width=250, record=True, color_system=None)
    console.print(table)
    return console.export_text()


def test_an_unpriced_nat_gateway_is_not_shown_as_free(catalog: Catalog) -> None:
    plan = plan_of(without_service(catalog, "nat-gateway"), cluster())
    rows = {line.split("│")[1].strip(): line for line in rendered(pools_table(plan)).splitlines() if "│" in line}
    assert "$0.00" not in rows["network"]
    assert "+ unpriced items" in rows["network"]  # its public IPv4 address is priced, the gateway is not
    assert "+ unpriced items" in rows["total"]
    assert "+ unpriced items" not in rows["h100"]


def test_tpu_stacks_count_chips_not_gpus(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_out, "width", 250)  # a narrow console (a worker without COLUMNS) wraps the header
    assert main(["validate", "gcp-tpu-v5p"]) == 0
    out = capsys.readouterr().out
    assert " TPU chips, $" in out
    assert "GPUs" not in out
    assert main(["plan", "gcp-tpu-v5p"]) == 0
    table = capsys.readouterr().out
    assert "TPU chips" in table
    assert "GPUs" not in table
