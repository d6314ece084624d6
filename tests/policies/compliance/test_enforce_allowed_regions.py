"""Data residency: regions as each cloud spells them (Azure display names, GCP zones, global resources)."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN, Capture
from tests.policies.conftest import FS, judge, messages, mutated, res, set_at, stack_findings
from tests.policies.resources import azure, gcp
from tests.policies.resources.azure import ACTIVITY_LOG, vmss
from tests.policies.resources.gcp import LOG_BUCKET, controller, filestore, lustre, mig, queued, template

REGIONS = "aicluster-resource-enforce-allowed-regions"

CASES = [
    pytest.param(
        "aicluster-resource-enforce-allowed-regions",
        {FS: set_at("region", "eu-west-1")},
        "lustre file system llm-dev-scratch-fs is in eu-west-1, outside compliance.allowed_regions [us-east-1]; move "
        "it to an allowed region or add eu-west-1 to allowed_regions",
        id="region-outside",
    )
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_azure_locations_are_checked() -> None:
    assert stack_findings(REGIONS, [vmss(location="westeurope"), azure.nat()], {"allowed_regions": ["eastus"]}) == [
        "virtual machine scale set gpu is in westeurope, outside compliance.allowed_regions [eastus]; move it to an "
        "allowed region or add westeurope to allowed_regions"
    ]


def test_azure_location_names_are_normalised_and_global_is_not_a_region() -> None:
    dns = res("azure-native:network:PrivateZone", "dns", {"location": "Global"})
    resources = [vmss(location="East US"), dns, res(ACTIVITY_LOG, "activity", {"workspaceId": UNKNOWN})]
    assert stack_findings(REGIONS, resources, {"allowed_regions": ["eastus"]}) == []
    assert stack_findings(REGIONS, [vmss()], {"allowed_regions": ["East US"]}) == []


def test_gcp_zones_are_judged_as_their_region_and_global_is_not_a_region() -> None:
    bucket = res(LOG_BUCKET, "audit", {"bucketId": "_Default", "location": "global", "retentionDays": 365.0})
    tpl = template()
    resources = [tpl, mig(tpl), lustre(), filestore(), controller(), gcp.nat(), bucket]
    assert stack_findings(REGIONS, resources, {"allowed_regions": ["us-central1"]}) == []
    assert stack_findings(REGIONS, [queued(), bucket], {"allowed_regions": ["us-central1"]}) == [
        "v2 queued resource s0 is in us-east5, outside compliance.allowed_regions [us-central1]; move it to an "
        "allowed region or add us-east5 to allowed_regions"
    ]
