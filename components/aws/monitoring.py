"""Amazon Managed Service for Prometheus (`monitoring.prometheus: managed` on AWS): the workspace with the stack's alert
rules (one rule groups namespace: the groups `aicluster monitoring` writes as rules/*.yml) and, where the stack routes
its alerts (monitoring.alerts: SNS topics), the workspace's alert manager definition; on EKS the AWS managed
collector (scraper) that feeds it. A Slurm stack's controller writes to the workspace itself
(Prometheus remote_write, SigV4 with the nodes' role: AwsNodeIdentity grants it aps:RemoteWrite on the workspace)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_aws as aws
import yaml

from aicluster.plan import PlannedMonitoring

REMOTE_WRITE_PATH = "api/v1/remote_write"  # below the workspace's prometheus_endpoint (which ends in /)


def remote_write_policy(workspace_arn: str, action: str) -> str:
    """The IAM policy that lets an identity remote-write into one workspace."""
    return json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": action, "Resource": workspace_arn}]},
        sort_keys=True,
    )


def rules_data(rule_groups: Sequence[Mapping[str, Any]]) -> str:
    """A rule groups namespace's data: a Prometheus rules file holding every group."""
    return yaml.safe_dump({"groups": list(rule_groups)}, sort_keys=False, width=1 << 16, allow_unicode=True)


class AmpWorkspaceArgs(TypedDict):
    cluster: str
    monitoring: PlannedMonitoring  # managed, on AWS
    # the alert rule groups (aicluster.monitoring's, as the rules files hold them); none: no rules namespace
    rule_groups: NotRequired[Sequence[Mapping[str, Any]]]
    # the alert manager definition (aicluster.monitoring.managed_alertmanager); none: the workspace routes nothing
    alert_manager: NotRequired[str | None]


class AwsManagedPrometheus(pulumi.ComponentResource):
    """One AMP workspace in the region of the controller or control plane, named (alias) after the cluster."""

    workspace_arn: pulumi.Output[str]
    remote_write_url: pulumi.Output[str]

    def __init__(self, name: str, args: AmpWorkspaceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:ManagedPrometheus", name, {}, opts)
        m = args["monitoring"]
        assert m.region is not None, "a managed plan names its region"
        workspace = aws.amp.Workspace(
            f"{name}-workspace",
            alias=args["cluster"],
            region=m.region,
            opts=pulumi.ResourceOptions(parent=self),
        )
        groups = args.get("rule_groups") or ()
        if groups:  # AMP evaluates them on the workspace's data (the controller's remote_write or the scraper's)
            aws.amp.RuleGroupNamespace(
                f"{name}-rules",
                name=args["cluster"],
                workspace_id=workspace.id,
                data=rules_data(groups),
                region=m.region,
                opts=pulumi.ResourceOptions(parent=self),
            )
        definition = args.get("alert_manager")
        if definition:  # AMP's alert manager: SNS receivers only (the planner refused any other)
            aws.amp.AlertManagerDefinition(
                f"{name}-alerts",
                workspace_id=workspace.id,
                definition=definition,
                region=m.region,
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.workspace_arn = workspace.arn
        self.remote_write_url = workspace.prometheus_endpoint.apply(lambda e: f"{e}{REMOTE_WRITE_PATH}")
        self.register_outputs(
            {"workspace_arn": workspace.arn, "workspace_id": workspace.id, "remote_write_url": self.remote_write_url}
        )


class AmpScraperArgs(TypedDict):
    cluster_arn: pulumi.Input[str]
    region: str
    workspace_arn: pulumi.Input[str]
    subnet_ids: Sequence[pulumi.Input[str]]  # where the scraper's interfaces sit (the control plane's subnets)
    security_group_ids: Sequence[pulumi.Input[str]]  # groups that reach the nodes' exporters
    scrape_configuration: str  # aicluster.render.monitoring.scraper_configuration


class AwsPrometheusScraper(pulumi.ComponentResource):
    """An AMP scraper on an EKS cluster. Its access entry (the scraper's role as the user `aps-collector-user`, which
    aicluster binds to the collector's ClusterRole: aicluster.schedulers.kubernetes.collector) is not created here: on
    a cluster whose authentication mode is API, as aicluster's EKS clusters are, AMP creates it at CreateScraper, and
    a second one for the same principal would fail the deploy (catalog source scrape-amp-collector-eks)."""

    role_arn: pulumi.Output[str]

    def __init__(self, name: str, args: AmpScraperArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:PrometheusScraper", name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        scraper = aws.amp.Scraper(
            f"{name}-scraper",
            alias=name,
            source=aws.amp.ScraperSourceArgs(
                eks=aws.amp.ScraperSourceEksArgs(
                    cluster_arn=args["cluster_arn"],
                    subnet_ids=list(args["subnet_ids"]),
                    security_group_ids=list(args["security_group_ids"]),
                )
            ),
            destination=aws.amp.ScraperDestinationArgs(
                amp=aws.amp.ScraperDestinationAmpArgs(workspace_arn=args["workspace_arn"])
            ),
            scrape_configuration=args["scrape_configuration"],
            region=args["region"],
            opts=child,
        )
        self.role_arn = scraper.role_arn
        self.register_outputs({"scraper_arn": scraper.arn, "role_arn": scraper.role_arn})
