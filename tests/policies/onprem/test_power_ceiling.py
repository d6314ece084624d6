"""Site power ceiling: the on-prem example (onprem-dgx-h100) with its ceiling lowered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.resources.onprem import site_findings

SITE_CASES = [
    pytest.param(
        "aicluster-site-enforce-power-ceiling",
        lambda i: i.update(max_kw=1000.0),
        "site fra1 draws 1,305.6 kW of IT load at its nodes' maximum, over its ceiling of 1,000.0 kW by 305.6 kW; "
        "largest: h100 128 x dgx-h100 1,305.6 kW. Shrink or move a pool (pools[].nodes), or raise "
        "sites[].power.max_kw to what the site delivers",
        id="site-over-its-ceiling",
    )
]


@pytest.mark.parametrize(("name", "change", "expected"), SITE_CASES)
def test_each_site_policy_reports_one_mutation(
    dgx: Capture, name: str, change: Callable[[dict[str, Any]], None], expected: str | None
) -> None:
    assert site_findings(dgx, name, change) == ([expected] if expected else [])
