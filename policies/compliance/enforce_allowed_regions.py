"""Data residency: every regional resource lives in a region compliance.allowed_regions lists (Azure locations
and GCP zones read as their regions; global resources are no region)."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import Res
from ..facts.regions import GLOBAL_LOCATION, azure_location
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY

GLOBAL_PREFIXES = ("aws:iam/", "aicluster:", "pulumi:")

# Azure and GCP resources that are not regional say so with this location (DNS zones, Front Door, log buckets).
AZURE_GLOBAL_LOCATION = GLOBAL_LOCATION


def _allowed_regions(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    allowed = [str(r) for r in ctx.setting("allowed_regions", ("compliance", "allowed_regions"), [])]
    if not allowed:
        raise NotApplicable(
            "no allowed regions: set compliance.allowed_regions in the stack or allowed_regions in policy config"
        )
    # Azure locations compare as Azure reads them: "East US" is eastus (Res.region normalises the resource's)
    azure_allowed = {azure_location(r) for r in allowed}
    for res in stack.resources:
        if res.type.startswith(GLOBAL_PREFIXES):
            continue
        region = res.region  # a GCP zone counts as its region (Res.region: us-central1-a -> us-central1)
        if res.provider == "azure-native" and region in (AZURE_GLOBAL_LOCATION, *azure_allowed):
            continue
        if res.provider == "gcp" and region == GLOBAL_LOCATION:
            continue
        if region is not None and region not in allowed:
            yield (
                res,
                f"{res.kind} {res.name} is in {region}, outside compliance.allowed_regions "
                f"[{', '.join(allowed)}]; move it to an allowed region or add {region} to allowed_regions",
            )


POLICY = StackRule(
    Meta(
        name="aicluster-resource-enforce-allowed-regions",
        display_name="Data residency",
        description="Every regional resource lives in a region listed in compliance.allowed_regions.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Move the pool or file system to an allowed region, or amend compliance.allowed_regions.",
        frameworks=("gdpr",),
        controls=("GDPR Art. 44-49 (transfers to third countries)",),
        config={
            "allowed_regions": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Regions data may live in. Default: the AiCluster's compliance.allowed_regions.",
            }
        },
    ),
    _allowed_regions,
)
