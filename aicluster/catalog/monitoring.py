"""Typed records of data/monitoring.yaml: the exporters' ports and scrape interval, and the thresholds the alert
rules of `aicluster monitoring` compare with (XIDs, GPU memory, InfiniBand counters, file system space).

Each group cites the source its figures come from (sources/monitoring.yaml); aicluster/monitoring turns them into
Prometheus rules. This module imports nothing of the project (layering rule: the catalog is a leaf).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .models import Sourced, _Record


class Exporters(Sourced):
    """Where the exporters listen and how often Prometheus scrapes them."""

    dcgm_exporter_port: Annotated[int, Field(gt=0, lt=65536, description="dcgm-exporter's port (e.g. `9400`).")]
    node_exporter_port: Annotated[int, Field(gt=0, lt=65536, description="node_exporter's port (e.g. `9100`).")]
    slurm_exporter_port: Annotated[
        int, Field(gt=0, lt=65536, description="The Slurm exporter's port on the controller (e.g. `9341`).")
    ]
    scrape_interval_s: Annotated[int, Field(gt=0, description="Scrape interval in seconds (e.g. `15`).")]
    rate_interval: Annotated[
        str, Field(pattern=r"^[0-9]+[smh]$", description="Range of rate()/increase() and `for` of states (e.g. `5m`).")
    ]


class XidRules(Sourced):
    """Which XID errors (the last one, dcgm-exporter's DCGM_FI_DEV_XID_ERRORS gauge) page and which warn."""

    fatal: Annotated[tuple[int, ...], Field(min_length=1, description="XIDs the health watch fails (e.g. `48`).")]
    warning: Annotated[tuple[int, ...], Field(description="XIDs the health watch warns about (e.g. `94`).")]
    fallen_off_bus: Annotated[int, Field(description="The XID of a GPU fallen off the bus (`79`): power-cycle.")]

    @model_validator(mode="after")
    def _disjoint(self) -> XidRules:
        both = set(self.fatal) & set(self.warning)
        if both:
            raise ValueError(f"xid: {sorted(both)} both fatal and warning; keep each XID in one list")
        if self.fallen_off_bus not in self.fatal:
            raise ValueError("xid: fallen_off_bus must be one of the fatal XIDs")
        return self


class GpuMemoryRules(Sourced):
    """Row remapping limits (Ampere and later)."""

    uncorrectable_remapped_rows_warning: Annotated[
        int, Field(gt=0, description="Uncorrectable remapped rows from which the memory watch warns (e.g. `512`).")
    ]


class FabricRules(Sourced):
    """InfiniBand port states and error-counter limits (node_exporter's infiniband collector)."""

    port_state_active: Annotated[int, Field(description="`state_id` of an ACTIVE port (`4`).")]
    physical_state_linkup: Annotated[int, Field(description="`physical_state_id` of LinkUp (`5`).")]
    symbol_errors_per_hour_max: Annotated[
        int, Field(gt=0, description="Symbol errors per hour above which the BER is out of spec (e.g. `120`).")
    ]
    link_error_recoveries_per_minute_max: Annotated[int, Field(gt=0, description="e.g. `5`.")]
    receive_errors_per_second_max: Annotated[int, Field(gt=0, description="e.g. `10`.")]


class FilesystemRules(Sourced):
    """Free space left on a shared file system, in percent, below which the rules warn and page."""

    available_percent_warning: Annotated[float, Field(gt=0, lt=100, description="e.g. `5`.")]
    available_percent_critical: Annotated[float, Field(gt=0, lt=100, description="e.g. `3`.")]

    @model_validator(mode="after")
    def _ordered(self) -> FilesystemRules:
        if self.available_percent_critical >= self.available_percent_warning:
            raise ValueError("filesystem: available_percent_critical must be below available_percent_warning")
        return self


Collector = Literal["remote-write", "amp-scraper", "gke-managed-collection", "aks-metrics-addon"]
SchedulerKind = Literal["slurm", "kubernetes"]


class ManagedPrometheus(Sourced):
    """A cloud's managed Prometheus service and how each scheduler's metrics reach it (`monitoring.prometheus:
    managed`); a scheduler with no collector is refused with the reason in `refused`."""

    service: Annotated[str, Field(description="Service id (e.g. `amazon-managed-prometheus`).")]
    name: Annotated[str, Field(description="The service's name as its vendor writes it.")]
    collectors: Annotated[
        dict[SchedulerKind, Collector],
        Field(description="Scheduler -> how metrics reach the service (e.g. `slurm: remote-write`)."),
    ]
    refused: Annotated[
        dict[SchedulerKind, str],
        Field(default_factory=dict, description="Scheduler -> why the cloud offers it no managed option."),
    ]
    remote_write_action: Annotated[
        str | None, Field(description="The IAM action a remote-writing identity needs (e.g. `aps:RemoteWrite`).")
    ] = None
    remote_write_auth: Annotated[
        Literal["sigv4"] | None,
        Field(description="How Prometheus authenticates its remote_write (`sigv4`: AWS Signature v4, its region)."),
    ] = None
    rule_severities: Annotated[
        dict[str, int],
        Field(
            default_factory=dict,
            description="An alert's `severity` label -> the service's number for it, where its rules take one "
            "(e.g. `critical: 0` in an Azure Prometheus rule group); none: the label is all it takes.",
        ),
    ]

    @model_validator(mode="after")
    def _each_once(self) -> ManagedPrometheus:
        both = set(self.collectors) & set(self.refused)
        missing = {"slurm", "kubernetes"} - set(self.collectors) - set(self.refused)
        if both or missing:
            raise ValueError(
                f"managed_prometheus {self.service}: give each scheduler either a collector or a refusal "
                f"(both: {sorted(both)}; neither: {sorted(missing)})"
            )
        return self


class ScrapeAccess(Sourced):
    """What a Kubernetes cluster's managed collector needs inside the cluster to scrape the GPU exporters (issue 29):
    the RBAC its Kubernetes user is bound to (amp-scraper), the ConfigMap its custom scrape jobs go in
    (aks-metrics-addon), or the cluster's metric packages that install and scrape an exporter themselves
    (gke-managed-collection). Only the fields of the record's own collector are set."""

    cluster_role: Annotated[
        str | None, Field(description="ClusterRole the collector's user gets (`aps-collector-role`).")
    ] = None
    role_binding: Annotated[
        str | None, Field(description="ClusterRoleBinding of that role (`aps-collector-user-role-binding`).")
    ] = None
    user: Annotated[str | None, Field(description="Kubernetes user the collector acts as (`aps-collector-user`).")] = (
        None
    )
    config_map: Annotated[
        str | None,
        Field(description="ConfigMap whose scrape jobs the collector runs (`ama-metrics-prometheus-config`)."),
    ] = None
    config_namespace: Annotated[str | None, Field(description="That ConfigMap's namespace (`kube-system`).")] = None
    config_key: Annotated[str | None, Field(description="Its data key holding the Prometheus config.")] = None
    components: Annotated[
        tuple[str, ...],
        Field(default=(), description="Cluster metric packages to enable (e.g. `DCGM`: GKE's managed dcgm-exporter)."),
    ]
    min_scrape_interval_s: Annotated[
        int | None, Field(description="The shortest scrape interval the collector accepts (AMP scraper: `30`).")
    ] = None
    pod_monitoring: Annotated[
        str | None,
        Field(
            description="apiVersion/kind of the object that makes the collector scrape pods; its name becomes their "
            "`job` label (e.g. `monitoring.googleapis.com/v1/ClusterPodMonitoring`)."
        ),
    ] = None
    node_job: Annotated[
        str | None,
        Field(description="The job name of the collector's own node-exporter target, where it has one (e.g. `node`)."),
    ] = None
    node_exporter_port: Annotated[
        int | None,
        Field(gt=0, lt=65536, description="The port the collector's own node-exporter listens on (e.g. `19100`)."),
    ] = None
    settings_config_map: Annotated[
        str | None,
        Field(
            description="ConfigMap of the collector's settings, in config_namespace (`ama-metrics-settings-configmap`)."
        ),
    ] = None
    settings_schema: Annotated[
        str | None, Field(description="The settings ConfigMap's schema-version the collector parses (e.g. `v1`).")
    ] = None
    node_metrics_keep: Annotated[
        str | None,
        Field(
            description="Regex of the node-exporter metrics the alert rules read that the collector's default "
            "(minimal ingestion) profile drops, added to its keep list (e.g. `node_infiniband_.*`)."
        ),
    ] = None


class MonitoringData(_Record):
    """Everything in data/monitoring.yaml."""

    exporters: Exporters
    xid: XidRules
    gpu_memory: GpuMemoryRules
    fabric: FabricRules
    filesystem: FilesystemRules
    managed_prometheus: Annotated[
        dict[str, ManagedPrometheus],
        Field(default_factory=dict, description="Provider -> its managed Prometheus (none: no option)."),
    ]
    scrape_access: Annotated[
        dict[Collector, ScrapeAccess],
        Field(default_factory=dict, description="Kubernetes collector -> what it needs inside the cluster."),
    ]

    def records(self) -> dict[str, Sourced]:
        return {
            "exporters": self.exporters,
            "xid": self.xid,
            "gpu_memory": self.gpu_memory,
            "fabric": self.fabric,
            "filesystem": self.filesystem,
            **{f"managed_prometheus {p}": m for p, m in self.managed_prometheus.items()},
            **{f"scrape_access {c}": a for c, a in self.scrape_access.items()},
        }
