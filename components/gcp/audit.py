"""The cluster's audit trail on GCP, for frameworks that require one (SOC 2, HIPAA, PCI DSS, ISO 27001).

Admin Activity audit logs are always on in GCP; Data Access logs are not. This turns on ADMIN_READ,
DATA_READ and DATA_WRITE for every service of the project and keeps the `_Default` log bucket for 365 days
(its default is 30)."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

RETENTION_DAYS = 365
LOG_TYPES = ("ADMIN_READ", "DATA_READ", "DATA_WRITE")


class GcpAuditLog(pulumi.ComponentResource):
    def __init__(self, name: str, project: pulumi.Input[str], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:AuditLog", name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        gcp.projects.IAMAuditConfig(
            f"{name}-data-access",
            project=project,
            service="allServices",
            audit_log_configs=[gcp.projects.IAMAuditConfigAuditLogConfigArgs(log_type=t) for t in LOG_TYPES],
            opts=child,
        )
        gcp.logging.ProjectBucketConfig(
            f"{name}-retention",
            project=project,
            location="global",
            bucket_id="_Default",
            retention_days=RETENTION_DAYS,
            opts=child,
        )
        self.register_outputs({})
