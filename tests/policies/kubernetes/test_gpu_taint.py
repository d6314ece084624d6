"""Tainted accelerator node groups on EKS, GKE and AKS; a CPU system pool needs no taint."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from policies.facts import Res
from policies.facts.kubernetes import AKS_CLUSTER
from policies.rule import NotApplicable
from tests.policies.conftest import res, stack_findings
from tests.policies.resources.kubernetes import AKS, GPU_TAINT, GROUPS, aks_pool, eks_group, gke_pool

TAINT = "aicluster-kubernetes-nodegroup-enforce-gpu-taint"


@pytest.mark.parametrize("cloud", list(GROUPS))
def test_tainted_gpu_node_groups_pass(cloud: str) -> None:
    assert stack_findings(TAINT, GROUPS[cloud]()) == []


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param(lambda: eks_group(taints=[]), "EKS node group h100 runs p5.48xlarge", id="eks"),
        pytest.param(
            lambda: gke_pool(taints=[{**GPU_TAINT, "effect": "PREFER_NO_SCHEDULE"}]),
            "GKE node pool h100 runs a3-megagpu-8g (8 accelerators per node) with "
            "nvidia.com/gpu=present:PreferNoSchedule",
            id="gke-prefer-only",
        ),
        pytest.param(lambda: aks_pool(nodeTaints=None), "AKS agent pool h100 runs Standard_ND96isr_H100_v5", id="aks"),
    ],
)
def test_untainted_gpu_node_groups_fail(resources: Callable[[], list[Res]], expected: str) -> None:
    (message,) = stack_findings(TAINT, resources())
    assert message.startswith(expected)
    assert "add the taint nvidia.com/gpu=present:NoSchedule" in message


def test_a_cpu_system_pool_needs_no_taint() -> None:
    # the AKS cluster's own agentPoolProfiles hold the system pool (Standard_D8s_v5, no GPU, no taint)
    with pytest.raises(NotApplicable, match="no Kubernetes node group of accelerator nodes"):
        stack_findings(TAINT, [res(AKS_CLUSTER, "aks", AKS)])
