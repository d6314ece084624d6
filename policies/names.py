"""The names of the pack's policies, in the pack's order, readable without loading the pack.

`aicluster validate` and `aicluster plan` check that every waiver names a policy of the pack, and say in
advance what a few mandatory policies would fail, from the stack alone: they need the policies' names, not the
pack, whose rules are `pulumi_policy` policies (loading them loads the Pulumi SDK: about a third of those
commands' time). The pack stays the one definition of each policy: tests/policies/test_registry.py keeps
NAMES equal to the pack's names, in order, and each constant below equal to its policy's name; a new policy
adds its name here.
"""

from __future__ import annotations

# the policies `validate` judges from the stack alone (aicluster/preview/check.py)
MONTHLY_BUDGET = "aicluster-cluster-enforce-monthly-budget"  # cost/monthly_budget.py
SPOT_CHECKPOINTS = "aicluster-spot-missing-checkpoint-storage"  # cost/missing_checkpoint_storage.py
POWER_BUDGET = "aicluster-cluster-enforce-power-budget"  # power/power_budget.py
AWS_REQUIRED_TAGS = "aws-resource-missing-required-tags"  # compliance/missing_required_tags.py
AZURE_REQUIRED_TAGS = "azure-resource-missing-required-tags"  # compliance/missing_required_tags.py
GCP_REQUIRED_LABELS = "gcp-resource-missing-required-labels"  # compliance/missing_required_tags.py
ALLOWED_REGIONS = "aicluster-resource-enforce-allowed-regions"  # compliance/enforce_allowed_regions.py

NAMES: tuple[str, ...] = (
    # cost
    MONTHLY_BUDGET,
    "aicluster-cluster-missing-prices",
    SPOT_CHECKPOINTS,
    # power
    POWER_BUDGET,
    "aicluster-node-enforce-rack-power",
    "aicluster-cluster-configure-carbon-ceiling",
    "aicluster-cluster-missing-power-figures",
    # compliance
    "aws-ec2-instance-enforce-imdsv2",
    "aws-ec2-instance-disallow-public-ip",
    "aws-ec2-securitygroup-disallow-admin-from-internet",
    "aws-ebs-volume-enforce-encryption",
    "aws-efs-filesystem-enforce-encryption",
    AWS_REQUIRED_TAGS,
    "azure-compute-vm-disallow-public-ip",
    "azure-network-nsg-disallow-admin-from-internet",
    AZURE_REQUIRED_TAGS,
    "gcp-compute-instance-disallow-public-ip",
    "gcp-compute-firewall-disallow-admin-from-internet",
    GCP_REQUIRED_LABELS,
    ALLOWED_REGIONS,
    "aicluster-cluster-missing-audit-logging",
    # fabric
    "aws-ec2-launchtemplate-missing-efa-cards",
    "aws-ec2-securitygroup-enforce-efa-self-reference",
    "aws-autoscaling-group-enforce-efa-single-az",
    "aws-ec2-placementgroup-disallow-capacity-block",
    "gcp-compute-instance-missing-gpu-nics",
    "azure-compute-vmss-enforce-infiniband-placement",
    "azure-compute-vmss-disallow-over-100-vms",
    "aicluster-pool-disallow-split-nvlink-domain",
    "aicluster-pool-missing-imex",
    # storage
    "aicluster-filesystem-enforce-checkpoint-throughput",
    # on-prem
    "aicluster-site-enforce-power-ceiling",
    "aicluster-site-enforce-rack-power",
    "aicluster-site-enforce-rack-cooling",
    "aicluster-fabric-enforce-oversubscription",
    "aicluster-fabric-enforce-design-limits",
    "aicluster-site-disallow-overlapping-cidrs",
    # vpn
    "aws-ec2-vpnconnection-enforce-strong-ike",
    "gcp-compute-vpntunnel-enforce-strong-ike",
    "azure-network-vpnconnection-enforce-strong-ike",
    # kubernetes
    "aicluster-kubernetes-cluster-disallow-public-endpoint",
    "aicluster-kubernetes-cluster-enforce-secrets-encryption",
    "aicluster-kubernetes-cluster-enable-audit-logs",
    "aicluster-kubernetes-nodegroup-enforce-gpu-taint",
    "aicluster-kueue-resourceflavor-missing-tolerations",
    "aws-eks-nodegroup-enforce-efa-single-az",
    "aws-eks-nodegroup-missing-efa-device-plugin",
    "aicluster-helm-release-enforce-pinned-version",
    "aicluster-kubernetes-nodegroup-disallow-public-ip",
    # workloads
    "aicluster-workload-enforce-fit",
    "aicluster-workload-enforce-target-days",
    "aicluster-workload-enforce-min-goodput",
)
