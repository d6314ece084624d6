"""Azure VPN: IKEv2 and strong algorithms only, on hand-built props as the SDK registers them and on a captured
hybrid preview."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import findings, judge, messages, mutated, replaced
from tests.policies.resources.onprem import SITE_POLICIES, VPN_POLICIES

NAME = "azure-network-vpnconnection-enforce-strong-ike"

AZURE_POLICY = {
    "ikeEncryption": "AES256",
    "ikeIntegrity": "SHA384",
    "dhGroup": "ECP384",
    "ipsecEncryption": "GCMAES256",
    "ipsecIntegrity": "GCMAES256",
    "pfsGroup": "ECP384",
    "saLifeTimeSeconds": 3600,
    "saDataSizeKilobytes": 102400000,
}

AZURE_CONNECTION = {
    "connectionType": "IPsec",
    "connectionProtocol": "IKEv2",
    "enableBgp": True,
    "ipsecPolicies": [AZURE_POLICY],
}

AZ_T = "azure-native:network:VirtualNetworkGatewayConnection"

AZURE_LINK = "tri-aws-us-east-1--azure-eastus-azure-0"

VPN_CASES = [
    pytest.param(AZ_T, AZURE_CONNECTION, [], id="azure-baseline"),
    pytest.param(
        AZ_T, replaced(AZURE_CONNECTION, connectionType="ExpressRoute", connectionProtocol=None), [], id="azure-er"
    ),
    pytest.param(
        AZ_T,
        replaced(AZURE_CONNECTION, connectionProtocol="IKEv1"),
        ["VPN connection x: connectionProtocol is IKEv1; set connectionProtocol = IKEv2"],
        id="azure-ikev1",
    ),
    pytest.param(
        AZ_T,
        replaced(AZURE_CONNECTION, ipsecPolicies=None),
        [
            "VPN connection x: no ipsecPolicies, so Azure offers its default proposals (SHA1 and DH group 2 among "
            "them); set one IPsec policy with ikeEncryption GCMAES256 or AES256, ikeIntegrity SHA384, dhGroup ECP384, "
            "ipsecEncryption GCMAES256, ipsecIntegrity GCMAES256 and pfsGroup ECP384"
        ],
        id="azure-default-policies",
    ),
    pytest.param(
        AZ_T,
        replaced(AZURE_CONNECTION, ipsecPolicies=[{**AZURE_POLICY, "ipsecIntegrity": "SHA1", "pfsGroup": "PFS2"}]),
        [
            "VPN connection x: ipsecPolicies[0].ipsecIntegrity is SHA1; use one of SHA256, GCMAES256",
            "VPN connection x: ipsecPolicies[0].pfsGroup is PFS2; use one of PFS14, PFS2048, ECP256, ECP384, PFS24",
        ],
        id="azure-sha1-pfs2",
    ),
]


@pytest.mark.parametrize(("type_", "props", "expected"), VPN_CASES)
def test_vpn_policies_allow_only_ikev2_and_strong_algorithms(
    type_: str, props: dict[str, Any], expected: list[str]
) -> None:
    assert findings(NAME, type_, props) == expected


def test_one_mutation_of_a_captured_three_cloud_preview_fails(three_cloud: Capture) -> None:
    change = {AZURE_LINK: lambda i: i["ipsecPolicies"][0].update(dhGroup="DHGroup2")}
    assert messages(judge(mutated(three_cloud, change), [*SITE_POLICIES, *VPN_POLICIES])) == [
        f"VPN connection {AZURE_LINK}: ipsecPolicies[0].dhGroup is DHGroup2; use one of DHGroup14, DHGroup2048, "
        "ECP256, ECP384, DHGroup24"
    ]
