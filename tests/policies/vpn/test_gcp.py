"""GCP VPN: IKEv2 and strong algorithms only, on hand-built props as the SDK registers them and on a captured
hybrid preview."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from tests.policies.conftest import findings, judge, messages, mutated, replaced
from tests.policies.resources.onprem import SITE_POLICIES, VPN_POLICIES

NAME = "gcp-compute-vpntunnel-enforce-strong-ike"

GCP_TUNNEL = {"ikeVersion": 2, "region": "us-central1", "sharedSecret": "[secret]"}

GCP_SUITE = {
    "phase1": {
        "encryptions": ["AES-GCM-16-256"],
        "integrities": ["HMAC-SHA2-384-192"],
        "prves": ["PRF-HMAC-SHA2-384"],
        "dhs": ["Group-20"],
    },
    "phase2": {"encryptions": ["AES-GCM-16-256"], "integrities": ["HMAC-SHA2-384-192"], "pfs": ["Group-20"]},
}

GCP_T = "gcp:compute/vPNTunnel:VPNTunnel"

GCP_LINK = "hybrid-burst-gcp-us-east5--fra1-gcp-0"

VPN_CASES = [
    pytest.param(GCP_T, GCP_TUNNEL, [], id="gcp-baseline"),
    pytest.param(GCP_T, replaced(GCP_TUNNEL, ikeVersion=None), [], id="gcp-default-ikev2"),
    pytest.param(GCP_T, replaced(GCP_TUNNEL, cipherSuite=GCP_SUITE), [], id="gcp-strong-suite"),
    pytest.param(
        GCP_T,
        replaced(GCP_TUNNEL, ikeVersion=1),
        ["VPN tunnel x: ikeVersion is 1; set ikeVersion = 2 (IKEv1 is refused)"],
        id="gcp-ikev1",
    ),
    pytest.param(
        GCP_T,
        replaced(
            GCP_TUNNEL, cipherSuite={**GCP_SUITE, "phase2": {**GCP_SUITE["phase2"], "encryptions": ["AES-CBC-128"]}}
        ),
        ["VPN tunnel x: cipherSuite.phase2.encryptions allows AES-CBC-128; allow only AES-GCM-16-256, AES-CBC-256"],
        id="gcp-aes128",
    ),
    pytest.param(
        GCP_T,
        replaced(GCP_TUNNEL, cipherSuite={**GCP_SUITE, "phase1": {**GCP_SUITE["phase1"], "dhs": ["Group-2"]}}),
        [
            "VPN tunnel x: cipherSuite.phase1.dhs allows Group-2; allow only Group-14, Group-15, Group-16, Group-17, "
            "Group-18, Group-19, Group-20, Group-21, Group-24"
        ],
        id="gcp-dh2",
    ),
]


@pytest.mark.parametrize(("type_", "props", "expected"), VPN_CASES)
def test_vpn_policies_allow_only_ikev2_and_strong_algorithms(
    type_: str, props: dict[str, Any], expected: list[str]
) -> None:
    assert findings(NAME, type_, props) == expected


def test_one_mutation_of_a_captured_hybrid_preview_fails(hybrid: Capture) -> None:
    change = {GCP_LINK: lambda i: i.update(ikeVersion=1)}
    assert messages(judge(mutated(hybrid, change), [*SITE_POLICIES, *VPN_POLICIES])) == [
        f"VPN tunnel {GCP_LINK}: ikeVersion is 1; set ikeVersion = 2 (IKEv1 is refused)"
    ]
