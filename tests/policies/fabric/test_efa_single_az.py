"""EFA pools in one Availability Zone."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import ASG, NO_EFA, judge, messages, mutated, set_at

CASES = [
    pytest.param(
        "aws-autoscaling-group-enforce-efa-single-az",
        {ASG: set_at("availabilityZones", ["us-east-1a", "us-east-1b"])},
        "Auto Scaling group llm-dev-h100-asg spreads EFA nodes over us-east-1a, us-east-1b; EFA traffic does not "
        "cross Availability Zones, so nodes in different zones cannot talk over the fabric. Give it one subnet",
        id="efa-two-zones",
    )
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_a_stack_without_efa_is_not_applicable(p5_small: Capture) -> None:
    """A rule that had nothing to judge is not applicable, with its reason; never passed."""
    result = judge(mutated(p5_small, NO_EFA), ["aws-autoscaling-group-enforce-efa-single-az"])
    assert result.passed == []
    assert result.not_applicable == [
        {
            "policy": "aws-autoscaling-group-enforce-efa-single-az",
            "reason": "no Auto Scaling group of EFA nodes in the stack",
        }
    ]
