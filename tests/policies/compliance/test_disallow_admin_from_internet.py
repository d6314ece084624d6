"""No SSH/RDP from the internet, per cloud: security groups and their rules (AWS), NSGs and security rules with
their priorities (Azure), firewall rules (GCP)."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN, Capture
from tests.policies.conftest import NODE_SG, findings, judge, messages, mutated, set_at
from tests.policies.resources.azure import DENY_ADMIN, NSG, SECURITY_RULE, nsg
from tests.policies.resources.gcp import FIREWALL, firewall

AZURE_ADMIN = "azure-network-nsg-disallow-admin-from-internet"

LNET = {
    "name": "allow-lnet-inbound",
    "direction": "Inbound",
    "access": "Allow",
    "protocol": "Tcp",
    "priority": 200.0,
    "sourceAddressPrefix": "VirtualNetwork",
    "destinationPortRanges": ["988", "1019-1023"],
}


def allow(priority: float = 300.0, **changes: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "name": "ssh",
        "direction": "Inbound",
        "access": "Allow",
        "protocol": "Tcp",
        "priority": priority,
        "sourceAddressPrefix": "Internet",
        "destinationPortRange": "22",
    }
    return rule | changes


GCP_ADMIN = "gcp-compute-firewall-disallow-admin-from-internet"

CASES = [
    pytest.param(
        "aws-ec2-securitygroup-disallow-admin-from-internet",
        {
            NODE_SG: lambda i: i["ingress"].append(
                {"protocol": "tcp", "fromPort": 22.0, "toPort": 22.0, "cidrBlocks": ["0.0.0.0/0"]}
            )
        },
        "security group llm-dev-us-east-1-node ingress[1] lets 0.0.0.0/0 reach SSH (protocol tcp, ports 22.0-22.0); "
        "remove it and reach nodes through SSM Session Manager",
        id="ssh-from-internet",
    ),
    pytest.param(
        "aws-ec2-securitygroup-disallow-admin-from-internet",
        {NODE_SG: set_at("ingress.0.cidrBlocks", ["::/0", "0.0.0.0/0"])},
        "security group llm-dev-us-east-1-node ingress[0] lets 0.0.0.0/0 and ::/0 reach SSH/RDP (protocol -1, ports "
        "0.0-0.0); remove it and reach nodes through SSM Session Manager",
        id="all-traffic-from-internet",
    ),
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_ssh_through_a_standalone_ingress_rule() -> None:
    rule = {"ipProtocol": "tcp", "fromPort": 20.0, "toPort": 25.0, "cidrIpv4": "0.0.0.0/0"}
    assert findings(
        "aws-ec2-securitygroup-disallow-admin-from-internet",
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        rule,
    ) == [
        "security group x rule lets 0.0.0.0/0 reach SSH (protocol tcp, ports 20.0-25.0); remove it and reach nodes "
        "through SSM Session Manager"
    ]
    https = {**rule, "fromPort": 443.0, "toPort": 443.0}
    assert (
        findings(
            "aws-ec2-securitygroup-disallow-admin-from-internet",
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            https,
        )
        == []
    )


def test_aicluster_network_security_groups_pass() -> None:
    assert findings(AZURE_ADMIN, NSG, nsg(DENY_ADMIN)) == []
    assert findings(AZURE_ADMIN, NSG, nsg(DENY_ADMIN, LNET, LNET | {"direction": "Outbound"})) == []


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(allow(), id="behind-the-deny"),  # priority 300: the deny at 100 wins
        pytest.param(allow(50.0, direction="Outbound"), id="outbound"),
        pytest.param(allow(50.0, access="Deny"), id="deny"),
        pytest.param(allow(50.0, protocol="Udp"), id="udp"),
        pytest.param(allow(50.0, sourceAddressPrefix="VirtualNetwork"), id="from-the-vnet"),
        pytest.param(allow(50.0, sourceAddressPrefix="10.0.0.0/8"), id="from-a-private-range"),
        pytest.param(allow(50.0, destinationPortRange="443"), id="https"),
        pytest.param(allow(50.0, destinationPortRange="23-3388"), id="range-between"),
    ],
)
def test_rules_that_do_not_open_admin_ports(rule: dict[str, Any]) -> None:
    assert findings(AZURE_ADMIN, NSG, nsg(DENY_ADMIN, rule)) == []


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        pytest.param(
            allow(50.0),
            "network security group x securityRules[1] (ssh) lets Internet reach SSH (protocol Tcp, ports 22); "
            "remove it and reach nodes through Azure Bastion or a VPN",
            id="ahead-of-the-deny",
        ),
        pytest.param(
            allow(50.0, protocol="*", sourceAddressPrefix="*", destinationPortRange="*"),
            "network security group x securityRules[1] (ssh) lets * reach SSH/RDP (protocol *, ports *); remove it "
            "and reach nodes through Azure Bastion or a VPN",
            id="everything-from-anywhere",
        ),
        pytest.param(
            allow(50.0, sourceAddressPrefix="0.0.0.0/0", destinationPortRange="20-30"),
            "network security group x securityRules[1] (ssh) lets 0.0.0.0/0 reach SSH (protocol Tcp, ports 20-30); "
            "remove it and reach nodes through Azure Bastion or a VPN",
            id="port-range",
        ),
        pytest.param(
            allow(
                50.0,
                sourceAddressPrefix=None,
                sourceAddressPrefixes=["10.0.0.0/8", "::/0"],
                destinationPortRange=None,
                destinationPortRanges=["443", "3389"],
            ),
            "network security group x securityRules[1] (ssh) lets ::/0 reach RDP (protocol Tcp, ports 443, 3389); "
            "remove it and reach nodes through Azure Bastion or a VPN",
            id="lists",
        ),
        pytest.param(
            allow(300.0, sourceAddressPrefix="::/0"),
            "network security group x securityRules[1] (ssh) lets ::/0 reach SSH (protocol Tcp, ports 22); remove "
            "it and reach nodes through Azure Bastion or a VPN",
            id="ipv6-not-behind-an-ipv4-deny",
        ),
    ],
)
def test_rules_that_open_admin_ports(rule: dict[str, Any], expected: str) -> None:
    deny = DENY_ADMIN | {"sourceAddressPrefix": "0.0.0.0/0"} if "::/0" in str(rule) else DENY_ADMIN
    assert findings(AZURE_ADMIN, NSG, nsg(deny, rule)) == [expected]


def test_standalone_security_rule() -> None:
    rule = allow(100.0, sourceAddressPrefix="*", networkSecurityGroupName="nodes-nsg")
    assert findings(AZURE_ADMIN, SECURITY_RULE, rule) == [
        "security rule x lets * reach SSH (protocol Tcp, ports 22); remove it and reach nodes through Azure Bastion "
        "or a VPN"
    ]
    assert findings(AZURE_ADMIN, SECURITY_RULE, rule | {"destinationPortRange": "80"}) == []


@pytest.mark.parametrize(
    "props",
    [
        pytest.param(firewall(), id="iap-only"),
        pytest.param(firewall(sourceRanges=["10.0.0.0/16"], allows=[{"protocol": "tcp"}]), id="internal-all-ports"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "tcp", "ports": ["443"]}]), id="https"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "udp"}]), id="udp"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], direction="EGRESS"), id="egress"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], disabled=True), id="disabled"),
        pytest.param(
            firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "tcp", "ports": ["23-3388"]}]), id="range-between"
        ),
        pytest.param(firewall(sourceRanges=UNKNOWN), id="unknown-sources"),
    ],
)
def test_firewalls_that_do_not_open_admin_ports(props: dict[str, Any]) -> None:
    assert findings(GCP_ADMIN, FIREWALL, props) == []


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        pytest.param(
            firewall(sourceRanges=["0.0.0.0/0"]),
            "firewall x allows[0] lets 0.0.0.0/0 reach SSH (protocol tcp, ports 22); remove it and reach nodes "
            "through IAP TCP forwarding (source 35.235.240.0/20)",
            id="ssh",
        ),
        pytest.param(
            firewall(
                direction=None, sourceRanges=["10.0.0.0/8", "::/0"], allows=[{"protocol": "tcp", "ports": ["3389"]}]
            ),
            "firewall x allows[0] lets ::/0 reach RDP (protocol tcp, ports 3389); remove it and reach nodes through "
            "IAP TCP forwarding (source 35.235.240.0/20)",
            id="rdp-ipv6-direction-unset",
        ),
        pytest.param(
            firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "udp"}, {"protocol": "tcp", "ports": ["20-30"]}]),
            "firewall x allows[1] lets 0.0.0.0/0 reach SSH (protocol tcp, ports 20-30); remove it and reach nodes "
            "through IAP TCP forwarding (source 35.235.240.0/20)",
            id="port-range",
        ),
        pytest.param(
            firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "all"}]),
            "firewall x allows[0] lets 0.0.0.0/0 reach SSH/RDP (protocol all, ports all); remove it and reach nodes "
            "through IAP TCP forwarding (source 35.235.240.0/20)",
            id="all-protocols-all-ports",
        ),
    ],
)
def test_firewalls_that_open_admin_ports(props: dict[str, Any], expected: str) -> None:
    assert findings(GCP_ADMIN, FIREWALL, props) == [expected]
