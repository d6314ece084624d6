"""What aicluster installs into a managed Kubernetes cluster: the add-ons as Helm v3 releases (their values stay
visible to the policy pack and the offline preview), each after the objects it needs first (GKE: the DRA driver's
namespace and quota), and the objects of aicluster.schedulers.kubernetes.render (namespace, Kueue, NicClusterPolicy,
GKE networks, the DaemonSets of manifest add-ons, the managed Prometheus collector's RBAC or scrape jobs), each
custom resource after the release that installs its CRD. The NCCL acceptance JobSet and its ComputeDomains are not
deployed: `aicluster acceptance` writes them out (a ComputeDomain belongs to one workload). On GKE with managed
collection, the stack's alert rules (the groups `aicluster monitoring` writes as rules/*.yml) as one ClusterRules
object, which Google's managed rule evaluator runs. With a Prometheus in the cluster (self-hosted: the
kube-prometheus-stack add-on), after its release: the rule groups as PrometheusRules, the PodMonitors, the
dashboards' ConfigMaps (aicluster.schedulers.kubernetes.prometheus) and the Alertmanager's receiver Secret, its
values Pulumi secrets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from aicluster.plan import ClusterPlan
from aicluster.render.monitoring import InClusterMonitoring
from aicluster.schedulers.kubernetes.prometheus import (
    alertmanager_secret,
    prometheus_stack,
    prometheus_stack_objects,
)
from aicluster.schedulers.kubernetes.render import (
    gke_networks,
    helm_values,
    installed_by,
    kubernetes_objects,
    release_prerequisites,
)


class KubernetesAddonsArgs(TypedDict):
    plan: ClusterPlan
    kubeconfig: pulumi.Input[str]
    # GKE: the GPU VPCs' and subnets' self links (GcpNetwork.vpc_ids and .subnet_ids); Pulumi suffixes the names it
    # creates, so the GKENetworkParamSets take the cloud's names from these
    gcp_vpc_ids: NotRequired[Mapping[str, pulumi.Input[str]]]
    gcp_subnet_ids: NotRequired[Mapping[tuple[str, int], pulumi.Input[str]]]
    # the alert rule groups (aicluster.monitoring's, as the rules files hold them); GKE managed collection runs them
    alert_rules: NotRequired[Sequence[Mapping[str, Any]]]
    # a Prometheus in the cluster (kube-prometheus-stack): its rule groups, routing and dashboards
    # (aicluster.monitoring.in_cluster), and the alert receivers' secrets, Pulumi config key -> secret
    in_cluster_monitoring: NotRequired[InClusterMonitoring | None]
    alert_secrets: NotRequired[Mapping[str, pulumi.Input[str]]]


# Google Cloud Managed Service for Prometheus's rules API (its CRDs come with managed collection, not with a release):
# ClusterRules reads the metrics of every namespace (Rules only its own: dcgm-exporter runs in the GPU Operator's).
GMP_API = "monitoring.googleapis.com/v1"
GMP_RULES_KIND = "ClusterRules"
GMP_INTERVAL = "1m"  # a group's evaluation interval (required by older CRDs; the newer default)


def cluster_rules(name: str, groups: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ClusterRules object that holds the stack's rule groups, each evaluated every GMP_INTERVAL."""
    return {
        "apiVersion": GMP_API,
        "kind": GMP_RULES_KIND,
        "metadata": {"name": name},
        "spec": {"groups": [{"name": g["name"], "interval": GMP_INTERVAL, "rules": list(g["rules"])} for g in groups]},
    }


def _last(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


class KubernetesAddons(pulumi.ComponentResource):
    provider: k8s.Provider
    releases: dict[str, k8s.helm.v3.Release]

    def __init__(self, name: str, args: KubernetesAddonsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:kubernetes:Addons", name, {}, opts)
        plan = args["plan"]
        kube = plan.kubernetes
        assert kube is not None, "KubernetesAddons needs a plan with a Kubernetes control plane"
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=pulumi.Output.secret(args["kubeconfig"]),
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["kubeconfig"]),
        )
        on_cluster = pulumi.ResourceOptions(parent=self, provider=self.provider)
        monitoring = args.get("in_cluster_monitoring")
        self.releases = {}
        for addon in kube.addons:
            if addon.kind != "helm":
                continue
            oci = addon.repository.startswith("oci://")
            # what the release needs first (GKE: the DRA driver's namespace and its critical-pods quota)
            before = [self._create(name, obj, {}, on_cluster) for obj in release_prerequisites(plan, addon)]
            self.releases[addon.id] = k8s.helm.v3.Release(
                f"{name}-{addon.id}",
                name=addon.id,
                chart=f"{addon.repository}/{addon.chart}" if oci else addon.chart,
                version=addon.version,
                repository_opts=None if oci else k8s.helm.v3.RepositoryOptsArgs(repo=addon.repository),
                namespace=addon.namespace,
                create_namespace=not any(isinstance(r, k8s.core.v1.Namespace) for r in before),
                atomic=True,
                values=helm_values(plan, addon, monitoring),
                opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=before)),
            )
        vpcs, subnets = args.get("gcp_vpc_ids") or {}, args.get("gcp_subnet_ids") or {}
        names: dict[str, dict[str, pulumi.Input[str]]] = {}
        for net in gke_networks(plan):
            if net.vpc_key in vpcs and net.subnet_key in subnets:
                names[net.name] = {"vpc": vpcs[net.vpc_key], "vpcSubnet": subnets[net.subnet_key]}
        self.objects: list[pulumi.CustomResource] = []
        for obj in kubernetes_objects(plan):
            self.objects.append(self._create(name, obj, names, on_cluster))
        stack = prometheus_stack(plan)
        if stack is not None:  # after its release, which installs the CRDs and makes the namespace
            after = pulumi.ResourceOptions.merge(
                on_cluster, pulumi.ResourceOptions(depends_on=[self.releases[stack.id]])
            )
            for obj in prometheus_stack_objects(plan, monitoring):
                self.objects.append(self._create(name, obj, {}, after))
        self._alertmanager_secret(name, plan, monitoring, args.get("alert_secrets") or {}, on_cluster)
        rules = args.get("alert_rules") or ()
        if rules and plan.monitoring.collector == "gke-managed-collection":
            self.objects.append(self._create(name, cluster_rules(f"aicluster-{plan.name}", rules), {}, on_cluster))
        self.register_outputs({"releases": {k: r.status for k, r in self.releases.items()}})

    def _alertmanager_secret(
        self,
        name: str,
        plan: ClusterPlan,
        monitoring: InClusterMonitoring | None,
        secrets: Mapping[str, pulumi.Input[str]],
        opts: pulumi.ResourceOptions,
    ) -> None:
        """The in-cluster Alertmanager's receiver secrets, as a Secret the operator mounts (its routing reads them
        as files): each value a Pulumi secret, so neither the state nor a preview shows it. A key the program has no
        secret for (a preview before it is set) is left out: the program warns, and `pulumi up` refuses."""
        obj = alertmanager_secret(plan, monitoring)
        addon = prometheus_stack(plan)
        if obj is None or monitoring is None or addon is None:
            return
        data = {
            file: pulumi.Output.secret(secrets[key]) for key, file in monitoring["secrets"].items() if key in secrets
        }
        meta = obj["metadata"]
        self.objects.append(
            k8s.core.v1.Secret(
                f"{name}-secret-{meta['name']}",
                metadata=meta,
                type=obj["type"],
                string_data=data,
                # in the release's namespace, which the release creates
                opts=pulumi.ResourceOptions.merge(
                    opts,
                    pulumi.ResourceOptions(
                        depends_on=[self.releases[addon.id]], additional_secret_outputs=["stringData", "data"]
                    ),
                ),
            )
        )

    def _create(
        self,
        name: str,
        obj: dict[str, Any],
        names: Mapping[str, Mapping[str, pulumi.Input[str]]],
        opts: pulumi.ResourceOptions,
    ) -> pulumi.CustomResource:
        kind, meta = obj["kind"], obj["metadata"]
        rname = f"{name}-{kind.lower()}-{meta['name']}"
        if kind == "Namespace":
            return k8s.core.v1.Namespace(rname, metadata=meta, opts=opts)
        if kind == "ResourceQuota":  # in a namespace made just before it (release_prerequisites)
            return k8s.core.v1.ResourceQuota(rname, metadata=meta, spec=obj["spec"], opts=opts)
        if kind == "DaemonSet":  # a manifest add-on (GKE's GPUDirect installers): core API, no CRD to wait for
            return k8s.apps.v1.DaemonSet(rname, metadata=meta, spec=obj["spec"], opts=opts)
        # Node Problem Detector's (schedulers/kubernetes/health.py): core and RBAC API
        if kind == "ServiceAccount":
            return k8s.core.v1.ServiceAccount(rname, metadata=meta, opts=opts)
        if kind == "ConfigMap":
            return k8s.core.v1.ConfigMap(rname, metadata=meta, data=obj["data"], opts=opts)
        if kind == "ClusterRole":  # the managed Prometheus collector's (schedulers/kubernetes/collector.py)
            role: pulumi.CustomResource = k8s.rbac.v1.ClusterRole(rname, metadata=meta, rules=obj["rules"], opts=opts)
            return role
        if kind == "ClusterRoleBinding":
            binding: pulumi.CustomResource = k8s.rbac.v1.ClusterRoleBinding(
                rname, metadata=meta, role_ref=obj["roleRef"], subjects=obj["subjects"], opts=opts
            )
            return binding
        # the GPU quarantine controller's (schedulers/kubernetes/quarantine.py): a Role and binding for its node
        # events in `default`, and its Deployment
        if kind == "Role":
            ns_role: pulumi.CustomResource = k8s.rbac.v1.Role(rname, metadata=meta, rules=obj["rules"], opts=opts)
            return ns_role
        if kind == "RoleBinding":
            ns_binding: pulumi.CustomResource = k8s.rbac.v1.RoleBinding(
                rname, metadata=meta, role_ref=obj["roleRef"], subjects=obj["subjects"], opts=opts
            )
            return ns_binding
        if kind == "Deployment":
            return k8s.apps.v1.Deployment(rname, metadata=meta, spec=obj["spec"], opts=opts)
        owner = installed_by(obj)
        deps = [self.releases[owner]] if owner in self.releases else []
        spec: dict[str, Any] = dict(obj.get("spec", {}))
        if kind == "GKENetworkParamSet" and meta["name"] in names:
            for key, link in names[meta["name"]].items():
                spec[key] = pulumi.Output.from_input(link).apply(_last)
        return k8s.apiextensions.CustomResource(
            rname,
            api_version=obj["apiVersion"],
            kind=kind,
            metadata=meta,
            spec=spec,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=deps)),
        )
