"""A GKE Standard cluster from `plan.kubernetes`: a regional control plane in the host VPC the GcpNetwork component
made, and one node pool per planned node group, wired to the same NIC VPCs and subnets the Slurm path gives the
pool's VMs (components/gcp/gpu_pool.py).

- Control plane: private nodes (no node has an external address; Cloud NAT gives egress), a private or an
  authorized-networks-only public endpoint, Dataplane V2 (`ADVANCED_DATAPATH`, which GKE multi-networking needs),
  multi-networking when a pool has GPU NIC VPCs, VPC-native pod and service ranges from the plan, Kubernetes
  secrets encrypted with a Cloud KMS key (application-layer secrets encryption), control-plane and workload logs,
  Workload Identity, release channel REGULAR (standard support) or EXTENDED (extended support).
- Maintenance window: where pools have `rollout.strategy: window`, their shared window becomes the cluster's
  recurring window (GKE has one per cluster; the planner refuses pools that ask for different ones, and a window
  with less than GKE's 48 hours in 32 days); otherwise a daily window from 03:00 UTC.
- Upgrades: a cluster on a release channel cannot turn node auto-upgrade off (the API answers "Auto_upgrade
  cannot be false when release_channel REGULAR is set"), and a node upgrade drains the node, which kills the
  training job on it. So node pools keep auto-upgrade on, as GKE requires, and the cluster carries a maintenance
  exclusion of scope NO_MINOR_OR_NODE_UPGRADES until the minor's end of support: the control plane still gets
  its patches, nodes are upgraded only when the operator lifts the exclusion between jobs.
- NVLink domains (A4X): one node pool per domain (GCP sub-block) under a resource policy with a workload policy
  (HIGH_THROUGHPUT, accelerator topology 1x72), labelled with the domain; the Arm image where the catalog has one
  (GKE taints Arm nodes kubernetes.io/arch=arm64:NoSchedule itself: the plan tolerates it, the pool does not set it).
- GPU node pools: one zone, compact placement under a resource policy with the plan's max distance, GKE-managed
  NVIDIA drivers (`LATEST`), gVNIC, the plan's labels and taint, the pool's reservation / spot / flex-start
  model, one additional node network per GPU NIC, surge upgrades one node at a time with no extra node (a GPU
  node is the scarce resource, and a reservation holds no spare).
- TPU node pools: one per slice (node group), in the slice's zone, with the plan's GKE machine type (the catalog's
  VM of the slice) and the plan's labels and taint. A multi-host slice has one node per TPU VM (the plan's hosts
  per slice) under a COMPACT placement policy with the slice topology (e.g. 4x4x8): GKE creates and repairs the
  slice as one unit. The planner refuses a slice size whose topology the catalog does not document.
- kubeconfig: the cluster endpoint and CA with the `gke-gcloud-auth-plugin` exec credential, as a secret.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import pulumi
import pulumi_gcp as gcp
import yaml

from aicluster.plan import (
    ClusterPlan,
    PlannedMaintenanceWindow,
    PlannedNodeGroup,
    PlannedPool,
    Taint,
    gcp_labels,
)
from aicluster.schedulers.kubernetes.collector import gke_monitoring_components
from aicluster.schedulers.kubernetes.render import gke_accelerator

from ..gcp import GcpBase
from ..gcp.gpu_pool import RESERVATION_KEY, SCOPES
from ..outputs import learned, pool_outputs

# The control plane's /28 (GKE peers it into the host VPC): the first of these that no network of the plan, its
# pod range, its service range or a network joined over VPN uses. 172.16.0.0/28 is GKE's own example range
# for private clusters; the plan's networks are carved from 10.0.0.0/8, pods from 100.64.0.0/10, services from
# 172.20.0.0/16 (or 192.168.0.0/16, 172.21.0.0/16).
MASTER_CIDRS = ("172.16.0.0/28", "172.16.0.16/28", "172.16.0.32/28", "172.31.255.240/28")
SECRETS_KEY_ROTATION = "7776000s"  # 90 days
LOG_COMPONENTS = ["SYSTEM_COMPONENTS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER", "WORKLOADS"]
RELEASE_CHANNEL = {"standard": "REGULAR", "extended": "EXTENDED"}
TAINT_EFFECT = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
AUTH_PLUGIN = "gke-gcloud-auth-plugin"
KMS_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
NODE_ROLE = "roles/container.defaultNodeServiceAccount"  # logs, metrics and image pulls for a custom node account


@dataclass(frozen=True)
class TpuShape:
    """What a GKE TPU node pool takes from the plan's TpuDetails: the TPU VM's machine type (e.g.
    `ct5p-hightpu-4t`), the slice topology (e.g. `4x4x8`) and the nodes of one slice (its VMs)."""

    machine_type: str
    topology: str
    nodes: int


def tpu_shape(pool: PlannedPool) -> TpuShape:
    """The GKE shape of one slice of a TPU pool; the planner refuses a slice size without one under kubernetes."""
    t = pool.tpu
    assert t is not None
    if t.gke_machine_type is None or t.topology is None:
        raise ValueError(
            f"pool {pool.name}: the plan has no GKE machine type or topology for {t.accelerator_type}: plan the stack "
            "with scheduler kind kubernetes (the planner names the slice sizes GKE takes)"
        )
    return TpuShape(machine_type=t.gke_machine_type, topology=t.topology, nodes=t.hosts_per_slice)


class GkeClusterArgs(TypedDict):
    plan: ClusterPlan
    project: pulumi.Input[str]
    network_id: pulumi.Input[str]  # host VPC self link
    subnet_id: pulumi.Input[str]  # the compute subnet's self link
    network_cidr: str  # the host network's CIDR (a private endpoint admits it)
    learned_cidrs: list[str]  # networks joined over VPN: a private endpoint admits them too
    vpc_ids: Mapping[str, pulumi.Output[str]]  # GcpNic.vpc -> network self link ("" = host)
    subnet_ids: Mapping[tuple[str, int], pulumi.Output[str]]  # (subnet role, index) -> subnetwork self link
    service_account_email: pulumi.Input[str]


RRULE_DAYS = {"mon": "MO", "tue": "TU", "wed": "WE", "thu": "TH", "fri": "FR", "sat": "SA", "sun": "SU"}
# the first date of the recurring window: its date only starts the recurrence (the SDK's own example uses a past date)
WINDOW_EPOCH = datetime.datetime(2019, 1, 1, tzinfo=datetime.UTC)


def maintenance_window(window: PlannedMaintenanceWindow | None) -> dict[str, Any]:
    """The cluster's maintenance window: the pools' shared weekly window as GKE's recurring window (RFC3339 Zulu
    start and end, an RRULE of the days), else a daily window from 03:00 UTC (GKE's 4 hours)."""
    if window is None:
        return {
            "daily_maintenance_window": gcp.container.ClusterMaintenancePolicyDailyMaintenanceWindowArgs(
                start_time="03:00"
            )
        }
    hh, mm = (int(x) for x in window.start.split(":"))
    start = WINDOW_EPOCH.replace(hour=hh, minute=mm)
    end = start + datetime.timedelta(hours=window.hours)

    def zulu(t: datetime.datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")

    return {
        "recurring_window": gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
            start_time=zulu(start),
            end_time=zulu(end),
            recurrence="FREQ=WEEKLY;BYDAY=" + ",".join(RRULE_DAYS[d] for d in window.days),
        )
    }


def master_cidr(plan: ClusterPlan, learned: list[str]) -> str:
    """The first of MASTER_CIDRS clear of every address range the cluster and its joined networks use."""
    k = plan.kubernetes
    assert k is not None
    used = [n.cidr for n in plan.networks] + [s.cidr for n in plan.networks for s in n.subnets]
    used += [c for c in (k.pod_cidr, k.service_cidr) if c] + learned
    taken = [ipaddress.IPv4Network(c) for c in used]
    for candidate in MASTER_CIDRS:
        block = ipaddress.IPv4Network(candidate)
        if not any(block.overlaps(t) for t in taken):
            return candidate
    raise ValueError(f"every control-plane range aicluster tries ({', '.join(MASTER_CIDRS)}) overlaps a network")


def kubeconfig(cluster: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig for the cluster that gets its token from gke-gcloud-auth-plugin (the gcloud credentials)."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": cluster,
                    "cluster": {"server": f"https://{endpoint}", "certificate-authority-data": ca_certificate},
                }
            ],
            "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
            "current-context": cluster,
            "users": [
                {
                    "name": cluster,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": AUTH_PLUGIN,
                            "provideClusterInfo": True,
                            "installHint": "Install gke-gcloud-auth-plugin: gcloud components install "
                            "gke-gcloud-auth-plugin",
                        }
                    },
                }
            ],
        },
        sort_keys=False,
    )


def taints(group: PlannedNodeGroup) -> list[gcp.container.NodePoolNodeConfigTaintArgs]:
    return [_taint(t) for t in group.taints]


def _taint(t: Taint) -> gcp.container.NodePoolNodeConfigTaintArgs:
    return gcp.container.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value, effect=TAINT_EFFECT[t.effect])


def _name(link: pulumi.Output[str]) -> pulumi.Output[str]:
    """A network or subnetwork's bare name from its self link (what GKE's additional node networks take)."""
    return link.apply(lambda s: s.rsplit("/", 1)[-1])


class GkeCluster(pulumi.ComponentResource):
    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]  # a secret
    node_pools: dict[str, pulumi.Output[str]]  # PlannedNodeGroup.name -> node pool name

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:gcp:GkeCluster", name, {}, opts)
        plan = args["plan"]
        k = plan.kubernetes
        assert k is not None, "GkeCluster builds a GKE plan"
        assert k.provider == "gcp", "GkeCluster builds a GKE plan"
        pools = {p.name: p for p in plan.pools}
        shapes = {g.pool: tpu_shape(pools[g.pool]) for g in k.node_groups if g.accelerator_kind == "tpu"}
        for g in k.node_groups:  # refuse before creating anything
            if g.accelerator_kind == "gpu":
                gke_accelerator(pools[g.pool])
        child = pulumi.ResourceOptions(parent=self)

        key, grant = self._secrets_key(name, k.region, k.cluster_name, args["project"], child)
        multi_network = any(
            len(pools[g.pool].gcp.nics) > 1  # type: ignore[union-attr]
            for g in k.node_groups
            if g.accelerator_kind == "gpu"
        )
        public = k.endpoint == "public"
        allowed = list(k.authorized_networks) if public else [args["network_cidr"], *args["learned_cidrs"]]
        start = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        cluster = gcp.container.Cluster(
            f"{name}-cluster",
            name=k.cluster_name,
            location=k.region,  # regional: the control plane is replicated across the region's zones
            network=args["network_id"],
            subnetwork=args["subnet_id"],
            remove_default_node_pool=True,
            initial_node_count=1,
            min_master_version=k.version,
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=RELEASE_CHANNEL[k.support]),
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True,
                enable_private_endpoint=not public,
                master_ipv4_cidr_block=master_cidr(plan, args["learned_cidrs"]),
            ),
            master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(cidr_block=c, display_name=c)
                    for c in allowed
                ],
                gcp_public_cidrs_access_enabled=False,
            ),
            datapath_provider="ADVANCED_DATAPATH",
            enable_multi_networking=multi_network,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_ipv4_cidr_block=k.pod_cidr, services_ipv4_cidr_block=k.service_cidr
            ),
            database_encryption=gcp.container.ClusterDatabaseEncryptionArgs(state="ENCRYPTED", key_name=key.id),
            logging_config=gcp.container.ClusterLoggingConfigArgs(enable_components=LOG_COMPONENTS),
            # managed Prometheus: Google's managed collection (collectors as a DaemonSet, PodMonitoring resources);
            # with GPU node groups the DCGM package too (GKE's own dcgm-exporter and its ClusterPodMonitoring: no GPU
            # Operator runs on GKE)
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
                enable_components=gke_monitoring_components(plan) or None,
            )
            if plan.monitoring.collector == "gke-managed-collection"
            else None,
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=pulumi.Output.from_input(args["project"]).apply(lambda p: f"{p}.svc.id.goog")
            ),
            maintenance_policy=gcp.container.ClusterMaintenancePolicyArgs(
                **maintenance_window(k.maintenance_window),
                maintenance_exclusions=[
                    gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                        exclusion_name="no-node-upgrades-during-training",
                        start_time=start,
                        exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                            scope="NO_MINOR_OR_NODE_UPGRADES", end_time_behavior="UNTIL_END_OF_SUPPORT"
                        ),
                    )
                ],
            ),
            resource_labels=gcp_labels(plan.tags),
            # as everywhere in aicluster, the stack's lifecycle (`aicluster destroy`) decides what is deleted
            deletion_protection=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[grant],  # GKE checks at creation that its agent may use the key
                # the exclusion starts when the cluster is created; later runs keep that start
                ignore_changes=["maintenancePolicy.maintenanceExclusions[0].startTime"],
            ),
        )
        gcp.projects.IAMMember(
            f"{name}-node-role",
            project=args["project"],
            role=NODE_ROLE,
            member=pulumi.Output.from_input(args["service_account_email"]).apply(lambda e: f"serviceAccount:{e}"),
            opts=child,
        )
        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.node_pools = {}
        pool_opts = pulumi.ResourceOptions(parent=self, depends_on=[cluster])
        self._system_pool(name, plan, cluster, args, pool_opts)
        for g in k.node_groups:
            pool = pools[g.pool]
            if g.accelerator_kind == "tpu":
                self.node_pools[g.name] = self._tpu_pool(name, g, pool, shapes[g.pool], cluster, args, pool_opts)
            else:
                self.node_pools[g.name] = self._gpu_pool(name, g, pool, cluster, args, pool_opts)
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(
                cluster.name, cluster.endpoint, cluster.master_auth.apply(lambda m: m.cluster_ca_certificate)
            ).apply(lambda v: kubeconfig(v[0], v[1], v[2] or ""))
        )
        self.register_outputs(
            {"cluster_name": self.cluster_name, "endpoint": self.endpoint, "node_pools": self.node_pools}
        )

    def _secrets_key(
        self, name: str, region: str, cluster: str, project: pulumi.Input[str], child: pulumi.ResourceOptions
    ) -> tuple[gcp.kms.CryptoKey, gcp.kms.CryptoKeyIAMMember]:
        """The Cloud KMS key GKE encrypts Kubernetes secrets with, in the cluster's region, and the grant that lets
        the GKE service agent (service-<project number>@container-engine-robot) use it. The agent's address comes
        from the Service Usage API (a resource, not a lookup: no invoke, so the offline preview runs)."""
        ring = gcp.kms.KeyRing(f"{name}-secrets", name=f"{cluster}-gke", location=region, opts=child)
        key = gcp.kms.CryptoKey(
            f"{name}-secrets",
            name="kubernetes-secrets",
            key_ring=ring.id,
            purpose="ENCRYPT_DECRYPT",
            rotation_period=SECRETS_KEY_ROTATION,
            opts=child,
        )
        agent = gcp.projects.ServiceIdentity(
            f"{name}-gke-agent", project=project, service="container.googleapis.com", opts=child
        )
        grant = gcp.kms.CryptoKeyIAMMember(
            f"{name}-secrets-gke-agent", crypto_key_id=key.id, role=KMS_ROLE, member=agent.member, opts=child
        )
        return key, grant

    def _node_config_common(self, pool_tags: Mapping[str, str], args: GkeClusterArgs) -> dict[str, object]:
        return {
            "service_account": args["service_account_email"],
            "oauth_scopes": SCOPES,
            "resource_labels": gcp_labels(pool_tags),
            "workload_metadata_config": gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
        }

    def _system_pool(
        self,
        name: str,
        plan: ClusterPlan,
        cluster: gcp.container.Cluster,
        args: GkeClusterArgs,
        opts: pulumi.ResourceOptions,
    ) -> None:
        k = plan.kubernetes
        assert k is not None
        per_zone = -(-k.system_nodes // max(1, len(k.system_zones)))  # node_count is per zone of a regional pool
        gcp.container.NodePool(
            f"{name}-system",
            name="system",
            cluster=cluster.id,
            location=k.region,
            node_locations=list(k.system_zones),
            node_count=per_zone,
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=k.system_instance_type,
                image_type=k.node_image,
                # the plan's root volume (size and disk type: the catalog's boot disk service is the disk type's name)
                disk_size_gb=k.system_root_gib,
                disk_type=k.system_root_disk_service,
                labels={"aicluster.io/pool": "system"},
                shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                    enable_secure_boot=True, enable_integrity_monitoring=True
                ),
                **self._node_config_common(plan.tags, args),  # type: ignore[arg-type]
            ),
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            opts=opts,
        )

    def _gpu_pool(
        self,
        name: str,
        g: PlannedNodeGroup,
        pool: PlannedPool,
        cluster: gcp.container.Cluster,
        args: GkeClusterArgs,
        opts: pulumi.ResourceOptions,
    ) -> pulumi.Output[str]:
        d = pool.gcp
        assert d is not None
        assert g.zone is not None
        group = d.groups[g.index]
        placement = None
        if d.placement == "compact" and group.gpu_topology is not None:
            # an NVLink domain: GKE takes a workload policy asking for the sub-block's accelerator topology (1x72),
            # as Cluster Toolkit's gke-a4x attaches to its A4X node pools, one node pool per sub-block here
            policy = gcp.compute.ResourcePolicy(
                f"{name}-{g.name}-placement",
                region=pool.region,
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT", accelerator_topology=group.gpu_topology
                ),
                description=f"NVLink domain {g.nvlink_domain} for GKE node pool {g.name}: {g.nodes} "
                f"{pool.instance_type} nodes in one sub-block ({group.gpu_topology})",
                opts=pulumi.ResourceOptions(parent=self),
            )
            placement = gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", policy_name=policy.name)
        elif d.placement == "compact":
            policy = gcp.compute.ResourcePolicy(
                f"{name}-{g.name}-placement",
                region=pool.region,
                group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
                    collocation="COLLOCATED", max_distance=group.max_distance
                ),
                description=f"compact placement for GKE node pool {g.name}: {g.nodes} {pool.instance_type} nodes",
                opts=pulumi.ResourceOptions(parent=self),
            )
            placement = gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", policy_name=policy.name)
        flex = d.provisioning_model == "FLEX_START"
        affinity = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="NO_RESERVATION" if flex else d.reservation_affinity,
            key=RESERVATION_KEY if d.reservation and not flex else None,
            values=[d.reservation] if d.reservation and not flex else None,
        )
        extra_networks = [
            gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
                network=_name(args["vpc_ids"][nic.vpc]),
                subnetwork=_name(args["subnet_ids"][(nic.subnet_role, nic.subnet_index)]),
            )
            for nic in d.nics[1:]
        ]
        node_pool = gcp.container.NodePool(
            f"{name}-{g.name}",
            name=g.name,
            cluster=cluster.id,
            location=pool.region,
            node_locations=[g.zone],
            # flex-start capacity comes all at once through the autoscaler's provisioning request
            node_count=None if flex else g.nodes,
            initial_node_count=0 if flex else None,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=0, total_max_node_count=g.nodes, location_policy="ANY"
            )
            if flex
            else None,
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=pool.instance_type,
                image_type=self._image(args, g),
                disk_size_gb=d.root_volume_gib,
                disk_type=d.boot_disk_type,
                guest_accelerators=[
                    gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                        type=gke_accelerator(pool),
                        count=pool.accelerators_per_node,
                        gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                            gpu_driver_version="LATEST"
                        ),
                    )
                ],
                gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
                labels=dict(g.labels),
                taints=taints(g),
                reservation_affinity=affinity,
                spot=d.provisioning_model == "SPOT",
                flex_start=True if flex else None,
                max_run_duration=f"{d.max_run_duration_s}s" if flex and d.max_run_duration_s else None,
                shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                    # GKE installs signed drivers on COS, so Secure Boot can stay on
                    enable_secure_boot=True,
                    enable_integrity_monitoring=d.shielded_vm,
                ),
                **self._node_config_common(pool.tags, args),  # type: ignore[arg-type]
            ),
            network_config=gcp.container.NodePoolNetworkConfigArgs(additional_node_network_configs=extra_networks)
            if extra_networks
            else None,
            placement_policy=placement,
            # auto-upgrade stays on (a release channel requires it); the cluster's maintenance exclusion holds node
            # upgrades back, since an upgrade drains the node and kills the job on it
            management=gcp.container.NodePoolManagementArgs(auto_repair=not flex, auto_upgrade=True),
            # no surge node (GPU capacity is bought to the node); the pool's rollout.max_unavailable at a time
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                strategy="SURGE", max_surge=0, max_unavailable=g.max_unavailable
            ),
            opts=opts,
        )
        return node_pool.name

    def _tpu_pool(
        self,
        name: str,
        g: PlannedNodeGroup,
        pool: PlannedPool,
        shape: TpuShape,
        cluster: gcp.container.Cluster,
        args: GkeClusterArgs,
        opts: pulumi.ResourceOptions,
    ) -> pulumi.Output[str]:
        """One TPU slice: as many nodes as the slice has VMs; a multi-host slice placed together in its topology."""
        t = pool.tpu
        assert t is not None
        assert g.zone is not None
        multi_host = shape.nodes > 1
        node_pool = gcp.container.NodePool(
            f"{name}-{g.name}",
            name=g.name,
            cluster=cluster.id,
            location=pool.region,
            node_locations=[g.zone],
            node_count=shape.nodes,
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=shape.machine_type,
                image_type=self._image(args, g),
                labels=dict(g.labels),
                taints=taints(g),
                spot=t.spot,
                reservation_affinity=gcp.container.NodePoolNodeConfigReservationAffinityArgs(
                    consume_reservation_type="ANY_RESERVATION" if t.reserved else "NO_RESERVATION"
                ),
                **self._node_config_common(pool.tags, args),  # type: ignore[arg-type]
            ),
            # a single-host slice is one VM: no placement policy, the machine type alone gives its chips
            placement_policy=gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", tpu_topology=shape.topology)
            if multi_host
            else None,
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                strategy="SURGE", max_surge=0, max_unavailable=1
            ),
            opts=opts,
        )
        return node_pool.name

    def _image(self, args: GkeClusterArgs, group: PlannedNodeGroup) -> str:
        k = args["plan"].kubernetes
        assert k is not None
        return k.node_image_of(group)


def build(plan: ClusterPlan, parent: pulumi.ComponentResource, base: GcpBase, outputs: dict[str, Any]) -> None:
    """Kubernetes' part in GCP (components.Part): the GKE cluster and its node pools in place of the MIGs, TPU VMs
    and slurmctld; the GPU VPCs stay, and the node pools attach to them."""
    kube = plan.kubernetes
    if kube is None or kube.provider != "gcp":
        return  # the control plane is in another cloud (the spec refuses a Kubernetes stack over several clouds)
    net = base.networks[kube.network]
    service_account_email = base.service_account_email
    planned = next(n for n in plan.networks if n.key == kube.network)
    gke = GkeCluster(
        f"{plan.name}-gke",
        {
            "plan": plan,
            "project": net.project,
            "network_id": net.host_network_id,
            "subnet_id": net.subnet_ids[("compute", 0)],
            "network_cidr": planned.cidr,
            "learned_cidrs": learned(plan, kube.network),
            "vpc_ids": net.vpc_ids,
            "subnet_ids": net.subnet_ids,
            "service_account_email": service_account_email,
        },
        pulumi.ResourceOptions(parent=parent),
    )
    outputs["kubernetes"] = {
        "service": kube.service,
        "cluster_name": gke.cluster_name,
        "endpoint": gke.endpoint,
        "node_groups": {
            g.name: {
                "node_pool": gke.node_pools[g.name],
                "pool": g.pool,
                "zone": g.zone,
                "nodes": g.nodes,
                "accelerator_kind": g.accelerator_kind,
                "labels": g.labels,
            }
            for g in kube.node_groups
        },
    }
    outputs["kubeconfig"] = gke.kubeconfig
    m = plan.monitoring
    if m.collector == "gke-managed-collection":
        outputs["monitoring"] = {"service": m.service, "collector": m.collector, "project": net.project}
    for pool in plan.pools:  # the stack outputs list every pool, here with its GKE node pools
        if pool.provider == "gcp":
            names = [gke.node_pools[g.name] for g in kube.node_groups if g.pool == pool.name]
            outputs["pools"][pool.name] = pool_outputs(pool, node_pool_names=names)
