"""Kubernetes audit logs on every control plane (AKS: through a diagnostic setting on the cluster)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policies.facts import Res
from policies.facts.kubernetes import AKS_CLUSTER, EKS_CLUSTER, GKE_CLUSTER
from tests.policies.conftest import res, stack_findings
from tests.policies.resources.kubernetes import AKS, EKS, GKE, changed

AUDIT = "aicluster-kubernetes-cluster-enable-audit-logs"

DIAGNOSTICS = "azure-native:insights:DiagnosticSetting"


def _aks_diagnostics(categories: list[dict[str, Any]], cluster: Res) -> Res:
    props = {"name": "aks-audit", "workspaceId": "/subscriptions/s/.../workspaces/w", "logs": categories}
    return res(DIAGNOSTICS, "aks-audit", props, resourceUri=[cluster])


def test_audit_logs_on_every_control_plane_pass() -> None:
    aks = res(AKS_CLUSTER, "aks", AKS)
    stack = [res(EKS_CLUSTER, "eks", EKS), res(GKE_CLUSTER, "gke", GKE), aks]
    stack.append(_aks_diagnostics([{"category": "kube-audit-admin", "enabled": True}], aks))
    assert stack_findings(AUDIT, stack) == []


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param(
            lambda: [res(EKS_CLUSTER, "eks", changed(EKS, lambda p: p.update(enabledClusterLogTypes=["api"])))],
            "cluster eks: enabledClusterLogTypes is ['api'] without audit",
            id="eks",
        ),
        pytest.param(
            lambda: [res(GKE_CLUSTER, "gke", changed(GKE, lambda p: p.pop("loggingConfig")))],
            "cluster gke: loggingConfig.enableComponents is [] without APISERVER",
            id="gke",
        ),
        pytest.param(
            lambda: [res(AKS_CLUSTER, "aks", AKS)],
            "cluster aks: no diagnostic setting on it sends kube-audit",
            id="aks-no-setting",
        ),
        pytest.param(
            lambda: [
                aks := res(AKS_CLUSTER, "aks", AKS),
                _aks_diagnostics([{"category": "kube-apiserver", "enabled": True}], aks),
            ],
            "cluster aks: no diagnostic setting on it sends kube-audit",
            id="aks-other-categories",
        ),
    ],
)
def test_control_planes_without_audit_logs_fail(resources: Callable[[], list[Res]], expected: str) -> None:
    (message,) = stack_findings(AUDIT, resources())
    assert message.startswith(expected)
