"""Each policy: the p5-small stack as compliant baseline, then one mutation per case with the exact finding."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN, Capture
from policies import POLICIES

from .conftest import judge, messages, mutated

LT, ASG, CTL_LT, CTL = "llm-dev-h100-lt", "llm-dev-h100-asg", "llm-dev-slurmctld-lt", "llm-dev-slurmctld-vm"
NODE_SG, EFA_SG, FS = "llm-dev-us-east-1-node", "llm-dev-us-east-1-efa", "llm-dev-scratch-fs"
CLUSTER = "llm-dev"


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
        "in the stack",
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
                "aicluster-fabric-enforce-oversubscription",
                "aicluster-fabric-enforce-design-limits",
                "aicluster-site-disallow-overlapping-cidrs",
            )
        },
        "aws-ec2-vpnconnection-enforce-strong-ike": "no aws:ec2/vpnConnection:VpnConnection in the stack",
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


def _set(path: str, value: Any) -> Any:
    keys = path.split(".")

    def apply(inputs: dict[str, Any]) -> None:
        cur: Any = inputs
        for k in keys[:-1]:
            cur = cur[int(k)] if isinstance(cur, list) else cur.setdefault(k, {})
        if value is _DELETE:
            cur.pop(keys[-1], None)
        elif isinstance(cur, list):
            cur[int(keys[-1])] = value
        else:
            cur[keys[-1]] = value

    return apply


_DELETE = object()

CASES = [
    pytest.param(
        "aws-ec2-instance-enforce-imdsv2",
        {LT: _set("metadataOptions.httpTokens", "optional")},
        'launch template llm-dev-h100-lt allows IMDSv1: metadataOptions.httpTokens is "optional"; set '
        'metadataOptions.httpTokens = "required" so credentials need a session token',
        id="imdsv2-optional",
    ),
    pytest.param(
        "aws-ec2-instance-enforce-imdsv2",
        {CTL_LT: _set("metadataOptions", _DELETE)},
        "launch template llm-dev-slurmctld-lt allows IMDSv1: metadataOptions.httpTokens is not set (IMDSv1 stays on); "
        'set metadataOptions.httpTokens = "required" so credentials need a session token',
        id="imdsv2-unset",
    ),
    pytest.param(
        "aws-ec2-instance-disallow-public-ip",
        {LT: _set("networkInterfaces.0.associatePublicIpAddress", "true")},
        "launch template llm-dev-h100-lt gives network interface 0 (card 0.0) a public IP (associatePublicIpAddress = "
        "true); set it false: nodes egress through NAT",
        id="public-ip-lt",
    ),
    pytest.param(
        "aws-ec2-instance-disallow-public-ip",
        {CTL: _set("associatePublicIpAddress", True)},
        "instance llm-dev-slurmctld-vm gets a public IP (associatePublicIpAddress = true); set it false and reach "
        "the node through SSM or a bastion",
        id="public-ip-instance",
    ),
    pytest.param(
        "aws-ec2-securitygroup-disallow-admin-from-internet",
        {
            NODE_SG: lambda i: i["ingress"].append(
                {"protocol": "tcp", "fromPort": 22.0, "toPort": 22.0, "cidrBlocks": ["0.0.0.0/0"]}
            )
        },
        "security group llm-dev-us-east-1-node ingress[1] lets 0.0.0.0/0 reach SSH (protocol tcp, ports 22.0-22.0); "
        "remove it and reach nodes through SSM Session Manager",
        id="ssh-from-internet",
    ),
    pytest.param(
        "aws-ec2-securitygroup-disallow-admin-from-internet",
        {NODE_SG: _set("ingress.0.cidrBlocks", ["::/0", "0.0.0.0/0"])},
        "security group llm-dev-us-east-1-node ingress[0] lets 0.0.0.0/0 and ::/0 reach SSH/RDP (protocol -1, ports "
        "0.0-0.0); remove it and reach nodes through SSM Session Manager",
        id="all-traffic-from-internet",
    ),
    pytest.param(
        "aws-ebs-volume-enforce-encryption",
        {LT: _set("blockDeviceMappings.0.ebs.encrypted", "false")},
        "launch template llm-dev-h100-lt blockDeviceMappings[0] (/dev/sda1) is not encrypted; "
        'set ebs.encrypted = "true"',
        id="ebs-lt",
    ),
    pytest.param(
        "aws-resource-missing-required-tags",
        {LT: _set("tags.owner", _DELETE)},
        "launch template llm-dev-h100-lt lacks required tags owner; add them to the cluster's tags in the stack file "
        "(aicluster:cluster.tags) or to the provider's defaultTags",
        id="tags-missing",
    ),
    pytest.param(
        "aws-resource-missing-required-tags",
        {ASG: lambda i: i.update(tags=[t for t in i["tags"] if t["key"] != "cost-center"])},
        "group llm-dev-h100-asg lacks required tags that propagate at launch cost-center; add them to the cluster's "
        "tags in the stack file (aicluster:cluster.tags) or to the provider's defaultTags",
        id="asg-tags-missing",
    ),
    pytest.param(
        "aicluster-resource-enforce-allowed-regions",
        {FS: _set("region", "eu-west-1")},
        "lustre file system llm-dev-scratch-fs is in eu-west-1, outside compliance.allowed_regions [us-east-1]; move "
        "it to an allowed region or add eu-west-1 to allowed_regions",
        id="region-outside",
    ),
    pytest.param(
        "aicluster-cluster-missing-audit-logging",
        {"llm-dev-audit-trail": _set("enableLogFileValidation", False)},
        "the stack is held to soc2 but records no AWS API activity: add a CloudTrail trail with isMultiRegionTrail "
        "and enableLogFileValidation (aicluster adds one when compliance.frameworks names soc2, hipaa, pci-dss or "
        "iso27001), or waive this for an organization trail",
        id="trail-without-validation",
    ),
    pytest.param(
        "aicluster-cluster-enforce-monthly-budget",
        {CLUSTER: _set("budgets.monthly_usd", 100000.0)},
        "monthly cost $171,296 exceeds the budget $100,000 by $71,296 (71.3%); largest: llm-dev-h100-asg (4 x "
        "p5.48xlarge on-demand, 2000 GiB root volumes) $160,877; llm-dev-scratch-fs (48000 GiB fsx-lustre) $10,080; "
        "llm-dev-slurmctld-vm (1 x m7i.2xlarge on-demand, 100 GiB root volumes) $302. "
        "Shrink or remove a pool, move it to spot or reserved "
        "capacity, or raise "
        "budgets.monthly_usd",
        id="over-budget",
    ),
    pytest.param(
        "aicluster-cluster-enforce-power-budget",
        {CLUSTER: _set("budgets.power_kw", 40.0)},
        "facility power 46.6 kW (IT kW x PUE) exceeds the budget 40.0 kW by 6.6 kW; largest: llm-dev-h100-asg 4 x "
        "p5.48xlarge 46.51 kW; llm-dev-slurmctld-vm 1 x m7i.2xlarge 0.05 kW. Shrink a pool or raise budgets.power_kw",
        id="over-power",
    ),
    pytest.param(
        "aicluster-node-enforce-rack-power",
        {CLUSTER: _set("budgets.rack_kw", 8.0)},
        "one p5.48xlarge node of llm-dev-h100-asg draws up to 10.2 kW, more than a whole 8 kW rack; racks for this "
        "pool need at least 10.2 kW (liquid-cooled or high-density rows)",
        id="rack-too-small",
    ),
    pytest.param(
        "aws-ec2-launchtemplate-missing-efa-cards",
        {LT: lambda i: i.update(networkInterfaces=i["networkInterfaces"][:17])},
        "launch template llm-dev-h100-lt declares EFA on 16 of the 32 network cards of p5.48xlarge (missing cards 16, "
        "17, 18, 19, 20, 21, 22, 23 ...): those NICs carry no RDMA traffic; declare one efa-only interface per card",
        id="efa-half-the-cards",
    ),
    pytest.param(
        "aws-ec2-launchtemplate-missing-efa-cards",
        {LT: lambda i: i.update(networkInterfaces=i["networkInterfaces"][:1])},
        "launch template llm-dev-h100-lt declares no EFA interface for p5.48xlarge: NCCL falls back to TCP sockets at "
        "a fraction of the 3200 Gb/s fabric; declare an EFA interface on each of its 32 network cards",
        id="efa-none",
    ),
    pytest.param(
        "aws-ec2-securitygroup-enforce-efa-self-reference",
        {EFA_SG: _set("egress.0.self", False)},
        "launch template llm-dev-h100-lt puts EFA interfaces in security groups none of which allows all traffic to "
        "and from itself: llm-dev-us-east-1-efa (ingress/no egress from itself), llm-dev-us-east-1-node (no ingress/"
        "no egress from itself); EFA needs an all-protocol self-referencing ingress and egress rule",
        id="efa-sg-no-self-egress",
    ),
    pytest.param(
        "aws-autoscaling-group-enforce-efa-single-az",
        {ASG: _set("availabilityZones", ["us-east-1a", "us-east-1b"])},
        "Auto Scaling group llm-dev-h100-asg spreads EFA nodes over us-east-1a, us-east-1b; EFA traffic does not "
        "cross Availability Zones, so nodes in different zones cannot talk over the fabric. Give it one subnet",
        id="efa-two-zones",
    ),
    pytest.param(
        "aws-ec2-placementgroup-disallow-capacity-block",
        {LT: _set("instanceMarketOptions", {"marketType": "capacity-block"})},
        "Auto Scaling group llm-dev-h100-asg launches into a capacity block and also names a placement group; "
        "capacity blocks come co-located and launches into them fail with a placement group: remove it",
        id="capacity-block-with-pg",
    ),
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_small_fleet_tolerates_a_small_filesystem(p5_small: Capture) -> None:
    # 1,200 GiB at 250 MB/s/TiB: a 1,280 GB checkpoint takes 73 min, yet with one failure per ~1,600 h
    # for 32 GPUs the time lost stays near 4%, under the 5% default
    name = "aicluster-filesystem-enforce-checkpoint-throughput"
    assert messages(judge(mutated(p5_small, {FS: _set("storageCapacity", 1200.0)}), [name])) == []
    assert messages(
        judge(mutated(p5_small, {FS: _set("storageCapacity", 1200.0)}), [name], {name: {"max_overhead": 0.03}})
    )


def test_checkpoint_throughput_against_a_fixed_target(p5_small: Capture) -> None:
    name = "aicluster-filesystem-enforce-checkpoint-throughput"
    result = judge(p5_small, [name], {name: {"checkpoint_seconds": 60}})
    assert messages(result) == [
        "llm-dev-h100-asg (32 GPUs in us-east-1): a 1,280 GB checkpoint takes 109 s at 11.7 GB/s on "
        "llm-dev-scratch-fs, over the 60 s target; raise the file system's capacity or throughput_mb_s_per_tib"
    ]


def test_checkpoint_overhead_grows_with_the_fleet(p5_small: Capture) -> None:
    name = "aicluster-filesystem-enforce-checkpoint-throughput"
    big = mutated(p5_small, {ASG: _set("maxSize", 384.0)})  # 3,072 GPUs on the same 48 TiB
    assert messages(judge(big, [name])) == [
        "llm-dev-h100-asg (3,072 GPUs in us-east-1): a 122,880 GB checkpoint takes 10,486 s at 11.7 GB/s on "
        "llm-dev-scratch-fs; with a failure every 16.5 h the job loses 59% of its time to checkpoints and rework "
        "(limit 5%); it needs about 1,655 GB/s: raise capacity_tib or throughput_mb_s_per_tib"
    ]


def test_spot_fleet_without_storage(p5_small: Capture) -> None:
    name = "aicluster-spot-missing-checkpoint-storage"
    spot = mutated(p5_small, {LT: _set("instanceMarketOptions", {"marketType": "spot"})})
    assert messages(judge(spot, [name])) == []  # the stack has FSx to checkpoint to
    resources = [r for r in spot.resources if r.type != "aws:fsx/lustreFileSystem:LustreFileSystem"]
    bare = Capture(spot.project, spot.stack, resources, spot.outputs, spot.seconds)
    assert messages(judge(bare, [name])) == [
        "llm-dev-h100-asg runs 4 x p5.48xlarge on spot with no shared file system in the stack: an interruption "
        "loses all progress since the job started; add storage (kind: lustre) to checkpoint to"
    ]


def test_unknown_value_is_the_engines_advisory(p5_small: Capture) -> None:
    name = "aws-ec2-instance-enforce-imdsv2"
    result = judge(mutated(p5_small, {LT: _set("metadataOptions", UNKNOWN)}), [name])
    assert result.violations == []  # an unknown setting is not judged
    assert result.passed == [name]


def test_budget_without_a_budget_is_not_applicable(p5_small: Capture) -> None:
    name = "aicluster-cluster-enforce-monthly-budget"
    result = judge(mutated(p5_small, {CLUSTER: _set("budgets", {})}), [name])
    assert result.passed == []
    assert result.not_applicable == [
        {
            "policy": name,
            "reason": "no monthly budget: set budgets.monthly_usd in the stack or monthly_usd in policy config",
        }
    ]


def test_policy_config_beats_the_declared_budget(p5_small: Capture) -> None:
    name = "aicluster-cluster-enforce-monthly-budget"
    result = judge(p5_small, [name], {name: {"monthly_usd": 1000}})
    assert result.violations[0].message.startswith("monthly cost $171,296 exceeds the budget $1,000 by $170,296")
    assert result.violations[0].resource == CLUSTER
    assert result.violations[0].enforcement == "mandatory"


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


@pytest.mark.parametrize(
    ("names", "reason"),
    [
        pytest.param(
            ["aws-ec2-securitygroup-enforce-efa-self-reference"],
            "no launch template with EFA interfaces in the stack",
            id="efa-security-group",
        ),
        pytest.param(
            ["aws-autoscaling-group-enforce-efa-single-az"],
            "no Auto Scaling group of EFA nodes in the stack",
            id="efa-single-az",
        ),
    ],
)
def test_a_stack_without_efa_is_not_applicable_to_the_efa_rules(
    p5_small: Capture, names: list[str], reason: str
) -> None:
    """A rule that had nothing to judge is not applicable, with its reason; never passed."""
    no_efa = mutated(p5_small, {LT: lambda i: i.update(networkInterfaces=[{"deviceIndex": 0}])})
    result = judge(no_efa, names)
    assert result.passed == []
    assert result.not_applicable == [{"policy": names[0], "reason": reason}]


def test_a_spot_stack_is_judged_by_the_checkpoint_storage_rule(p5_small: Capture) -> None:
    name = "aicluster-spot-missing-checkpoint-storage"
    spot = mutated(p5_small, {LT: _set("instanceMarketOptions", {"marketType": "spot"})})
    result = judge(spot, [name])
    assert (result.passed, result.not_applicable) == ([name], [])


def test_a_tpu_stack_is_not_applicable_to_the_gpu_nic_rule() -> None:
    """gcp-tpu-v5p: TPU hosts and an n2 controller VM: the A3/A4 NIC rule has no machine to judge."""
    from .conftest import capture_of

    name = "gcp-compute-instance-missing-gpu-nics"
    result = judge(capture_of("gcp-tpu-v5p"), [name])
    assert result.passed == []
    assert result.not_applicable == [
        {"policy": name, "reason": "no VM or instance template of a machine type with GPU NICs (A3, A4) in the stack"}
    ]
