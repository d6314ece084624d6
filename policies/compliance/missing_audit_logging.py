"""Audit logging: a stack held to SOC 2, HIPAA, PCI DSS or ISO 27001 records the API activity of every cloud it
uses (an AWS CloudTrail trail, a GCP Data Access audit config, an Azure activity-log diagnostic setting; each cloud's
reader says what a record lacks). One policy: the frameworks hold the whole stack."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.aws import TRAIL, trail_ok
from ..facts.azure import AZURE_AUDIT, AZURE_AUDIT_CATEGORY, activity_log_gaps
from ..facts.engine import Res
from ..facts.gcp import GCP_AUDIT, GCP_AUDIT_LOG_TYPES, GCP_AUDIT_SERVICE, audit_config_gaps
from ..facts.stack import Stack
from ..rule import Ctx, Meta, NotApplicable, StackRule

MANDATORY = EnforcementLevel.MANDATORY

AUDITED_FRAMEWORKS = ("soc2", "hipaa", "pci-dss", "iso27001")


def _audit_logging(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    frameworks = [str(f) for f in ctx.setting("frameworks", ("compliance", "frameworks"), [])]
    needing = [f for f in frameworks if f in AUDITED_FRAMEWORKS]
    if not needing:
        raise NotApplicable(
            f"no framework that requires audit logs ({', '.join(sorted(AUDITED_FRAMEWORKS))}) in compliance.frameworks"
        )
    held = f"the stack is held to {', '.join(needing)}"
    providers = {r.provider for r in stack.resources if not r.type.startswith(("pulumi:", "aicluster:"))}
    if "aws" in providers and not any(trail_ok(t) for t in stack.of(TRAIL)):
        yield (
            None,
            f"{held} but records no AWS API activity: add a CloudTrail trail with isMultiRegionTrail and "
            "enableLogFileValidation (aicluster adds one when compliance.frameworks names soc2, hipaa, pci-dss or "
            "iso27001), or waive this for an organization trail",
        )
    if "gcp" in providers:
        configs = [(c, audit_config_gaps(c)) for c in stack.of(*GCP_AUDIT)]
        if not configs:
            yield (
                None,
                f"{held} but no GCP audit config turns on Data Access logs: add an IAM audit config for "
                f"{GCP_AUDIT_SERVICE} with log types {', '.join(GCP_AUDIT_LOG_TYPES)} (Admin Activity logs are always "
                "on; aicluster adds the config when compliance.frameworks names soc2, hipaa, pci-dss or iso27001)",
            )
        elif all(gaps for _, gaps in configs):
            for c, gaps in configs:
                yield (
                    c,
                    f"{held} but IAM audit config {c.name} does not record Data Access for every service: "
                    f"{'; '.join(gaps)}; set service {GCP_AUDIT_SERVICE} and log types "
                    f"{', '.join(GCP_AUDIT_LOG_TYPES)}",
                )
    if "azure-native" in providers:
        settings = [(s, activity_log_gaps(s)) for s in stack.of(*AZURE_AUDIT)]
        if not settings:
            yield (
                None,
                f"{held} but no Azure diagnostic setting sends activity logs to a workspace: add a subscription "
                "diagnostic setting with workspaceId and the Administrative category enabled (aicluster adds one "
                "when compliance.frameworks names soc2, hipaa, pci-dss or iso27001)",
            )
        elif all(gaps for _, gaps in settings):
            for s, gaps in settings:
                yield (
                    s,
                    f"{held} but {s.kind} {s.name} does not keep the Azure activity log: {'; '.join(gaps)}; "
                    f"send it to a Log Analytics workspace (workspaceId) with the {AZURE_AUDIT_CATEGORY} category "
                    "enabled",
                )


POLICY = StackRule(
    Meta(
        name="aicluster-cluster-missing-audit-logging",
        display_name="Audit logging",
        description="Clusters held to SOC 2, HIPAA, PCI DSS or ISO 27001 record cloud API activity.",
        concern="compliance",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Declare the framework in compliance.frameworks (AiCluster adds a CloudTrail), or waive for an "
        "organization-wide trail.",
        frameworks=("soc2", "hipaa", "pci-dss", "iso27001", "cis-aws"),
        controls=("SOC 2 CC7.2", "HIPAA 164.312(b)", "PCI DSS 10.2", "ISO/IEC 27001:2022 A.8.15", "CIS AWS 3.1"),
        config={
            "frameworks": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Frameworks the stack is held to. Default: the AiCluster's compliance.frameworks.",
            }
        },
    ),
    _audit_logging,
)
