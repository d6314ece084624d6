"""Encrypted EFS: file systems are encrypted at rest (which only a new file system can be)."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aws import EFS
from ..facts.engine import UNKNOWN, Res, truthy
from ..rule import Ctx, Meta, ResourceRule

MANDATORY = EnforcementLevel.MANDATORY


def _efs_encrypted(res: Res, ctx: Ctx) -> Iterator[str]:
    if res.get("encrypted") is not UNKNOWN and not truthy(res.get("encrypted")):
        yield f"EFS file system {res.name} is not encrypted at rest; set encrypted = true (needs a new file system)"


POLICY = ResourceRule(
    Meta(
        name="aws-efs-filesystem-enforce-encryption",
        display_name="Encrypted EFS",
        description="EFS file systems are encrypted at rest.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Create the file system with encrypted = true; encryption cannot be turned on later.",
        frameworks=("cis-aws", "soc2", "hipaa", "pci-dss"),
        controls=("CIS AWS Foundations v6.0.0 3.3.1", "SOC 2 CC6.1", "HIPAA 164.312(a)(2)(iv)"),
    ),
    {EFS},
    _efs_encrypted,
)
