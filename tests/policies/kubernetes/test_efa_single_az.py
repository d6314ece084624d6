"""EFA node groups in one Availability Zone."""

from __future__ import annotations

import pytest

from policies.facts.kubernetes import HELM_RELEASE
from policies.rule import NotApplicable
from tests.policies.conftest import res, stack_findings
from tests.policies.resources.kubernetes import EFA_RELEASE, eks_group, launch_template, subnet

EFA_AZ = "aws-eks-nodegroup-enforce-efa-single-az"


def test_an_efa_node_group_in_one_zone_passes() -> None:
    stack = [*eks_group(), res(HELM_RELEASE, "efa", EFA_RELEASE)]
    assert stack_findings(EFA_AZ, stack) == []


def test_an_efa_node_group_over_two_zones_fails() -> None:
    subnets = [subnet("a", "us-east-1a"), subnet("d", "us-east-1d")]
    (message,) = stack_findings(EFA_AZ, eks_group(subnets=subnets))
    assert message.startswith("EKS node group h100 spreads EFA nodes over us-east-1a, us-east-1d")
    assert "give subnetIds one subnet" in message


def test_a_node_group_without_efa_is_not_judged() -> None:
    lt = launch_template(networkInterfaces=[{"deviceIndex": 0, "associatePublicIpAddress": "false"}])
    with pytest.raises(NotApplicable, match="no EKS node group of EFA nodes"):
        stack_findings(EFA_AZ, eks_group(lt=lt))
