"""The cluster's audit log on Azure: the subscription's activity log kept in a Log Analytics workspace."""

from __future__ import annotations

from typing import TypedDict

import pulumi
import pulumi_azure_native as azure

from .aliases import azure_component_opts
from .locks import delete_lock

# Activity-log categories (who changed what, security and policy events); all of them are kept.
CATEGORIES = (
    "Administrative",
    "Security",
    "ServiceHealth",
    "Alert",
    "Recommendation",
    "Policy",
    "Autoscale",
    "ResourceHealth",
)
# PCI DSS 10.5.1 keeps audit logs for at least a year; the other frameworks ask for less.
RETENTION_DAYS = 365


class AuditLogArgs(TypedDict):
    cluster: str
    location: str
    resource_group_name: pulumi.Input[str]


class AzureAuditLog(pulumi.ComponentResource):
    """Declared when the cluster is held to SOC 2, HIPAA, PCI DSS or ISO 27001: a subscription diagnostic
    setting sends every activity-log category to a workspace that keeps it for a year."""

    workspace_id: pulumi.Output[str]

    def __init__(self, name: str, args: AuditLogArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:AuditLog", name, {}, azure_component_opts(opts))
        child = pulumi.ResourceOptions(parent=self)
        workspace = azure.operationalinsights.Workspace(
            f"{name}-logs",
            resource_group_name=args["resource_group_name"],
            location=args["location"],
            sku=azure.operationalinsights.WorkspaceSkuArgs(name="PerGB2018"),
            retention_in_days=RETENTION_DAYS,
            opts=child,
        )
        delete_lock(f"{name}-logs", workspace, "Log Analytics workspace (the activity log it keeps)", self)
        azure.monitor.SubscriptionDiagnosticSetting(
            f"{name}-activity",
            name=f"aicluster-{args['cluster']}",
            workspace_id=workspace.id,
            logs=[azure.monitor.SubscriptionLogSettingsArgs(category=c, enabled=True) for c in CATEGORIES],
            opts=child,
        )
        self.workspace_id = workspace.id
        self.register_outputs({"workspace_id": workspace.id})
