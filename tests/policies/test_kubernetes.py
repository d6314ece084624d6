"""Kubernetes rules: a compliant baseline per resource type; each case changes one property and asserts the
violation (or none). Node groups count in the budget and the power budget like the fleets they are."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from aicluster.catalog import load_catalog
from aicluster.catalog.pricing import compute_price, hourly_month
from policies.cost import bill, monthly_total
from policies.facts import Res, Stack
from policies.facts.aws import LAUNCH_TEMPLATE, SUBNET
from policies.facts.kubernetes import (
    AKS_AGENT_POOL,
    AKS_CLUSTER,
    EKS_CLUSTER,
    EKS_NODE_GROUP,
    GKE_CLUSTER,
    GKE_NODE_POOL,
    HELM_RELEASE,
    RESOURCE_FLAVORS,
)
from policies.power import draws
from policies.rule import NotApplicable
from tests.policies.conftest import findings, res, stack_findings

ENDPOINT = "aicluster-kubernetes-cluster-disallow-public-endpoint"
SECRETS = "aicluster-kubernetes-cluster-enforce-secrets-encryption"
AUDIT = "aicluster-kubernetes-cluster-enable-audit-logs"
TAINT = "aicluster-kubernetes-nodegroup-enforce-gpu-taint"
FLAVOR = "aicluster-kueue-resourceflavor-missing-tolerations"
EFA_AZ = "aws-eks-nodegroup-enforce-efa-single-az"
EFA_PLUGIN = "aws-eks-nodegroup-missing-efa-device-plugin"
PINNED = "aicluster-helm-release-enforce-pinned-version"
PUBLIC = "aicluster-kubernetes-nodegroup-disallow-public-ip"
DIAGNOSTICS = "azure-native:insights:DiagnosticSetting"
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


def _subnet(name: str, zone: str) -> Res:
    return res(SUBNET, name, {"availabilityZone": zone, "mapPublicIpOnLaunch": False})


def _lt(**extra: Any) -> Res:
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
    lt = lt if lt is not None else _lt()
    subnets = subnets if subnets is not None else [_subnet("h100-subnet", "us-east-1d")]
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


# -- 1. endpoint --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("type_", list(CLUSTERS), ids=lambda t: t.split(":")[0])
def test_private_control_planes_pass(type_: str) -> None:
    assert findings(ENDPOINT, type_, CLUSTERS[type_]) == []
    assert findings(SECRETS, type_, CLUSTERS[type_]) == []


@pytest.mark.parametrize(
    ("type_", "change", "expected"),
    [
        pytest.param(
            EKS_CLUSTER,
            lambda p: p["vpcConfig"].pop("endpointPublicAccess"),
            "vpcConfig.publicAccessCidrs authorizes 0.0.0.0/0",
            id="eks-public-by-default",
        ),
        pytest.param(
            EKS_CLUSTER,
            lambda p: p["vpcConfig"].update(endpointPublicAccess=True, publicAccessCidrs=["0.0.0.0/0"]),
            "authorizes 0.0.0.0/0 (the whole internet); set vpcConfig.endpointPublicAccess = false",
            id="eks-open",
        ),
        pytest.param(
            GKE_CLUSTER,
            lambda p: p["privateClusterConfig"].update(enablePrivateEndpoint=False),
            "masterAuthorizedNetworksConfig names no authorized networks",
            id="gke-public-no-networks",
        ),
        pytest.param(
            GKE_CLUSTER,
            lambda p: p.update(
                privateClusterConfig={"enablePrivateNodes": True},
                masterAuthorizedNetworksConfig={"cidrBlocks": [{"cidrBlock": "0.0.0.0/0"}]},
            ),
            "masterAuthorizedNetworksConfig authorizes 0.0.0.0/0",
            id="gke-open",
        ),
        pytest.param(
            AKS_CLUSTER,
            lambda p: p.update(apiServerAccessProfile={"authorizedIPRanges": ["203.0.113.0/24", "0.0.0.0/0"]}),
            "apiServerAccessProfile.authorizedIPRanges authorizes 0.0.0.0/0",
            id="aks-open",
        ),
    ],
)
def test_a_public_endpoint_open_to_the_internet_fails(type_: str, change: Any, expected: str) -> None:
    (message,) = findings(ENDPOINT, type_, changed(CLUSTERS[type_], change))
    assert "cluster x: the API server endpoint is public" in message
    assert expected in message
    assert "scheduler.endpoint: private" in message


@pytest.mark.parametrize(
    ("type_", "change"),
    [
        pytest.param(
            EKS_CLUSTER,
            lambda p: p["vpcConfig"].update(endpointPublicAccess=True, publicAccessCidrs=["203.0.113.0/24"]),
            id="eks",
        ),
        pytest.param(
            GKE_CLUSTER,
            lambda p: p.update(
                privateClusterConfig={"enablePrivateNodes": True},
                masterAuthorizedNetworksConfig={"cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}]},
            ),
            id="gke",
        ),
        pytest.param(
            AKS_CLUSTER, lambda p: p.update(apiServerAccessProfile={"authorizedIPRanges": ["203.0.113.0/24"]}), id="aks"
        ),
    ],
)
def test_a_public_endpoint_for_authorized_networks_only_passes(type_: str, change: Any) -> None:
    assert findings(ENDPOINT, type_, changed(CLUSTERS[type_], change)) == []


# -- 2. secrets encryption ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "change", "expected"),
    [
        pytest.param(EKS_CLUSTER, lambda p: p.pop("encryptionConfig"), "encryptionConfig does not", id="eks-none"),
        pytest.param(
            EKS_CLUSTER,
            lambda p: p["encryptionConfig"].update(resources=[]),
            "encryptionConfig does not encrypt secrets",
            id="eks-not-secrets",
        ),
        pytest.param(
            GKE_CLUSTER,
            lambda p: p.update(databaseEncryption={"state": "DECRYPTED"}),
            "databaseEncryption.state is DECRYPTED with no keyName",
            id="gke-decrypted",
        ),
        pytest.param(
            AKS_CLUSTER,
            lambda p: p.pop("securityProfile"),
            "securityProfile.azureKeyVaultKms.enabled is not set",
            id="aks-no-kms",
        ),
    ],
)
def test_secrets_without_a_kms_key_fail(type_: str, change: Any, expected: str) -> None:
    (message,) = findings(SECRETS, type_, changed(CLUSTERS[type_], change))
    assert message.startswith("cluster x: ")
    assert expected in message
    assert "; set " in message


# -- 3. audit logs ------------------------------------------------------------------------------------------------


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


# -- 4. GPU taint -------------------------------------------------------------------------------------------------


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


# -- 5. Kueue flavors ---------------------------------------------------------------------------------------------


def _flavor(tolerations: list[dict[str, Any]], labels: dict[str, str] | None = None) -> Res:
    spec = {"nodeLabels": labels or dict(LABELS), "tolerations": tolerations}
    return res(RESOURCE_FLAVORS[1], "flavor-h100", {"metadata": {"name": "h100"}, "spec": spec})


TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}


@pytest.mark.parametrize("cloud", list(GROUPS))
@pytest.mark.parametrize(
    "toleration",
    [
        pytest.param(TOLERATION, id="equal"),
        pytest.param({"key": "nvidia.com/gpu", "operator": "Exists"}, id="exists-any-effect"),
    ],
)
def test_a_flavor_tolerating_its_node_groups_passes(cloud: str, toleration: dict[str, Any]) -> None:
    assert stack_findings(FLAVOR, [*GROUPS[cloud](), _flavor([toleration])]) == []


@pytest.mark.parametrize("cloud", list(GROUPS))
def test_a_flavor_missing_its_node_groups_taint_fails(cloud: str) -> None:
    (message,) = stack_findings(FLAVOR, [*GROUPS[cloud](), _flavor([])])
    assert message.startswith("Kueue ResourceFlavor h100 selects ")
    assert "does not tolerate its taint nvidia.com/gpu=present:NoSchedule" in message
    assert "add spec.tolerations [{key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}]" in (
        message
    )


def test_a_flavor_with_a_wrong_value_fails_and_one_selecting_other_nodes_is_not_judged() -> None:
    wrong = {**TOLERATION, "value": "true"}
    assert len(stack_findings(FLAVOR, [*eks_group(), _flavor([wrong])])) == 1
    other = _flavor([], {"aicluster.io/pool": "other"})
    assert stack_findings(FLAVOR, [*eks_group(), other]) == []


def test_a_flavor_on_the_instance_type_label_selects_the_group() -> None:
    by_type = _flavor([], {"node.kubernetes.io/instance-type": "p5.48xlarge"})
    assert len(stack_findings(FLAVOR, [*eks_group(), by_type])) == 1


# -- 6. EFA -------------------------------------------------------------------------------------------------------

EFA_RELEASE = {
    "chart": "aws-efa-k8s-device-plugin",
    "version": "0.5.30",
    "repositoryOpts": {"repo": "https://aws.github.io/eks-charts"},
    "namespace": "kube-system",
}


def test_an_efa_node_group_in_one_zone_with_the_plugin_passes() -> None:
    stack = [*eks_group(), res(HELM_RELEASE, "efa", EFA_RELEASE)]
    assert stack_findings(EFA_AZ, stack) == []
    assert stack_findings(EFA_PLUGIN, stack) == []


def test_an_efa_node_group_over_two_zones_fails() -> None:
    subnets = [_subnet("a", "us-east-1a"), _subnet("d", "us-east-1d")]
    (message,) = stack_findings(EFA_AZ, eks_group(subnets=subnets))
    assert message.startswith("EKS node group h100 spreads EFA nodes over us-east-1a, us-east-1d")
    assert "give subnetIds one subnet" in message


def test_an_efa_node_group_without_the_device_plugin_fails() -> None:
    other = res(HELM_RELEASE, "kueue", {"chart": "oci://registry.k8s.io/kueue/charts/kueue", "version": "0.19.2"})
    (message,) = stack_findings(EFA_PLUGIN, [*eks_group(), other])
    assert message.startswith("EKS node group h100 has EFA interfaces but no Helm release of aws-efa-k8s-device-plugin")
    assert "install the chart aws-efa-k8s-device-plugin 0.5.30 from https://aws.github.io/eks-charts" in message


def test_a_node_group_without_efa_is_not_judged() -> None:
    lt = _lt(networkInterfaces=[{"deviceIndex": 0, "associatePublicIpAddress": "false"}])
    for rule in (EFA_PLUGIN, EFA_AZ):
        with pytest.raises(NotApplicable, match="no EKS node group of EFA nodes"):
            stack_findings(rule, eks_group(lt=lt))


# -- 7. pinned versions -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.19.2", "v26.7.0", "1.0.0-rc.1"])
def test_an_exact_chart_version_passes(version: str) -> None:
    assert findings(PINNED, HELM_RELEASE, {"chart": "kueue", "version": version}) == []


@pytest.mark.parametrize("version", [None, "", "^0.19", "~0.19.2", "*", "latest", ">=0.19.0", "0.19"])
def test_an_open_chart_version_fails(version: str | None) -> None:
    props = {"chart": "oci://registry.k8s.io/kueue/charts/kueue", "version": version}
    (message,) = findings(PINNED, HELM_RELEASE, props)
    assert message.startswith("Helm release x (chart oci://registry.k8s.io/kueue/charts/kueue) has ")
    assert ("no version" if not version else f"version {version!r}") in message
    assert "pin an exact chart version (e.g. 0.19.2, the catalog's)" in message


# -- 8. public node addresses -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cloud", list(GROUPS))
def test_private_nodes_pass(cloud: str) -> None:
    assert stack_findings(PUBLIC, GROUPS[cloud]()) == []


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param(
            lambda: eks_group(lt=_lt(networkInterfaces=[{"deviceIndex": 0, "associatePublicIpAddress": "true"}])),
            "EKS node group h100 gives its nodes public IP addresses (its launch template h100-lt sets "
            "associatePublicIpAddress = true); set associatePublicIpAddress = false",
            id="eks-launch-template",
        ),
        pytest.param(
            lambda: eks_group(
                subnets=[res(SUBNET, "pub", {"availabilityZone": "us-east-1d", "mapPublicIpOnLaunch": True})]
            ),
            "EKS node group h100 gives its nodes public IP addresses (its subnets pub set mapPublicIpOnLaunch = true)",
            id="eks-public-subnet",
        ),
        pytest.param(
            lambda: [
                res(
                    GKE_NODE_POOL,
                    "h100",
                    {"nodeConfig": {"machineType": "a3-megagpu-8g"}, "networkConfig": {"enablePrivateNodes": False}},
                )
            ],
            "GKE node pool h100 gives its nodes public IP addresses (networkConfig.enablePrivateNodes = false); set "
            "networkConfig.enablePrivateNodes = true",
            id="gke",
        ),
        pytest.param(
            lambda: aks_pool(enableNodePublicIP=True),
            "AKS agent pool h100 gives its nodes public IP addresses (enableNodePublicIP = true); set "
            "enableNodePublicIP = false",
            id="aks",
        ),
    ],
)
def test_public_nodes_fail(resources: Callable[[], list[Res]], expected: str) -> None:
    (message,) = stack_findings(PUBLIC, resources())
    assert message.startswith(expected)


def test_a_gke_pool_in_a_cluster_without_private_nodes_fails() -> None:
    pool, cluster = gke_pool()
    cluster.props["privateClusterConfig"] = {"enablePrivateEndpoint": True}
    (message,) = stack_findings(PUBLIC, [pool, cluster])
    assert "neither it nor its cluster gke enables private nodes" in message


# -- cost and power -----------------------------------------------------------------------------------------------


def _month(provider: str, type_: str, region: str, market: str, nodes: int) -> float:
    catalog = load_catalog()
    spec = catalog.instance_type(provider, type_)
    assert spec is not None
    price = compute_price(spec, region, market, []).price
    assert price is not None
    return hourly_month(price.usd, nodes, catalog.hours_per_month)


@pytest.mark.parametrize(
    ("resources", "fleet", "region", "market", "nodes"),
    [
        pytest.param(eks_group, ("aws", "p5.48xlarge"), "us-east-1", "capacity-block", 16, id="eks"),
        pytest.param(gke_pool, ("gcp", "a3-megagpu-8g"), "us-central1", "on-demand", 32, id="gke"),
        pytest.param(aks_pool, ("azure", "Standard_ND96isr_H100_v5"), "eastus", "on-demand", 16, id="aks"),
    ],
)
def test_node_groups_are_billed_and_drawn_like_fleets(
    resources: Callable[[], list[Res]], fleet: tuple[str, str], region: str, market: str, nodes: int
) -> None:
    stack = Stack(resources())
    group = next(f for f in stack.fleets if f.instance_type == fleet[1])
    assert (group.nodes, group.market, group.region) == (nodes, market, region)
    lines = {x.what: x.usd_per_month for x in bill(stack)}
    assert lines[f"h100: {nodes} x {fleet[1]} {market}"] == _month(*fleet, region, market, nodes)
    assert any(what.startswith("h100: ") and "GiB" in what for what in lines)  # its root disks
    (draw,) = [d for d in draws(stack) if d.fleet is group]
    spec = load_catalog().instance_type(*fleet)
    assert spec is not None
    assert draw.it_kw == spec.node_power_kw * nodes


@pytest.mark.parametrize(
    ("type_", "props", "service"),
    [
        pytest.param(EKS_CLUSTER, EKS, "Amazon EKS", id="eks"),
        pytest.param(GKE_CLUSTER, GKE, "Google Kubernetes Engine", id="gke"),
        pytest.param(AKS_CLUSTER, {**AKS, "agentPoolProfiles": []}, "Azure Kubernetes Service", id="aks"),
    ],
)
def test_each_control_plane_is_billed_per_cluster_hour(type_: str, props: dict[str, Any], service: str) -> None:
    catalog = load_catalog()
    rate = catalog.kubernetes[Res(type_, "c", "", {}).catalog_provider].usd_per_hour
    cost = monthly_total(Stack([res(type_, "c", props)]))
    assert cost.usd_per_month == hourly_month(rate, 1, catalog.hours_per_month)
    assert [x.what for x in bill(Stack([res(type_, "c", props)]))] == [f"c: {service} control plane (standard support)"]


def test_an_extended_support_version_is_billed_at_the_extended_rate() -> None:
    catalog = load_catalog()
    eks = catalog.kubernetes["aws"]
    old = changed(EKS, lambda p: p.update(version=eks.extended_versions[0]))
    (line,) = bill(Stack([res(EKS_CLUSTER, "c", old)]))
    assert line.what == "c: Amazon EKS control plane (extended support)"
    assert eks.extended_usd_per_hour is not None
    assert line.usd_per_month == hourly_month(eks.extended_usd_per_hour, 1, catalog.hours_per_month)
    gke = catalog.kubernetes["gcp"]
    if gke.extended_usd_per_hour is None:  # the catalog has no GKE extended rate: named unpriced, as the plan does
        old_gke = changed(GKE, lambda p: p.update(minMasterVersion=f"{gke.extended_versions[0]}.4-gke.1"))
        cost = monthly_total(Stack([res(GKE_CLUSTER, "g", old_gke)]))
        assert cost.unpriced


def test_an_aks_clusters_own_agent_pools_are_counted() -> None:
    stack = Stack([res(AKS_CLUSTER, "aks", AKS)])
    (fleet,) = stack.fleets
    assert (fleet.instance_type, fleet.nodes, fleet.region) == ("Standard_D8s_v5", 2, "eastus")
    assert stack.node_groups[0].name == "AKS cluster aks agentPoolProfiles[0] (system)"
