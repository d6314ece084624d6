"""Owned sites in `aicluster plan` and `preview`: the sites and fabrics tables, the on-prem pool and controller
rows, and the sites in the preview JSON, for the on-prem DGX H100 example stack."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import run_cli

STACK = "onprem-dgx-h100"


def cells(out: str, first: str) -> list[str]:
    """The cells of the table row whose first cell is `first`."""
    for line in out.splitlines():
        parts = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if parts and parts[0] == first:
            return parts
    raise AssertionError(f"no row {first!r} in:\n{out}")


def table(out: str, title: str) -> str:
    """The text of the table titled `title` (up to its closing border)."""
    start = out.index(f"{title}\n")
    return out[start : out.index("┘", start) + 1]


def test_plan_shows_the_site_fabric_pool_and_controller() -> None:
    proc = run_cli("plan", STACK)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert cells(table(out, "Sites"), "fra1") == [
        "fra1",
        "h100",
        "128",
        "1,024",
        "1,305.6 / 2,500 (52%)",
        "1,632.0",
        "32",
        "40.8 / 41 kW",
        "$1,013,333.33",
        "$142,963.20",
        "452.7",
    ]
    assert cells(table(out, "Fabrics"), "fra1") == [
        "fra1",
        "fra1",
        "qm9700 64x400G",
        "infiniband, 8 rails",
        "2",
        "32/16/0",
        "1,024/1,024",
        "1,536+512",
        "3,072/0",
        "1:1/1:1",
    ]
    pools = table(out, f"Plan for {STACK} (dgx-fra1)")
    assert cells(pools, "h100")[:7] == ["h100", "onprem", "fra1", "dgx-h100", "128", "1,024", "owned"]
    # an existing site host: named with its address, its cost and power the site's (never "$0.00 on-demand")
    assert cells(pools, "controller") == [
        "controller",
        "onprem",
        "fra1",
        "slurm01 (10.200.0.5)",
        "1",
        "",
        "owned",
        "site's",
        "site's",
        "—",
        "—",
    ]
    assert "$0.00" not in pools
    assert "controller: site host slurm01 at 10.200.0.5 in fra1" in out


def test_preview_json_carries_the_sites_fabrics_and_racks() -> None:
    proc = run_cli("preview", STACK, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    (site,) = json.loads(proc.stdout)["sites"]
    assert (site["name"], site["nodes"], site["gpus"], site["rack_kw"], site["max_kw"]) == (
        "fra1",
        128,
        1024,
        41.0,
        2500.0,
    )
    (fabric,) = site["fabrics"]
    assert (fabric["switch"], fabric["tiers"], fabric["leaf_switches"], fabric["spine_switches"]) == (
        "qm9700",
        2,
        32,
        16,
    )
    assert (fabric["cables_node_leaf"], fabric["cables_leaf_spine"], fabric["core_switches"]) == (1024, 1024, 0)
    assert len(site["racks"]) == 32
    assert {(r["nodes"], r["power_kw"], r["limit_kw"]) for r in site["racks"]} == {(4, 40.8, 41.0)}


def test_preview_summary_shows_the_site_and_fabric_tables() -> None:
    proc = run_cli("preview", STACK)
    assert proc.returncode == 0, proc.stderr
    assert cells(table(proc.stdout, "Sites"), "fra1")[6:8] == ["32", "40.8 / 41 kW"]
    assert cells(table(proc.stdout, "Fabrics"), "fra1")[5:7] == ["32/16/0", "1,024/1,024"]


def test_html_report_of_the_example_has_the_bill_of_materials_and_racks(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    proc = run_cli("report", STACK, "--format", "html", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert '<tr><td>spine switches</td><td>qm9700</td><td class="num">16</td></tr>' in text
    assert text.count('<div class="rack" title=') == 32
    assert "Rack power: 32 racks; the fullest draws 40.80 kW of 41.00 kW; none over the limit" in text


def test_cloud_only_output_has_no_site_tables() -> None:
    proc = run_cli("plan", "p5-small")
    assert proc.returncode == 0, proc.stderr
    assert "Sites\n" not in proc.stdout
    assert "Fabrics\n" not in proc.stdout
    assert cells(proc.stdout, "controller")[6:8] == ["on-demand", "$0.41"]
    data = json.loads(run_cli("preview", "p5-small", "--json", "-").stdout)
    assert data["sites"] == []
