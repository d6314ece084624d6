"""Azure Monitor managed service for Prometheus (`monitoring.prometheus: managed` on Azure): an Azure Monitor
workspace, the data collection endpoint and rule that route Prometheus metrics into it. On AKS the cluster's metrics
add-on (azureMonitorProfile.metrics) sends through that rule once the rule is associated with the cluster
(components.kubernetes.aks): the add-on names no workspace itself, the association is the link. The stack's alert
rules (the groups `aicluster monitoring` writes as rules/*.yml) become one Prometheus rule group each, scoped to the
workspace."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native as azure

from aicluster.plan import PlannedMonitoring

from .locks import delete_lock

STREAM = "Microsoft-PrometheusMetrics"  # the stream a Prometheus forwarder sends and a workspace takes
DESTINATION = "workspace"  # the rule's name for its monitoring-account destination


def iso_duration(duration: str) -> str:
    """A Prometheus duration (`10m`, `1h`, `30s`) as the ISO 8601 duration Azure's rules take (`PT10M`)."""
    found = re.fullmatch(r"(\d+)([smh])", duration)
    if found is None:
        raise ValueError(f"not a Prometheus duration of seconds, minutes or hours: {duration!r}")
    return f"PT{found.group(1)}{found.group(2).upper()}"


def rule_args(rule: Mapping[str, Any], severities: Mapping[str, int]) -> azure.alertsmanagement.PrometheusRuleArgs:
    """One Prometheus alerting rule as an Azure rule: the same expression, `for`, labels and annotations; its
    `severity` label also as the number Azure routes on."""
    labels = dict(rule.get("labels", {}))
    return azure.alertsmanagement.PrometheusRuleArgs(
        alert=rule["alert"],
        expression=rule["expr"],
        for_=iso_duration(rule["for"]) if "for" in rule else None,
        labels=labels,
        annotations=dict(rule.get("annotations", {})),
        severity=severities.get(labels.get("severity", "")),
        enabled=True,
    )


class AzurePrometheusArgs(TypedDict):
    cluster: str
    monitoring: PlannedMonitoring  # managed, on Azure
    resource_group_name: pulumi.Input[str]
    # the alert rule groups (aicluster.monitoring's, as the rules files hold them): one rule group each
    rule_groups: NotRequired[Sequence[Mapping[str, Any]]]


class AzureManagedPrometheus(pulumi.ComponentResource):
    """The workspace, a data collection endpoint in its region, and a rule from the Prometheus forwarder (the AKS
    metrics add-on) to the workspace."""

    workspace_id: pulumi.Output[str]
    rule_id: pulumi.Output[str]
    endpoint_id: pulumi.Output[str]

    def __init__(self, name: str, args: AzurePrometheusArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:ManagedPrometheus", name, {}, opts)
        m = args["monitoring"]
        assert m.region is not None, "a managed plan names its region"
        rg = args["resource_group_name"]
        child = pulumi.ResourceOptions(parent=self)
        workspace = azure.monitor.AzureMonitorWorkspace(
            f"{name}-workspace",
            azure_monitor_workspace_name=args["cluster"],
            resource_group_name=rg,
            location=m.region,
            opts=child,
        )
        delete_lock(f"{name}-workspace", workspace, "Azure Monitor workspace (the metrics it keeps)", self)
        endpoint = azure.monitor.DataCollectionEndpoint(
            f"{name}-dce",
            data_collection_endpoint_name=f"{args['cluster']}-prometheus",
            resource_group_name=rg,
            location=m.region,
            kind="Linux",
            opts=child,
        )
        rule = azure.monitor.DataCollectionRule(
            f"{name}-dcr",
            data_collection_rule_name=f"{args['cluster']}-prometheus",
            resource_group_name=rg,
            location=m.region,
            kind="Linux",
            data_collection_endpoint_id=endpoint.id,
            description=f"Prometheus metrics of aicluster {args['cluster']} to its Azure Monitor workspace",
            data_sources=azure.monitor.DataCollectionRuleDataSourcesArgs(
                prometheus_forwarder=[
                    azure.monitor.PrometheusForwarderDataSourceArgs(
                        name="PrometheusDataSource", streams=[STREAM], label_include_filter={}
                    )
                ]
            ),
            destinations=azure.monitor.DataCollectionRuleDestinationsArgs(
                monitoring_accounts=[
                    azure.monitor.MonitoringAccountDestinationArgs(account_resource_id=workspace.id, name=DESTINATION)
                ]
            ),
            data_flows=[azure.monitor.DataFlowArgs(streams=[STREAM], destinations=[DESTINATION])],
            opts=child,
        )
        for group in args.get("rule_groups") or ():
            azure.alertsmanagement.PrometheusRuleGroup(
                f"{name}-{group['name']}",
                rule_group_name=f"{args['cluster']}-{group['name']}",
                resource_group_name=rg,
                location=m.region,
                scopes=[workspace.id],
                description=f"Alert rules {group['name']} of aicluster {args['cluster']} (`aicluster monitoring`)",
                # no interval: Azure's default, one minute (its least; the promtool tests evaluate each minute too)
                enabled=True,
                rules=[rule_args(r, m.rule_severities) for r in group["rules"]],
                opts=child,
            )
        self.workspace_id = workspace.id
        self.rule_id = rule.id
        self.endpoint_id = endpoint.id
        self.register_outputs({"workspace_id": workspace.id, "rule_id": rule.id, "endpoint_id": endpoint.id})
