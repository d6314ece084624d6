"""EKS: the control plane and node groups the AWS builder makes when the plan's scheduler is Kubernetes."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.plan import plan
from aicluster.preview.engine import SECRET_VALUE, UNKNOWN, run
from aicluster.spec import parse_cluster
from components import AiCluster
from components import aws as aws_components
from components.kubernetes.eks import LOG_TYPES, kubeconfig
from tests.components.conftest import Built

Build = Callable[[dict[str, Any]], Built]

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
SUBNET = "aws:ec2/subnet:Subnet"
KEY = "aws:kms/key:Key"
ASG = "aws:autoscaling/group:Group"
INSTANCE = "aws:ec2/instance:Instance"
ROLE_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


def eks_p5(**pool_changes: Any) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.eks-p5.yaml").read_text(encoding="utf-8"))
    spec: dict[str, Any] = copy.deepcopy(doc["config"]["aicluster:cluster"])
    spec["pools"][0].update(pool_changes)
    spec["pools"][0] = {k: v for k, v in spec["pools"][0].items() if v is not None}
    return spec


@pytest.fixture(scope="module")
def p5(catalog: Catalog) -> Built:
    cluster_plan = plan(parse_cluster(eks_p5(), "test"), catalog)
    return Built(cluster_plan, run(lambda: AiCluster(cluster_plan.name, {"plan": cluster_plan}), "aicluster", "test"))


def gpu_group(b: Built) -> dict[str, Any]:
    return b.one(NODE_GROUP, "-h100").inputs


def subnet_zone(b: Built, urn: str) -> str:
    return str(b.by_urn(urn).inputs["availabilityZone"])


def test_no_slurm_pools_or_controller_with_eks(p5: Built) -> None:
    assert p5.of_type(ASG) == []
    assert p5.of_type(INSTANCE) == []
    assert {r.inputs["nodeGroupName"] for r in p5.of_type(NODE_GROUP)} == {"system", "h100"}


def test_gpu_launch_template_carries_every_efa_card_and_the_capacity_block(p5: Built) -> None:
    lt = p5.one(LT, "-h100-lt").inputs
    nics = lt["networkInterfaces"]
    assert len([n for n in nics if n["interfaceType"] == "efa-only"]) == 32
    assert (nics[0]["networkCardIndex"], nics[0]["deviceIndex"], nics[0]["interfaceType"]) == (0, 0, "interface")
    # node + EFA groups, plus the cluster security group EKS would otherwise not add
    assert len(nics[0]["securityGroups"]) == 3
    assert not any("subnetId" in n for n in nics)
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    target = lt["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0a1b2c3d4e5f67890"}
    assert "placement" not in lt  # a capacity block is already co-located
    assert lt["instanceType"] == "p5.48xlarge"
    assert lt["metadataOptions"]["httpTokens"] == "required"
    (root,) = lt["blockDeviceMappings"]
    assert root["deviceName"] == "/dev/xvda"
    assert root["ebs"]["encrypted"] == "true"
    assert root["ebs"]["volumeType"] == "gp3"
    # EKS supplies its AMI, bootstrap and instance profile
    for absent in ("imageId", "userData", "iamInstanceProfile"):
        assert absent not in lt


def test_gpu_node_group_is_one_zone_capacity_block_tainted_and_labelled(p5: Built) -> None:
    ng = p5.one(NODE_GROUP, "-h100")
    inputs = ng.inputs
    assert inputs["capacityType"] == "CAPACITY_BLOCK"
    assert inputs["amiType"] == "AL2023_x86_64_NVIDIA"
    (subnet,) = ng.property_dependencies["subnetIds"]
    assert subnet_zone(p5, subnet) == "us-east-1d"
    assert inputs["scalingConfig"] == {"minSize": 16, "maxSize": 16, "desiredSize": 16}
    assert inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert inputs["labels"] == {"aicluster.io/pool": "h100", "aicluster.io/fabric-domain": "h100"}
    assert "instanceTypes" not in inputs  # the template has it; EKS refuses both
    assert inputs["updateConfig"] == {"maxUnavailable": 1}
    assert inputs["tags"]["aicluster:pool"] == "h100"
    assert inputs["tags"]["owner"] == "research"


def test_cluster_is_private_encrypted_logged_and_in_two_zones(p5: Built) -> None:
    c = p5.one(CLUSTER)
    vpc = c.inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True
    assert vpc["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in vpc
    zones = {subnet_zone(p5, urn) for urn in c.property_dependencies["vpcConfig"] if p5.by_urn(urn).type == SUBNET}
    assert zones == {"us-east-1a", "us-east-1d"}
    assert c.inputs["encryptionConfig"]["resources"] == ["secrets"]
    assert c.property_dependencies["encryptionConfig"] == [p5.one(KEY).urn]
    assert p5.one(KEY).inputs["enableKeyRotation"] is True
    assert c.inputs["enabledClusterLogTypes"] == list(LOG_TYPES)
    assert set(LOG_TYPES) == {"api", "audit", "authenticator", "controllerManager", "scheduler"}
    assert c.inputs["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}
    assert c.inputs["version"] == "1.35"
    assert c.inputs["upgradePolicy"] == {"supportType": "STANDARD"}
    assert c.inputs["kubernetesNetworkConfig"] == {"serviceIpv4Cidr": "172.20.0.0/16"}


def test_private_endpoint_admits_the_cluster_network_over_https(p5: Built) -> None:
    (rule,) = p5.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    assert (rule.inputs["ipProtocol"], rule.inputs["fromPort"], rule.inputs["toPort"]) == ("tcp", 443, 443)
    assert rule.inputs["cidrIpv4"] == "10.8.0.0/16"


def test_public_endpoint_is_limited_to_the_authorized_networks(build: Build) -> None:
    spec = eks_p5()
    spec["scheduler"].update(endpoint="public", authorized_networks=["192.168.10.0/24"])
    vpc = build(spec).one(CLUSTER).inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True
    assert vpc["endpointPrivateAccess"] is True
    assert vpc["publicAccessCidrs"] == ["192.168.10.0/24"]


def test_system_group_spans_the_system_zones_on_demand(p5: Built) -> None:
    ng = p5.one(NODE_GROUP, "-system")
    assert ng.inputs["capacityType"] == "ON_DEMAND"
    assert ng.inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert ng.inputs["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    assert {subnet_zone(p5, u) for u in ng.property_dependencies["subnetIds"]} == {"us-east-1a", "us-east-1d"}
    assert "taints" not in ng.inputs
    assert p5.one(LT, "-system-lt").inputs["instanceType"] == "m7i.2xlarge"


def test_node_role_has_the_eks_worker_policies(p5: Built) -> None:
    arns = {r.inputs["policyArn"] for r in p5.of_type(ROLE_ATTACHMENT)}
    assert {
        "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    } <= arns


def test_spot_pool_asks_eks_for_spot_without_market_options(build: Build) -> None:
    b = build(eks_p5(market="spot", reservation=None))
    assert gpu_group(b)["capacityType"] == "SPOT"
    lt = b.one(LT, "-h100-lt").inputs
    assert "instanceMarketOptions" not in lt  # EKS refuses templates with market options for spot
    assert "capacityReservationSpecification" not in lt


def test_on_demand_pool_gets_a_placement_group(build: Build) -> None:
    b = build(eks_p5(market=None, reservation=None))
    assert gpu_group(b)["capacityType"] == "ON_DEMAND"
    lt = b.one(LT, "-h100-lt")
    assert lt.inputs["placement"] == {"groupName": UNKNOWN}
    assert b.one("aws:ec2/placementGroup:PlacementGroup").inputs["strategy"] == "cluster"


def test_builder_outputs_kubernetes_and_a_secret_kubeconfig(catalog: Catalog) -> None:
    cluster_plan = plan(parse_cluster(eks_p5(), "test"), catalog)

    def program() -> None:
        parent = pulumi.ComponentResource("test:index:Parent", "parent")
        out = aws_components.build(cluster_plan, parent)
        pulumi.export("kubeconfig", out["kubeconfig"])
        pulumi.export("service", out["kubernetes"]["service"])
        pulumi.export("node_groups", sorted(out["kubernetes"]["node_groups"]))
        pulumi.export("pool_groups", len(out["pools"]["h100"]["node_group_names"]))

    outputs = run(program, "aicluster", "test").outputs
    assert outputs["kubeconfig"] is SECRET_VALUE
    assert outputs["service"] == "eks"
    assert outputs["node_groups"] == ["h100", "system"]
    assert outputs["pool_groups"] == 1


def test_kubeconfig_authenticates_with_aws_eks_get_token() -> None:
    doc = yaml.safe_load(kubeconfig("eks-p5", "us-east-1", "https://ABC.gr7.us-east-1.eks.amazonaws.com", "Q0E="))
    assert doc["current-context"] == "eks-p5"
    assert doc["clusters"][0]["cluster"] == {
        "server": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
        "certificate-authority-data": "Q0E=",
    }
    user = doc["users"][0]["user"]["exec"]
    assert user["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert user["command"] == "aws"
    assert user["args"] == ["eks", "get-token", "--cluster-name", "eks-p5", "--region", "us-east-1"]


# ---------------------------------------------------------------------------------------------------- node health

ADDON = "aws:eks/addon:Addon"


def test_gpu_group_repairs_each_fatal_xid_as_the_catalogs_bucket_asks(p5: Built, catalog: Catalog) -> None:
    repair = gpu_group(p5)["nodeRepairConfig"]
    assert repair["enabled"] is True
    told = {o["nodeUnhealthyReason"]: o for o in repair["nodeRepairConfigOverrides"]}
    assert catalog.health is not None
    fatal = {x.xid: x for x in catalog.health.xids if "eks-fatal" in x.listed_by and x.action is not None}
    # every XID the node monitoring agent makes fatal and the catalog gives a bucket, and no other
    assert set(told) == {f"NvidiaXID{n}Error" for n in fatal}
    assert {o["nodeMonitoringCondition"] for o in told.values()} == {"AcceleratedHardwareReady"}
    assert {o["minRepairWaitTimeMins"] for o in told.values()} == {10}
    # a GPU reset is a reboot; a full power cycle (fallen off the bus) is a new instance; 63 does not drain
    assert told["NvidiaXID79Error"]["repairAction"] == "Replace"
    assert told["NvidiaXID48Error"]["repairAction"] == "Reboot"
    assert told["NvidiaXID63Error"]["repairAction"] == "NoAction"
    for n, x in fatal.items():
        assert (told[f"NvidiaXID{n}Error"]["repairAction"] == "NoAction") == (not x.drains), n


def test_system_group_is_repaired_without_gpu_overrides(p5: Built) -> None:
    repair = p5.one(NODE_GROUP, "-system").inputs["nodeRepairConfig"]
    assert repair == {"enabled": True}


def test_node_monitoring_agent_addon_tolerates_the_gpu_taint(p5: Built) -> None:
    import json

    agent = p5.one(ADDON).inputs
    assert agent["addonName"] == "eks-node-monitoring-agent"
    values = json.loads(agent["configurationValues"])
    taints = {(t["key"], t["effect"]) for t in values["dcgmAgent"]["tolerations"]}
    group = next(g for g in p5.plan.kubernetes.node_groups if g.accelerator_kind == "gpu")  # type: ignore[union-attr]
    assert {(t.key, t.effect) for t in group.all_taints()} <= taints
    assert {t["operator"] for t in values["dcgmAgent"]["tolerations"]} == {"Exists"}
