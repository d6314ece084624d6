"""Encrypted EBS: root and data volumes of instances and launch templates, and standalone EBS volumes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aws import EBS_VOLUME, INSTANCE, LAUNCH_TEMPLATE
from ..facts.engine import UNKNOWN, Res, get, items, truthy
from ..rule import Ctx, Meta, ResourceRule

MANDATORY = EnforcementLevel.MANDATORY


def _ebs_encrypted(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.type == EBS_VOLUME:
        if not truthy(res.get("encrypted")) and res.get("encrypted") is not UNKNOWN:
            yield f"EBS volume {res.name} is not encrypted; set encrypted = true"
        return
    if res.type == LAUNCH_TEMPLATE:
        for i, m in enumerate(items(res.props, "blockDeviceMappings")):
            ebs = get(m, "ebs")
            if isinstance(ebs, Mapping) and not truthy(get(ebs, "encrypted")):
                yield (
                    f"launch template {res.name} blockDeviceMappings[{i}] ({get(m, 'deviceName', default='?')}) "
                    'is not encrypted; set ebs.encrypted = "true"'
                )
        return
    root = res.get("rootBlockDevice")
    if isinstance(root, Mapping) and not truthy(get(root, "encrypted")):
        yield f"instance {res.name} root volume is not encrypted; set rootBlockDevice.encrypted = true"
    for i, dev in enumerate(items(res.props, "ebsBlockDevices")):
        if not truthy(get(dev, "encrypted")):
            yield f"instance {res.name} ebsBlockDevices[{i}] is not encrypted; set encrypted = true"


POLICY = ResourceRule(
    Meta(
        name="aws-ebs-volume-enforce-encryption",
        display_name="Encrypted EBS volumes",
        description="Root and data volumes of nodes, templates and standalone EBS volumes are encrypted.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation='Set encrypted = true (launch templates: ebs.encrypted = "true").',
        frameworks=("cis-aws", "soc2", "hipaa", "pci-dss"),
        controls=("SOC 2 CC6.1", "HIPAA 164.312(a)(2)(iv)", "PCI DSS 3.5", "Checkov CKV_AWS_8"),
    ),
    {LAUNCH_TEMPLATE, INSTANCE, EBS_VOLUME},
    _ebs_encrypted,
)
