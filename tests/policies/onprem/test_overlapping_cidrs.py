"""No overlapping site and cloud networks: the on-prem example's site against each cloud's networks and another
site, and the hybrid example's site moved into its AWS VPC."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import judge, messages, mutated, res, stack_findings
from tests.policies.resources.onprem import SITE_POLICIES, VPN_POLICIES, site_findings, site_res

SITE_CASES = [
    pytest.param(
        "aicluster-site-disallow-overlapping-cidrs",
        lambda i: i.update(cidrs=["10.200.0.0/16", "10.200.128.0/17"]),
        None,  # one site's own ranges are the spec's concern, not a cross-site overlap
        id="a-site-overlapping-itself-is-not-judged-here",
    )
]


@pytest.mark.parametrize(("name", "change", "expected"), SITE_CASES)
def test_each_site_policy_reports_one_mutation(
    dgx: Capture, name: str, change: Callable[[dict[str, Any]], None], expected: str | None
) -> None:
    assert site_findings(dgx, name, change) == ([expected] if expected else [])


@pytest.mark.parametrize(
    ("type_", "props", "expected"),
    [
        pytest.param(
            "aws:ec2/vpc:Vpc",
            {"cidrBlock": "10.200.64.0/18"},
            "site fra1 network 10.200.0.0/16 overlaps AWS VPC net (10.200.64.0/18): across the VPN, addresses in "
            "both are routed to one side only; give the site's network.cidrs, or the cloud network's range "
            "(network.cidrs, e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use",
            id="aws-vpc",
        ),
        pytest.param(
            "gcp:compute/subnetwork:Subnetwork",
            {"ipCidrRange": "10.0.0.0/8"},
            "site fra1 network 10.200.0.0/16 overlaps GCP subnetwork net (10.0.0.0/8): across the VPN, addresses in "
            "both are routed to one side only; give the site's network.cidrs, or the cloud network's range "
            "(network.cidrs, e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use",
            id="gcp-subnetwork",
        ),
        pytest.param(
            "azure-native:network:VirtualNetwork",
            {"addressSpace": {"addressPrefixes": ["10.1.0.0/16", "10.200.10.0/24"]}},
            "site fra1 network 10.200.0.0/16 overlaps Azure virtual network net (10.200.10.0/24): across the VPN, "
            "addresses in both are routed to one side only; give the site's network.cidrs, or the cloud network's "
            "range (network.cidrs, e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use",
            id="azure-vnet",
        ),
        pytest.param("aws:ec2/vpc:Vpc", {"cidrBlock": "10.201.0.0/16"}, None, id="disjoint-passes"),
    ],
)
def test_site_cidrs_must_not_overlap_a_cloud_network(
    dgx: Capture, type_: str, props: dict[str, Any], expected: str | None
) -> None:
    found = stack_findings("aicluster-site-disallow-overlapping-cidrs", [site_res(dgx), res(type_, "net", props)])
    assert found == ([expected] if expected else [])


def test_two_sites_must_not_overlap(dgx: Capture) -> None:
    other = site_res(dgx)
    other.name = "dgx-fra1-ams1"
    other.props = {**other.props, "site": "ams1", "cidrs": ["10.200.200.0/24"]}
    assert stack_findings("aicluster-site-disallow-overlapping-cidrs", [site_res(dgx), other]) == [
        "site fra1 network 10.200.0.0/16 overlaps site ams1 (10.200.200.0/24): across the VPN, addresses in both "
        "are routed to one side only; give the site's network.cidrs, or the cloud network's range (network.cidrs, "
        "e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use"
    ]


def test_the_hybrid_sites_network_inside_its_aws_vpc_fails(hybrid: Capture) -> None:
    change = {"hybrid-burst-fra1": lambda i: i.update(cidrs=["10.8.128.0/20"])}
    assert messages(judge(mutated(hybrid, change), [*SITE_POLICIES, *VPN_POLICIES])) == [
        "site fra1 network 10.8.128.0/20 overlaps AWS VPC hybrid-burst-us-east-1-vpc (10.8.0.0/16): across the "
        "VPN, addresses in both are routed to one side only; give the site's network.cidrs, or the cloud "
        "network's range (network.cidrs, e.g. aws/us-east-1: 10.1.0.0/16), addresses the other does not use"
    ]
