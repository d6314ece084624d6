"""No public IPs on compute: one check over the exposures each cloud's reader finds (launch-template and instance
network interfaces on AWS; scale-set, VM and NIC IP configurations on Azure; accessConfigs and TPU external IPs on
GCP), one named policy per cloud.

Each exposure carries its cloud's wording and fix (which property to drop differs even within a cloud), so the
check composes the finding and the binding adds only the cloud's name and metadata."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts import aws, azure, gcp
from ..facts.model import Exposure
from ..rule import Ctx, Meta, per_cloud

MANDATORY = EnforcementLevel.MANDATORY


def check(exposures: Iterable[Exposure], ctx: Ctx, fix: str) -> Iterator[str]:
    """Every node address open to the internet is a finding, with the fix its reader names (`fix`: unused)."""
    for e in exposures:
        yield f"{e.what}; {e.fix}"


AWS = per_cloud(
    Meta(
        name="aws-ec2-instance-disallow-public-ip",
        display_name="No public IPs on compute",
        description="GPU and controller nodes get no public IP addresses.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Set associatePublicIpAddress to false; use SSM Session Manager or a bastion for access.",
        frameworks=("cis-aws", "soc2"),
        controls=("SOC 2 CC6.1", "Checkov CKV_AWS_88"),
    ),
    aws.PUBLIC_IPS,
    check,
)

AZURE = per_cloud(
    Meta(
        name="azure-compute-vm-disallow-public-ip",
        display_name="No public IPs on Azure compute",
        description="Azure scale sets, VMs and their network interfaces get no public IP addresses.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Drop publicIPAddressConfiguration / publicIPAddress; egress through the NAT gateway, reach "
        "nodes through Azure Bastion or a VPN.",
        frameworks=("soc2",),
        controls=("SOC 2 CC6.1", "Checkov CKV_AZURE_119"),
    ),
    azure.PUBLIC_IPS,  # not PublicIPAddress itself: the NAT gateway's address is fine
    check,
)

GCP = per_cloud(
    Meta(
        name="gcp-compute-instance-disallow-public-ip",
        display_name="No public IPs on GCP compute",
        description="GCP VMs, instance templates and TPU VMs get no external IP addresses.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Drop accessConfigs from network interfaces (TPU: enableExternalIps false); egress through Cloud "
        "NAT, reach nodes through IAP.",
        frameworks=("soc2",),
        controls=("SOC 2 CC6.1", "Checkov CKV_GCP_40"),
    ),
    gcp.PUBLIC_IPS,
    check,
)
