"""Private Kubernetes API endpoint: an EKS, GKE or AKS API server is private, or public only to authorized networks
(none of them the whole internet). EKS: vpcConfig.endpointPublicAccess (default true) / publicAccessCidrs (default
0.0.0.0/0); GKE: privateClusterConfig.enablePrivateEndpoint, masterAuthorizedNetworksConfig; AKS:
apiServerAccessProfile {enablePrivateCluster, authorizedIPRanges}."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import UNKNOWN, Res, get, items
from ..facts.kubernetes import EKS_CLUSTER, GKE_CLUSTER, KUBERNETES_CLUSTERS
from ..rule import Ctx, Meta, ResourceRule

MANDATORY = EnforcementLevel.MANDATORY

OPEN_NETWORKS = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))


def _open(cidrs: list[Any]) -> list[str]:
    """The CIDRs that open the endpoint to the whole internet (0.0.0.0/0, ::/0, or written as 0.0.0.0/1 etc.)."""
    out = []
    for c in cidrs:
        try:
            net = ipaddress.ip_network(str(c), strict=False)
        except ValueError:
            continue
        if net.prefixlen <= 1 or net in OPEN_NETWORKS:
            out.append(str(c))
    return out


def _endpoint(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.type == EKS_CLUSTER:
        public = res.get("vpcConfig", "endpointPublicAccess", default=True)  # EKS's default: public
        if public is UNKNOWN or public is False:
            return
        if res.get("vpcConfig", "publicAccessCidrs") is UNKNOWN:
            return
        cidrs = items(res.props, "vpcConfig", "publicAccessCidrs") or ["0.0.0.0/0"]  # EKS's default
        where, fix = "vpcConfig.publicAccessCidrs", "set vpcConfig.endpointPublicAccess = false"
    elif res.type == GKE_CLUSTER:
        if res.get("privateClusterConfig", "enablePrivateEndpoint") in (True, UNKNOWN):
            return
        if res.get("controlPlaneEndpointsConfig", "ipEndpointsConfig", "enablePublicEndpoint") is False:
            return
        if res.get("masterAuthorizedNetworksConfig") is UNKNOWN:
            return
        blocks = items(res.props, "masterAuthorizedNetworksConfig", "cidrBlocks")
        cidrs = [get(b, "cidrBlock") for b in blocks]
        where, fix = "masterAuthorizedNetworksConfig", "set privateClusterConfig.enablePrivateEndpoint = true"
    else:
        if res.get("apiServerAccessProfile", "enablePrivateCluster") in (True, UNKNOWN):
            return
        if res.get("apiServerAccessProfile", "authorizedIPRanges") is UNKNOWN:
            return
        cidrs = items(res.props, "apiServerAccessProfile", "authorizedIPRanges")
        where, fix = "apiServerAccessProfile.authorizedIPRanges", "set apiServerAccessProfile.enablePrivateCluster"
        fix += " = true"
    spec_fix = "(scheduler.endpoint: private, or scheduler.authorized_networks: your admin CIDRs)"
    if not cidrs:
        yield (
            f"cluster {res.name}: the API server endpoint is public and {where} names no authorized networks, so "
            f"anyone on the internet can reach it; {fix}, or authorize only your networks {spec_fix}"
        )
        return
    wide = _open(cidrs)
    if wide:
        yield (
            f"cluster {res.name}: the API server endpoint is public and {where} authorizes {', '.join(wide)} (the "
            f"whole internet); {fix}, or authorize only your networks {spec_fix}"
        )


POLICY = ResourceRule(
    Meta(
        name="aicluster-kubernetes-cluster-disallow-public-endpoint",
        display_name="Private Kubernetes API endpoint",
        description="An EKS, GKE or AKS API server is private, or public only to authorized networks (none of them "
        "0.0.0.0/0).",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Set scheduler.endpoint: private, or list your admin networks in scheduler.authorized_networks.",
        frameworks=("soc2", "pci-dss", "iso27001"),
        controls=("CIS Amazon EKS Benchmark 5.4.2", "CIS GKE Benchmark 5.6.3", "CIS AKS Benchmark 5.4.1"),
    ),
    KUBERNETES_CLUSTERS,
    _endpoint,
)
