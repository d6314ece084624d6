"""Kubernetes audit logs: the control plane's audit logs are on (EKS enabledClusterLogTypes with audit, GKE
loggingConfig.enableComponents with APISERVER, AKS kube-audit through a diagnostic setting on the cluster: AKS
monitoring reference, https://learn.microsoft.com/en-us/azure/aks/monitor-aks-reference#resource-logs)."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import EnforcementLevel, Severity

from ..facts.azure import DIAGNOSTIC_SETTINGS
from ..facts.engine import UNKNOWN, Res, get, items
from ..facts.kubernetes import AKS_CLUSTER, EKS_CLUSTER, GKE_CLUSTER, KUBERNETES_CLUSTERS
from ..facts.stack import Stack
from ..rule import Ctx, Meta, StackRule

MANDATORY = EnforcementLevel.MANDATORY
AKS_AUDIT_CATEGORIES = ("kube-audit", "kube-audit-admin")
AKS_AUDIT_GROUPS = ("audit", "allLogs")  # AKS category groups that hold kube-audit


def _aks_audited(stack: Stack, cluster: Res) -> bool | None:
    """Whether a diagnostic setting on the cluster sends its kube-audit logs (None: a setting's logs are unknown)."""
    unknown = False
    for d in stack.of(*DIAGNOSTIC_SETTINGS):
        uri = d.get("resourceUri")
        if cluster not in d.linked("resourceUri") and not (isinstance(uri, str) and uri.endswith(f"/{cluster.name}")):
            continue
        if d.get("logs") is UNKNOWN:
            unknown = True
        for log in items(d.props, "logs"):
            if get(log, "enabled") is not True:
                continue
            if get(log, "category") in AKS_AUDIT_CATEGORIES or get(log, "categoryGroup") in AKS_AUDIT_GROUPS:
                return True
    return None if unknown else False


def _audit(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    for r in stack.of(EKS_CLUSTER):
        types = r.get("enabledClusterLogTypes")
        if types is not UNKNOWN and "audit" not in items(r.props, "enabledClusterLogTypes"):
            yield (
                r,
                f"cluster {r.name}: enabledClusterLogTypes is {items(r.props, 'enabledClusterLogTypes')} without "
                "audit, so nobody can tell who changed what in the cluster; add audit (and authenticator)",
            )
    for r in stack.of(GKE_CLUSTER):
        listed = items(r.props, "loggingConfig", "enableComponents")
        if r.get("loggingConfig", "enableComponents") is not UNKNOWN and "APISERVER" not in listed:
            yield (
                r,
                f"cluster {r.name}: loggingConfig.enableComponents is {listed}"
                " without APISERVER; set loggingConfig.enableComponents = [SYSTEM_COMPONENTS, APISERVER, ...]",
            )
    for r in stack.of(AKS_CLUSTER):
        if _aks_audited(stack, r) is False:
            yield (
                r,
                f"cluster {r.name}: no diagnostic setting on it sends kube-audit or kube-audit-admin logs; add an "
                "azure-native:insights:DiagnosticSetting with resourceUri = the cluster's id and logs [{category: "
                "kube-audit-admin, enabled: true}] to a Log Analytics workspace",
            )


POLICY = StackRule(
    Meta(
        name="aicluster-kubernetes-cluster-enable-audit-logs",
        display_name="Kubernetes audit logs",
        description="The control plane's audit logs are on: EKS audit log type, GKE API server logs, AKS kube-audit "
        "through a diagnostic setting.",
        concern="compliance",
        severity=Severity.MEDIUM,
        enforcement=MANDATORY,
        remediation="Turn on the control plane's audit logs (aicluster's components do: audit_logs in the plan).",
        frameworks=("soc2", "pci-dss", "hipaa", "iso27001"),
        controls=("CIS Amazon EKS Benchmark 2.1.1", "CIS AKS Benchmark 2.1.1", "SOC 2 CC7.2"),
    ),
    _audit,
    types=KUBERNETES_CLUSTERS,
)
