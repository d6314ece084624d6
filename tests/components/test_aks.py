"""AKS: a private, Entra-only, KMS-encrypted control plane with one agent pool per InfiniBand scale set."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import mocks, settings
from pulumi.runtime.stack import run_in_stack
from pulumi.runtime.sync_await import _sync_await

from aicluster.catalog import Catalog
from aicluster.plan import plan
from aicluster.preview.engine import SECRET_VALUE, UNKNOWN, run
from aicluster.spec import parse_cluster
from components.azure import build as build_azure
from components.kubernetes.aks import AKS_AAD_SERVER_APP_ID, AzureKubernetesCluster, ca_from_user_kubeconfig, kubeconfig
from tests.components.conftest import Built

Build = Callable[[dict[str, Any]], Built]
ROOT = Path(__file__).resolve().parents[2]

CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
VAULT = "azure-native:keyvault:Vault"
KEY = "azure-native:keyvault:Key"
ROLE = "azure-native:authorization:RoleAssignment"
DIAG = "azure-native:monitor:DiagnosticSetting"
WORKSPACE = "azure-native:operationalinsights:Workspace"
VMSS = "azure-native:compute:VirtualMachineScaleSet"
VM = "azure-native:compute:VirtualMachine"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"


def stack_cluster(stack: str, **changes: Any) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text(encoding="utf-8"))
    cluster: dict[str, Any] = doc["config"]["aicluster:cluster"]
    cluster.update(changes)
    return cluster


def aks_nd() -> dict[str, Any]:
    return stack_cluster("aks-nd-h100")


def aks_250() -> dict[str, Any]:
    """The 250-node ND H100 v5 stack on AKS instead of Slurm: three scale sets of at most 100 VMs (AKS picks the
    node image, so the stack's pinned VM image goes)."""
    cluster = stack_cluster("azure-nd-h100-250", scheduler={"kind": "kubernetes", "version": "1.35"})
    del cluster["pools"][0]["image"]
    return cluster


def agent_pools(b: Built) -> list[dict[str, Any]]:
    return [r.inputs for r in sorted(b.of_type(AGENT_POOL), key=lambda r: r.name)]


def test_aks_stack_builds_no_scale_sets_controller_or_slurm_identity(build: Build) -> None:
    b = build(aks_nd())
    assert b.of_type(VMSS) == []
    assert b.of_type(VM) == []
    # one identity: the cluster's own (the Slurm nodes' identity is not made)
    assert [r.name for r in b.of_type(IDENTITY)] == ["aks-nd-aks-id"]


def test_cluster_is_private_entra_only_with_workload_identity(build: Build) -> None:
    c = build(aks_nd()).one(CLUSTER).inputs
    assert c["kubernetesVersion"] == "1.35"
    assert c["resourceName"] == "aks-nd"
    assert c["dnsPrefix"] == "aks-nd"
    assert c["sku"] == {"name": "Base", "tier": "Standard"}
    assert c["supportPlan"] == "KubernetesOfficial"
    assert c["apiServerAccessProfile"] == {"enablePrivateCluster": True}
    assert c["disableLocalAccounts"] is True
    assert c["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert c["oidcIssuerProfile"] == {"enabled": True}
    assert c["securityProfile"]["workloadIdentity"] == {"enabled": True}
    assert c["identity"]["type"] == "UserAssigned"
    assert c["nodeResourceGroup"] is UNKNOWN  # MC_<resource group>_<cluster>_<region>, the group known after up


def test_cluster_network_is_azure_cni_overlay_in_the_plan_ranges(build: Build) -> None:
    b = build(aks_nd())
    k = b.plan.kubernetes
    assert k is not None
    net = b.one(CLUSTER).inputs["networkProfile"]
    assert net == {
        "networkPlugin": "azure",
        "networkPluginMode": "overlay",
        "podCidr": k.pod_cidr,
        "serviceCidr": k.service_cidr,
        "dnsServiceIP": "172.20.0.10",
        "loadBalancerSku": "standard",
        "outboundType": "userAssignedNATGateway",
    }
    assert k.service_cidr == "172.20.0.0/16"


def test_system_pool_spans_the_planned_zones_in_the_compute_subnet(build: Build) -> None:
    b = build(aks_nd())
    (system,) = b.one(CLUSTER).inputs["agentPoolProfiles"]
    assert system["name"] == "system"
    assert system["mode"] == "System"
    assert system["vmSize"] == "Standard_D8s_v5"
    assert system["count"] == 2
    assert system["availabilityZones"] == ["1", "2"]
    assert system["enableNodePublicIP"] is False
    assert system["vnetSubnetID"] is UNKNOWN
    # the subnet the system pool joins is the network's compute subnet
    subnet_urn = next(r.urn for r in b.capture.resources if r.name == "aks-nd-eastus-compute")
    assert subnet_urn in b.one(CLUSTER).dependencies


def test_secrets_are_encrypted_with_a_key_vault_key_the_cluster_identity_may_use(build: Build) -> None:
    b = build(aks_nd())
    kms = b.one(CLUSTER).inputs["securityProfile"]["azureKeyVaultKms"]
    assert kms["enabled"] is True
    assert kms["keyId"] is UNKNOWN  # the key's versioned URI
    assert kms["keyVaultNetworkAccess"] == "Public"
    key = b.one(KEY)
    assert key.inputs["properties"] == {"kty": "RSA", "keySize": 2048}
    assert b.one(CLUSTER).property_dependencies["securityProfile"] == [key.urn]
    vault = b.one(VAULT).inputs["properties"]
    assert vault["enableRbacAuthorization"] is True
    assert vault["enablePurgeProtection"] is True
    assert vault["sku"] == {"family": "A", "name": "standard"}
    crypto = b.one(ROLE, "-kms-crypto-user")
    assert crypto.inputs["principalType"] == "ServicePrincipal"
    assert crypto.property_dependencies["scope"] == [key.urn]  # the key, not the vault
    assert b.one(ROLE, "-subnet-network-contributor").urn in b.one(CLUSTER).dependencies
    assert crypto.urn in b.one(CLUSTER).dependencies  # the role exists before AKS turns KMS on


def test_control_plane_audit_logs_go_to_a_workspace(build: Build) -> None:
    b = build(aks_nd())
    diag = b.one(DIAG)
    assert [log["category"] for log in diag.inputs["logs"]] == ["kube-audit-admin", "kube-apiserver"]
    assert all(log["enabled"] for log in diag.inputs["logs"])
    assert diag.property_dependencies["resourceUri"] == [b.one(CLUSTER).urn]
    workspace = b.one(WORKSPACE, "-aks-logs")
    assert diag.property_dependencies["workspaceId"] == [workspace.urn]
    # the stack is held to SOC 2, so the audit log is kept as long as the cluster's other audit logs
    assert workspace.inputs["retentionInDays"] == 365


def test_audit_workspace_keeps_90_days_without_a_compliance_framework(build: Build) -> None:
    cluster = aks_nd()
    cluster.pop("compliance")
    assert build(cluster).one(WORKSPACE, "-aks-logs").inputs["retentionInDays"] == 90


def test_agent_pool_per_scale_set_skips_the_aks_gpu_driver_and_carries_taint_and_labels(build: Build) -> None:
    b = build(aks_nd())
    (pool,) = agent_pools(b)
    assert pool["agentPoolName"] == "h100ib0"
    assert pool["mode"] == "User"
    assert pool["vmSize"] == "Standard_ND96isr_H100_v5"
    assert pool["count"] == 16
    assert pool["availabilityZones"] == ["1"]
    assert pool["gpuProfile"] == {"driver": "None"}  # the GPU Operator installs it, with GPUDirect RDMA
    assert pool["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert pool["nodeLabels"] == {"aicluster.io/pool": "h100", "aicluster.io/fabric-domain": "h100-ib0"}
    assert pool["osSKU"] == "Ubuntu"
    assert pool["osDiskSizeGB"] == 512
    assert pool["enableNodePublicIP"] is False
    assert pool["enableAutoScaling"] is False
    assert pool["maxPods"] == 110
    assert "scaleSetPriority" not in pool
    assert pool["tags"]["aicluster:pool"] == "h100"
    assert b.one(AGENT_POOL).property_dependencies["resourceName"] == [b.one(CLUSTER).urn]


def test_250_nodes_become_three_agent_pools_of_at_most_100(build: Build) -> None:
    b = build(aks_250())
    pools = agent_pools(b)
    assert [(p["agentPoolName"], p["count"]) for p in pools] == [("h100ib0", 100), ("h100ib1", 100), ("h100ib2", 50)]
    assert {p["availabilityZones"][0] for p in pools} == {"2"}
    assert [p["nodeLabels"]["aicluster.io/fabric-domain"] for p in pools] == ["h100-ib0", "h100-ib1", "h100-ib2"]
    assert all(p["gpuProfile"] == {"driver": "None"} for p in pools)
    assert b.of_type(VMSS) == []


def test_spot_pool_is_a_spot_agent_pool(build: Build) -> None:
    cluster = aks_nd()
    cluster["pools"][0]["market"] = "spot"
    (pool,) = agent_pools(build(cluster))
    assert pool["scaleSetPriority"] == "Spot"
    assert pool["scaleSetEvictionPolicy"] in ("Delete", "Deallocate")
    assert pool["spotMaxPrice"] == -1


def test_public_endpoint_is_limited_to_the_authorized_networks(build: Build) -> None:
    cluster = aks_nd()
    cluster["scheduler"] = {
        "kind": "kubernetes",
        "version": "1.35",
        "endpoint": "public",
        "authorized_networks": ["192.168.10.0/24"],
    }
    access = build(cluster).one(CLUSTER).inputs["apiServerAccessProfile"]
    assert access == {"enablePrivateCluster": False, "authorizedIPRanges": ["192.168.10.0/24"]}


def test_long_term_support_version_takes_premium_and_the_lts_plan(build: Build) -> None:
    cluster = aks_nd()
    cluster["scheduler"] = {"kind": "kubernetes", "version": "1.33"}
    c = build(cluster).one(CLUSTER).inputs
    assert c["sku"]["tier"] == "Premium"
    assert c["supportPlan"] == "AKSLongTermSupport"


def _outputs(catalog: Catalog, cluster: dict[str, Any]) -> dict[str, Any]:
    cluster_plan = plan(parse_cluster(cluster, "test"), catalog)

    def program() -> None:
        parent = pulumi.ComponentResource("test:index:Parent", "parent")
        out = build_azure(cluster_plan, parent)
        pulumi.export("kubeconfig", out["kubeconfig"])
        pulumi.export("kubernetes", {k: v for k, v in out["kubernetes"].items()})

    return run(program, "aicluster", "test").outputs


def test_builder_outputs_a_secret_kubeconfig_and_the_node_groups(catalog: Catalog) -> None:
    outputs = _outputs(catalog, aks_nd())
    assert outputs["kubeconfig"] is SECRET_VALUE
    kube = outputs["kubernetes"]
    assert kube["service"] == "aks"
    assert kube["cluster_name"] is UNKNOWN
    assert kube["endpoint"] is UNKNOWN
    assert kube["node_groups"]["h100ib0"]["pool"] == "h100"
    assert kube["node_groups"]["h100ib0"]["nodes"] == 16
    assert kube["node_groups"]["h100ib0"]["zone"] == "1"


CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()


def test_kubeconfig_signs_in_with_kubelogin_through_the_azure_cli() -> None:
    config = yaml.safe_load(kubeconfig("aks-nd", "https://aks-nd-1.privatelink.eastus.azmk8s.io:443", CA))
    (cluster,) = config["clusters"]
    assert cluster["cluster"] == {
        "server": "https://aks-nd-1.privatelink.eastus.azmk8s.io:443",
        "certificate-authority-data": CA,
    }
    (user,) = config["users"]
    assert "token" not in user["user"]
    assert "client-certificate-data" not in user["user"]
    assert user["user"]["exec"]["command"] == "kubelogin"
    assert user["user"]["exec"]["args"] == ["get-token", "--login", "azurecli", "--server-id", AKS_AAD_SERVER_APP_ID]
    assert config["current-context"] == "aks-nd"


class _UpMocks(mocks.Mocks):
    """As `pulumi up` sees it: ARM ids, the cluster's FQDNs, and the user credentials AKS lists."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        rid = f"/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/x/{args.name}"
        state = dict(args.inputs)
        if args.typ == CLUSTER:  # the identities come back as a map of id to details
            ids = args.inputs["identity"]["userAssignedIdentities"]
            state |= {
                "identity": {"type": "UserAssigned", "userAssignedIdentities": {i: {} for i in ids}},
                "name": args.inputs["resourceName"],
                "fqdn": "aks-nd-1.hcp.eastus.azmk8s.io",
                "privateFQDN": "aks-nd-1.privatelink.eastus.azmk8s.io",
            }
        if args.typ == "azure-native:resources:ResourceGroup":
            state["name"] = "aks-nd-rg"
        return rid, state

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        assert args.token == "azure-native:containerservice:listManagedClusterUserCredentials"
        self.calls.append(dict(args.args))
        user = {"clusters": [{"name": "aks-nd", "cluster": {"certificate-authority-data": CA, "server": "x"}}]}
        value = base64.b64encode(yaml.safe_dump(user).encode()).decode()
        return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}, []


def test_kubeconfig_after_up_carries_the_cluster_ca_and_private_server(catalog: Catalog) -> None:
    cluster_plan = plan(parse_cluster(aks_nd(), "test"), catalog)
    seen: list[str] = []
    up = _UpMocks()

    def program() -> None:
        aks = AzureKubernetesCluster(
            "aks-nd-aks", {"plan": cluster_plan, "resource_group_name": "aks-nd-rg", "subnet_id": "/subscriptions/1/x"}
        )
        aks.kubeconfig.apply(seen.append)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    mocks.set_mocks(up, project="aicluster", stack="test", preview=False)
    settings.set_root_resource(None)  # type: ignore[arg-type]
    try:
        _sync_await(run_in_stack(program))
    finally:
        settings.set_root_resource(None)  # type: ignore[arg-type]
        loop.close()
    (text,) = seen
    config = yaml.safe_load(text)
    assert config["clusters"][0]["cluster"] == {
        "server": "https://aks-nd-1.privatelink.eastus.azmk8s.io:443",
        "certificate-authority-data": CA,
    }
    assert up.calls == [{"resourceGroupName": "aks-nd-rg", "resourceName": "aks-nd"}]


def test_ca_is_read_from_the_listed_user_kubeconfig() -> None:
    listed = {"clusters": [{"name": "c", "cluster": {"certificate-authority-data": CA}}]}
    assert ca_from_user_kubeconfig(base64.b64encode(yaml.safe_dump(listed).encode()).decode()) == CA
