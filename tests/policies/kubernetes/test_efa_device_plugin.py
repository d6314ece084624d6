"""The EFA device plugin is installed where EKS node groups have EFA interfaces."""

from __future__ import annotations

import pytest

from policies.facts.kubernetes import HELM_RELEASE
from policies.rule import NotApplicable
from tests.policies.conftest import res, stack_findings
from tests.policies.resources.kubernetes import EFA_RELEASE, eks_group, launch_template

EFA_PLUGIN = "aws-eks-nodegroup-missing-efa-device-plugin"


def test_an_efa_node_group_with_the_plugin_passes() -> None:
    stack = [*eks_group(), res(HELM_RELEASE, "efa", EFA_RELEASE)]
    assert stack_findings(EFA_PLUGIN, stack) == []


def test_an_efa_node_group_without_the_device_plugin_fails() -> None:
    other = res(HELM_RELEASE, "kueue", {"chart": "oci://registry.k8s.io/kueue/charts/kueue", "version": "0.19.2"})
    (message,) = stack_findings(EFA_PLUGIN, [*eks_group(), other])
    assert message.startswith("EKS node group h100 has EFA interfaces but no Helm release of aws-efa-k8s-device-plugin")
    assert "install the chart aws-efa-k8s-device-plugin 0.5.30 from https://aws.github.io/eks-charts" in message


def test_a_node_group_without_efa_is_not_judged() -> None:
    lt = launch_template(networkInterfaces=[{"deviceIndex": 0, "associatePublicIpAddress": "false"}])
    with pytest.raises(NotApplicable, match="no EKS node group of EFA nodes"):
        stack_findings(EFA_PLUGIN, eks_group(lt=lt))
