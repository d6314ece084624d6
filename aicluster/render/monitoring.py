"""Prometheus scrape jobs that find a Kubernetes cluster's exporters (kubernetes_sd): what `aicluster monitoring`
shows, commented, for a Prometheus in the cluster, and what an AWS managed collector (an AMP scraper) runs on EKS.
A pure function of the plan (its exporter ports and scrape interval), so both say the same."""

from __future__ import annotations

from typing import Any, TypedDict

import yaml

from aicluster.plan.models import ClusterPlan, PlannedMonitoring

# The Prometheus job names of the exporters (the alert rules and their tests select on them).
NODE_JOB = "node"
DCGM_JOB = "dcgm-exporter"
# GPU Operator's dcgm-exporter pods carry this label (app=nvidia-dcgm-exporter).
DCGM_POD_LABEL = "nvidia-dcgm-exporter"
POOL_NODE_LABEL = "aicluster_io_pool"  # aicluster.io/pool as Prometheus's node meta label spells it


def kubernetes_jobs(m: PlannedMonitoring) -> list[dict[str, Any]]:
    """node_exporter on every node's InternalIP, and GPU Operator's dcgm-exporter pods; `node` and `pool` labels as
    the file_sd jobs of a Slurm stack set them, so the rules and dashboards read both alike."""
    node = {
        "job_name": NODE_JOB,
        "kubernetes_sd_configs": [{"role": "node"}],
        "relabel_configs": [
            {
                "source_labels": ["__meta_kubernetes_node_address_InternalIP"],
                "regex": "(.+)",
                "replacement": f"$1:{m.node_exporter_port}",
                "target_label": "__address__",
            },
            {"source_labels": ["__meta_kubernetes_node_name"], "target_label": "node"},
            {"source_labels": [f"__meta_kubernetes_node_label_{POOL_NODE_LABEL}"], "target_label": "pool"},
        ],
    }
    dcgm = {
        "job_name": DCGM_JOB,
        "kubernetes_sd_configs": [{"role": "pod"}],
        "relabel_configs": [
            {"source_labels": ["__meta_kubernetes_pod_label_app"], "regex": DCGM_POD_LABEL, "action": "keep"},
            {
                "source_labels": ["__meta_kubernetes_pod_container_port_number"],
                "regex": str(m.dcgm_exporter_port),
                "action": "keep",
            },
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
        ],
    }
    return [node, dcgm]


def scraper_configuration(plan: ClusterPlan, interval_s: int | None = None) -> str:
    """The Prometheus configuration an AMP scraper runs on the stack's EKS cluster: the scrape interval (the plan's,
    or `interval_s`: aicluster.schedulers.kubernetes.collector raises it to AMP's floor) and the kubernetes_sd jobs,
    nothing more (a scraper takes a subset of Prometheus's configuration; rules belong to the workspace, not here)."""
    m = plan.monitoring
    interval = m.scrape_interval_s if interval_s is None else interval_s
    doc = {"global": {"scrape_interval": f"{interval}s"}, "scrape_configs": kubernetes_jobs(m)}
    return yaml.safe_dump(doc, sort_keys=False, width=120)


# A Prometheus in a Kubernetes cluster (monitoring.prometheus self-hosted; the kube-prometheus-stack add-on): the
# Kubernetes Secret that holds the alert receivers' secrets, one key per Pulumi secret (named as secret_file names
# the controller's files), which the Prometheus Operator mounts into the Alertmanager pods below this directory
# (prometheus-operator pkg/alertmanager/statefulset.go: secretsDir + the Secret's name).
ALERTMANAGER_SECRET = "aicluster-alertmanager-receivers"
ALERTMANAGER_SECRETS_DIR = f"/etc/alertmanager/secrets/{ALERTMANAGER_SECRET}"


class InClusterMonitoring(TypedDict):
    """What the Pulumi program hands the Kubernetes add-ons for a Prometheus the stack deploys in the cluster, as
    `aicluster monitoring` renders it (the components read no catalog): the rule groups (rules/*.yml), the
    Alertmanager configuration (alertmanager.yml, secrets read from files below ALERTMANAGER_SECRETS_DIR; None: the
    stack routes no alerts), the receivers' secrets (Pulumi config key -> the Secret's key, the file's name), and the
    dashboards (file -> JSON)."""

    rule_groups: list[dict[str, Any]]
    alertmanager: dict[str, Any] | None
    secrets: dict[str, str]
    dashboards: dict[str, str]
