"""Every EFA card declared: p5-small's launch template with half, and none, of its EFA interfaces."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import LT, judge, messages, mutated

CASES = [
    pytest.param(
        "aws-ec2-launchtemplate-missing-efa-cards",
        {LT: lambda i: i.update(networkInterfaces=i["networkInterfaces"][:17])},
        "launch template llm-dev-h100-lt declares EFA on 16 of the 32 network cards of p5.48xlarge (missing cards 16, "
        "17, 18, 19, 20, 21, 22, 23 ...): those NICs carry no RDMA traffic; declare one efa-only interface per card",
        id="efa-half-the-cards",
    ),
    pytest.param(
        "aws-ec2-launchtemplate-missing-efa-cards",
        {LT: lambda i: i.update(networkInterfaces=i["networkInterfaces"][:1])},
        "launch template llm-dev-h100-lt declares no EFA interface for p5.48xlarge: NCCL falls back to TCP sockets at "
        "a fraction of the 3200 Gb/s fabric; declare an EFA interface on each of its 32 network cards",
        id="efa-none",
    ),
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]
