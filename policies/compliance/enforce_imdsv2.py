"""IMDSv2 only: EC2 instances and launch templates require session tokens for instance metadata (AWS only: one
cloud, one policy)."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aws import INSTANCE, LAUNCH_TEMPLATE
from ..facts.engine import UNKNOWN, Res
from ..rule import Ctx, Meta, ResourceRule

MANDATORY = EnforcementLevel.MANDATORY


def _imdsv2(res: Res, ctx: Ctx) -> Iterator[str]:
    tokens = res.get("metadataOptions", "httpTokens")
    if tokens is UNKNOWN or res.get("metadataOptions", "httpEndpoint") == "disabled":
        return
    if res.type == INSTANCE and tokens is None and res.get("launchTemplate") is not None:
        return  # its launch template decides, and is judged itself
    if tokens != "required":
        what = f'"{tokens}"' if tokens is not None else "not set (IMDSv1 stays on)"
        yield (
            f"{res.kind} {res.name} allows IMDSv1: metadataOptions.httpTokens is {what}; set "
            'metadataOptions.httpTokens = "required" so credentials need a session token'
        )


POLICY = ResourceRule(
    Meta(
        name="aws-ec2-instance-enforce-imdsv2",
        display_name="IMDSv2 only",
        description="EC2 instances and launch templates require IMDSv2 session tokens.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation='Set metadataOptions.httpTokens to "required" (aicluster components always do).',
        frameworks=("cis-aws", "soc2"),
        controls=("CIS AWS Foundations v6.0.0 6.7", "SOC 2 CC6.1", "SOC 2 CC7.2"),
    ),
    {LAUNCH_TEMPLATE, INSTANCE},
    _imdsv2,
)
