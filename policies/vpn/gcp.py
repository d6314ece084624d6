"""GCP VPN: IKEv2 and, where a cipher suite is pinned, strong ciphers on a Cloud VPN tunnel.

`gcp:compute/vPNTunnel:VPNTunnel`: `ikeVersion` (1 or 2, default 2) and, where given, `cipherSuite`'s phase 1
encryptions/integrities/prves/dhs and phase 2 encryptions/integrities/pfs in Cloud VPN's spelling (AES-GCM-16-256,
HMAC-SHA2-256-128, PRF-HMAC-SHA2-256, Group-14; Cloud VPN, supported IKE ciphers:
https://cloud.google.com/network-connectivity/docs/vpn/concepts/supported-ike-ciphers). Without a cipher suite
Cloud VPN takes what its peer proposes; the peer's own end (another cloud's connection, judged too, or the site's
device) then decides.
"""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import UNKNOWN, Res, items
from ..facts.gcp import GCP_VPN_TUNNEL
from ..rule import Ctx, Meta, ResourceRule
from ._strength import STRONG_DH, outside, shown

GCP_STRONG: dict[str, tuple[str, ...]] = {
    "encryptions": ("AES-GCM-16-256", "AES-CBC-256"),
    "integrities": ("HMAC-SHA2-256-128", "HMAC-SHA2-384-192", "HMAC-SHA2-512-256"),
    "prves": ("PRF-HMAC-SHA2-256", "PRF-HMAC-SHA2-384", "PRF-HMAC-SHA2-512"),
    "dhs": tuple(f"Group-{g}" for g in STRONG_DH),
    "pfs": tuple(f"Group-{g}" for g in STRONG_DH),
}


def _gcp(res: Res, ctx: Ctx) -> Iterator[str]:
    version = res.get("ikeVersion", default=2)  # Cloud VPN's default is IKEv2
    if version is not UNKNOWN and version != 2:
        yield f"VPN tunnel {res.name}: ikeVersion is {version}; set ikeVersion = 2 (IKEv1 is refused)"
    for phase, keys in (
        ("phase1", ("encryptions", "integrities", "prves", "dhs")),
        ("phase2", ("encryptions", "integrities", "pfs")),
    ):
        for key in keys:
            weak = outside(items(res.props, "cipherSuite", phase, key), GCP_STRONG[key])
            if weak:
                yield (
                    f"VPN tunnel {res.name}: cipherSuite.{phase}.{key} allows {shown(weak)}; allow only "
                    f"{shown(list(GCP_STRONG[key]))}"
                )


POLICY = ResourceRule(
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
