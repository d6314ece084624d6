"""A Prometheus, Alertmanager and Grafana in a Kubernetes cluster (`monitoring.prometheus: self-hosted`, issue 29):
the kube-prometheus-stack add-on's values and the objects that feed it, from the plan and what the Pulumi program
renders with aicluster.monitoring (InClusterMonitoring: the rule groups, routing and dashboards `aicluster monitoring`
writes), so the cluster runs what the files say.

- Alert rules: one PrometheusRule per rule group (rules/<group>.yml), labelled for the release's Prometheus.
- Scrapes: PodMonitors that give the targets the labels the rules and dashboards select on (job `node` and
  `dcgm-exporter`, `node`, `pool`), as aicluster.render.monitoring's kubernetes_sd jobs do: the node-exporter add-on's
  pods (hostNetwork, so the pod's address is the node's) and the GPU Operator's dcgm-exporter pods. The chart's own
  node-exporter is off: the add-on already runs one per node on the port the `node` job scrapes, with the InfiniBand
  collector and every node group's taints tolerated; two would contend for that host port.
- Alertmanager: `monitoring.alerts` as its configuration; the receivers' secrets are files of the Secret
  ALERTMANAGER_SECRET (the component writes it from the Pulumi secrets), mounted by the operator.
- Grafana: the dashboards as ConfigMaps its dashboard sidecar loads (label grafana_dashboard).

Pure functions: the component (components.kubernetes.addons) creates the release and the objects."""

from __future__ import annotations

from typing import Any

from aicluster.plan import ClusterPlan, PlannedAddon
from aicluster.render.monitoring import (
    ALERTMANAGER_SECRET,
    DCGM_JOB,
    DCGM_POD_LABEL,
    NODE_JOB,
    POOL_NODE_LABEL,
    InClusterMonitoring,
)

from .plan import NODE_EXPORTER_ADDON, PROMETHEUS_STACK_ADDON

MONITORING_API = "monitoring.coreos.com/v1"
# The release's Prometheus selects PodMonitors and PrometheusRules by this label, valued with the release's name
# (the chart's *SelectorNilUsesHelmValues defaults), so it takes ours and no others'
RELEASE_LABEL = "release"
# The Grafana dashboard sidecar's label and value (the chart's grafana.sidecar.dashboards defaults, kept explicit)
DASHBOARD_LABEL = "grafana_dashboard"
DASHBOARD_LABEL_VALUE = "1"
# The prometheus-node-exporter chart's selector labels (its _helpers.tpl selectorLabels); the instance is the release
NODE_EXPORTER_NAME = "prometheus-node-exporter"
# Control-plane components a managed control plane (EKS, GKE, AKS) does not let a Prometheus in the cluster scrape:
# the chart's ServiceMonitors for them would only report their targets down
MANAGED_CONTROL_PLANE = ("kubeControllerManager", "kubeScheduler", "kubeEtcd")


def _meta(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "aicluster", **labels}}


def _addon(plan: ClusterPlan, addon_id: str) -> PlannedAddon | None:
    kube = plan.kubernetes
    return next((a for a in kube.addons if a.id == addon_id), None) if kube is not None else None


def prometheus_stack(plan: ClusterPlan) -> PlannedAddon | None:
    """The stack's kube-prometheus-stack add-on; None where the plan has none (managed Prometheus, or Slurm)."""
    return _addon(plan, PROMETHEUS_STACK_ADDON)


def _routing(config: dict[str, Any]) -> dict[str, Any]:
    """monitoring.alerts' configuration as the chart's `alertmanager.config`: Helm merges maps into the chart's
    default, so the keys whose default would change the routing are set, empty where ours has none (the default
    route's sub-routes and inhibit rules name its `null` receiver and `namespace` label)."""
    return {**config, "route": {"routes": [], **config["route"]}, "inhibit_rules": []}


def prometheus_stack_values(plan: ClusterPlan, monitoring: InClusterMonitoring | None) -> dict[str, Any]:
    """The kube-prometheus-stack release's values; every key is one the chart's values.yaml defines."""
    interval = f"{plan.monitoring.scrape_interval_s}s"
    values: dict[str, Any] = {
        "nodeExporter": {"enabled": False},  # the node-exporter add-on is the one node_exporter per node
        # the chart's Kubernetes mixin rules alert on what managed control planes hide; ours are the stack's rules
        "defaultRules": {"create": False},
        **{component: {"enabled": False} for component in MANAGED_CONTROL_PLANE},
        "prometheus": {"prometheusSpec": {"scrapeInterval": interval, "evaluationInterval": interval}},
        "grafana": {
            "sidecar": {"dashboards": {"enabled": True, "label": DASHBOARD_LABEL, "labelValue": DASHBOARD_LABEL_VALUE}}
        },
    }
    routing = monitoring["alertmanager"] if monitoring is not None else None
    if routing is not None:
        values["alertmanager"] = {"config": _routing(routing)}
        if monitoring is not None and monitoring["secrets"]:
            values["alertmanager"]["alertmanagerSpec"] = {"secrets": [ALERTMANAGER_SECRET]}
    return values


def _pod_monitor(
    addon: PlannedAddon,
    name: str,
    job: str,
    port: int,
    namespaces: dict[str, Any],
    labels: dict[str, str],
    honor_labels: bool = False,
) -> dict[str, Any]:
    relabel = [
        {"targetLabel": "job", "replacement": job},
        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"},
        {"sourceLabels": [f"__meta_kubernetes_node_label_{POOL_NODE_LABEL}"], "targetLabel": "pool"},
    ]
    return {
        "apiVersion": MONITORING_API,
        "kind": "PodMonitor",
        "metadata": _meta(name, addon.namespace, **{RELEASE_LABEL: addon.id}),
        "spec": {
            "attachMetadata": {"node": True},  # the node's labels, for `pool`
            "namespaceSelector": namespaces,
            "selector": {"matchLabels": labels},
            "podMetricsEndpoints": [
                {"portNumber": port, "relabelings": relabel, **({"honorLabels": True} if honor_labels else {})}
            ],
        },
    }


def prometheus_stack_objects(plan: ClusterPlan, monitoring: InClusterMonitoring | None) -> list[dict[str, Any]]:
    """The PrometheusRules, PodMonitors and dashboard ConfigMaps of the stack's kube-prometheus-stack add-on (none
    without the add-on), in the release's namespace; the receivers' Secret is alertmanager_secret's."""
    addon = prometheus_stack(plan)
    if addon is None:
        return []
    m = plan.monitoring
    release = {RELEASE_LABEL: addon.id}
    objs: list[dict[str, Any]] = []
    for group in monitoring["rule_groups"] if monitoring is not None else ():
        objs.append(
            {
                "apiVersion": MONITORING_API,
                "kind": "PrometheusRule",
                "metadata": _meta(f"aicluster-{group['name']}", addon.namespace, **release),
                "spec": {"groups": [group]},
            }
        )
    node_exporter = _addon(plan, NODE_EXPORTER_ADDON)
    if node_exporter is not None:
        labels = {"app.kubernetes.io/name": NODE_EXPORTER_NAME, "app.kubernetes.io/instance": node_exporter.id}
        objs.append(
            _pod_monitor(
                addon,
                f"aicluster-{NODE_JOB}",
                NODE_JOB,
                m.node_exporter_port,
                {"matchNames": [node_exporter.namespace]},
                labels,
            )
        )
    if _addon(plan, "gpu-operator") is not None:  # GKE runs no GPU Operator, so no dcgm-exporter of ours
        # honorLabels: the labels dcgm-exporter puts on a GPU's series for the pod using it (pod, namespace,
        # container) keep their names, as under the kubernetes_sd job, rather than yield to the exporter pod's own
        objs.append(
            _pod_monitor(
                addon,
                f"aicluster-{DCGM_JOB}",
                DCGM_JOB,
                m.dcgm_exporter_port,
                {"any": True},
                {"app": DCGM_POD_LABEL},
                honor_labels=True,
            )
        )
    for path, text in (monitoring["dashboards"] if monitoring is not None else {}).items():
        file = path.rsplit("/", 1)[-1]
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": _meta(
                    f"aicluster-dashboard-{file.removesuffix('.json')}",
                    addon.namespace,
                    **{DASHBOARD_LABEL: DASHBOARD_LABEL_VALUE},
                ),
                "data": {file: text},
            }
        )
    return objs


def alertmanager_secret(plan: ClusterPlan, monitoring: InClusterMonitoring | None) -> dict[str, Any] | None:
    """The receivers' Secret without its data (the component fills stringData from the Pulumi secrets, under the
    keys InClusterMonitoring.secrets names): None where the stack deploys no Alertmanager routing with secrets."""
    addon = prometheus_stack(plan)
    if addon is None or monitoring is None or monitoring["alertmanager"] is None or not monitoring["secrets"]:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta(ALERTMANAGER_SECRET, addon.namespace),
    }
