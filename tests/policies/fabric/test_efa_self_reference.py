"""The EFA security group allows all traffic to and from itself."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import EFA_SG, NO_EFA, judge, messages, mutated, set_at

CASES = [
    pytest.param(
        "aws-ec2-securitygroup-enforce-efa-self-reference",
        {EFA_SG: set_at("egress.0.self", False)},
        "launch template llm-dev-h100-lt puts EFA interfaces in security groups none of which allows all traffic to "
        "and from itself: llm-dev-us-east-1-efa (ingress/no egress from itself), llm-dev-us-east-1-node (no ingress/"
        "no egress from itself); EFA needs an all-protocol self-referencing ingress and egress rule",
        id="efa-sg-no-self-egress",
    )
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_a_stack_without_efa_is_not_applicable(p5_small: Capture) -> None:
    """A rule that had nothing to judge is not applicable, with its reason; never passed."""
    result = judge(mutated(p5_small, NO_EFA), ["aws-ec2-securitygroup-enforce-efa-self-reference"])
    assert result.passed == []
    assert result.not_applicable == [
        {
            "policy": "aws-ec2-securitygroup-enforce-efa-self-reference",
            "reason": "no launch template with EFA interfaces in the stack",
        }
    ]
