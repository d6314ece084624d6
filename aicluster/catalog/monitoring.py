"""Typed records of data/monitoring.yaml: the exporters' ports and scrape interval, and the thresholds the alert
rules of `aicluster monitoring` compare with (XIDs, GPU memory, InfiniBand counters, file system space).

Each group cites the source its figures come from (sources/monitoring.yaml); aicluster/monitoring turns them into
Prometheus rules. This module imports nothing of the project (layering rule: the catalog is a leaf).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from .models import InstanceType, Sourced, _Record
from .pricing import cents


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


class SeriesCounts(Sourced):
    """How many series each scrape target sends (every scrape a sample of each): what a managed Prometheus bills."""

    per_target_synthetic: Annotated[
        int, Field(ge=0, description="Series Prometheus adds per target (`up`, `scrape_*`: `5`).")
    ]
    node_exporter_base: Annotated[int, Field(ge=0, description="node_exporter's series on a host, CPUs aside.")]
    node_exporter_per_vcpu: Annotated[int, Field(ge=0, description="node_exporter's series per vCPU (e.g. `13`).")]
    infiniband_per_port: Annotated[
        int, Field(ge=0, description="Series of node_exporter's infiniband collector per RDMA port (e.g. `27`).")
    ]
    dcgm_per_gpu: Annotated[int, Field(ge=0, description="dcgm-exporter series per GPU: our counters file's fields.")]

    def node(self, vcpus: int, gpus: int, rdma_ports: int) -> int:
        """Series of one node: node_exporter (CPUs, RDMA ports) and, on a GPU node, dcgm-exporter, each a target."""
        series = self.per_target_synthetic + self.node_exporter_base + self.node_exporter_per_vcpu * vcpus
        series += self.infiniband_per_port * rdma_ports
        if gpus:
            series += self.per_target_synthetic + self.dcgm_per_gpu * gpus
        return series


class IngestionTier(_Record):
    up_to: Annotated[
        int | None, Field(gt=0, description="Cumulative samples a month the tier ends at; null: no end.")
    ] = None
    usd: Annotated[float, Field(gt=0, description="USD per `per_samples` samples in this tier.")]


class Ingestion(Sourced):
    """A managed Prometheus's price for metric samples ingested, by the month's cumulative count."""

    per_samples: Annotated[int, Field(gt=0, description="Samples a tier's price is for (e.g. `10000000`).")]
    tiers: Annotated[tuple[IngestionTier, ...], Field(min_length=1, description="In order; the last has no end.")]
    regions: Annotated[
        tuple[str, ...] | None,
        Field(description="Regions the prices are verified for; null: one price everywhere (a global service)."),
    ] = None

    @model_validator(mode="after")
    def _ordered(self) -> Ingestion:
        inner = [t.up_to for t in self.tiers[:-1]]
        ends = [e for e in inner if e is not None]
        if self.tiers[-1].up_to is not None or len(ends) != len(inner) or ends != sorted(set(ends)):
            raise ValueError("ingestion tiers: ascending up_to, the last one null (no end)")
        return self

    def priced_in(self, region: str | None) -> bool:
        return self.regions is None or region in self.regions

    def month(self, samples: float) -> float:
        """USD for `samples` ingested in a month, each tier at its own rate (unrounded)."""
        usd, start = 0.0, 0.0
        for tier in self.tiers:
            end = float(tier.up_to) if tier.up_to is not None else max(samples, start)
            if samples > start:
                usd += (min(samples, end) - start) / self.per_samples * tier.usd
            start = end
        return usd


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


ReceiverKind = Literal["email", "slack", "pagerduty", "webhook", "sns"]


class Alertmanager(Sourced):
    """The Alertmanager a self-hosted Prometheus sends its alerts to (Debian's prometheus-alertmanager on the Slurm
    controller), and which of its receiver fields read a secret from a file: the stack names the secret, the
    configuration names the file, so no secret is ever in a stack, a plan or a written file."""

    version: Annotated[
        str, Field(description="The Alertmanager release the fields below were read from (e.g. `0.25.0`).")
    ]
    port: Annotated[int, Field(gt=0, lt=65536, description="Alertmanager's listen port (e.g. `9093`).")]
    secret_file_fields: Annotated[
        dict[ReceiverKind, str],
        Field(
            description="Receiver kind -> the field of its config that reads the secret from a file, a dotted path "
            "below the receiver's entry (e.g. `slack: api_url_file`)."
        ),
    ]


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
    ingestion: Annotated[
        Ingestion | None,
        Field(description="The price of samples ingested; null: not verified, so the service is shown unpriced."),
    ] = None
    alert_receivers: Annotated[
        tuple[ReceiverKind, ...],
        Field(
            default=(),
            description="Receiver kinds the service's own alert manager delivers to (e.g. `sns`); none: it has no "
            "Alertmanager-compatible routing (see alerts_refused).",
        ),
    ]
    alerts_refused: Annotated[
        str | None, Field(description="Why `monitoring.alerts` cannot be given to the service, where it cannot.")
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


# The node states rules and dashboards count (sinfo's, as the exporter's slurm_nodes_<state> gauges name them)
SlurmNodeState = Literal["down", "drain", "alloc", "idle", "mix"]


class SlurmExporter(Sourced):
    """The Slurm exporter the slurm_exporter role installs on the controller (SckyzO/slurm_exporter): the release,
    where its archives and checksums are, and the flags and collectors of that release's source."""

    project: Annotated[str, Field(description="The exporter's GitHub project (`SckyzO/slurm_exporter`).")]
    version: Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$", description="Release read (e.g. `1.8.4`).")]
    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$", description="The release tag's commit.")]
    archives: Annotated[
        dict[str, str],
        Field(min_length=1, description="`uname -m` (e.g. `x86_64`) -> that release's archive URL (tar.gz)."),
    ]
    checksums: Annotated[str, Field(description="URL of the release's sha256 checksums file.")]
    binary: Annotated[str, Field(description="The binary's name in an archive (`slurm_exporter`).")]
    listen_address_flag: Annotated[str, Field(pattern=r"^--", description="e.g. `--web.listen-address`.")]
    collectors: Annotated[
        tuple[str, ...], Field(min_length=1, description="Collector names (`--collector.NAME`, e.g. `nodes`).")
    ]
    needs_slurmdbd: Annotated[
        tuple[str, ...], Field(description="Collectors whose command needs slurmdbd (e.g. `fairshare`: sshare).")
    ]
    commands: Annotated[
        tuple[str, ...], Field(min_length=1, description="Slurm commands the exporter runs (e.g. `sinfo`).")
    ]
    node_metric: Annotated[
        str,
        Field(
            pattern=r"^[a-zA-Z_:][a-zA-Z0-9_:]*$",
            description="The per-node gauge (labels node, status, partition) nodes are counted from, once each "
            "(e.g. `slurm_node_status`); the per-partition slurm_nodes_<state> count a node once per partition.",
        ),
    ]
    node_states: Annotated[
        dict[SlurmNodeState, str],
        Field(
            min_length=1,
            description="A node state -> the regex (fully anchored, as PromQL's `=~`) of the `status` values in it "
            '(e.g. `drain: "drain.*"`: drained, draining, drained*).',
        ),
    ]

    @model_validator(mode="after")
    def _known_collectors(self) -> SlurmExporter:
        unknown = sorted(set(self.needs_slurmdbd) - set(self.collectors))
        if unknown:
            raise ValueError(f"slurm_exporter: needs_slurmdbd names collectors it does not have: {unknown}")
        return self


class MonitoringData(_Record):
    """Everything in data/monitoring.yaml."""

    exporters: Exporters
    series: SeriesCounts
    xid: XidRules
    gpu_memory: GpuMemoryRules
    fabric: FabricRules
    filesystem: FilesystemRules
    alertmanager: Alertmanager
    managed_prometheus: Annotated[
        dict[str, ManagedPrometheus],
        Field(default_factory=dict, description="Provider -> its managed Prometheus (none: no option)."),
    ]
    scrape_access: Annotated[
        dict[Collector, ScrapeAccess],
        Field(default_factory=dict, description="Kubernetes collector -> what it needs inside the cluster."),
    ]
    slurm_exporter: SlurmExporter

    def records(self) -> dict[str, Sourced]:
        return {
            "exporters": self.exporters,
            "series": self.series,
            "xid": self.xid,
            "gpu_memory": self.gpu_memory,
            "fabric": self.fabric,
            "filesystem": self.filesystem,
            "alertmanager": self.alertmanager,
            **{f"managed_prometheus {p}": m for p, m in self.managed_prometheus.items()},
            **{
                f"managed_prometheus {p} ingestion": m.ingestion
                for p, m in self.managed_prometheus.items()
                if m.ingestion is not None
            },
            **{f"scrape_access {c}": a for c, a in self.scrape_access.items()},
            "slurm_exporter": self.slurm_exporter,
        }


def collector_interval_s(mon: MonitoringData, collector: Collector | None) -> int:
    """How often a collector scrapes: the exporters' interval, or the collector's floor where it has a higher one
    (AMP's scraper: 30 s)."""
    access = mon.scrape_access.get(collector) if collector is not None else None
    floor = access.min_scrape_interval_s if access is not None else None
    return max(mon.exporters.scrape_interval_s, floor or 0)


def samples_per_month(series: int, interval_s: int, hours_per_month: float) -> int:
    """Samples `series` series send in a month scraped every `interval_s`: series x (seconds per month / interval)."""
    return round(series * hours_per_month * 3600 / interval_s)


def rdma_ports(it: InstanceType) -> int:
    """RDMA ports node_exporter's infiniband collector reports on a node of this type (/sys/class/infiniband): one
    per EFA device on AWS, one per InfiniBand or RoCE GPU NIC elsewhere; none on TCP fabrics."""
    net = it.network
    if net.fabric == "efa" and net.aws is not None:
        return len(net.aws.efa_layout())
    if net.fabric in ("infiniband", "gpudirect-rdma"):
        return net.gpu_nics
    return 0


@dataclass(frozen=True)
class ManagedCost:
    """What a managed Prometheus bills a month for the samples the stack's nodes send it (issue 29)."""

    service: str  # the service's name, as its vendor writes it
    series: int  # active series of every scraped node
    interval_s: int  # how often they are scraped
    samples: int  # samples ingested a month
    usd_per_month: float | None  # None: no verified ingestion price for the service in that region (not 0)
    source: str | None  # the catalog source of the price


def managed_cost(
    mon: MonitoringData,
    provider: str,
    region: str | None,
    collector: Collector | None,
    nodes: Iterable[tuple[InstanceType, int, int]],
    hours_per_month: float,
) -> ManagedCost | None:
    """The one cost model of `monitoring.prometheus: managed`, for the planner and the policy pack alike: series per
    node from the catalog (node_exporter, its infiniband collector, dcgm-exporter on GPU nodes) x nodes, scraped at
    the collector's interval for a month, priced at the service's ingestion tiers. `nodes`: (instance type, nodes,
    GPUs per node). None: the cloud has no managed Prometheus in the catalog."""
    offered = mon.managed_prometheus.get(provider)
    if offered is None:
        return None
    series = sum(n * mon.series.node(it.vcpus, gpus, rdma_ports(it)) for it, n, gpus in nodes)
    interval = collector_interval_s(mon, collector)
    samples = samples_per_month(series, interval, hours_per_month)
    ing = offered.ingestion
    priced = ing is not None and ing.priced_in(region)
    return ManagedCost(
        service=offered.name,
        series=series,
        interval_s=interval,
        samples=samples,
        usd_per_month=cents(ing.month(samples)) if ing is not None and priced else None,
        source=ing.source if ing is not None and priced else None,
    )
