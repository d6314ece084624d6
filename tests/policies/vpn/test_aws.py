"""AWS VPN: IKEv2 and strong algorithms only, on hand-built props as the SDK registers them and on a captured
hybrid preview, and over the engine's gRPC protocol."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.runtime.proto import analyzer_pb2

from aicluster.preview.engine import Capture
from tests.policies.conftest import findings, judge, messages, mutated, replaced
from tests.policies.resources.onprem import SITE_POLICIES, VPN_POLICIES
from tests.policies.test_engine_protocol import _stack_request, _struct, analyzer  # noqa: F401  (analyzer: the pack's process)

NAME = "aws-ec2-vpnconnection-enforce-strong-ike"


def _aws_tunnels() -> dict[str, Any]:
    """Both tunnels as pulumi_aws registers the VPN component's connection (IKEv2, one algorithm per role)."""
    props: dict[str, Any] = {"type": "ipsec.1", "staticRoutesOnly": False, "tunnel1PresharedKey": "[secret]"}
    for t in (1, 2):
        props |= {
            f"tunnel{t}IkeVersions": ["ikev2"],
            f"tunnel{t}Phase1EncryptionAlgorithms": ["AES256"],
            f"tunnel{t}Phase1IntegrityAlgorithms": ["SHA2-384"],
            f"tunnel{t}Phase1DhGroupNumbers": [20],
            f"tunnel{t}Phase1LifetimeSeconds": 28800,
            f"tunnel{t}Phase2EncryptionAlgorithms": ["AES256-GCM-16"],
            f"tunnel{t}Phase2IntegrityAlgorithms": ["SHA2-384"],
            f"tunnel{t}Phase2DhGroupNumbers": [20],
            f"tunnel{t}Phase2LifetimeSeconds": 3600,
        }
    return props


AWS_T = "aws:ec2/vpnConnection:VpnConnection"

AWS_LINK = "hybrid-burst-aws-us-east-1--fra1-aws-0"

VPN_CASES = [
    pytest.param(AWS_T, _aws_tunnels(), [], id="aws-baseline"),
    pytest.param(
        AWS_T,
        replaced(_aws_tunnels(), tunnel2IkeVersions=["ikev1", "ikev2"]),
        [
            "VPN connection x: tunnel2IkeVersions permits ikev1; allow only ikev2 (IKEv2, AES-256, SHA-2, DH group 14 "
            "or stronger)"
        ],
        id="aws-ikev1",
    ),
    pytest.param(
        AWS_T,
        replaced(_aws_tunnels(), tunnel1Phase1EncryptionAlgorithms=["AES128", "AES256"]),
        [
            "VPN connection x: tunnel1Phase1EncryptionAlgorithms permits AES128; allow only AES256, AES256-GCM-16 "
            "(IKEv2, AES-256, SHA-2, DH group 14 or stronger)"
        ],
        id="aws-aes128",
    ),
    pytest.param(
        AWS_T,
        replaced(_aws_tunnels(), tunnel2Phase2IntegrityAlgorithms=["SHA1"]),
        [
            "VPN connection x: tunnel2Phase2IntegrityAlgorithms permits SHA1; allow only SHA2-256, SHA2-384, SHA2-512 "
            "(IKEv2, AES-256, SHA-2, DH group 14 or stronger)"
        ],
        id="aws-sha1",
    ),
    pytest.param(
        AWS_T,
        replaced(_aws_tunnels(), tunnel1Phase2DhGroupNumbers=[2, 20]),
        [
            "VPN connection x: tunnel1Phase2DhGroupNumbers permits 2; allow only 14, 15, 16, 17, 18, 19, 20, 21, 24 "
            "(IKEv2, AES-256, SHA-2, DH group 14 or stronger)"
        ],
        id="aws-dh2",
    ),
    pytest.param(
        AWS_T,
        replaced(_aws_tunnels(), tunnel1Phase1DhGroupNumbers=None),
        [
            "VPN connection x: tunnel1Phase1DhGroupNumbers is not set, so AWS permits all its values, weak ones "
            "included; set tunnel1Phase1DhGroupNumbers = [14, 15, 16, 17, 18, 19, 20, 21, 24] (or a subset)"
        ],
        id="aws-unset-list-permits-aws-defaults",
    ),
]


@pytest.mark.parametrize(("type_", "props", "expected"), VPN_CASES)
def test_vpn_policies_allow_only_ikev2_and_strong_algorithms(
    type_: str, props: dict[str, Any], expected: list[str]
) -> None:
    assert findings(NAME, type_, props) == expected


def test_the_pack_judges_a_weak_vpn_over_the_wire(analyzer: Any) -> None:  # noqa: F811
    props = replaced(_aws_tunnels(), tunnel1IkeVersions=["ikev1"])
    request = analyzer_pb2.AnalyzeRequest(
        type=AWS_T, properties=_struct(props), urn=f"urn:pulumi:s::p::{AWS_T}::vpn", name="vpn"
    )
    diags = analyzer.Analyze(request).diagnostics
    assert [(d.policyName, d.enforcementLevel) for d in diags] == [
        ("aws-ec2-vpnconnection-enforce-strong-ike", analyzer_pb2.MANDATORY)
    ]
    assert diags[0].message.split("\n", 1)[1] == (
        "VPN connection vpn: tunnel1IkeVersions permits ikev1; allow only ikev2 (IKEv2, AES-256, SHA-2, DH group 14 "
        "or stronger)"
    )


def test_one_mutation_of_a_captured_hybrid_preview_fails(hybrid: Capture) -> None:
    change = {AWS_LINK: lambda i: i.update(tunnel2Phase1IntegrityAlgorithms=["SHA1"])}
    assert messages(judge(mutated(hybrid, change), [*SITE_POLICIES, *VPN_POLICIES])) == [
        f"VPN connection {AWS_LINK}: tunnel2Phase1IntegrityAlgorithms permits SHA1; allow only SHA2-256, "
        "SHA2-384, SHA2-512 (IKEv2, AES-256, SHA-2, DH group 14 or stronger)"
    ]
