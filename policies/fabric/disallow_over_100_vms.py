"""InfiniBand scale-set size (Azure): one scale set is one placement group, which holds at most 100 VMs (300 once
Azure support raises it)."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.azure import AZURE_VMSS, infiniband_scale_set
from ..facts.engine import Res
from ..rule import Ctx, Meta, ResourceRule

MANDATORY = EnforcementLevel.MANDATORY

IB_DOMAIN_MAX_VMS = 100  # VMs per placement group (scale set) by default


def _azure_ib_size(res: Res, ctx: Ctx) -> Iterator[str]:
    capacity = res.get("sku", "capacity")
    limit = int(ctx.setting("max_vms", ("fabric", "ib_domain_max_vms"), IB_DOMAIN_MAX_VMS))
    if infiniband_scale_set(res) and isinstance(capacity, int | float) and capacity > limit:
        yield (
            f"scale set {res.name} asks for {capacity:g} VMs; one InfiniBand placement group holds at most "
            f"{limit}: split the pool into scale sets of up to {limit}"
            + (" (or have Azure support raise the limit, up to 300, and set max_vms)" if limit < 300 else "")
        )


POLICY = ResourceRule(
    Meta(
        name="azure-compute-vmss-disallow-over-100-vms",
        display_name="InfiniBand scale-set size",
        description="An InfiniBand scale set holds at most 100 VMs (one placement group).",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Split larger pools into several scale sets of at most 100 VMs (300 once Azure support raises it).",
        config={
            "max_vms": {
                "type": "integer",
                "minimum": 1,
                "maximum": 300,
                "description": "VMs one InfiniBand scale set may hold. Default: what the AiCluster declares "
                "(fabric.ib_domain_max_vms), else 100.",
            }
        },
    ),
    {AZURE_VMSS},
    _azure_ib_size,
)
