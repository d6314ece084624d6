"""No public node addresses on EKS (launch templates, subnets), GKE (private nodes) and AKS node groups."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from policies.facts import Res
from policies.facts.aws import SUBNET
from policies.facts.kubernetes import GKE_NODE_POOL
from tests.policies.conftest import res, stack_findings
from tests.policies.resources.kubernetes import GROUPS, aks_pool, eks_group, gke_pool, launch_template

PUBLIC = "aicluster-kubernetes-nodegroup-disallow-public-ip"


@pytest.mark.parametrize("cloud", list(GROUPS))
def test_private_nodes_pass(cloud: str) -> None:
    assert stack_findings(PUBLIC, GROUPS[cloud]()) == []


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param(
            lambda: eks_group(
                lt=launch_template(networkInterfaces=[{"deviceIndex": 0, "associatePublicIpAddress": "true"}])
            ),
            "EKS node group h100 gives its nodes public IP addresses (its launch template h100-lt sets "
            "associatePublicIpAddress = true); set associatePublicIpAddress = false",
            id="eks-launch-template",
        ),
        pytest.param(
            lambda: eks_group(
                subnets=[res(SUBNET, "pub", {"availabilityZone": "us-east-1d", "mapPublicIpOnLaunch": True})]
            ),
            "EKS node group h100 gives its nodes public IP addresses (its subnets pub set mapPublicIpOnLaunch = true)",
            id="eks-public-subnet",
        ),
        pytest.param(
            lambda: [
                res(
                    GKE_NODE_POOL,
                    "h100",
                    {"nodeConfig": {"machineType": "a3-megagpu-8g"}, "networkConfig": {"enablePrivateNodes": False}},
                )
            ],
            "GKE node pool h100 gives its nodes public IP addresses (networkConfig.enablePrivateNodes = false); set "
            "networkConfig.enablePrivateNodes = true",
            id="gke",
        ),
        pytest.param(
            lambda: aks_pool(enableNodePublicIP=True),
            "AKS agent pool h100 gives its nodes public IP addresses (enableNodePublicIP = true); set "
            "enableNodePublicIP = false",
            id="aks",
        ),
    ],
)
def test_public_nodes_fail(resources: Callable[[], list[Res]], expected: str) -> None:
    (message,) = stack_findings(PUBLIC, resources())
    assert message.startswith(expected)


def test_a_gke_pool_in_a_cluster_without_private_nodes_fails() -> None:
    pool, cluster = gke_pool()
    cluster.props["privateClusterConfig"] = {"enablePrivateEndpoint": True}
    (message,) = stack_findings(PUBLIC, [pool, cluster])
    assert "neither it nor its cluster gke enables private nodes" in message
