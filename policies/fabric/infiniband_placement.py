"""InfiniBand scale-set placement (Azure): one placement group, one fault domain and no overprovisioning, or VMs
fall outside the one InfiniBand fabric."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.azure import AZURE_VMSS, infiniband_scale_set
from ..facts.engine import Res
from ..rule import Ctx, Meta, ResourceRule

MANDATORY = EnforcementLevel.MANDATORY


def _azure_ib_placement(res: Res, ctx: Ctx) -> Iterator[str]:
    if not infiniband_scale_set(res):
        return
    if res.get("singlePlacementGroup") is not True:
        yield (
            f"scale set {res.name} ({res.get('sku', 'name')}) does not set singlePlacementGroup = true: VMs outside "
            "one placement group do not share an InfiniBand fabric"
        )
    fd = res.get("platformFaultDomainCount")
    if fd != 1:
        yield f"scale set {res.name} has platformFaultDomainCount {fd}; InfiniBand scale sets need 1"
    if res.get("overprovision") is not False:
        yield (
            f"scale set {res.name} leaves overprovisioning on: extra VMs join the fabric and are deleted; "
            "set overprovision = false"
        )


POLICY = ResourceRule(
    Meta(
        name="azure-compute-vmss-enforce-infiniband-placement",
        display_name="InfiniBand scale-set placement",
        description="InfiniBand scale sets use one placement group, one fault domain and no overprovisioning.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Set singlePlacementGroup true, platformFaultDomainCount 1 and overprovision false.",
    ),
    {AZURE_VMSS},
    _azure_ib_placement,
)
