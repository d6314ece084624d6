"""An AKS control plane: the cluster, one agent pool per InfiniBand scale set, and how to reach it.

InfiniBand on AKS: no SDK field asks for it. AKS places each agent pool in one VM scale set, and nodes of one scale
set share an InfiniBand network only when the subscription has the feature `Microsoft.ContainerService/
AKSInfinibandSupport` registered (`az feature register --namespace Microsoft.ContainerService --name
AKSInfinibandSupport`, then `az provider register -n Microsoft.ContainerService`) before the pools are created. That
is why the plan makes one agent pool per scale set of at most 100 VMs (one placement group), and why the stack's
README must name the feature as a prerequisite (Azure/aks-rdma-infiniband).
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native as azure
import yaml

from aicluster.plan import ClusterPlan, PlannedKubernetes, PlannedMaintenanceWindow, PlannedNodeGroup, PlannedPool

from ..azure import AzureBase
from ..azure.aliases import azure_component_opts
from ..azure.audit import RETENTION_DAYS as COMPLIANCE_RETENTION_DAYS
from ..azure.locks import delete_lock
from ..outputs import pool_outputs
from ..tags import tagging

# Built-in Azure role definitions (their ids are the same in every subscription and cloud).
KEY_VAULT_CRYPTO_USER = "12338af0-0e69-4776-bea7-57ae8d297424"  # wrap/unwrap with a key: what the KMS plugin does
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"  # join nodes and load balancers to a subnet we own
# The Entra ID application every AKS API server accepts tokens for ("Azure Kubernetes Service AAD Server"), the
# --server-id of kubelogin: https://azure.github.io/kubelogin/concepts/aks.html
AKS_AAD_SERVER_APP_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"
# Control-plane logs kept: changes made through the API server (kube-audit-admin: audit events without get/list,
# the affordable form of kube-audit) and the API server's own log.
AUDIT_CATEGORIES = ("kube-audit-admin", "kube-apiserver")
AUDIT_RETENTION_DAYS = 90  # raised to the compliance retention when the stack keeps an audit log
# Kubernetes' tested limit of pods per node ("No more than 110 pods per node",
# https://kubernetes.io/docs/setup/best-practices/cluster-large/); a GPU node runs a handful of training pods.
MAX_PODS = 110
SYSTEM_POOL = "system"
DNS_SERVICE_HOST = 10  # the service range's address CoreDNS takes (AKS's own choice: x.x.x.10)


class AksClusterArgs(TypedDict):
    plan: ClusterPlan  # plan.kubernetes, and each node group's pool (its Azure scale-set details)
    resource_group_name: pulumi.Input[str]  # the cluster network's resource group
    subnet_id: pulumi.Input[str]  # the compute subnet (NAT gateway egress) every node joins
    # managed Prometheus: the data collection rule to the Azure Monitor workspace that the metrics add-on sends by
    prometheus_rule_id: NotRequired[pulumi.Input[str]]


def dns_service_ip(service_cidr: str) -> str:
    return str(ipaddress.ip_network(service_cidr)[DNS_SERVICE_HOST])


def node_taints(group: PlannedNodeGroup) -> list[str]:
    """Taints as AKS spells them: `key=value:Effect`."""
    return [f"{t.key}={t.value}:{t.effect}" for t in group.taints]


def kubeconfig(cluster: str, server: str, ca_data: str) -> str:
    """A kubeconfig that signs in with Entra ID through kubelogin and the Azure CLI's login (local accounts are
    disabled, so AKS issues no client certificate); `ca_data` is the cluster CA, base64 PEM as AKS gives it."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
            "users": [
                {
                    "name": f"{cluster}-entra",
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "kubelogin",
                            "args": ["get-token", "--login", "azurecli", "--server-id", AKS_AAD_SERVER_APP_ID],
                            "provideClusterInfo": False,
                            "installHint": "install kubelogin (az aks install-cli) and sign in with az login",
                        }
                    },
                }
            ],
            "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": f"{cluster}-entra"}}],
            "current-context": cluster,
        },
        sort_keys=False,
    )


def ca_from_user_kubeconfig(encoded: str) -> str:
    """The cluster CA from a kubeconfig AKS lists for the cluster's users (base64 of its YAML)."""
    config = yaml.safe_load(base64.b64decode(encoded))
    return str(config["clusters"][0]["cluster"]["certificate-authority-data"])


def _cluster_ca(resource_group: str, cluster: str) -> pulumi.Input[str]:
    """AKS puts no CA among the cluster's properties: it is only in the kubeconfig that
    listClusterUserCredential returns. That call needs the live cluster, so it runs during `pulumi up` only; in a
    preview (offline, or a CI identity without that permission) the kubeconfig stays unknown, as a new cluster's
    address is."""
    if pulumi.runtime.is_dry_run():
        return pulumi.Output.from_input(pulumi.UNKNOWN)  # type: ignore[arg-type]  # unknown, as in any preview
    creds = azure.containerservice.list_managed_cluster_user_credentials_output(
        resource_group_name=resource_group, resource_name=cluster
    )
    return creds.kubeconfigs.apply(lambda k: ca_from_user_kubeconfig(k[0].value))


def _role(
    name: str, role: str, scope: pulumi.Output[str], principal_id: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> azure.authorization.RoleAssignment:
    subscription = scope.apply(lambda s: s.split("/")[2])  # /subscriptions/<id>/...
    return azure.authorization.RoleAssignment(
        name,
        scope=scope,
        role_definition_id=pulumi.Output.concat(
            "/subscriptions/", subscription, "/providers/Microsoft.Authorization/roleDefinitions/", role
        ),
        principal_id=principal_id,
        principal_type=azure.authorization.PrincipalType.SERVICE_PRINCIPAL,  # a managed identity
        opts=opts,
    )


def agent_pool_args(k: PlannedKubernetes, group: PlannedNodeGroup, pool: PlannedPool) -> dict[str, Any]:
    """One User agent pool for one node group: one scale set, so (with AKSInfinibandSupport) one InfiniBand network.

    An InfiniBand pool skips AKS's GPU driver (gpu_profile driver None): the GPU Operator installs the driver with
    GPUDirect RDMA (nvidia-peermem) next to the Network Operator's DOCA driver, as Azure/aks-rdma-infiniband does.
    """
    d = pool.azure
    assert d is not None, f"pool {pool.name} has no Azure details"
    spot = d.priority == "Spot"
    return {
        "agent_pool_name": group.name,
        "mode": azure.containerservice.AgentPoolMode.USER,
        "type": azure.containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
        "vm_size": pool.instance_type,
        "count": group.nodes,
        "enable_auto_scaling": False,  # a training fleet is sized by the plan, and its fabric with it
        "availability_zones": [group.zone] if group.zone else None,
        "os_type": azure.containerservice.OSType.LINUX,
        "os_sku": k.node_image_of(group),
        "os_disk_size_gb": d.root_volume_gib,
        "os_disk_type": azure.containerservice.OSDiskType.MANAGED,
        "gpu_profile": azure.containerservice.GPUProfileArgs(driver=azure.containerservice.GPUDriver.NONE)
        if d.infiniband
        else None,
        "node_taints": node_taints(group),
        "node_labels": dict(group.labels),
        "enable_node_public_ip": False,
        "max_pods": MAX_PODS,
        "scale_set_priority": azure.containerservice.ScaleSetPriority.SPOT if spot else None,
        "scale_set_eviction_policy": d.eviction_policy if spot else None,
        "spot_max_price": d.max_price if spot else None,
        # an upgrade or a new node image takes the pool's rollout.max_unavailable nodes at a time and no surge node
        # (GPU capacity is bought to the node; AKS's default surges 10% more), as the EKS and GKE node groups do
        "upgrade_settings": azure.containerservice.AgentPoolUpgradeSettingsArgs(
            max_surge="0", max_unavailable=str(group.max_unavailable)
        ),
    }


WEEKDAYS = {"mon": "Monday", "tue": "Tuesday", "wed": "Wednesday", "thu": "Thursday", "fri": "Friday"}
WEEKDAYS |= {"sat": "Saturday", "sun": "Sunday"}
# The planned-maintenance configuration that times the node OS channel's upgrades. The cluster sets no upgrade
# channel (the API's default is none: no automatic Kubernetes upgrades, so no aksManagedAutoUpgradeSchedule), and
# its node OS channel is the API's default, NodeImage: a weekly node image that AKS rolls through the agent pools'
# surge settings, which is what a pool's window must hold back.
NODE_OS_SCHEDULE = "aksManagedNodeOSUpgradeSchedule"


def maintenance_window_args(window: PlannedMaintenanceWindow) -> azure.containerservice.MaintenanceWindowArgs:
    """The pools' shared weekly window as AKS planned maintenance: weekly on its one day, or daily when it is every
    day (the planner refuses other day sets: an AKS schedule names one weekday), in UTC."""
    if len(window.days) == len(WEEKDAYS):
        schedule = azure.containerservice.ScheduleArgs(daily=azure.containerservice.DailyScheduleArgs(interval_days=1))
    else:
        assert len(window.days) == 1, "the planner gives AKS one day or all seven"
        schedule = azure.containerservice.ScheduleArgs(
            weekly=azure.containerservice.WeeklyScheduleArgs(day_of_week=WEEKDAYS[window.days[0]], interval_weeks=1)
        )
    return azure.containerservice.MaintenanceWindowArgs(
        schedule=schedule, start_time=window.start, duration_hours=window.hours, utc_offset="+00:00"
    )


class AzureKubernetesCluster(pulumi.ComponentResource):
    """An AKS cluster that keeps each scale set's InfiniBand network whole and exposes nothing it need not:

    - Standard tier (uptime SLA, up to 5,000 nodes); Premium with the AKSLongTermSupport plan when the version is in
      long-term support (the plan's `support: extended`);
    - API server private (private FQDN in the VNet) or public behind the authorized ranges, as the plan says;
    - sign-in with Entra ID only: local accounts disabled, managed Entra integration, Azure RBAC for Kubernetes
      authorization; OIDC issuer and workload identity on, so pods get Azure tokens without secrets;
    - etcd secrets encrypted with a Key Vault key (KMS): the cluster's user-assigned identity may only use that
      key (Key Vault Crypto User on the key) and join its subnet (Network Contributor on the compute subnet).
      The key vault is public-network (RBAC, purge protection, no firewall): AKS supports a private KMS key vault
      only with API Server VNet Integration, which needs a delegated subnet the plan does not carve;
    - Azure CNI overlay: nodes in the compute subnet, pods and services in the plan's ranges off every network,
      egress through the network's NAT gateway (no public load balancer for egress, no node public IPs);
    - one System pool of CPU nodes across two zones; one User pool per planned node group (see `agent_pool_args`);
    - control-plane audit logs (kube-audit-admin, kube-apiserver) to a Log Analytics workspace.
    - where pools have `rollout.strategy: window`: their shared window as the node OS upgrade schedule (planned
      maintenance, aksManagedNodeOSUpgradeSchedule), so AKS's weekly node image reaches their nodes only in it.
    Tags come from the cluster and pool transformations.
    """

    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    agent_pool_names: dict[str, pulumi.Output[str]]
    oidc_issuer_url: pulumi.Output[str]

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:azure:KubernetesCluster", name, {}, azure_component_opts(opts))
        plan = args["plan"]
        k = plan.kubernetes
        assert k is not None, "AzureKubernetesCluster needs a Kubernetes plan"
        assert k.provider == "azure", f"AzureKubernetesCluster got a {k.service_name} plan"
        assert k.pod_cidr is not None, "AKS runs Azure CNI overlay: the plan must give a pod range"
        child = pulumi.ResourceOptions(parent=self)
        rg = args["resource_group_name"]
        location = k.region

        identity = azure.managedidentity.UserAssignedIdentity(
            f"{name}-id", resource_group_name=rg, location=location, opts=child
        )
        vault = azure.keyvault.Vault(
            f"{name}-kms",
            resource_group_name=rg,
            location=location,
            properties=azure.keyvault.VaultPropertiesArgs(
                tenant_id=identity.tenant_id,  # the subscription's tenant, without a data-source call
                sku=azure.keyvault.SkuArgs(family=azure.keyvault.SkuFamily.A, name=azure.keyvault.SkuName.STANDARD),
                enable_rbac_authorization=True,
                enable_soft_delete=True,
                enable_purge_protection=True,  # a deleted key would leave etcd's secrets unreadable for good
                soft_delete_retention_in_days=90,
                public_network_access="Enabled",
            ),
            opts=child,
        )
        key = azure.keyvault.Key(
            f"{name}-etcd",
            resource_group_name=rg,
            vault_name=vault.name,
            properties=azure.keyvault.KeyPropertiesArgs(kty=azure.keyvault.JsonWebKeyType.RSA, key_size=2048),
            opts=child,
        )
        delete_lock(f"{name}-kms", vault, "key vault (the etcd key it holds)", self)  # the key inherits the lock
        roles = [
            _role(f"{name}-kms-crypto-user", KEY_VAULT_CRYPTO_USER, key.id, identity.principal_id, child),
            _role(
                f"{name}-subnet-network-contributor",
                NETWORK_CONTRIBUTOR,
                pulumi.Output.from_input(args["subnet_id"]),
                identity.principal_id,
                child,
            ),
        ]

        private = k.endpoint == "private"
        extended = k.support == "extended"
        cluster = azure.containerservice.ManagedCluster(
            f"{name}-cluster",
            resource_name_=k.cluster_name,
            resource_group_name=rg,
            location=location,
            dns_prefix=k.cluster_name,
            kubernetes_version=k.version,
            sku=azure.containerservice.ManagedClusterSKUArgs(
                name=azure.containerservice.ManagedClusterSKUName.BASE,
                tier=azure.containerservice.ManagedClusterSKUTier.PREMIUM
                if extended
                else azure.containerservice.ManagedClusterSKUTier.STANDARD,
            ),
            support_plan=azure.containerservice.KubernetesSupportPlan.AKS_LONG_TERM_SUPPORT
            if extended
            else azure.containerservice.KubernetesSupportPlan.KUBERNETES_OFFICIAL,
            identity=azure.containerservice.ManagedClusterIdentityArgs(
                type=azure.containerservice.ResourceIdentityType.USER_ASSIGNED,
                user_assigned_identities=[identity.id],
            ),
            node_resource_group=pulumi.Output.concat("MC_", rg, "_", k.cluster_name, "_", location),
            api_server_access_profile=azure.containerservice.ManagedClusterAPIServerAccessProfileArgs(
                enable_private_cluster=private,
                authorized_ip_ranges=None if private else list(k.authorized_networks),
            ),
            disable_local_accounts=True,
            azure_monitor_profile=azure.containerservice.ManagedClusterAzureMonitorProfileArgs(
                metrics=azure.containerservice.ManagedClusterAzureMonitorProfileMetricsArgs(enabled=True)
            )
            if "prometheus_rule_id" in args
            else None,
            enable_rbac=True,
            aad_profile=azure.containerservice.ManagedClusterAADProfileArgs(managed=True, enable_azure_rbac=True),
            oidc_issuer_profile=azure.containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
            security_profile=azure.containerservice.ManagedClusterSecurityProfileArgs(
                workload_identity=azure.containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(
                    enabled=True
                ),
                azure_key_vault_kms=azure.containerservice.AzureKeyVaultKmsArgs(
                    enabled=True,
                    key_id=key.key_uri_with_version,
                    key_vault_network_access=azure.containerservice.KeyVaultNetworkAccessTypes.PUBLIC,
                ),
            ),
            network_profile=azure.containerservice.ContainerServiceNetworkProfileArgs(
                network_plugin=azure.containerservice.NetworkPlugin.AZURE,
                network_plugin_mode=azure.containerservice.NetworkPluginMode.OVERLAY,
                pod_cidr=k.pod_cidr,
                service_cidr=k.service_cidr,
                dns_service_ip=dns_service_ip(k.service_cidr),
                load_balancer_sku=azure.containerservice.LoadBalancerSku.STANDARD,
                outbound_type=azure.containerservice.OutboundType.USER_ASSIGNED_NAT_GATEWAY,
            ),
            agent_pool_profiles=[
                azure.containerservice.ManagedClusterAgentPoolProfileArgs(
                    name=SYSTEM_POOL,
                    mode=azure.containerservice.AgentPoolMode.SYSTEM,
                    type=azure.containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
                    vm_size=k.system_instance_type,
                    count=k.system_nodes,
                    os_disk_size_gb=k.system_root_gib,  # the plan's root volume, a managed (premium SSD) disk
                    os_disk_type=azure.containerservice.OSDiskType.MANAGED,
                    # sorted: azure-native compares lists by index, so a new order would be an update AKS refuses
                    availability_zones=sorted(k.system_zones) or None,
                    vnet_subnet_id=args["subnet_id"],
                    os_type=azure.containerservice.OSType.LINUX,
                    os_sku=k.node_image,
                    enable_node_public_ip=False,
                    max_pods=MAX_PODS,
                )
            ],
            opts=pulumi.ResourceOptions(parent=self, depends_on=roles),
        )

        retention = COMPLIANCE_RETENTION_DAYS if "azure" in plan.audit_logging else AUDIT_RETENTION_DAYS
        workspace = azure.operationalinsights.Workspace(
            f"{name}-logs",
            resource_group_name=rg,
            location=location,
            sku=azure.operationalinsights.WorkspaceSkuArgs(name="PerGB2018"),
            retention_in_days=retention,
            opts=child,
        )
        delete_lock(f"{name}-logs", workspace, "Log Analytics workspace (the control plane's audit log)", self)
        azure.monitor.DiagnosticSetting(
            f"{name}-audit",
            name="aicluster-control-plane",
            resource_uri=cluster.id,
            workspace_id=workspace.id,
            log_analytics_destination_type="Dedicated",  # resource-specific tables (AKSAudit, AKSAuditAdmin)
            logs=[azure.monitor.DiagnosticsLogSettingsArgs(category=c, enabled=True) for c in AUDIT_CATEGORIES],
            opts=child,
        )

        if k.maintenance_window is not None:
            azure.containerservice.MaintenanceConfiguration(
                f"{name}-node-os-window",
                config_name=NODE_OS_SCHEDULE,
                resource_group_name=rg,
                resource_name_=cluster.name,
                maintenance_window=maintenance_window_args(k.maintenance_window),
                opts=child,
            )

        pools = {p.name: p for p in plan.pools}
        self.agent_pool_names = {}
        for group in k.node_groups:
            pool = pools[group.pool]
            agent_pool = azure.containerservice.AgentPool(
                f"{name}-{group.name}",
                resource_group_name=rg,
                resource_name_=cluster.name,
                vnet_subnet_id=args["subnet_id"],
                **agent_pool_args(k, group, pool),
                opts=pulumi.ResourceOptions(parent=self, transformations=[tagging(pool.tags)]),
            )
            self.agent_pool_names[group.name] = agent_pool.name

        if "prometheus_rule_id" in args:  # the add-on sends through the rule associated with the cluster
            azure.monitor.DataCollectionRuleAssociation(
                f"{name}-prometheus",
                association_name=f"{k.cluster_name}-prometheus",
                resource_uri=cluster.id,
                data_collection_rule_id=args["prometheus_rule_id"],
                description="The AKS metrics add-on's Prometheus metrics to the cluster's Azure Monitor workspace",
                opts=child,
            )
        fqdn = cluster.private_fqdn if private else cluster.fqdn
        self.cluster_name = cluster.name
        self.endpoint = pulumi.Output.concat("https://", fqdn, ":443")
        ca = pulumi.Output.all(rg, cluster.name).apply(lambda a: _cluster_ca(a[0], a[1]))
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, self.endpoint, ca).apply(lambda a: kubeconfig(a[0], a[1], a[2]))
        )
        self.oidc_issuer_url = cluster.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else "")
        self.register_outputs(
            {
                "cluster_name": self.cluster_name,
                "endpoint": self.endpoint,
                "kubeconfig": self.kubeconfig,
                "agent_pools": self.agent_pool_names,
                "oidc_issuer_url": self.oidc_issuer_url,
                "audit_workspace_id": workspace.id,
            }
        )


def node_group_outputs(
    groups: Sequence[PlannedNodeGroup], names: dict[str, pulumi.Output[str]]
) -> dict[str, dict[str, Any]]:
    return {
        g.name: {
            "agent_pool": names[g.name],
            "pool": g.pool,
            "fabric_domain": g.domain,
            "nodes": g.nodes,
            "first_node": g.first_node,
            "zone": g.zone,
            "labels": dict(g.labels),
        }
        for g in groups
    }


def build(plan: ClusterPlan, parent: pulumi.ComponentResource, base: AzureBase, outputs: dict[str, Any]) -> None:
    """Kubernetes' part in Azure (components.Part): the AKS cluster with the pools as its agent pools (one per scale
    set) in place of scale sets and a controller; the kubeconfig goes to the stack outputs (a secret), for the
    add-ons."""
    name = plan.name
    opts = pulumi.ResourceOptions(parent=parent)
    kube = plan.kubernetes
    if kube is None or kube.provider != "azure":
        return  # the control plane is in another cloud (the spec refuses a Kubernetes stack over several clouds)
    networks = base.networks
    net = networks[kube.network]
    aks_args: AksClusterArgs = {
        "plan": plan,
        "resource_group_name": net.resource_group_name,
        "subnet_id": net.compute_subnet_id,
    }
    if base.prometheus is not None and plan.monitoring.collector == "aks-metrics-addon":
        aks_args["prometheus_rule_id"] = base.prometheus.rule_id
    cluster = AzureKubernetesCluster(f"{name}-aks", aks_args, opts)
    outputs["kubernetes"] = {
        "service": kube.service,
        "cluster_name": cluster.cluster_name,
        "endpoint": cluster.endpoint,
        "resource_group": net.resource_group_name,
        "oidc_issuer_url": cluster.oidc_issuer_url,
        "node_groups": node_group_outputs(kube.node_groups, cluster.agent_pool_names),
    }
    outputs["kubeconfig"] = cluster.kubeconfig  # a secret
    for pool in plan.pools:  # the stack outputs list every pool, here with its AKS agent pools
        if pool.provider == "azure":
            names = [cluster.agent_pool_names[g.name] for g in kube.node_groups if g.pool == pool.name]
            outputs["pools"][pool.name] = pool_outputs(pool, agent_pool_names=names)
