"""No placement group for capacity blocks."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import LT, judge, messages, mutated, set_at

CASES = [
    pytest.param(
        "aws-ec2-placementgroup-disallow-capacity-block",
        {LT: set_at("instanceMarketOptions", {"marketType": "capacity-block"})},
        "Auto Scaling group llm-dev-h100-asg launches into a capacity block and also names a placement group; "
        "capacity blocks come co-located and launches into them fail with a placement group: remove it",
        id="capacity-block-with-pg",
    )
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]
