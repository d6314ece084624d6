"""No public IPs on compute, per cloud: p5-small mutated (AWS), hand-built Azure and GCP compute."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN, Capture
from policies import ResourceRule
from tests.policies.conftest import CTL, LT, findings, judge, messages, mutated, policy, set_at
from tests.policies.resources import azure, gcp
from tests.policies.resources.azure import NIC, PUBLIC_IP, VMSS, vmss
from tests.policies.resources.gcp import QUEUED, TEMPLATE, TPU_VM, nics, queued, template, tpu_vm

AZURE_PUBLIC = "azure-compute-vm-disallow-public-ip"

GCP_PUBLIC = "gcp-compute-instance-disallow-public-ip"

CASES = [
    pytest.param(
        "aws-ec2-instance-disallow-public-ip",
        {LT: set_at("networkInterfaces.0.associatePublicIpAddress", "true")},
        "launch template llm-dev-h100-lt gives network interface 0 (card 0.0) a public IP (associatePublicIpAddress = "
        "true); set it false: nodes egress through NAT",
        id="public-ip-lt",
    ),
    pytest.param(
        "aws-ec2-instance-disallow-public-ip",
        {CTL: set_at("associatePublicIpAddress", True)},
        "instance llm-dev-slurmctld-vm gets a public IP (associatePublicIpAddress = true); set it false and reach "
        "the node through SSM or a bastion",
        id="public-ip-instance",
    ),
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_nodes_without_public_ips_pass() -> None:
    assert findings(AZURE_PUBLIC, VMSS, vmss().props) == []
    assert findings(AZURE_PUBLIC, azure.VM, azure.controller().props) == []
    nic = {"location": "eastus", "ipConfigurations": [{"name": "ipv4", "subnet": {"id": UNKNOWN}}]}
    assert findings(AZURE_PUBLIC, NIC, nic) == []
    rule = policy(AZURE_PUBLIC)
    assert isinstance(rule, ResourceRule)
    assert rule.types is not None
    assert PUBLIC_IP not in rule.types  # the NAT gateway's address is no node's


def test_scale_set_with_public_ips() -> None:
    props = vmss(ip_config={"publicIPAddressConfiguration": {"name": "pub", "idleTimeoutInMinutes": 4.0}}).props
    assert findings(AZURE_PUBLIC, VMSS, props) == [
        "virtual machine scale set x gives networkInterfaceConfigurations[0] (primary) ipConfigurations[0] (ipv4) a "
        "public IP (publicIPAddressConfiguration); remove it: nodes egress through the NAT gateway"
    ]


def test_vm_with_an_inline_public_ip() -> None:
    nics = {
        "networkInterfaceConfigurations": [
            {"name": "nic0", "ipConfigurations": [{"name": "ip0", "publicIPAddressConfiguration": {"name": "pub"}}]}
        ]
    }
    assert findings(AZURE_PUBLIC, azure.VM, azure.controller(networkProfile=nics).props) == [
        "virtual machine x gives networkInterfaceConfigurations[0] (nic0) ipConfigurations[0] (ip0) a public IP "
        "(publicIPAddressConfiguration); remove it: nodes egress through the NAT gateway"
    ]


def test_network_interface_with_a_public_ip() -> None:
    nic = {
        "location": "eastus",
        "ipConfigurations": [{"name": "ipv4", "subnet": {"id": UNKNOWN}, "publicIPAddress": {"id": UNKNOWN}}],
    }
    assert findings(AZURE_PUBLIC, NIC, nic) == [
        "network interface x ipConfigurations[0] (ipv4) attaches a public IP address; remove publicIPAddress: nodes "
        "egress through the NAT gateway, reach them through Azure Bastion or a VPN"
    ]


def test_aicluster_gcp_compute_has_no_public_ip() -> None:
    for r in (template(), gcp.controller(), tpu_vm(), queued()):
        assert findings(GCP_PUBLIC, r.type, r.props) == [], r.type


def test_template_and_vm_with_an_external_ip() -> None:
    with_ip = nics()
    with_ip[0] = with_ip[0] | {"accessConfigs": [{"networkTier": "PREMIUM"}]}
    assert findings(GCP_PUBLIC, TEMPLATE, template(networkInterfaces=with_ip).props) == [
        "instance template x gives networkInterfaces[0] an external IP (accessConfigs); remove accessConfigs: nodes "
        "egress through Cloud NAT, reach them through IAP TCP forwarding"
    ]
    ipv6 = [{"network": UNKNOWN, "ipv6AccessConfigs": [{"networkTier": "PREMIUM"}]}]
    assert findings(GCP_PUBLIC, gcp.VM, gcp.controller(networkInterfaces=ipv6).props) == [
        "instance x gives networkInterfaces[0] an external IP (ipv6AccessConfigs); remove ipv6AccessConfigs: nodes "
        "egress through Cloud NAT, reach them through IAP TCP forwarding"
    ]
    empty = [{"network": UNKNOWN, "accessConfigs": []}]
    assert findings(GCP_PUBLIC, gcp.VM, gcp.controller(networkInterfaces=empty).props) == []


def test_tpu_with_external_ips() -> None:
    open_vm = tpu_vm(networkConfig={"network": UNKNOWN, "enableExternalIps": True})
    assert findings(GCP_PUBLIC, TPU_VM, open_vm.props) == [
        "v2 vm x gives its TPU VMs external IPs (networkConfig.enableExternalIps = true); set it false: TPU VMs "
        "egress through Cloud NAT, reach them through IAP"
    ]
    open_qr = queued(networkConfig={"network": UNKNOWN, "enableExternalIps": True})
    assert findings(GCP_PUBLIC, QUEUED, open_qr.props) == [
        "v2 queued resource x gives its TPU VMs external IPs (tpu.nodeSpecs[0].node.networkConfig.enableExternalIps "
        "= true); set it false: TPU VMs egress through Cloud NAT, reach them through IAP"
    ]
