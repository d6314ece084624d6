"""Encrypted EBS: launch-template volumes of p5-small, and standalone EBS volumes."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import LT, findings, judge, messages, mutated, set_at

CASES = [
    pytest.param(
        "aws-ebs-volume-enforce-encryption",
        {LT: set_at("blockDeviceMappings.0.ebs.encrypted", "false")},
        "launch template llm-dev-h100-lt blockDeviceMappings[0] (/dev/sda1) is not encrypted; "
        'set ebs.encrypted = "true"',
        id="ebs-lt",
    )
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_ebs_volume_encryption() -> None:
    assert findings("aws-ebs-volume-enforce-encryption", "aws:ebs/volume:Volume", {"encrypted": False}) == [
        "EBS volume x is not encrypted; set encrypted = true"
    ]
