"""Carbon: the fleets' and owned sites' emissions against a ceiling."""

from __future__ import annotations

from aicluster.preview.engine import Capture
from tests.policies.conftest import judge, messages


def test_carbon_counts_the_site(dgx: Capture) -> None:
    carbon = "aicluster-cluster-configure-carbon-ceiling"
    assert messages(judge(dgx, [carbon], {carbon: {"max_t_co2e_per_month": 400}})) == [
        "the cluster emits about 452.7 t CO2e/month, over the ceiling of 400; most from dgx-fra1-fra1 (site fra1 grid "
        "380 g CO2e/kWh). A lower-carbon region cuts it"
    ]
