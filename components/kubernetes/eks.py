"""An Amazon EKS control plane and its managed node groups: the Kubernetes path's counterpart of the Slurm
controller and the GPU pools.

Built from pulumi_aws's own `eks` resources (not pulumi_eks, whose components run remotely and would be
invisible to the offline preview and the policies). Nothing here calls a data source: the kubeconfig is
made from the cluster's outputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import pulumi
import pulumi_aws as aws
import yaml

from aicluster.plan import ClusterPlan, PlannedKubernetes, PlannedNodeGroup, PlannedPool
from aicluster.plan.models import PlannedNodeHealth
from aicluster.schedulers.kubernetes.collector import amp_scraper_configuration

from ..aws import AwsBase
from ..aws.gpu_pool import capacity_reservation, imds_v2, interfaces, root_volume
from ..aws.identity import ASSUME_EC2
from ..aws.monitoring import AwsPrometheusScraper
from ..outputs import learned, pool_outputs
from ..tags import tagging

# The control-plane log types EKS can send to CloudWatch Logs (AWS::EKS::Cluster LoggingTypeConfig: "Allowed
# values: api | audit | authenticator | controllerManager | scheduler").
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
# As the other clouds' audit logs keep theirs (PCI DSS 10.5.1 keeps audit logs for at least a year).
LOG_RETENTION_DAYS = 365
# EKS AMIs (Amazon Linux 2023) boot from /dev/xvda, unlike the Ubuntu images of the Slurm pools.
EKS_ROOT_DEVICE = "/dev/xvda"
# The system node group runs the add-ons' controllers (Kueue, JobSet, the operators): no GPU, EKS's standard AMI.
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
SYSTEM_GROUP = "system"
# Pods (the EFA device plugin, the GPU Operator) read instance metadata through one more hop than the host.
SYSTEM_IMDS_HOP_LIMIT = 2

ASSUME_EKS = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    },
    sort_keys=True,
)
CLUSTER_POLICIES = ("arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",)
# What a managed node needs to join, pull images and run the VPC CNI; Session Manager instead of SSH, as the
# Slurm nodes have (identity.py).
NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
)
# What the control plane needs of the secrets-encryption key (the terraform-aws-eks module's cluster
# encryption policy grants the same four actions).
KMS_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey")
TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"


class EksArgs(TypedDict):
    kubernetes: PlannedKubernetes  # plain values from the plan
    pools: Mapping[str, PlannedPool]  # the plan's pools by name (each node group names its pool)
    compute_subnet_ids: Mapping[str, pulumi.Input[str]]  # zone -> the network's compute subnet
    efa_security_group_id: pulumi.Input[str]
    node_security_group_id: pulumi.Input[str]
    # who may reach the private API endpoint: the cluster network and the networks joined to it over VPN links
    api_cidrs: Sequence[str]


def capacity_type(pool: PlannedPool) -> str:
    """EKS's capacity type for a pool's market: CAPACITY_BLOCK (EKS user guide, "Create a managed node group with
    Capacity Blocks for ML"; the pulumi_aws docstring predates it), SPOT or ON_DEMAND."""
    assert pool.aws is not None
    return {"capacity-block": "CAPACITY_BLOCK", "spot": "SPOT"}.get(pool.aws.market_type or "", "ON_DEMAND")


def market_options(pool: PlannedPool) -> aws.ec2.LaunchTemplateInstanceMarketOptionsArgs | None:
    """Capacity blocks need `capacity-block` market options in the template. Spot must NOT be set there: EKS
    refuses such templates ("Instance market options are not supported with the launch template"); the node
    group's capacity type asks for spot instead."""
    assert pool.aws is not None
    if pool.aws.market_type == "capacity-block":
        return aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
    return None


def taints(group: PlannedNodeGroup) -> list[aws.eks.NodeGroupTaintArgs]:
    return [aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=TAINT_EFFECTS[t.effect]) for t in group.taints]


def node_repair(health: PlannedNodeHealth | None, gpu: bool = True) -> aws.eks.NodeGroupNodeRepairConfigArgs | None:
    """EKS node auto repair (off unless set) for a node group, when the plan's health says the service repairs per
    node group; a GPU group also gets the plan's per-XID repairs (each fatal XID of the node monitoring agent, the
    repair its catalog bucket asks for, after the service's wait)."""
    if health is None or health.auto_repair != "node-group":
        return None
    overrides = [
        aws.eks.NodeGroupNodeRepairConfigNodeRepairConfigOverrideArgs(
            node_monitoring_condition=o.condition,
            node_unhealthy_reason=o.reason,
            min_repair_wait_time_mins=o.wait_minutes,
            repair_action=o.action,
        )
        for o in (health.repair_overrides if gpu else ())
    ]
    return aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True, node_repair_config_overrides=overrides or None)


def agent_configuration(k: PlannedKubernetes) -> str:
    """The node monitoring agent add-on's configuration values: its DCGM server, which has no tolerations of its own,
    tolerates the GPU node groups' taints (the agent itself tolerates every taint)."""
    seen = {(t.key, t.effect) for g in k.node_groups if g.accelerator_kind == "gpu" for t in g.all_taints()}
    tolerations = [{"key": key, "operator": "Exists", "effect": effect} for key, effect in sorted(seen)]
    return json.dumps({"dcgmAgent": {"tolerations": tolerations}}, sort_keys=True)


def kubeconfig(cluster_name: str, region: str, endpoint: str, ca_data: str) -> str:
    """A kubeconfig whose user runs `aws eks get-token`: whoever holds it still needs an AWS identity with
    access to the cluster (no token is stored in it)."""
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "users": [
            {
                "name": cluster_name,
                "user": {
                    "exec": {
                        "apiVersion": EXEC_API_VERSION,
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region],
                    }
                },
            }
        ],
    }
    return yaml.safe_dump(doc, sort_keys=False)


class AwsEksCluster(pulumi.ComponentResource):
    """EKS control plane + one managed node group per planned node group, and a system node group.

    Control plane: private endpoint (public only when the plan says so, then limited to its authorized
    networks), Kubernetes secrets envelope-encrypted with a customer KMS key (rotation on), all five control-plane
    log types to a CloudWatch log group kept a year, access entries only (authentication mode API; the identity
    that creates the cluster is its first admin), the plan's version and support policy.

    GPU node groups: each is one fabric domain in ONE subnet (EFA does not cross zones), on a launch template
    built as the Slurm pools' is (every EFA card, placement group, capacity block + reservation, IMDSv2, encrypted
    gp3 root) but with no image and no user data, so that EKS supplies its accelerated AMI and its bootstrap.
    Changing a template recycles the group's nodes (EKS rolls them, one at a time).

    Node health: every node group has EKS node auto repair on, and the node monitoring agent add-on sets the
    conditions it acts on; a GPU group's repair is told per XID what the catalog's bucket asks for (`node_repair`).
    """

    cluster_name: pulumi.Output[str]
    cluster_arn: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    system_subnet_ids: list[pulumi.Input[str]]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    node_group_names: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: EksArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:EksCluster", name, {}, opts)
        k = args["kubernetes"]
        region = k.region
        subnets = args["compute_subnet_ids"]
        child = pulumi.ResourceOptions(parent=self)

        system_subnets = [subnets[z] for z in dict.fromkeys(k.system_zones)]
        if len(system_subnets) < 2:
            raise ValueError(
                f"EKS needs the control plane's subnets in at least two zones; the plan gives {k.system_zones}"
            )

        # Control-plane identity and the key its secrets are encrypted with.
        cluster_role = aws.iam.Role(
            f"{name}-cluster-role",
            description=f"EKS control plane {k.cluster_name}",
            assume_role_policy=ASSUME_EKS,
            opts=child,
        )
        cluster_attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-cluster-policy-{i}", role=cluster_role.name, policy_arn=arn, opts=child
            )
            for i, arn in enumerate(CLUSTER_POLICIES)
        ]
        key = aws.kms.Key(
            f"{name}-secrets-key",
            description=f"EKS {k.cluster_name} Kubernetes secrets",
            enable_key_rotation=True,
            region=region,
            opts=child,
        )
        key_use = aws.iam.RolePolicy(
            f"{name}-cluster-kms",
            role=cluster_role.id,
            policy=key.arn.apply(
                lambda arn: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [{"Effect": "Allow", "Action": list(KMS_ACTIONS), "Resource": arn}],
                    },
                    sort_keys=True,
                )
            ),
            opts=child,
        )
        # Created here, not by EKS on first write, so that it has a retention and goes with the stack.
        logs = aws.cloudwatch.LogGroup(
            f"{name}-logs",
            name=f"/aws/eks/{k.cluster_name}/cluster",
            retention_in_days=LOG_RETENTION_DAYS,
            deletion_protection_enabled=True,  # the control plane's audit log: deleting it needs this set false first
            region=region,
            opts=child,
        )

        public = k.endpoint == "public"
        cluster = aws.eks.Cluster(
            f"{name}-cluster",
            name=k.cluster_name,
            version=k.version,
            role_arn=cluster_role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=system_subnets,
                endpoint_private_access=True,
                endpoint_public_access=public,
                public_access_cidrs=list(k.authorized_networks) if public else None,
            ),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key.arn), resources=["secrets"]
            ),
            enabled_cluster_log_types=list(LOG_TYPES) if k.audit_logs else [],
            # Access entries only (no aws-auth ConfigMap). Managed node groups get their node role's entry from
            # EKS; the identity that runs `pulumi up` is made cluster admin, which the add-ons' Helm releases use.
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API", bootstrap_cluster_creator_admin_permissions=True
            ),
            kubernetes_network_config=aws.eks.ClusterKubernetesNetworkConfigArgs(service_ipv4_cidr=k.service_cidr),
            upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type=k.support.upper()),
            region=region,
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=[*cluster_attachments, key_use, logs])
            ),
        )
        # EKS adds its cluster security group to nodes only when their template names none; ours names the node
        # and EFA groups, so the primary interface gets the cluster group too (API server <-> kubelet).
        cluster_sg = cluster.vpc_config.apply(lambda v: v.cluster_security_group_id or "")

        # The cluster security group admits only its own members (the control plane's interfaces, the nodes); the
        # private endpoint is for the whole cluster network and the networks joined to it, HTTPS only.
        for i, cidr in enumerate(dict.fromkeys(args["api_cidrs"])):
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-api-{i}",
                security_group_id=cluster_sg,
                description=f"Kubernetes API from {cidr}",
                ip_protocol="tcp",
                from_port=443,
                to_port=443,
                cidr_ipv4=cidr,
                region=region,
                opts=child,
            )

        node_role = aws.iam.Role(
            f"{name}-node-role", description=f"EKS {k.cluster_name} nodes", assume_role_policy=ASSUME_EC2, opts=child
        )
        node_attachments = [
            aws.iam.RolePolicyAttachment(f"{name}-node-policy-{i}", role=node_role.name, policy_arn=arn, opts=child)
            for i, arn in enumerate(NODE_POLICIES)
        ]
        # Nodes must not start before their role can join them, nor outlive it on delete.
        group_deps = pulumi.ResourceOptions(depends_on=node_attachments)

        system_lt = aws.ec2.LaunchTemplate(
            f"{name}-system-lt",
            description=f"aicluster {k.cluster_name} system nodes ({k.system_instance_type})",
            instance_type=k.system_instance_type,
            metadata_options=imds_v2(SYSTEM_IMDS_HOP_LIMIT),
            block_device_mappings=[root_volume(k.system_root_gib, EKS_ROOT_DEVICE)],
            update_default_version=True,
            region=region,
            opts=child,
        )
        system = aws.eks.NodeGroup(
            f"{name}-{SYSTEM_GROUP}",
            cluster_name=cluster.name,
            node_group_name=SYSTEM_GROUP,
            node_role_arn=node_role.arn,
            subnet_ids=system_subnets,
            ami_type=SYSTEM_AMI_TYPE,
            capacity_type="ON_DEMAND",
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=k.system_nodes, max_size=k.system_nodes, desired_size=k.system_nodes
            ),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=system_lt.id, version=system_lt.latest_version.apply(str)
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            node_repair_config=node_repair(k.health, gpu=False),
            # its own pool label, as GKE's system pool has: its nodes are not a GPU pool's (the change diff counts a
            # resource's nodes by this label, else by a sibling's)
            labels={"aicluster.io/pool": SYSTEM_GROUP},
            region=region,
            opts=pulumi.ResourceOptions.merge(child, group_deps),
        )
        if k.health is not None and k.health.agent_addon is not None:
            # the service's node health agent: the conditions node auto repair acts on (AcceleratedHardwareReady)
            aws.eks.Addon(
                f"{name}-node-monitoring",
                cluster_name=cluster.name,
                addon_name=k.health.agent_addon,
                configuration_values=agent_configuration(k),
                resolve_conflicts_on_create="OVERWRITE",
                region=region,
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[system])),
            )

        self.node_group_names = {SYSTEM_GROUP: system.node_group_name}
        for g in k.node_groups:
            pool = args["pools"][g.pool]
            assert pool.aws is not None
            assert g.zone is not None
            pool_opts = pulumi.ResourceOptions(parent=self, transformations=[tagging(pool.tags)])

            placement: aws.ec2.LaunchTemplatePlacementArgs | None = None
            if pool.aws.placement_group == "create":
                pg = aws.ec2.PlacementGroup(f"{name}-{g.name}-pg", strategy="cluster", region=region, opts=pool_opts)
                placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=pg.name)
            elif pool.aws.placement_group == "existing":
                placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=pool.aws.placement_group_name)

            lt = aws.ec2.LaunchTemplate(
                f"{name}-{g.name}-lt",
                description=f"aicluster pool {pool.name} on EKS ({pool.instance_type})",
                instance_type=pool.instance_type,
                network_interfaces=interfaces(
                    pool,
                    {"efa": args["efa_security_group_id"], "node": args["node_security_group_id"]},
                    primary_groups=[cluster_sg],
                ),
                metadata_options=imds_v2(pool.aws.imds_hop_limit),
                block_device_mappings=[root_volume(pool.aws.root_volume_gib, EKS_ROOT_DEVICE)],
                instance_market_options=market_options(pool),
                # an UltraServer pool's group is one UltraServer: its own Capacity Block
                capacity_reservation_specification=capacity_reservation(
                    pool, next((u for u in pool.aws.groups if u.name == g.domain), None)
                ),
                placement=placement,
                ebs_optimized="true",
                monitoring=aws.ec2.LaunchTemplateMonitoringArgs(enabled=True),
                # No image_id, user_data or iam_instance_profile: EKS supplies its AMI for `ami_type`, merges its
                # bootstrap and sets the node role's profile (a template naming a profile is refused).
                update_default_version=True,
                region=region,
                opts=pool_opts,
            )
            ng = aws.eks.NodeGroup(
                f"{name}-{g.name}",
                cluster_name=cluster.name,
                node_group_name=g.name,
                node_role_arn=node_role.arn,
                subnet_ids=[subnets[g.zone]],  # one zone: EFA does not cross zones, a capacity block lives in one
                ami_type=k.node_image_of(g),  # the ARM NVIDIA AMI on Grace nodes
                capacity_type=capacity_type(pool),
                # The instance type is in the template, so none here (EKS refuses both).
                # Sized to the group (min = max = desired). Capacity blocks: EKS requires desired size 0 while such a
                # node group is upgraded (set it to 0 for the upgrade), and scales the group to 0 itself 40 minutes
                # before the block ends; the plan's size is kept here, as the block's size.
                scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                    min_size=g.nodes, max_size=g.nodes, desired_size=g.nodes
                ),
                launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=lt.id, version=lt.latest_version.apply(str)),
                labels=dict(g.labels),
                taints=taints(g),
                # the pool's rollout.max_unavailable: nodes an update (a new AMI, launch template or version) takes at
                # once, within EKS's limit of 100 (the catalog's max_unavailable_per_group)
                update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=g.max_unavailable),
                # node auto repair, with the catalog's repair per XID (an accelerator group; GPU: the plan's health)
                node_repair_config=node_repair(k.health, gpu=g.accelerator_kind == "gpu"),
                region=region,
                opts=pulumi.ResourceOptions.merge(pool_opts, group_deps),
            )
            self.node_group_names[g.name] = ng.node_group_name

        self.cluster_name = cluster.name
        self.cluster_arn = cluster.arn
        self.cluster_security_group_id = cluster_sg
        self.system_subnet_ids = system_subnets
        self.endpoint = cluster.endpoint
        ca = cluster.certificate_authority.apply(lambda c: c.data or "")
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, cluster.endpoint, ca).apply(
                lambda v: kubeconfig(str(v[0]), region, str(v[1]), str(v[2]))
            )
        )
        self.register_outputs(
            {
                "cluster_name": cluster.name,
                "endpoint": cluster.endpoint,
                "kubeconfig": self.kubeconfig,
                "node_group_names": self.node_group_names,
            }
        )


def build(plan: ClusterPlan, parent: pulumi.ComponentResource, base: AwsBase, outputs: dict[str, Any]) -> None:
    """Kubernetes' part in AWS (components.Part): the EKS cluster and its node groups in place of Auto Scaling groups
    and a controller; the kubeconfig goes to the stack outputs (a secret) for the add-ons."""
    k = plan.kubernetes
    if k is None or k.provider != "aws":
        return  # the control plane is in another cloud (the spec refuses a Kubernetes stack over several clouds)
    net = base.networks[k.network]
    cluster = AwsEksCluster(
        f"{plan.name}-eks",
        {
            "kubernetes": k,
            "pools": {p.name: p for p in plan.pools},
            "compute_subnet_ids": net.compute_subnet_ids,
            "efa_security_group_id": net.efa_security_group_id,
            "node_security_group_id": net.node_security_group_id,
            "api_cidrs": [plan.network(k.network).cidr, *learned(plan, k.network)],
        },
        pulumi.ResourceOptions(parent=parent),
    )
    groups = {g.name: g for g in k.node_groups}
    outputs["kubernetes"] = {
        "service": k.service,
        "cluster_name": cluster.cluster_name,
        "endpoint": cluster.endpoint,
        "node_groups": {
            n: {"pool": groups[n].pool, "nodes": groups[n].nodes, "zone": groups[n].zone, "name": ng}
            if n in groups
            else {"name": ng}
            for n, ng in cluster.node_group_names.items()
        },
    }
    outputs["kubeconfig"] = cluster.kubeconfig  # already a secret
    if base.prometheus is not None and plan.monitoring.collector == "amp-scraper":
        # AMP's managed collector, from the control plane's subnets, in the cluster security group (which the nodes'
        # primary interfaces carry, so it reaches their exporters)
        scraper = AwsPrometheusScraper(
            f"{plan.name}-amp",
            {
                "cluster_arn": cluster.cluster_arn,
                "region": k.region,
                "workspace_arn": base.prometheus.workspace_arn,
                "subnet_ids": cluster.system_subnet_ids,
                "security_group_ids": [cluster.cluster_security_group_id],
                "scrape_configuration": amp_scraper_configuration(plan),
            },
            pulumi.ResourceOptions(parent=parent),
        )
        outputs.setdefault("monitoring", {})["scraper_role_arn"] = scraper.role_arn
    for pool in plan.pools:
        if pool.provider == "aws":
            names = [cluster.node_group_names[g.name] for g in k.node_groups if g.pool == pool.name]
            outputs["pools"][pool.name] = pool_outputs(pool, node_group_names=names)
