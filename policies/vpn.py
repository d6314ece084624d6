"""Site-to-site VPNs: IKEv2 and strong algorithms only, on every cloud's end of every tunnel.

"Strong" is one allow-list for all three clouds, in each cloud's own spelling: AES with 256-bit keys (GCM or CBC),
SHA-2 integrity of 256 bits or more (or the AEAD cipher's own), and Diffie-Hellman groups of 2048-bit MODP or
elliptic curves of 256 bits or more: 14 to 21 and 24 (RFC 8247 section 2.4 advises against 22 and 23,
small subgroups, and against 1, 2 and 5, too short). Each value is one the cloud's API documents:

* AWS `aws:ec2/vpnConnection:VpnConnection`, per tunnel: `tunnelNIkeVersions` (ikev1 | ikev2),
  `tunnelNPhase{1,2}EncryptionAlgorithms` (AES128 | AES256 | AES128-GCM-16 | AES256-GCM-16),
  `tunnelNPhase{1,2}IntegrityAlgorithms` (SHA1 | SHA2-256 | SHA2-384 | SHA2-512), `tunnelNPhase{1,2}DhGroupNumbers`
  (2, 14-24; phase 2 also 5). A list left unset permits all of AWS's values, the weak ones included, so it must be
  set (AWS EC2 API, VpnTunnelOptionsSpecification:
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_VpnTunnelOptionsSpecification.html).
* GCP `gcp:compute/vPNTunnel:VPNTunnel`: `ikeVersion` (1 or 2, default 2) and, where given, `cipherSuite`'s
  phase 1 encryptions/integrities/prves/dhs and phase 2 encryptions/integrities/pfs in Cloud VPN's spelling
  (AES-GCM-16-256, HMAC-SHA2-256-128, PRF-HMAC-SHA2-256, Group-14; Cloud VPN, supported IKE ciphers:
  https://cloud.google.com/network-connectivity/docs/vpn/concepts/supported-ike-ciphers). Without a cipher suite
  Cloud VPN takes what its peer proposes; the peer's own end (another cloud's connection, judged here too, or the
  site's device) then decides.
* Azure `azure-native:network:VirtualNetworkGatewayConnection` (IPsec and VNet-to-VNet): `connectionProtocol`
  (IKEv1 | IKEv2) and `ipsecPolicies[]` with ikeEncryption, ikeIntegrity, dhGroup, ipsecEncryption,
  ipsecIntegrity and pfsGroup. Without a custom policy Azure offers its default proposals, SHA1 and DH group 2
  among them, so one is required (Azure REST API, IpsecPolicy:
  https://learn.microsoft.com/en-us/rest/api/network-gateway/virtual-network-gateway-connections/create-or-update).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from .facts import UNKNOWN, Res, get, items
from .rule import Ctx, Meta, ResourceRule

AWS_VPN = "aws:ec2/vpnConnection:VpnConnection"
GCP_VPN_TUNNEL = "gcp:compute/vPNTunnel:VPNTunnel"
AZURE_VPN_CONNECTION = "azure-native:network:VirtualNetworkGatewayConnection"

STRONG_DH = (14, 15, 16, 17, 18, 19, 20, 21, 24)

AWS_STRONG: dict[str, tuple[Any, ...]] = {
    "IkeVersions": ("ikev2",),
    "EncryptionAlgorithms": ("AES256", "AES256-GCM-16"),
    "IntegrityAlgorithms": ("SHA2-256", "SHA2-384", "SHA2-512"),
    "DhGroupNumbers": STRONG_DH,
}
GCP_STRONG: dict[str, tuple[str, ...]] = {
    "encryptions": ("AES-GCM-16-256", "AES-CBC-256"),
    "integrities": ("HMAC-SHA2-256-128", "HMAC-SHA2-384-192", "HMAC-SHA2-512-256"),
    "prves": ("PRF-HMAC-SHA2-256", "PRF-HMAC-SHA2-384", "PRF-HMAC-SHA2-512"),
    "dhs": tuple(f"Group-{g}" for g in STRONG_DH),
    "pfs": tuple(f"Group-{g}" for g in STRONG_DH),
}
AZURE_STRONG: dict[str, tuple[str, ...]] = {
    "ikeEncryption": ("AES256", "GCMAES256"),
    "ikeIntegrity": ("SHA256", "SHA384", "GCMAES256"),
    "dhGroup": ("DHGroup14", "DHGroup2048", "ECP256", "ECP384", "DHGroup24"),
    "ipsecEncryption": ("AES256", "GCMAES256"),
    "ipsecIntegrity": ("SHA256", "GCMAES256"),
    "pfsGroup": ("PFS14", "PFS2048", "ECP256", "ECP384", "PFS24"),
}
AZURE_IPSEC_TYPES = ("IPsec", "Vnet2Vnet")


def _shown(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values)


def _weak(values: list[Any], allowed: tuple[Any, ...]) -> list[Any]:
    """Known values outside the allow-list (unknown ones are judged at `up`, not guessed)."""
    return [v for v in values if v is not UNKNOWN and v not in allowed]


# -- AWS --------------------------------------------------------------------------------------------------------------


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
                    f"included; set {prop} = [{_shown(list(allowed))}] (or a subset)"
                )
                continue
            weak = _weak(listed, allowed)
            if weak:
                yield (
                    f"VPN connection {res.name}: {prop} permits {_shown(weak)}; allow only "
                    f"{_shown(list(allowed))} (IKEv2, AES-256, SHA-2, DH group 14 or stronger)"
                )


aws_vpn = ResourceRule(
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


# -- GCP --------------------------------------------------------------------------------------------------------------


def _gcp(res: Res, ctx: Ctx) -> Iterator[str]:
    version = res.get("ikeVersion", default=2)  # Cloud VPN's default is IKEv2
    if version is not UNKNOWN and version != 2:
        yield f"VPN tunnel {res.name}: ikeVersion is {version}; set ikeVersion = 2 (IKEv1 is refused)"
    for phase, keys in (
        ("phase1", ("encryptions", "integrities", "prves", "dhs")),
        ("phase2", ("encryptions", "integrities", "pfs")),
    ):
        for key in keys:
            weak = _weak(items(res.props, "cipherSuite", phase, key), GCP_STRONG[key])
            if weak:
                yield (
                    f"VPN tunnel {res.name}: cipherSuite.{phase}.{key} allows {_shown(weak)}; allow only "
                    f"{_shown(list(GCP_STRONG[key]))}"
                )


gcp_vpn = ResourceRule(
    Meta(
        name="gcp-compute-vpntunnel-enforce-strong-ike",
        display_name="GCP VPN: IKEv2 and strong ciphers",
        description="A Cloud VPN tunnel uses IKEv2 and, where it pins a cipher suite, only AES-256, SHA-2 (256+) and "
        "DH groups 14+ (Cloud VPN supported IKE ciphers).",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Set ikeVersion = 2 and keep only the strong values in cipherSuite.",
        frameworks=("soc2", "pci-dss", "hipaa", "iso27001"),
        controls=(
            "NIST SP 800-77r1 (IPsec VPNs) section 3",
            "RFC 8247 section 2.4",
            "https://cloud.google.com/network-connectivity/docs/vpn/concepts/supported-ike-ciphers",
        ),
    ),
    [GCP_VPN_TUNNEL],
    _gcp,
)


# -- Azure ------------------------------------------------------------------------------------------------------------


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
            yield (
                f"VPN connection {res.name}: ipsecPolicies[{i}].{key} is {value}; use one of {_shown(list(allowed))}"
            )


azure_vpn = ResourceRule(
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

POLICIES: list[ResourceRule] = [aws_vpn, gcp_vpn, azure_vpn]
