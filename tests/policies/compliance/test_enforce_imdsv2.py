"""aws-ec2-instance-enforce-imdsv2 over p5-small: one mutation, one finding; an unknown setting is not judged."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN, Capture
from tests.policies.conftest import CTL_LT, DELETE, LT, judge, messages, mutated, set_at

CASES = [
    pytest.param(
        "aws-ec2-instance-enforce-imdsv2",
        {LT: set_at("metadataOptions.httpTokens", "optional")},
        'launch template llm-dev-h100-lt allows IMDSv1: metadataOptions.httpTokens is "optional"; set '
        'metadataOptions.httpTokens = "required" so credentials need a session token',
        id="imdsv2-optional",
    ),
    pytest.param(
        "aws-ec2-instance-enforce-imdsv2",
        {CTL_LT: set_at("metadataOptions", DELETE)},
        "launch template llm-dev-slurmctld-lt allows IMDSv1: metadataOptions.httpTokens is not set (IMDSv1 stays on); "
        'set metadataOptions.httpTokens = "required" so credentials need a session token',
        id="imdsv2-unset",
    ),
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_unknown_value_is_the_engines_advisory(p5_small: Capture) -> None:
    name = "aws-ec2-instance-enforce-imdsv2"
    result = judge(mutated(p5_small, {LT: set_at("metadataOptions", UNKNOWN)}), [name])
    assert result.violations == []  # an unknown setting is not judged
    assert result.passed == [name]
