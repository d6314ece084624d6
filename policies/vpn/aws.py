"""AWS VPN: IKEv2 and strong ciphers on both tunnels of a Site-to-Site VPN connection.

`aws:ec2/vpnConnection:VpnConnection`, per tunnel: `tunnelNIkeVersions` (ikev1 | ikev2),
`tunnelNPhase{1,2}EncryptionAlgorithms` (AES128 | AES256 | AES128-GCM-16 | AES256-GCM-16),
`tunnelNPhase{1,2}IntegrityAlgorithms` (SHA1 | SHA2-256 | SHA2-384 | SHA2-512), `tunnelNPhase{1,2}DhGroupNumbers`
(2, 14-24; phase 2 also 5). A list left unset permits all of AWS's values, the weak ones included, so it must be
set (AWS EC2 API, VpnTunnelOptionsSpecification:
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_VpnTunnelOptionsSpecification.html).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aws import AWS_VPN
from ..facts.engine import UNKNOWN, Res, items
from ..rule import Ctx, Meta, ResourceRule
from ._strength import STRONG_DH, outside, shown

AWS_STRONG: dict[str, tuple[Any, ...]] = {
    "IkeVersions": ("ikev2",),
    "EncryptionAlgorithms": ("AES256", "AES256-GCM-16"),
    "IntegrityAlgorithms": ("SHA2-256", "SHA2-384", "SHA2-512"),
    "DhGroupNumbers": STRONG_DH,
}


def _aws(res: Res, ctx: Ctx) -> Iterator[str]:
    for t in (1, 2):
        for phase, key in [(None, "IkeVersions")] + [
            (p, k) for p in (1, 2) for k in ("EncryptionAlgorithms", "IntegrityAlgorithms", "DhGroupNumbers")
        ]:
            prop = f"tunnel{t}{key}" if phase is None else f"tunnel{t}Phase{phase}{key}"
            allowed = AWS_STRONG[key]
            value = res.get(prop)
            if value is UNKNOWN:
                continue
            listed = items(res.props, prop)
            if not listed:
                yield (
                    f"VPN connection {res.name}: {prop} is not set, so AWS permits all its values, weak ones "
                    f"included; set {prop} = [{shown(list(allowed))}] (or a subset)"
                )
                continue
            weak = outside(listed, allowed)
            if weak:
                yield (
                    f"VPN connection {res.name}: {prop} permits {shown(weak)}; allow only "
                    f"{shown(list(allowed))} (IKEv2, AES-256, SHA-2, DH group 14 or stronger)"
                )


POLICY = ResourceRule(
    Meta(
        name="aws-ec2-vpnconnection-enforce-strong-ike",
        display_name="AWS VPN: IKEv2 and strong ciphers",
        description="Both tunnels of an AWS Site-to-Site VPN connection allow only IKEv2, AES-256, SHA-2 (256+) and "
        "DH groups 14+ (AWS VpnTunnelOptionsSpecification).",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Set every tunnelN IkeVersions/Phase1/Phase2 list to the strong values only.",
        frameworks=("soc2", "pci-dss", "hipaa", "iso27001"),
        controls=(
            "NIST SP 800-77r1 (IPsec VPNs) section 3",
            "RFC 8247 section 2.4",
            "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_VpnTunnelOptionsSpecification.html",
        ),
    ),
    [AWS_VPN],
    _aws,
)
