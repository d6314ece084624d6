"""The pack as a whole: the p5-small capture passes every policy (the others have nothing to judge, with their
reasons), the example GCP stacks have no mandatory finding, and an async policy leaves no event loop open."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import Capture
from policies import POLICIES
from tests.policies.conftest import capture_of, judge
from tests.policies.resources.gcp import GCP_STACKS


def test_baseline_passes_every_policy(p5_small: Capture) -> None:
    result = judge(p5_small, [p.name for p in POLICIES])
    assert result.violations == []
    na = {n["policy"]: n["reason"] for n in result.not_applicable}
    assert na.pop("aicluster-cluster-configure-carbon-ceiling").endswith(
        "t CO2e/month (location-based); no ceiling set (max_t_co2e_per_month)"
    )
    # Issue 13 #5: an AWS-only stack gives the Azure and GCP rules (and EFS's) nothing to judge: not passed
    assert na == {
        "aws-efs-filesystem-enforce-encryption": "no aws:efs/fileSystem:FileSystem in the stack",
        "azure-compute-vm-disallow-public-ip": "no azure-native:compute:VirtualMachine or "
        "azure-native:compute:VirtualMachineScaleSet or azure-native:network:NetworkInterface in the stack",
        "azure-compute-vmss-disallow-over-100-vms": "no azure-native:compute:VirtualMachineScaleSet in the stack",
        "azure-compute-vmss-enforce-infiniband-placement": "no azure-native:compute:VirtualMachineScaleSet in "
        "the stack",
        "azure-network-nsg-disallow-admin-from-internet": "no azure-native:network:NetworkSecurityGroup or "
        "azure-native:network:SecurityRule in the stack",
        "azure-resource-missing-required-tags": "no azure-native resource in the stack",
        "gcp-compute-firewall-disallow-admin-from-internet": "no gcp:compute/firewall:Firewall in the stack",
        "gcp-compute-instance-disallow-public-ip": "no gcp:compute/instance:Instance or "
        "gcp:compute/instanceTemplate:InstanceTemplate or gcp:compute/regionInstanceTemplate:RegionInstanceTemplate "
        "or gcp:tpu/v2QueuedResource:V2QueuedResource or gcp:tpu/v2Vm:V2Vm in the stack",
        "gcp-compute-instance-missing-gpu-nics": "no gcp:compute/instance:Instance or "
        "gcp:compute/instanceTemplate:InstanceTemplate or gcp:compute/regionInstanceTemplate:RegionInstanceTemplate "
        "or gcp:container/nodePool:NodePool in the stack",
        "gcp-resource-missing-required-labels": "no gcp resource in the stack",
        # Follow-up of issue 13: an on-demand stack gives the spot and capacity-block rules nothing to judge
        "aicluster-spot-missing-checkpoint-storage": "no spot GPU or TPU pool in the stack",
        "aws-ec2-placementgroup-disallow-capacity-block": "no capacity-block launch template in the stack",
        # Issue 14: a cloud-only stack without VPNs gives the site and VPN rules nothing to judge
        **{
            name: "no aicluster:onprem:Site in the stack"
            for name in (
                "aicluster-site-enforce-power-ceiling",
                "aicluster-site-enforce-rack-power",
                "aicluster-site-enforce-rack-cooling",
                "aicluster-fabric-enforce-oversubscription",
                "aicluster-fabric-enforce-design-limits",
                "aicluster-site-disallow-overlapping-cidrs",
            )
        },
        "aws-ec2-vpnconnection-enforce-strong-ike": "no aws:ec2/vpnConnection:VpnConnection in the stack",
        # Issue 27: 8-GPU servers have no multi-node NVLink domain to keep whole or to run IMEX on
        "aicluster-pool-disallow-split-nvlink-domain": "no rack-scale (multi-node NVLink) node in the stack",
        "aicluster-pool-missing-imex": "no multi-node NVLink pool (GB200/GB300 NVL72) in the stack",
        "gcp-compute-vpntunnel-enforce-strong-ike": "no gcp:compute/vPNTunnel:VPNTunnel in the stack",
        # Issue 16: a stack without workloads gives the workload rules nothing to judge
        **{
            name: "no aicluster:sizing:Workload in the stack"
            for name in (
                "aicluster-workload-enforce-fit",
                "aicluster-workload-enforce-target-days",
                "aicluster-workload-enforce-min-goodput",
            )
        },
        "azure-network-vpnconnection-enforce-strong-ike": "no azure-native:network:VirtualNetworkGatewayConnection "
        "in the stack",
        # Issue 15: a Slurm stack gives the Kubernetes rules nothing to judge
        **dict.fromkeys(
            (
                "aicluster-kubernetes-cluster-disallow-public-endpoint",
                "aicluster-kubernetes-cluster-enforce-secrets-encryption",
                "aicluster-kubernetes-cluster-enable-audit-logs",
            ),
            "no aws:eks/cluster:Cluster or azure-native:containerservice:ManagedCluster or "
            "gcp:container/cluster:Cluster in the stack",
        ),
        **dict.fromkeys(
            ("aicluster-kubernetes-nodegroup-enforce-gpu-taint", "aicluster-kubernetes-nodegroup-disallow-public-ip"),
            "no aws:eks/nodeGroup:NodeGroup or azure-native:containerservice:AgentPool or "
            "azure-native:containerservice:ManagedCluster or gcp:container/nodePool:NodePool in the stack",
        ),
        "aicluster-kueue-resourceflavor-missing-tolerations": "no kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor "
        "or kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor in the stack",
        "aws-eks-nodegroup-enforce-efa-single-az": "no aws:eks/nodeGroup:NodeGroup in the stack",
        "aws-eks-nodegroup-missing-efa-device-plugin": "no aws:eks/nodeGroup:NodeGroup in the stack",
        "aicluster-helm-release-enforce-pinned-version": "no kubernetes:helm.sh/v3:Release or "
        "kubernetes:helm.sh/v4:Chart in the stack",
    }
    assert not set(na) & set(result.passed)
    assert "aws-ec2-instance-enforce-imdsv2" in result.passed


def test_an_async_policy_leaves_no_event_loop_open(p5_small: Capture) -> None:
    """A policy whose validate is a coroutine function (the SDK allows it) runs on the run's one loop, which is
    closed when the run ends: no "unclosed event loop" ResourceWarning is left for the garbage collector."""
    import gc
    import warnings

    from aicluster.preview.policy import evaluate
    from policies import StackRule

    base = next(p for p in POLICIES if p.name == "aicluster-cluster-enforce-monthly-budget")
    assert isinstance(base, StackRule)
    ran: list[str] = []

    async def validate(args: Any, report: Any) -> None:
        ran.append("stack")
        report("async finding")

    rule = StackRule(base.meta, base.check)
    rule.validate = validate
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        result = evaluate(p5_small, policies=[rule, rule])
        gc.collect()
    assert ran == ["stack", "stack"]
    assert [v.message for v in result.violations] == ["async finding", "async finding"]
    assert [str(w.message) for w in caught if "event loop" in str(w.message)] == []


@pytest.mark.parametrize("name", GCP_STACKS)
def test_example_gcp_stacks_have_no_mandatory_findings(name: str) -> None:
    from aicluster.preview.policy import evaluate

    result = evaluate(capture_of(name))
    assert [(v.policy, v.resource, v.message) for v in result.mandatory] == []
