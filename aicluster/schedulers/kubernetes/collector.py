"""What a Kubernetes cluster's managed Prometheus collector needs inside the cluster (`monitoring.prometheus:
managed`, issue 29), from the plan's collector and the catalog's scrape_access facts (data/monitoring.yaml):

- EKS (amp-scraper): the RBAC of the Kubernetes user the AMP scraper's access entry names: a ClusterRole that may
  discover nodes, pods, services and endpoints and GET /metrics, bound to that user. The scraper's configuration
  sets an interval no shorter than AMP accepts.
- AKS (aks-metrics-addon): the metrics add-on scrapes node-exporter (job `node`, the job the rules select on),
  kubelet and cAdvisor by itself, keeping only its minimal profile's metrics: its settings ConfigMap adds the
  InfiniBand counters the fabric rules read. The GPU Operator's dcgm-exporter it learns of from a custom scrape job
  in its ConfigMap in kube-system.
- GKE (gke-managed-collection): managed collection scrapes only the pods a (Cluster)PodMonitoring selects, and
  names their job after that object: a ClusterPodMonitoring `node` makes the node-exporter add-on's pods the `node`
  job the fabric and file-system rules read (node_pod_monitoring). No GPU Operator runs there (GKE installs the
  driver); the cluster's DCGM metrics package makes GKE run its own dcgm-exporter and the ClusterPodMonitoring that
  scrapes it (gke_monitoring_components).

Pure functions of the plan and the catalog: the component (components.kubernetes.addons) creates the objects."""

from __future__ import annotations

from typing import Any

import yaml

from aicluster.catalog import Catalog, load_catalog
from aicluster.catalog.monitoring import ScrapeAccess
from aicluster.plan import ClusterPlan
from aicluster.render.monitoring import DCGM_JOB, NODE_JOB, kubernetes_jobs, scraper_configuration

from .plan import NODE_EXPORTER_ADDON, gpu_operator_operands

MANAGED_BY = {"app.kubernetes.io/managed-by": "aicluster"}
GPU_OPERATOR = "gpu-operator"


def _access(plan: ClusterPlan, catalog: Catalog | None) -> ScrapeAccess | None:
    m = plan.monitoring
    if m.prometheus != "managed" or m.collector is None or plan.kubernetes is None:
        return None
    cat = catalog or load_catalog()
    return cat.monitoring.scrape_access.get(m.collector) if cat.monitoring is not None else None


def _runs_dcgm_exporter(plan: ClusterPlan) -> bool:
    """Whether the GPU Operator runs its dcgm-exporter on the stack's GPU nodes (GKE stacks run no GPU Operator)."""
    kube = plan.kubernetes
    return (
        kube is not None
        and any(a.id == GPU_OPERATOR for a in kube.addons)
        and gpu_operator_operands(kube.service)["dcgmExporter"]
    )


def scrape_interval_s(plan: ClusterPlan, catalog: Catalog | None = None) -> int:
    """The plan's scrape interval, raised to the collector's shortest where it has one (AMP scraper: 30 s)."""
    access = _access(plan, catalog)
    floor = access.min_scrape_interval_s if access is not None else None
    return max(plan.monitoring.scrape_interval_s, floor or 0)


def amp_scraper_configuration(plan: ClusterPlan, catalog: Catalog | None = None) -> str:
    """The Prometheus configuration an AMP scraper runs on the stack's EKS cluster: the kubernetes_sd jobs at an
    interval the scraper accepts (a scraper takes a subset of Prometheus's configuration; rules belong to the
    workspace)."""
    return scraper_configuration(plan, scrape_interval_s(plan, catalog))


def gke_monitoring_components(plan: ClusterPlan, catalog: Catalog | None = None) -> list[str]:
    """The GKE cluster's metric packages (monitoringConfig.enableComponents) for its managed collection: DCGM, when the
    stack has GPU node groups. Empty: leave GKE's default."""
    access = _access(plan, catalog)
    kube = plan.kubernetes
    if access is None or kube is None or not any(g.accelerator_kind == "gpu" for g in kube.node_groups):
        return []
    return list(access.components)


def collector_objects(plan: ClusterPlan, catalog: Catalog | None = None) -> list[dict[str, Any]]:
    """The Kubernetes objects the stack's managed collector needs (none for a self-hosted or a Slurm stack)."""
    access = _access(plan, catalog)
    if access is None:
        return []
    if access.cluster_role and access.role_binding and access.user:
        return _amp_rbac(access)
    objs: list[dict[str, Any]] = []
    if access.pod_monitoring is not None:
        objs += node_pod_monitoring(plan, access)
    if access.config_map and access.config_namespace and access.config_key and _runs_dcgm_exporter(plan):
        objs.append(_ama_config(plan, access))
    if access.settings_config_map and access.config_namespace and access.node_metrics_keep:
        objs.append(_ama_settings(access))
    return objs


def _amp_rbac(a: ScrapeAccess) -> list[dict[str, Any]]:
    rbac = "rbac.authorization.k8s.io"
    discover = ["get", "list", "watch"]
    role = {
        "apiVersion": f"{rbac}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": a.cluster_role, "labels": dict(MANAGED_BY)},
        "rules": [
            {
                "apiGroups": [""],
                "resources": [
                    "nodes",
                    "nodes/proxy",
                    "nodes/metrics",
                    "services",
                    "endpoints",
                    "pods",
                    "ingresses",
                    "configmaps",
                ],
                "verbs": discover,
            },
            {
                "apiGroups": ["extensions", "networking.k8s.io"],
                "resources": ["ingresses/status", "ingresses"],
                "verbs": discover,
            },
            {"apiGroups": ["metrics.eks.amazonaws.com"], "resources": ["kcm/metrics", "ksh/metrics"], "verbs": ["get"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
        ],
    }
    binding = {
        "apiVersion": f"{rbac}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": a.role_binding, "labels": dict(MANAGED_BY)},
        "subjects": [{"kind": "User", "name": a.user, "apiGroup": rbac}],
        "roleRef": {"kind": "ClusterRole", "name": a.cluster_role, "apiGroup": rbac},
    }
    return [role, binding]


def _ama_config(plan: ClusterPlan, a: ScrapeAccess) -> dict[str, Any]:
    """The metrics add-on's custom scrape jobs: the GPU Operator's dcgm-exporter pods (the add-on's own targets
    already cover node-exporter, kubelet and cAdvisor)."""
    jobs = [j for j in kubernetes_jobs(plan.monitoring) if j["job_name"] == DCGM_JOB]
    doc = {"global": {"scrape_interval": f"{plan.monitoring.scrape_interval_s}s"}, "scrape_configs": jobs}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": a.config_map, "namespace": a.config_namespace, "labels": dict(MANAGED_BY)},
        "data": {a.config_key: yaml.safe_dump(doc, sort_keys=False, width=120)},
    }


def _ama_settings(a: ScrapeAccess) -> dict[str, Any]:
    """The metrics add-on's settings: its node-exporter target (job `node`, what the rules select on) keeps the
    metrics the fabric rules read (node_infiniband_*) besides its minimal ingestion profile's, which has none of
    them. Every other setting is left out, so it keeps the add-on's default."""
    nodeexporter = a.node_metrics_keep
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": a.settings_config_map, "namespace": a.config_namespace, "labels": dict(MANAGED_BY)},
        "data": {
            "schema-version": a.settings_schema or "v1",
            "config-version": "aicluster",
            "default-targets-metrics-keep-list": f'nodeexporter = "{nodeexporter}"',
        },
    }


def node_pod_monitoring(plan: ClusterPlan, a: ScrapeAccess) -> list[dict[str, Any]]:
    """GKE's managed collection: a ClusterPodMonitoring named `node` (the object's name is the targets' `job`
    label, what the rules select on) for the node-exporter add-on's pods, at the catalog's port (a number: the
    target is `<node>:<port>`, as on a Slurm stack) with their node as the `node` label. Nothing without the add-on."""
    kube = plan.kubernetes
    addon = next((x for x in kube.addons if x.id == NODE_EXPORTER_ADDON), None) if kube is not None else None
    if addon is None or a.pod_monitoring is None:
        return []
    api, _, kind = a.pod_monitoring.rpartition("/")
    return [
        {
            "apiVersion": api,
            "kind": kind,
            "metadata": {"name": NODE_JOB, "labels": dict(MANAGED_BY)},
            "spec": {
                # the chart's selector labels: its name and the release's (aicluster names a release by its add-on)
                "selector": {
                    "matchLabels": {"app.kubernetes.io/name": addon.chart, "app.kubernetes.io/instance": addon.id}
                },
                "endpoints": [{"port": plan.monitoring.node_exporter_port, "interval": f"{scrape_interval_s(plan)}s"}],
                "targetLabels": {"metadata": ["node"]},
            },
        }
    ]
