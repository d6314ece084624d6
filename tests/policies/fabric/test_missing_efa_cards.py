"""Every EFA card declared: p5-small's launch template with half, and none, of its EFA interfaces."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import LT, capture_of, judge, messages, mutated

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


P6E_LT = "gb200-aws-gb200-nvl1-lt"


def test_p6e_ultraservers_with_one_efa_per_gpu_pass() -> None:
    """The example's p6e-gb200 templates: EFA on cards 1, 5, 9 and 13 only is the type's whole layout."""
    assert messages(judge(capture_of("aws-p6e-gb200"), ["aws-ec2-launchtemplate-missing-efa-cards"])) == []


def test_a_p6e_template_missing_a_gpus_efa_is_named_with_its_card() -> None:
    drop_card_9 = {
        P6E_LT: lambda i: i.update(networkInterfaces=[n for n in i["networkInterfaces"] if n["networkCardIndex"] != 9])
    }
    assert messages(
        judge(mutated(capture_of("aws-p6e-gb200"), drop_card_9), ["aws-ec2-launchtemplate-missing-efa-cards"])
    ) == [
        f"launch template {P6E_LT} declares EFA on 3 of the 4 network cards of p6e-gb200.36xlarge (missing cards 9): "
        "those NICs carry no RDMA traffic; declare one efa-only interface per card"
    ]
