"""InfiniBand scale-set placement, judged as the engine hands a scale set to any program."""

from __future__ import annotations

from typing import Any

import pytest

from tests.policies.conftest import findings
from tests.policies.resources.azure import VMSS, ib_vmss


def test_infiniband_scale_set_baseline_passes() -> None:
    assert findings("azure-compute-vmss-enforce-infiniband-placement", VMSS, ib_vmss()) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"singlePlacementGroup": False},
            "scale set x (Standard_ND96isr_H100_v5) does not set singlePlacementGroup = true: VMs outside one "
            "placement group do not share an InfiniBand fabric",
            id="placement-group",
        ),
        pytest.param(
            {"platformFaultDomainCount": 5.0},
            "scale set x has platformFaultDomainCount 5.0; InfiniBand scale sets need 1",
            id="fault-domains",
        ),
        pytest.param(
            {"overprovision": True},
            "scale set x leaves overprovisioning on: extra VMs join the fabric and are deleted; "
            "set overprovision = false",
            id="overprovision",
        ),
    ],
)
def test_infiniband_scale_set_placement(changes: dict[str, Any], expected: str) -> None:
    assert findings("azure-compute-vmss-enforce-infiniband-placement", VMSS, ib_vmss(**changes)) == [expected]
