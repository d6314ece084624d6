"""InfiniBand scale-set size: one placement group of at most 100 VMs, or what max_vms allows."""

from __future__ import annotations

from tests.policies.conftest import findings
from tests.policies.resources.azure import VMSS, ib_vmss


def test_infiniband_scale_set_baseline_passes() -> None:
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, ib_vmss()) == []


def test_infiniband_scale_set_size() -> None:
    big = ib_vmss(sku={"name": "Standard_ND96isr_H100_v5", "capacity": 250.0})
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, big) == [
        "scale set x asks for 250 VMs; one InfiniBand placement group holds at most 100: split the pool into "
        "scale sets of up to 100 (or have Azure support raise the limit, up to 300, and set max_vms)"
    ]
    # a subscription whose limit Azure support raised: policy config (or the AiCluster's declaration)
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, big, {"max_vms": 300}) == []
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, big, {"max_vms": 200}) == [
        "scale set x asks for 250 VMs; one InfiniBand placement group holds at most 200: split the pool into "
        "scale sets of up to 200 (or have Azure support raise the limit, up to 300, and set max_vms)"
    ]
    ethernet = {**big, "sku": {"name": "Standard_D8s_v5", "capacity": 250.0}, "singlePlacementGroup": False}
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, ethernet) == []
    assert findings("azure-compute-vmss-enforce-infiniband-placement", VMSS, ethernet) == []
