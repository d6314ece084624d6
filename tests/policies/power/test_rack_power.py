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


def test_a_rack_scale_node_is_not_judged_against_an_air_cooled_rack(a4x: Capture) -> None:
    """An A4X VM draws 6.67 kW, its NVL72 rack ~120 kW: the rack is the provider's NVLink domain, powered and cooled as
    one (liquid), so a 5 kW air-cooled rack budget says nothing of it."""
    result = judge(mutated(a4x, {"a4x": set_at("budgets.rack_kw", 5.0)}), ["aicluster-node-enforce-rack-power"])
    assert messages(result) == []
