"""Fabric oversubscription as asked: the on-prem example's fabric worse than asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.resources.onprem import fabric, site_findings

SITE_CASES = [
    pytest.param(
        "aicluster-fabric-enforce-oversubscription",
        fabric(oversubscription_achieved=1.5),
        "fabric fra1 of site fra1 is 1.5:1 oversubscribed at its leaves (32 ports down, 32 up), worse than the 1:1 "
        "asked for: all-reduce traffic across leaves slows by that ratio; use a switch with more ports "
        "(fabric.switch_radix or fabric.switch) or accept the ratio in fabric.oversubscription",
        id="oversubscribed-worse-than-asked",
    )
]


@pytest.mark.parametrize(("name", "change", "expected"), SITE_CASES)
def test_each_site_policy_reports_one_mutation(
    dgx: Capture, name: str, change: Callable[[dict[str, Any]], None], expected: str | None
) -> None:
    assert site_findings(dgx, name, change) == ([expected] if expected else [])
