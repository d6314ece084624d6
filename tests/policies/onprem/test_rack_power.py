"""Site rack power: a rack of the on-prem example over its kW."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.resources.onprem import site_findings

SITE_CASES = [
    pytest.param(
        "aicluster-site-enforce-rack-power",
        lambda i: i["racks"][0].update(kw=42.0),
        "rack h100-r01 of site fra1 draws 42 kW (4 nodes of h100), over its 41 kW; move hosts to another rack "
        "(hosts[].rack) or raise sites[].power.rack_kw to what the rack's power and cooling deliver",
        id="rack-over-its-kw",
    )
]


@pytest.mark.parametrize(("name", "change", "expected"), SITE_CASES)
def test_each_site_policy_reports_one_mutation(
    dgx: Capture, name: str, change: Callable[[dict[str, Any]], None], expected: str | None
) -> None:
    assert site_findings(dgx, name, change) == ([expected] if expected else [])
