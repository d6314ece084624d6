"""The facility power budget: nodes' maximum IT draw x the region's PUE (or the site's), on every cloud and site."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import CLUSTER, judge, messages, mutated, set_at, stack_findings
from tests.policies.resources.azure import ND_H100, vmss
from tests.policies.resources.gcp import mig, template

POWER = "aicluster-cluster-enforce-power-budget"

CASES = [
    pytest.param(
        "aicluster-cluster-enforce-power-budget",
        {CLUSTER: set_at("budgets.power_kw", 40.0)},
        "facility power 46.6 kW (IT kW x PUE) exceeds the budget 40.0 kW by 6.6 kW; largest: llm-dev-h100-asg 4 x "
        "p5.48xlarge 46.51 kW; llm-dev-slurmctld-vm 1 x m7i.2xlarge 0.05 kW. Shrink a pool or raise budgets.power_kw",
        id="over-power",
    )
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_power_uses_the_azure_regions_pue() -> None:
    # 4 x 10.2 kW IT x PUE 1.185 (eastus) = 48.35 kW
    assert stack_findings("aicluster-cluster-enforce-power-budget", [vmss()], {"power_kw": 40}) == [
        f"facility power 48.3 kW (IT kW x PUE) exceeds the budget 40.0 kW by 8.3 kW; largest: gpu 4 x {ND_H100} "
        "48.35 kW. Shrink a pool or raise budgets.power_kw"
    ]


def test_gcp_fleets_draw_power() -> None:
    tpl = template()
    (message,) = stack_findings(POWER, [tpl, mig(tpl, nodes=32)], {"power_kw": 100})
    assert message.startswith("facility power 359.0 kW (IT kW x PUE) exceeds the budget 100.0 kW by 259.0 kW")


def test_the_power_budget_counts_the_sites_facility_power(dgx: Capture) -> None:
    power = "aicluster-cluster-enforce-power-budget"
    assert messages(judge(dgx, [power], {power: {"power_kw": 1632}})) == []
    assert messages(judge(dgx, [power], {power: {"power_kw": 1600}})) == [
        "facility power 1,632.0 kW (IT kW x PUE) exceeds the budget 1,600.0 kW by 32.0 kW; largest: dgx-fra1-fra1 "
        "(site fra1, 128 owned nodes) 1,632.00 kW. Shrink a pool or raise budgets.power_kw"
    ]
