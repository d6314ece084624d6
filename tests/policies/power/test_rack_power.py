"""Rack power density: a node that draws more than a whole rack."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import CLUSTER, judge, messages, mutated, set_at

CASES = [
    pytest.param(
        "aicluster-node-enforce-rack-power",
        {CLUSTER: set_at("budgets.rack_kw", 8.0)},
        "one p5.48xlarge node of llm-dev-h100-asg draws up to 10.2 kW, more than a whole 8 kW rack; racks for this "
        "pool need at least 10.2 kW (liquid-cooled or high-density rows)",
        id="rack-too-small",
    )
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]
