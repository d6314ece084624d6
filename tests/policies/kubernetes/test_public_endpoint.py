"""Private Kubernetes API endpoint: EKS, GKE and AKS control planes, private or open to authorized networks only."""

from __future__ import annotations

from typing import Any

import pytest

from policies.facts.kubernetes import AKS_CLUSTER, EKS_CLUSTER, GKE_CLUSTER
from tests.policies.conftest import findings
from tests.policies.resources.kubernetes import CLUSTERS, changed

ENDPOINT = "aicluster-kubernetes-cluster-disallow-public-endpoint"


@pytest.mark.parametrize("type_", list(CLUSTERS), ids=lambda t: t.split(":")[0])
def test_private_control_planes_pass(type_: str) -> None:
    assert findings(ENDPOINT, type_, CLUSTERS[type_]) == []


@pytest.mark.parametrize(
    ("type_", "change", "expected"),
    [
        pytest.param(
            EKS_CLUSTER,
            lambda p: p["vpcConfig"].pop("endpointPublicAccess"),
            "vpcConfig.publicAccessCidrs authorizes 0.0.0.0/0",
            id="eks-public-by-default",
        ),
        pytest.param(
            EKS_CLUSTER,
            lambda p: p["vpcConfig"].update(endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/0"]),
            "authorizes 0.0.0.0/0 (the whole internet); set vpcConfig.endpointPublicAccess = false",
            id="eks-open",
        ),
        pytest.param(
            GKE_CLUSTER,
            lambda p: p["privateClusterConfig"].update(enablePrivateEndpoint=False),
            "masterAuthorizedNetworksConfig names no authorized networks",
            id="gke-public-no-networks",
        ),
        pytest.param(
            GKE_CLUSTER,
            lambda p: p.update(
                privateClusterConfig={"enablePrivateNodes": True},
                masterAuthorizedNetworksConfig={"cidrBlocks": [{"cidrBlock": "0.0.0.0/0"}]},
            ),
            "masterAuthorizedNetworksConfig authorizes 0.0.0.0/0",
            id="gke-open",
        ),
        pytest.param(
            AKS_CLUSTER,
            lambda p: p.update(apiServerAccessProfile={"authorizedIPRanges": ["203.0.113.0/24", "0.0.0.0/0"]}),
            "apiServerAccessProfile.authorizedIPRanges authorizes 0.0.0.0/0",
            id="aks-open",
        ),
    ],
)
def test_a_public_endpoint_open_to_the_internet_fails(type_: str, change: Any, expected: str) -> None:
    (message,) = findings(ENDPOINT, type_, changed(CLUSTERS[type_], change))
    assert "cluster x: the API server endpoint is public" in message
    assert expected in message
    assert "scheduler.endpoint: private" in message


@pytest.mark.parametrize(
    ("type_", "change"),
    [
        pytest.param(
            EKS_CLUSTER,
            lambda p: p["vpcConfig"].update(endpointPublicAccess=True, publicAccessCidrs=["203.0.113.0/24"]),
            id="eks",
        ),
        pytest.param(
            GKE_CLUSTER,
            lambda p: p.update(
                privateClusterConfig={"enablePrivateNodes": True},
                masterAuthorizedNetworksConfig={"cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}]},
            ),
            id="gke",
        ),
        pytest.param(
            AKS_CLUSTER, lambda p: p.update(apiServerAccessProfile={"authorizedIPRanges": ["203.0.113.0/24"]}), id="aks"
        ),
    ],
)
def test_a_public_endpoint_for_authorized_networks_only_passes(type_: str, change: Any) -> None:
    assert findings(ENDPOINT, type_, changed(CLUSTERS[type_], change)) == []
