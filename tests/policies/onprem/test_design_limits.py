"""Fabric design limits: switch radix, tiers' reach, ports and catalog switches of the on-prem example's fabric."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.resources.onprem import fabric, site_findings

SITE_CASES = [
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        fabric(radix=128.0),
        "fabric fra1 of site fra1 counts 128 ports per qm9700 at 400 Gb/s, but the switch offers 64 x 400G, "
        "128 x 200G; set fabric.link_gbps and fabric.switch_radix to one of those",
        id="radix-the-switch-lacks-at-that-speed",
    ),
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        fabric(endpoints=2400.0, nodes=300.0),
        "fabric fra1 of site fra1 cables 2400 endpoints, more than 2 tiers of radix-64 switches reach (2048); add a "
        "tier, use a switch with more ports, or split the pool over two fabrics",
        id="more-endpoints-than-two-tiers-reach",
    ),
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        fabric(nodes=300.0),
        "fabric fra1 of site fra1 joins 300 nodes, more than the 256 its design reaches; add a tier, use a switch "
        "with more ports, or split the pool over two fabrics",
        id="more-nodes-than-the-design-reaches",
    ),
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        fabric(ports_used=3100.0),
        "fabric fra1 of site fra1 uses 3100 switch ports of the 3072 its switches have; add switches (a tier, or a "
        "switch with more ports)",
        id="more-ports-than-the-switches-have",
    ),
    pytest.param(
        "aicluster-fabric-enforce-design-limits",
        fabric(switch="qm9999"),
        "fabric fra1 of site fra1 is built of switch 'qm9999', which the catalog does not know: its ports cannot be "
        "checked; use one of q3400, qm8700, qm9700, sn5600 (fabric.switch)",
        id="switch-not-in-the-catalog",
    ),
]


@pytest.mark.parametrize(("name", "change", "expected"), SITE_CASES)
def test_each_site_policy_reports_one_mutation(
    dgx: Capture, name: str, change: Callable[[dict[str, Any]], None], expected: str | None
) -> None:
    assert site_findings(dgx, name, change) == ([expected] if expected else [])
