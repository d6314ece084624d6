"""The on-prem and hybrid example stacks against every site and VPN policy: the compliant baselines, a cloud-only
stack with nothing to judge, and the site judged over the engine's gRPC protocol as in process."""

from __future__ import annotations

from typing import Any

from pulumi.runtime.proto import analyzer_pb2

from aicluster.preview.engine import Capture
from aicluster.preview.policy import evaluate
from tests.policies.conftest import judge, mutated
from tests.policies.resources.onprem import SITE_POLICIES, VPN_POLICIES, site
from tests.policies.test_engine_protocol import _stack_request, _struct, analyzer  # noqa: F401  (analyzer: the pack's process)


def test_the_onprem_example_passes_every_site_policy(dgx: Capture) -> None:
    result = judge(dgx, [*SITE_POLICIES, *VPN_POLICIES])
    assert result.violations == []
    assert set(result.passed) == set(SITE_POLICIES)
    na = {n["policy"]: n["reason"] for n in result.not_applicable}
    assert na == {
        "aws-ec2-vpnconnection-enforce-strong-ike": "no aws:ec2/vpnConnection:VpnConnection in the stack",
        "gcp-compute-vpntunnel-enforce-strong-ike": "no gcp:compute/vPNTunnel:VPNTunnel in the stack",
        "azure-network-vpnconnection-enforce-strong-ike": "no azure-native:network:VirtualNetworkGatewayConnection "
        "in the stack",
    }


def test_a_cloud_only_stack_gives_the_site_policies_nothing_to_judge(p5_small: Capture) -> None:
    na = {n["policy"]: n["reason"] for n in judge(p5_small, SITE_POLICIES).not_applicable}
    assert na == {name: "no aicluster:onprem:Site in the stack" for name in SITE_POLICIES}


def test_the_hybrid_stacks_vpns_and_site_pass(hybrid: Capture, three_cloud: Capture) -> None:
    result = judge(hybrid, [*SITE_POLICIES, *VPN_POLICIES])
    assert result.violations == []
    assert set(result.passed) == {*SITE_POLICIES, *VPN_POLICIES} - {"azure-network-vpnconnection-enforce-strong-ike"}
    assert "azure-network-vpnconnection-enforce-strong-ike" in judge(three_cloud, VPN_POLICIES).passed


def test_the_pack_judges_a_site_over_the_wire_as_in_process(analyzer: Any, dgx: Capture) -> None:  # noqa: F811
    cap = mutated(dgx, site(lambda i: (i.update(max_kw=1000.0), i["racks"][0].update(kw=42.0))))
    diags = analyzer.AnalyzeStack(_stack_request(cap)).diagnostics
    over_the_wire = sorted((d.policyName, d.urn, d.message.split("\n", 1)[1]) for d in diags)
    in_process = sorted((v.policy, v.urn, v.message) for v in evaluate(cap).violations)
    assert over_the_wire == in_process
    assert {d.policyName for d in diags} == {
        "aicluster-site-enforce-power-ceiling",
        "aicluster-site-enforce-rack-power",
    }
    assert all(d.enforcementLevel == analyzer_pb2.MANDATORY for d in diags)
