"""Rules over resources aicluster's AWS stacks do not make: Azure GPU fabrics, EFS, raw EBS volumes (GCP's are
in test_gcp.py). Judged as the engine hands them to any program (hand-built props, camelCase)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import findings

VMSS = "azure-native:compute:VirtualMachineScaleSet"


def ib_vmss(**changes: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "sku": {"name": "Standard_ND96isr_H100_v5", "capacity": 100.0},
        "singlePlacementGroup": True,
        "platformFaultDomainCount": 1.0,
        "overprovision": False,
    }
    props.update(changes)
    return props


def test_infiniband_scale_set_baseline_passes() -> None:
    assert findings("azure-compute-vmss-enforce-infiniband-placement", VMSS, ib_vmss()) == []
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, ib_vmss()) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"singlePlacementGroup": False},
            "scale set x (Standard_ND96isr_H100_v5) does not set singlePlacementGroup = true: VMs outside one "
            "placement group do not share an InfiniBand fabric",
            id="placement-group",
        ),
        pytest.param(
            {"platformFaultDomainCount": 5.0},
            "scale set x has platformFaultDomainCount 5.0; InfiniBand scale sets need 1",
            id="fault-domains",
        ),
        pytest.param(
            {"overprovision": True},
            "scale set x leaves overprovisioning on: extra VMs join the fabric and are deleted; "
            "set overprovision = false",
            id="overprovision",
        ),
    ],
)
def test_infiniband_scale_set_placement(changes: dict[str, Any], expected: str) -> None:
    assert findings("azure-compute-vmss-enforce-infiniband-placement", VMSS, ib_vmss(**changes)) == [expected]


def test_infiniband_scale_set_size() -> None:
    big = ib_vmss(sku={"name": "Standard_ND96isr_H100_v5", "capacity": 250.0})
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, big) == [
        "scale set x asks for 250 VMs; one InfiniBand placement group holds at most 100: split the pool into "
        "scale sets of up to 100 (or have Azure support raise the limit, up to 300, and set max_vms)"
    ]
    # a subscription whose limit Azure support raised: policy config (or the AiCluster's declaration)
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, big, {"max_vms": 300}) == []
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, big, {"max_vms": 200}) == [
        "scale set x asks for 250 VMs; one InfiniBand placement group holds at most 200: split the pool into "
        "scale sets of up to 200 (or have Azure support raise the limit, up to 300, and set max_vms)"
    ]
    ethernet = {**big, "sku": {"name": "Standard_D8s_v5", "capacity": 250.0}, "singlePlacementGroup": False}
    assert findings("azure-compute-vmss-disallow-over-100-vms", VMSS, ethernet) == []
    assert findings("azure-compute-vmss-enforce-infiniband-placement", VMSS, ethernet) == []


def test_efs_and_ebs_volume_encryption() -> None:
    assert findings("aws-efs-filesystem-enforce-encryption", "aws:efs/fileSystem:FileSystem", {"encrypted": True}) == []
    assert findings("aws-efs-filesystem-enforce-encryption", "aws:efs/fileSystem:FileSystem", {}) == [
        "EFS file system x is not encrypted at rest; set encrypted = true (needs a new file system)"
    ]
    assert findings("aws-ebs-volume-enforce-encryption", "aws:ebs/volume:Volume", {"encrypted": False}) == [
        "EBS volume x is not encrypted; set encrypted = true"
    ]


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
