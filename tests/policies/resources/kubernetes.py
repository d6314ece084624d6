"""Managed Kubernetes as the providers name it: private, encrypted, audited EKS, GKE and AKS control planes, and a
tainted H100 node group on each (an EKS node group with its EFA launch template and subnet, a GKE node pool, an AKS
agent pool); the EFA device plugin's Helm release."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from policies.facts import Res
from policies.facts.aws import LAUNCH_TEMPLATE, SUBNET
from policies.facts.kubernetes import (
    AKS_AGENT_POOL,
    AKS_CLUSTER,
    EKS_CLUSTER,
    EKS_NODE_GROUP,
    GKE_CLUSTER,
    GKE_NODE_POOL,
)
from tests.policies.conftest import res

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
LABELS = {"aicluster.io/pool": "h100", "aicluster.io/fabric-domain": "h100"}

EKS: dict[str, Any] = {
    "name": "eks-p5",
    "version": "1.35",
    "vpcConfig": {"endpointPrivateAccess": True, "endpointPublicAccess": False, "subnetIds": ["s-1", "s-2"]},
    "encryptionConfig": {"provider": {"keyArn": "arn:aws:kms:us-east-1:1:key/k"}, "resources": ["secrets"]},
    "enabledClusterLogTypes": ["api", "audit", "authenticator"],
}

GKE: dict[str, Any] = {
    "name": "gke-a3mega",
    "location": "us-central1",
    "minMasterVersion": "1.35",
    "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": True},
    "databaseEncryption": {"state": "ENCRYPTED", "keyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"},
    "loggingConfig": {"enableComponents": ["SYSTEM_COMPONENTS", "APISERVER"]},
}

AKS: dict[str, Any] = {
    "resourceName": "aks-nd",
    "location": "eastus",
    "kubernetesVersion": "1.35",
    "sku": {"name": "Base", "tier": "Standard"},
    "apiServerAccessProfile": {"enablePrivateCluster": True},
    "securityProfile": {"azureKeyVaultKms": {"enabled": True, "keyId": "https://v.vault.azure.net/keys/k/1"}},
    "disableLocalAccounts": True,
    "agentPoolProfiles": [{"name": "system", "mode": "System", "count": 2, "vmSize": "Standard_D8s_v5"}],
}

CLUSTERS: dict[str, dict[str, Any]] = {EKS_CLUSTER: EKS, GKE_CLUSTER: GKE, AKS_CLUSTER: AKS}


def changed(props: dict[str, Any], change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    out = copy.deepcopy(props)
    change(out)
    return out


def subnet(name: str, zone: str) -> Res:
    return res(SUBNET, name, {"availabilityZone": zone, "mapPublicIpOnLaunch": False})


def launch_template(**extra: Any) -> Res:
    nics = [
        {"networkCardIndex": i, "deviceIndex": 0 if i == 0 else 1, "interfaceType": "efa" if i == 0 else "efa-only"}
        for i in range(32)
    ]
    props = {
        "instanceType": "p5.48xlarge",
        "networkInterfaces": nics,
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 500, "volumeType": "gp3"}}],
        "instanceMarketOptions": {"marketType": "capacity-block"},
        **extra,
    }
    return res(LAUNCH_TEMPLATE, "h100-lt", props)


def eks_group(lt: Res | None = None, subnets: list[Res] | None = None, **props: Any) -> list[Res]:
    lt = lt if lt is not None else launch_template()
    subnets = subnets if subnets is not None else [subnet("h100-subnet", "us-east-1d")]
    base = {
        "clusterName": "eks-p5",
        "nodeGroupName": "h100",
        "region": "us-east-1",
        "scalingConfig": {"desiredSize": 16, "maxSize": 16, "minSize": 16},
        "subnetIds": [s.name for s in subnets],
        "launchTemplate": {"id": "lt-1", "version": "1"},
        "capacityType": "CAPACITY_BLOCK",
        "labels": dict(LABELS),
        "taints": [GPU_TAINT],
        **props,
    }
    ng = res(EKS_NODE_GROUP, "h100", base, launchTemplate=[lt], subnetIds=list(subnets))
    return [ng, lt, *subnets]


def gke_pool(**config: Any) -> list[Res]:
    cluster = res(GKE_CLUSTER, "gke", copy.deepcopy(GKE))
    node_config = {
        "machineType": "a3-megagpu-8g",
        "diskSizeGb": 200,
        "labels": dict(LABELS),
        "taints": [GPU_TAINT],
        **config,
    }
    props = {"name": "h100", "location": "us-central1", "nodeLocations": ["us-central1-a"], "nodeCount": 32}
    pool = res(GKE_NODE_POOL, "h100", {**props, "nodeConfig": node_config}, cluster=[cluster])
    return [pool, cluster]


def aks_pool(**props: Any) -> list[Res]:
    cluster = res(AKS_CLUSTER, "aks", copy.deepcopy(AKS))
    base = {
        "agentPoolName": "h100",
        "resourceName": "aks-nd",
        "count": 16,
        "vmSize": "Standard_ND96isr_H100_v5",
        "osDiskSizeGB": 256,
        "nodeLabels": dict(LABELS),
        "nodeTaints": ["nvidia.com/gpu=present:NoSchedule"],
        "availabilityZones": ["1"],
        **props,
    }
    return [res(AKS_AGENT_POOL, "h100", base, resourceName=[cluster]), cluster]


GROUPS = {"eks": eks_group, "gke": gke_pool, "aks": aks_pool}

EFA_RELEASE = {
    "chart": "aws-efa-k8s-device-plugin",
    "version": "0.5.30",
    "repositoryOpts": {"repo": "https://aws.github.io/eks-charts"},
    "namespace": "kube-system",
}
