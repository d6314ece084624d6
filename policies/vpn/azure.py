"""Azure VPN: IKEv2 and a custom IPsec policy of strong ciphers on a site-to-site connection.

`azure-native:network:VirtualNetworkGatewayConnection` (IPsec and VNet-to-VNet): `connectionProtocol`
(IKEv1 | IKEv2) and `ipsecPolicies[]` with ikeEncryption, ikeIntegrity, dhGroup, ipsecEncryption, ipsecIntegrity
and pfsGroup. Without a custom policy Azure offers its default proposals, SHA1 and DH group 2 among them, so one is
required (Azure REST API, IpsecPolicy:
https://learn.microsoft.com/en-us/rest/api/network-gateway/virtual-network-gateway-connections/create-or-update).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pulumi_policy import EnforcementLevel, Severity

from ..facts.azure import AZURE_VPN_CONNECTION
from ..facts.engine import UNKNOWN, Res, get, items
from ..rule import Ctx, Meta, ResourceRule
from ._strength import shown

AZURE_STRONG: dict[str, tuple[str, ...]] = {
    "ikeEncryption": ("AES256", "GCMAES256"),
    "ikeIntegrity": ("SHA256", "SHA384", "GCMAES256"),
    "dhGroup": ("DHGroup14", "DHGroup2048", "ECP256", "ECP384", "DHGroup24"),
    "ipsecEncryption": ("AES256", "GCMAES256"),
    "ipsecIntegrity": ("SHA256", "GCMAES256"),
    "pfsGroup": ("PFS14", "PFS2048", "ECP256", "ECP384", "PFS24"),
}

AZURE_IPSEC_TYPES = ("IPsec", "Vnet2Vnet")


def _azure(res: Res, ctx: Ctx) -> Iterator[str]:
    kind = res.get("connectionType")
    if kind is not UNKNOWN and kind not in AZURE_IPSEC_TYPES:
        return  # ExpressRoute and point-to-site connections carry no site-to-site IKE
    protocol = res.get("connectionProtocol")
    if protocol is not UNKNOWN and protocol != "IKEv2":
        got = f"is {protocol}" if protocol is not None else "is not set"
        yield f"VPN connection {res.name}: connectionProtocol {got}; set connectionProtocol = IKEv2"
    policies = items(res.props, "ipsecPolicies")
    if not policies and res.get("ipsecPolicies") is not UNKNOWN:
        yield (
            f"VPN connection {res.name}: no ipsecPolicies, so Azure offers its default proposals (SHA1 and DH group 2 "
            "among them); set one IPsec policy with ikeEncryption GCMAES256 or AES256, ikeIntegrity SHA384, dhGroup "
            "ECP384, ipsecEncryption GCMAES256, ipsecIntegrity GCMAES256 and pfsGroup ECP384"
        )
    for i, policy in enumerate(policies):
        if not isinstance(policy, Mapping):
            continue
        for key, allowed in AZURE_STRONG.items():
            value = get(policy, key)
            if value is UNKNOWN or value in allowed:
                continue
            yield (f"VPN connection {res.name}: ipsecPolicies[{i}].{key} is {value}; use one of {shown(list(allowed))}")


POLICY = ResourceRule(
    Meta(
        name="azure-network-vpnconnection-enforce-strong-ike",
        display_name="Azure VPN: IKEv2 and strong ciphers",
        description="An Azure site-to-site VPN connection uses IKEv2 and a custom IPsec policy of AES-256, SHA-2 "
        "(256+) and DH/PFS groups 14+ (Azure IpsecPolicy).",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Set connectionProtocol = IKEv2 and one ipsecPolicies entry with strong values only.",
        frameworks=("soc2", "pci-dss", "hipaa", "iso27001"),
        controls=(
            "NIST SP 800-77r1 (IPsec VPNs) section 3",
            "RFC 8247 section 2.4",
            "https://learn.microsoft.com/en-us/azure/vpn-gateway/ipsec-ike-policy-howto",
        ),
    ),
    [AZURE_VPN_CONNECTION],
    _azure,
)
