"""Validation patterns match the whole value: Python's `$` also matches before a trailing newline, so
`re.match(r"^...$")` let "value\n" through (a newline then lands in resource names, tags and images)."""

from __future__ import annotations

import pytest

from aicluster.catalog import Catalog
from aicluster.providers.aws import pool as aws_plan
from aicluster.providers.azure import pool as azure_plan
from policies.facts import gcp_region
from tests.helpers import cluster, plan_problems, pool


def test_a_pinned_ssm_parameter_is_the_whole_value() -> None:
    assert aws_plan.image_pinned("resolve:ssm:/aws/service/deeplearning/ami:12")
    assert not aws_plan.image_pinned("resolve:ssm:/aws/service/deeplearning/ami:12\n")
    assert not aws_plan.image_pinned("resolve:ssm:/aws/service/deeplearning/ami")


@pytest.mark.parametrize("urn", ["a:b:c:d\n", "a:b:c:d\nx", "a:b:c\n:d", "a:b:c"])
def test_an_azure_urn_with_a_newline_is_not_an_urn(urn: str) -> None:
    assert azure_plan.is_image_urn("microsoft-dsvm:ubuntu-hpc:2204:latest")
    assert not azure_plan.is_image_urn(urn)


def test_a_gcp_zone_with_a_trailing_newline_is_not_a_zone() -> None:
    assert gcp_region("us-central1-a") == "us-central1"
    assert gcp_region("us-central1-a\n") == "us-central1-a\n"  # not taken for us-central1


@pytest.mark.parametrize(
    "field", ["region", "zone", "instance_type", "image"], ids=["region", "zone", "instance-type", "image"]
)
def test_a_trailing_newline_in_a_pool_field_is_refused(catalog: Catalog, field: str) -> None:
    values = {
        "region": "us-east-1",
        "zone": "us-east-1a",
        "instance_type": "p5.48xlarge",
        "image": "ami-0123456789abcdef0",
    }
    found = plan_problems(catalog, cluster(pools=[pool(**{**values, field: values[field] + "\n"})]))
    assert any(f"pools[0].{field}" in p for p in found), found
