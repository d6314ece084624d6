"""No SSH/RDP from the internet: one check over the inbound rules each cloud's reader normalises (security group
ingress, NSG rules, firewall allows), one named policy per cloud with the cloud's own way in as the fix.

The readers apply each cloud's reading: which sources are the internet (0.0.0.0/0 and ::/0; Azure's `*`, `Internet`
and `Any` too), what no ports means (GCP: all), and which ports an earlier Deny already closes (Azure priorities)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts import aws, azure, gcp
from ..facts.model import Ingress
from ..rule import Ctx, Meta, per_cloud

MANDATORY = EnforcementLevel.MANDATORY
ADMIN_PORTS = {22: "SSH", 3389: "RDP"}


def check(rules: Iterable[Ingress], ctx: Ctx, fix: str) -> Iterator[str]:
    """Each rule that lets the internet reach an admin port is a finding."""
    for r in rules:
        services = [name for port, name in ADMIN_PORTS.items() if r.admits(port)]
        if r.open_to and services:
            yield f"{r.where} lets {' and '.join(r.open_to)} reach {'/'.join(services)} ({r.shown}); {fix}"


AWS = per_cloud(
    Meta(
        name="aws-ec2-securitygroup-disallow-admin-from-internet",
        display_name="No SSH/RDP from the internet",
        description="No security group admits 0.0.0.0/0 or ::/0 to SSH (22) or RDP (3389).",
        concern="compliance",
        severity=Severity.CRITICAL,
        enforcement=MANDATORY,
        remediation="Drop the rule; use SSM Session Manager (aicluster nodes carry its IAM policy) or a VPN.",
        frameworks=("cis-aws", "soc2"),
        controls=("CIS AWS Foundations v6.0.0 6.3", "CIS AWS Foundations v6.0.0 6.4", "SOC 2 CC6.1"),
    ),
    aws.INGRESS,
    check,
    "remove it and reach nodes through SSM Session Manager",
)

AZURE = per_cloud(
    Meta(
        name="azure-network-nsg-disallow-admin-from-internet",
        display_name="No SSH/RDP from the internet (Azure)",
        description="No network security group rule allows the internet to SSH (22) or RDP (3389) inbound.",
        concern="compliance",
        severity=Severity.CRITICAL,
        enforcement=MANDATORY,
        remediation="Drop the rule (aicluster NSGs deny SSH/RDP from the internet first); use Azure Bastion or a VPN.",
        frameworks=("soc2",),
        controls=("SOC 2 CC6.1", "Checkov CKV_AZURE_10", "Checkov CKV_AZURE_9"),
    ),
    azure.INGRESS,
    check,
    "remove it and reach nodes through Azure Bastion or a VPN",
)

GCP = per_cloud(
    Meta(
        name="gcp-compute-firewall-disallow-admin-from-internet",
        display_name="No SSH/RDP from the internet (GCP)",
        description="No ingress firewall rule lets 0.0.0.0/0 or ::/0 reach SSH (22) or RDP (3389).",
        concern="compliance",
        severity=Severity.CRITICAL,
        enforcement=MANDATORY,
        remediation="Drop the rule, or limit its sourceRanges to IAP's 35.235.240.0/20 (aicluster's network does).",
        frameworks=("soc2",),
        controls=("SOC 2 CC6.1", "Checkov CKV_GCP_2", "Checkov CKV_GCP_3"),
    ),
    gcp.INGRESS,
    check,
    "remove it and reach nodes through IAP TCP forwarding (source 35.235.240.0/20)",
)
