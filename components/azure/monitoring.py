"""Azure Monitor managed service for Prometheus (`monitoring.prometheus: managed` on Azure): an Azure Monitor
workspace, the data collection endpoint and rule that route Prometheus metrics into it. On AKS the cluster's metrics
add-on (azureMonitorProfile.metrics) sends through that rule once the rule is associated with the cluster
(components.kubernetes.aks): the add-on names no workspace itself, the association is the link."""

from __future__ import annotations

from typing import TypedDict

import pulumi
import pulumi_azure_native as azure

from aicluster.plan import PlannedMonitoring

from .locks import delete_lock

STREAM = "Microsoft-PrometheusMetrics"  # the stream a Prometheus forwarder sends and a workspace takes
DESTINATION = "workspace"  # the rule's name for its monitoring-account destination


class AzurePrometheusArgs(TypedDict):
    cluster: str
    monitoring: PlannedMonitoring  # managed, on Azure
    resource_group_name: pulumi.Input[str]


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
        self.workspace_id = workspace.id
        self.rule_id = rule.id
        self.endpoint_id = endpoint.id
        self.register_outputs({"workspace_id": workspace.id, "rule_id": rule.id, "endpoint_id": endpoint.id})
