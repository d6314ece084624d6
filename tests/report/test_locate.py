"""Which stack field a finding comes from (aicluster.preview.locate), and its line."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.locate import dotted, stack_field, stack_line

CLUSTER: dict[str, Any] = {
    "name": "llm",
    "pools": [{"name": "h100", "region": "us-east-1"}, {"name": "h100-spot", "region": "us-west-2"}],
    "storage": [{"name": "scratch"}],
}
LINES = {("pools",): 5, ("pools", 0): 6, ("pools", 0, "region"): 8, ("pools", 1): 10, ("budgets",): 20, ("tags",): 3}


@pytest.mark.parametrize(
    ("policy", "resource", "message", "field"),
    [
        pytest.param("aicluster-cluster-enforce-monthly-budget", "llm", "x", ("budgets", "monthly_usd"), id="budget"),
        pytest.param("aws-resource-missing-required-tags", "llm-h100-lt", "x", ("tags",), id="tags"),
        pytest.param(
            "aicluster-resource-enforce-allowed-regions",
            "llm-h100-spot-asg",
            "is in us-west-2",
            ("pools", 1, "region"),
            id="the-longest-pool-name-wins",
        ),
        pytest.param(
            "aicluster-resource-enforce-allowed-regions",
            "llm-us-west-2-vpc",
            "vpc llm-us-west-2-vpc is in us-west-2, outside",
            ("pools", 1, "region"),
            id="a-network-by-its-region",
        ),
        pytest.param(
            "aicluster-resource-enforce-allowed-regions",
            "llm-x",
            "is in eu-west-1",
            ("compliance", "allowed_regions"),
            id="no-pool-in-that-region",
        ),
        pytest.param("aws-ec2-instance-enforce-imdsv2", "llm-scratch-fs", "x", ("storage", 0), id="a-file-system"),
        pytest.param("aws-ec2-instance-enforce-imdsv2", "other-thing", "x", None, id="not-the-clusters"),
    ],
)
def test_stack_field(policy: str, resource: str, message: str, field: tuple[str | int, ...] | None) -> None:
    assert stack_field(CLUSTER, policy, resource, message) == field


def test_a_default_points_at_the_nearest_field_written() -> None:
    assert stack_line(LINES, ("pools", 1, "region")) == (("pools", 1), 10)
    assert stack_line(LINES, ("budgets", "rack_kw")) == (("budgets",), 20)
    assert stack_line(LINES, ("compliance", "allowed_regions")) is None
    assert stack_line(LINES, None) is None
    assert dotted(("pools", 1, "region")) == "pools[1].region"
