"""Every fleet's power is known: Cloud TPU hosts are named, not counted as 0 kW."""

from __future__ import annotations

from tests.policies.conftest import stack_findings
from tests.policies.resources.gcp import controller, queued

POWER = "aicluster-cluster-enforce-power-budget"

POWER_FIGURES = "aicluster-cluster-missing-power-figures"


def test_tpu_power_is_named_not_counted_as_zero() -> None:
    # n2-standard-8 draws 0.08 kW; us-east5's PUE brings the controller's facility draw to about 0.1 kW
    resources = [controller(zone="us-east5-a"), queued()]
    assert stack_findings(POWER_FIGURES, resources) == [
        "no published power figure for s0 (32 x v5p-256 hosts): the facility power 0.1 kW (and the power budget and "
        "carbon figures) leaves them out; meter the hosts, or budget their power outside this check"
    ]
    assert stack_findings(POWER_FIGURES, [controller()]) == []
    (over,) = stack_findings(POWER, resources, {"power_kw": 0.01})
    assert over.endswith("(not counted, no published power figure: s0 (32 x v5p-256 hosts))")
    assert stack_findings(POWER, resources, {"power_kw": 10}) == []
