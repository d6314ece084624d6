"""What `aicluster monitoring STACK` writes: Prometheus's config and target files, alert rules with their
promtool tests, dcgm-exporter's counters CSV and Grafana dashboards, all from the stack's plan.

    prometheus.yml              scrape configs (dcgm-exporter, node_exporter, the Slurm exporter where one is
                                installed: monitoring.slurm_exporter), rule_files
    targets/<job>.yml           file_sd targets named after the plan's nodes (Slurm stacks)
    rules/<group>.yml           alert rules: gpu, fabric, filesystem, slurm (the ones the stack has and scrapes)
    tests/<group>.yml           `promtool test rules` cases: each alert fires once and stays quiet once
    alertmanager.yml            where alerts go (monitoring.alerts, self-hosted): receivers and routes, secrets
                                read from files the alertmanager role writes
    dcgm-exporter/counters.csv  the DCGM fields to export, health fields included
    dashboards/<name>.json      Grafana dashboards

A pure `plan -> files` function: it reads the plan and the catalog's thresholds, nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from aicluster.catalog import Catalog
from aicluster.plan.models import ClusterPlan
from aicluster.render.monitoring import InClusterMonitoring

from .alerting import alertmanager_config, alertmanager_yml, managed_definition, secret_keys, secret_name
from .dashboards import dashboards
from .rules import Group, groups, monitoring_data
from .scrape import counters_csv, prometheus_yml, targets

__all__ = ["Group", "groups", "in_cluster", "managed_alertmanager", "managed_rules", "render"]

_HEAD = "# Written by `aicluster monitoring` for the cluster {name}; regenerate rather than edit.\n"


def _yaml(doc: object) -> str:
    return yaml.safe_dump(doc, sort_keys=False, width=1 << 16, allow_unicode=True)  # an expression on one line


def managed_rules(plan: ClusterPlan, catalog: Catalog) -> list[dict[str, object]]:
    """The rule groups the stack's managed Prometheus is given (the Pulumi program hands them to the components):
    the very groups `render` writes as rules/*.yml; none where the Prometheus is self-hosted (it reads the files)."""
    if plan.monitoring.service is None:
        return []
    return [g.rule_group() for g in groups(plan, catalog)]


def managed_alertmanager(plan: ClusterPlan, catalog: Catalog) -> str | None:
    """The alert manager definition the stack's managed Prometheus is given (`monitoring.alerts`, on AWS); None where
    the Prometheus is self-hosted (alertmanager.yml goes to the controller) or routes nothing."""
    return managed_definition(plan, monitoring_data(catalog), groups(plan, catalog))


def in_cluster(plan: ClusterPlan, catalog: Catalog) -> InClusterMonitoring | None:
    """What the Prometheus, Alertmanager and Grafana a Kubernetes stack deploys in its cluster (monitoring.prometheus
    self-hosted) are given: the very rule groups, routing and dashboards `render` writes. None for other stacks (a
    Slurm controller's Prometheus reads the files; a managed one gets managed_rules and managed_alertmanager)."""
    if plan.kubernetes is None or plan.monitoring.service is not None:
        return None
    found = groups(plan, catalog)
    return {
        "rule_groups": [g.rule_group() for g in found],
        "alertmanager": alertmanager_config(plan, monitoring_data(catalog), found),
        "secrets": {key: secret_name(key) for key in secret_keys(plan.monitoring)},
        "dashboards": dashboards(plan, monitoring_data(catalog)),
    }


def render(
    plan: ClusterPlan,
    catalog: Catalog,
    remote_write_url: str | None = None,
    addresses: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Relative path -> text of every file the monitoring directory holds. `remote_write_url`: the managed workspace
    the controller's Prometheus writes to (a stack output, known after `pulumi up`); `addresses`: node name ->
    address, to scrape the nodes whose names do not resolve (`aicluster inventory` passes both)."""
    mon = monitoring_data(catalog)
    found = groups(plan, catalog)
    target_files = targets(plan, mon, addresses)
    head = _HEAD.format(name=plan.name)
    files = {"prometheus.yml": prometheus_yml(plan, mon, found, target_files, remote_write_url)}
    files.update(target_files)
    routing = alertmanager_yml(plan, mon, found)
    if routing is not None:
        files["alertmanager.yml"] = routing
    for g in found:
        files[f"rules/{g.file}.yml"] = head + _yaml(g.rules_doc())
        files[f"tests/{g.file}.yml"] = head + _yaml(g.tests_doc())
    files["dcgm-exporter/counters.csv"] = counters_csv()
    files.update(dashboards(plan, mon))
    return files
