"""Alert rules in the monitoring-mixin style, and a promtool unit test for each: one case where it fires, one where
it does not.

Every alert has a CamelCase name with a shared prefix per group, a `severity` (critical: page; warning: ticket;
info: no routing), a static `summary` and a templated `description` (monitoring-mixins' guidelines). Thresholds
come from the catalog (data/monitoring.yaml); an alert on "any increase" of an error counter needs none. The
expected annotations of a test are the description with its `{{ $labels.x }}` filled in here, as Prometheus would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from aicluster.catalog import Catalog, MonitoringData
from aicluster.catalog.monitoring import SlurmNodeState
from aicluster.plan.models import ClusterPlan, PlannedPool
from aicluster.render.monitoring import DCGM_JOB, NODE_JOB

# The Prometheus job names prometheus.yml gives the exporters (rules and tests select on them); the exporters' are
# shared with the Kubernetes jobs (aicluster.render.monitoring).
SLURM_JOB = "slurm"


@dataclass(frozen=True)
class Case:
    """A promtool test case: input series (series -> values in expanding notation), evaluated at `at`."""

    series: Mapping[str, str]
    at: str


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    severity: str
    summary: str
    description: str
    fires: Case
    quiet: Case
    fired_labels: Mapping[str, str]  # the labels of the alert `fires` raises, less alertname and severity
    for_: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)  # static labels besides severity
    value: str = ""  # what `{{ $value }}` shows when `fires` is evaluated (where the description uses it)

    def rule(self) -> dict[str, object]:
        rule: dict[str, object] = {"alert": self.name, "expr": self.expr}
        if self.for_:
            rule["for"] = self.for_
        rule["labels"] = {"severity": self.severity, **self.labels}
        rule["annotations"] = {"summary": self.summary, "description": self.description}
        return rule

    def expected(self) -> dict[str, object]:
        """The alert promtool must see when `fires` is evaluated."""
        labels = {**self.fired_labels, "severity": self.severity, **self.labels}
        description = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], self.description)
        description = description.replace("{{ $value }}", self.value)
        return {"exp_labels": labels, "exp_annotations": {"summary": self.summary, "description": description}}


@dataclass(frozen=True)
class Group:
    """One rule file (rules/<file>.yml) with its test (tests/<file>.yml)."""

    file: str
    name: str
    alerts: tuple[Alert, ...]

    def rule_group(self) -> dict[str, object]:
        """The group as Prometheus's rule files hold it (`name`, `rules`): what a managed Prometheus is given too."""
        return {"name": self.name, "rules": [a.rule() for a in self.alerts]}

    def rules_doc(self) -> dict[str, object]:
        return {"groups": [self.rule_group()]}

    def tests_doc(self) -> dict[str, object]:
        tests: list[dict[str, object]] = []
        for alert in self.alerts:
            for case, exp in ((alert.fires, [alert.expected()]), (alert.quiet, [])):
                tests.append(
                    {
                        "interval": "1m",
                        "input_series": [{"series": s, "values": v} for s, v in case.series.items()],
                        "alert_rule_test": [{"eval_time": case.at, "alertname": alert.name, "exp_alerts": exp}],
                    }
                )
        return {"rule_files": [f"../rules/{self.file}.yml"], "evaluation_interval": "1m", "tests": tests}


def _sel(**labels: str) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _steady(value: int | float, minutes: int = 30) -> str:
    return f"{value}+0x{minutes}"


def _stepped(minutes: int = 10, after: int = 10) -> str:
    """A counter flat for `minutes` minutes, then one higher: an increase inside any window that ends later."""
    return f"0+0x{minutes} 1+0x{after}"


def _minutes(duration: str) -> int:
    n, unit = int(duration[:-1]), duration[-1]
    return {"s": max(1, n // 60), "m": n, "h": n * 60}[unit]


# ------------------------------------------------------------------------------------------------
# GPU: dcgm-exporter on the GPU nodes
# ------------------------------------------------------------------------------------------------


def gpu_group(gpu_pools: list[PlannedPool], mon: MonitoringData, *, node_label: str) -> Group:
    """XID errors, ECC and row remapping, NVLink errors, throttling, GPUs missing. `node_label` is the label that
    names a node (`node` from the target files; on Kubernetes the pod's node name)."""
    rate = mon.exporters.rate_interval
    late = f"{_minutes(rate) + 10}m"
    pool = gpu_pools[0]
    node = pool.node_names()[0]
    gpu = {"job": DCGM_JOB, node_label: node, "pool": pool.name, "gpu": "0", "instance": f"{node}:9400"}
    who = {node_label: node, "pool": pool.name, "gpu": "0", "instance": f"{node}:9400", "job": DCGM_JOB}
    at_node = f"{{{{ $labels.{node_label} }}}}"
    xid = mon.xid
    fatal = [x for x in xid.fatal if x != xid.fallen_off_bus]

    def is_one_of(metric: str, values: list[int]) -> str:
        return " or ".join(f"{metric} == {v}" for v in values)

    alerts = [
        Alert(
            "GpuXidFatal",
            is_one_of("DCGM_FI_DEV_XID_ERRORS", fatal),
            "critical",
            "A GPU reported an XID error its health check fails on.",
            f"GPU {{{{ $labels.gpu }}}} of {at_node} last reported XID {{{{ $value }}}}: drain the node and "
            "reset the GPU (the XID catalog's action for it).",
            Case({f"DCGM_FI_DEV_XID_ERRORS{_sel(**gpu)}": _steady(fatal[0])}, "5m"),
            Case({f"DCGM_FI_DEV_XID_ERRORS{_sel(**gpu)}": _steady(xid.warning[0] if xid.warning else 0)}, "5m"),
            who,
            value=str(fatal[0]),
        ),
        Alert(
            "GpuFellOffTheBus",
            f"DCGM_FI_DEV_XID_ERRORS == {xid.fallen_off_bus}",
            "critical",
            "A GPU fell off the bus (XID 79).",
            f"GPU {{{{ $labels.gpu }}}} of {at_node} fell off the PCIe bus: a reboot is not enough, power-cycle "
            "the node.",
            Case({f"DCGM_FI_DEV_XID_ERRORS{_sel(**gpu)}": _steady(xid.fallen_off_bus)}, "5m"),
            Case({f"DCGM_FI_DEV_XID_ERRORS{_sel(**gpu)}": _steady(fatal[0])}, "5m"),
            who,
        ),
    ]
    if xid.warning:
        alerts.append(
            Alert(
                "GpuXidWarning",
                is_one_of("DCGM_FI_DEV_XID_ERRORS", list(xid.warning)),
                "warning",
                "A GPU reported an XID error its health check warns about.",
                f"GPU {{{{ $labels.gpu }}}} of {at_node} last reported an XID that needs watching (a row-remap "
                "event or a contained ECC error).",
                Case({f"DCGM_FI_DEV_XID_ERRORS{_sel(**gpu)}": _steady(xid.warning[0])}, "5m"),
                Case({f"DCGM_FI_DEV_XID_ERRORS{_sel(**gpu)}": _steady(0)}, "5m"),
                who,
            )
        )
    alerts += [
        Alert(
            "GpuEccUncorrectableErrors",
            f"increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[{rate}]) > 0",
            "critical",
            "A GPU had uncorrectable (double-bit) ECC errors.",
            f"GPU {{{{ $labels.gpu }}}} of {at_node} counted new uncorrectable ECC errors: reset the GPU before "
            "it runs another job; if they come back, replace it.",
            Case({f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{_sel(**gpu)}": _stepped()}, "12m"),
            Case({f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{_sel(**gpu)}": _steady(3)}, "12m"),
            who,
        ),
        Alert(
            "GpuRowRemapPending",
            "DCGM_FI_DEV_ROW_REMAP_PENDING > 0",
            "warning",
            "A GPU has a row remap pending until its next reset.",
            f"GPU {{{{ $labels.gpu }}}} of {at_node} has a pending row remap: reset the GPU before it is used again.",
            Case({f"DCGM_FI_DEV_ROW_REMAP_PENDING{_sel(**gpu)}": _steady(1)}, "5m"),
            Case({f"DCGM_FI_DEV_ROW_REMAP_PENDING{_sel(**gpu)}": _steady(0)}, "5m"),
            who,
        ),
        Alert(
            "GpuRowRemapFailed",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            "critical",
            "A GPU failed to remap a memory row.",
            f"GPU {{{{ $labels.gpu }}}} of {at_node} failed a row remap: drain the node and confirm with the "
            "field diagnostics before an RMA.",
            Case({f"DCGM_FI_DEV_ROW_REMAP_FAILURE{_sel(**gpu)}": _steady(1)}, "5m"),
            Case({f"DCGM_FI_DEV_ROW_REMAP_FAILURE{_sel(**gpu)}": _steady(0)}, "5m"),
            who,
        ),
        Alert(
            "GpuUncorrectableRemappedRowsHigh",
            f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS >= {mon.gpu_memory.uncorrectable_remapped_rows_warning}",
            "warning",
            "A GPU has used up its row remapping.",
            f"GPU {{{{ $labels.gpu }}}} of {at_node} has remapped as many rows for uncorrectable errors as it "
            "can: plan its replacement.",
            Case(
                {
                    f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{_sel(**gpu)}": _steady(
                        mon.gpu_memory.uncorrectable_remapped_rows_warning
                    )
                },
                "5m",
            ),
            Case(
                {
                    f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{_sel(**gpu)}": _steady(
                        mon.gpu_memory.uncorrectable_remapped_rows_warning - 1
                    )
                },
                "5m",
            ),
            who,
        ),
        Alert(
            "GpuNvlinkErrors",
            f"increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[{rate}]) > 0 or "
            f"increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL[{rate}]) > 0",
            "warning",
            "A GPU's NVLinks are recovering or replaying.",
            f"GPU {{{{ $labels.gpu }}}} of {at_node} counted new NVLink recovery or replay errors: watch for XID "
            "74; a link that keeps failing needs the node reset.",
            Case(
                {
                    f"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{_sel(**gpu)}": _stepped(),
                    f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{_sel(**gpu)}": _steady(0, 20),
                },
                "12m",
            ),
            Case(
                {
                    f"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{_sel(**gpu)}": _steady(2, 20),
                    f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{_sel(**gpu)}": _steady(5, 20),
                },
                "12m",
            ),
            who,
        ),
        Alert(
            "GpuThermalThrottling",
            f"increase(DCGM_FI_DEV_THERMAL_VIOLATION[{rate}]) > 0",
            "warning",
            "A GPU's clocks are held down by temperature.",
            f"GPU {{{{ $labels.gpu }}}} of {at_node} throttled for heat: check the node's cooling.",
            Case({f"DCGM_FI_DEV_THERMAL_VIOLATION{_sel(**gpu)}": "0+0x10 1000+1000x10"}, "12m"),
            Case({f"DCGM_FI_DEV_THERMAL_VIOLATION{_sel(**gpu)}": _steady(1000, 20)}, "12m"),
            who,
        ),
        Alert(
            "GpuPowerThrottling",
            f"increase(DCGM_FI_DEV_POWER_VIOLATION[{rate}]) > 0",
            "info",
            "A GPU's clocks are held down by its power limit.",
            f"GPU {{{{ $labels.gpu }}}} of {at_node} ran at its power cap: expected under full load, worth a "
            "look when one GPU does it and its peers do not.",
            Case({f"DCGM_FI_DEV_POWER_VIOLATION{_sel(**gpu)}": "0+0x10 1000+1000x10"}, "12m"),
            Case({f"DCGM_FI_DEV_POWER_VIOLATION{_sel(**gpu)}": _steady(1000, 20)}, "12m"),
            who,
        ),
        Alert(
            "DcgmExporterDown",
            f'up{{job="{DCGM_JOB}"}} == 0',
            "warning",
            "dcgm-exporter cannot be scraped.",
            f"dcgm-exporter on {at_node} has not answered for {rate}: GPU health is not watched there.",
            Case(
                {f"up{_sel(job=DCGM_JOB, instance=gpu['instance'], **{node_label: node}, pool=pool.name)}": _steady(0)},
                late,
            ),
            Case(
                {f"up{_sel(job=DCGM_JOB, instance=gpu['instance'], **{node_label: node}, pool=pool.name)}": _steady(1)},
                late,
            ),
            {"job": DCGM_JOB, "instance": gpu["instance"], node_label: node, "pool": pool.name},
            for_=rate,
        ),
    ]
    alerts += [_gpu_missing(p, rate, late, node_label) for p in gpu_pools]
    return Group("gpu", "aicluster-gpu", tuple(alerts))


def _gpu_missing(pool: PlannedPool, rate: str, late: str, node_label: str) -> Alert:
    """A node of `pool` where dcgm-exporter sees fewer GPUs than the pool's instance type has. The node's pool
    comes from node_exporter's `up` (its targets carry `pool` on every stack; dcgm-exporter's do not on
    Kubernetes, where its pods are found by label)."""
    want = pool.accelerators_per_node
    node = pool.node_names()[0]
    expr = (
        f'count by ({node_label}) (DCGM_FI_DEV_GPU_TEMP{{job="{DCGM_JOB}"}}) < on ({node_label}) group_left (pool) '
        f"(0 * max by ({node_label}, pool) (up{_sel(job=NODE_JOB, pool=pool.name)}) + {want})"
    )
    gpu = {"job": DCGM_JOB, node_label: node, "instance": f"{node}:9400"}
    series = {f"DCGM_FI_DEV_GPU_TEMP{_sel(**gpu, gpu=str(i))}": _steady(40) for i in range(want - 1)}
    series[f"up{_sel(job=NODE_JOB, instance=f'{node}:9100', **{node_label: node}, pool=pool.name)}"] = _steady(1)
    full = dict(series)
    full[f"DCGM_FI_DEV_GPU_TEMP{_sel(**gpu, gpu=str(want - 1))}"] = _steady(40)
    return Alert(
        "GpuMissing",
        expr,
        "critical",
        "A node shows fewer GPUs than its instance type has.",
        f"{{{{ $labels.{node_label} }}}} (pool {{{{ $labels.pool }}}}) shows fewer than {want} GPUs: a GPU "
        "fell off the bus or failed to initialise; drain the node.",
        Case(series, late),
        Case(full, late),
        {node_label: node, "pool": pool.name},
        for_=rate,
        labels={"pool": pool.name},  # one rule per pool: the label tells them apart
    )


# ------------------------------------------------------------------------------------------------
# Fabric: node_exporter's infiniband collector on every node
# ------------------------------------------------------------------------------------------------


def fabric_group(node: str, pool: str, mon: MonitoringData, *, node_label: str) -> Group:
    rate = mon.exporters.rate_interval
    late = f"{_minutes(rate) + 10}m"
    fab = mon.fabric
    port = {
        "job": NODE_JOB,
        node_label: node,
        "pool": pool,
        "instance": f"{node}:9100",
        "device": "mlx5_0",
        "port": "1",
    }
    at = f"port {{{{ $labels.port }}}} of {{{{ $labels.device }}}} on {{{{ $labels.{node_label} }}}}"
    hour = 60 * 80
    alerts = (
        Alert(
            "InfinibandPortDown",
            f"node_infiniband_state_id != {fab.port_state_active} or "
            f"node_infiniband_physical_state_id != {fab.physical_state_linkup}",
            "critical",
            "An InfiniBand port is not active.",
            f"InfiniBand {at} is not ACTIVE/LinkUp: jobs on the node lose a rail; reseat or replace the cable or "
            "the card.",
            Case(
                {
                    f"node_infiniband_state_id{_sel(**port)}": _steady(1),
                    f"node_infiniband_physical_state_id{_sel(**port)}": _steady(fab.physical_state_linkup),
                },
                late,
            ),
            Case(
                {
                    f"node_infiniband_state_id{_sel(**port)}": _steady(fab.port_state_active),
                    f"node_infiniband_physical_state_id{_sel(**port)}": _steady(fab.physical_state_linkup),
                },
                late,
            ),
            port,
            for_=rate,
        ),
        Alert(
            "InfinibandLinkDowned",
            f"increase(node_infiniband_link_downed_total[{rate}]) > 0",
            "critical",
            "An InfiniBand link went down.",
            f"InfiniBand {at} lost its link: any job using it likely failed.",
            Case({f"node_infiniband_link_downed_total{_sel(**port)}": _stepped()}, "12m"),
            Case({f"node_infiniband_link_downed_total{_sel(**port)}": _steady(2, 20)}, "12m"),
            port,
        ),
        Alert(
            "InfinibandLinkIntegrityErrors",
            f"increase(node_infiniband_local_link_integrity_errors_total[{rate}]) > 0 or "
            f"increase(node_infiniband_excessive_buffer_overrun_errors_total[{rate}]) > 0",
            "critical",
            "An InfiniBand link has integrity or buffer-overrun errors.",
            f"InfiniBand {at} counted local link integrity or excessive buffer overrun errors: the link is failing.",
            Case(
                {
                    f"node_infiniband_local_link_integrity_errors_total{_sel(**port)}": _stepped(),
                    f"node_infiniband_excessive_buffer_overrun_errors_total{_sel(**port)}": _steady(0, 20),
                },
                "12m",
            ),
            Case(
                {
                    f"node_infiniband_local_link_integrity_errors_total{_sel(**port)}": _steady(0, 20),
                    f"node_infiniband_excessive_buffer_overrun_errors_total{_sel(**port)}": _steady(0, 20),
                },
                "12m",
            ),
            port,
        ),
        Alert(
            "InfinibandSymbolErrorsHigh",
            f"increase(node_infiniband_symbol_error_total[1h]) > {fab.symbol_errors_per_hour_max}",
            "warning",
            "An InfiniBand link's bit error rate is out of spec.",
            f"InfiniBand {at} counted more than {fab.symbol_errors_per_hour_max} symbol errors in an hour: check "
            "the cable and transceivers.",
            Case(
                {f"node_infiniband_symbol_error_total{_sel(**port)}": f"0+{fab.symbol_errors_per_hour_max // 30}x90"},
                f"{hour // 60}m",
            ),
            Case(
                {f"node_infiniband_symbol_error_total{_sel(**port)}": f"0+{fab.symbol_errors_per_hour_max // 120}x90"},
                f"{hour // 60}m",
            ),
            port,
        ),
        Alert(
            "InfinibandLinkErrorRecoveryHigh",
            f"rate(node_infiniband_link_error_recovery_total[{rate}]) * 60 > "
            f"{fab.link_error_recoveries_per_minute_max}",
            "warning",
            "An InfiniBand link keeps retraining.",
            f"InfiniBand {at} recovers from link errors more than {fab.link_error_recoveries_per_minute_max} "
            "times a minute.",
            Case(
                {
                    f"node_infiniband_link_error_recovery_total{_sel(**port)}": (
                        f"0+{2 * fab.link_error_recoveries_per_minute_max}x20"
                    )
                },
                "15m",
            ),
            Case({f"node_infiniband_link_error_recovery_total{_sel(**port)}": "0+1x20"}, "15m"),
            port,
        ),
        Alert(
            "InfinibandReceiveErrorsHigh",
            f"rate(node_infiniband_port_errors_received_total[{rate}]) > {fab.receive_errors_per_second_max}",
            "warning",
            "An InfiniBand port receives malformed packets.",
            f"InfiniBand {at} receives more than {fab.receive_errors_per_second_max} bad packets a second.",
            Case(
                {
                    f"node_infiniband_port_errors_received_total{_sel(**port)}": (
                        f"0+{120 * fab.receive_errors_per_second_max}x20"
                    )
                },
                "15m",
            ),
            Case({f"node_infiniband_port_errors_received_total{_sel(**port)}": "0+60x20"}, "15m"),
            port,
        ),
        Alert(
            "NodeExporterDown",
            f'up{{job="{NODE_JOB}"}} == 0',
            "warning",
            "node_exporter cannot be scraped.",
            f"node_exporter on {{{{ $labels.{node_label} }}}} has not answered for {rate}: the node is down or its "
            "fabric and file systems are not watched.",
            Case(
                {f"up{_sel(job=NODE_JOB, instance=port['instance'], **{node_label: node}, pool=pool)}": _steady(0)},
                late,
            ),
            Case(
                {f"up{_sel(job=NODE_JOB, instance=port['instance'], **{node_label: node}, pool=pool)}": _steady(1)},
                late,
            ),
            {"job": NODE_JOB, "instance": port["instance"], node_label: node, "pool": pool},
            for_=rate,
        ),
    )
    return Group("fabric", "aicluster-fabric", alerts)


# ------------------------------------------------------------------------------------------------
# File systems: the stack's shared file systems, as node_exporter sees them
# ------------------------------------------------------------------------------------------------


def filesystem_group(plan: ClusterPlan, node: str, pool: str, mon: MonitoringData, *, node_label: str) -> Group:
    """Slurm stacks mount each file system at its planned mount point on every node: one rule per mount that it
    is mounted, and its space. Kubernetes mounts them in pods (a volume's path): space by the file system type."""
    rate = mon.exporters.rate_interval
    late = f"{_minutes(rate) + 10}m"
    fs = mon.filesystem
    inst = {"job": NODE_JOB, "instance": f"{node}:9100", node_label: node, "pool": pool}
    alerts: list[Alert] = []
    targets: list[tuple[str, str, dict[str, str]]] = []  # (selector, grouping, labels of a sample series)
    if plan.kubernetes is None:  # mounts on the nodes themselves (Kubernetes mounts volumes in pods)
        samples = {
            f.mount: {
                **inst,
                "mountpoint": f.mount,
                "fstype": "lustre" if f.kind == "lustre" else "nfs4",
                "device": f"{f.name}:/",
            }
            for f in plan.filesystems
        }
        for f in plan.filesystems:
            sample = samples[f.mount]
            others = {
                f"node_filesystem_size_bytes{_sel(**o)}": _steady(10**12) for m, o in samples.items() if m != f.mount
            }
            targets.append((_sel(job=NODE_JOB, mountpoint=f.mount), "mountpoint", sample))
            alerts.append(
                Alert(
                    "FilesystemNotMounted",
                    f'up{{job="{NODE_JOB}"}} == 1 unless on (instance) '
                    f"node_filesystem_size_bytes{_sel(job=NODE_JOB, mountpoint=f.mount)}",
                    "critical",
                    "A shared file system is not mounted on a node.",
                    f"{{{{ $labels.{node_label} }}}} does not mount {f.mount} ({f.name}): jobs there cannot read "
                    "their data; drain the node and remount.",
                    Case({f"up{_sel(**inst)}": _steady(1), **others}, late),
                    Case(
                        {
                            f"up{_sel(**inst)}": _steady(1),
                            f"node_filesystem_size_bytes{_sel(**sample)}": _steady(10**12),
                            **others,
                        },
                        late,
                    ),
                    inst,
                    for_=rate,
                    labels={"mountpoint": f.mount},
                )
            )
    else:
        sample = {**inst, "mountpoint": "/var/lib/kubelet/pods/x/volumes/fs", "fstype": "lustre", "device": "fs:/"}
        targets.append((_sel(job=NODE_JOB, fstype="~lustre|nfs4?").replace('="~', '=~"'), "device, fstype", sample))
    for selector, by, sample in targets:
        ratio = f"max by ({by}) (node_filesystem_avail_bytes{selector} / node_filesystem_size_bytes{selector} * 100)"
        grouped = {k: sample[k] for k in (s.strip() for s in by.split(","))}
        what = " and ".join(f"{{{{ $labels.{k} }}}}" for k in grouped)
        size = 10**12
        for name, severity, limit in (
            ("FilesystemSpaceLow", "warning", fs.available_percent_warning),
            ("FilesystemSpaceCritical", "critical", fs.available_percent_critical),
        ):
            below = int(size * (limit - 1) / 100)
            above = int(size * (fs.available_percent_warning + 1) / 100)
            alerts.append(
                Alert(
                    name,
                    f"{ratio} < {limit:g}",
                    severity,
                    f"A shared file system has less than {limit:g}% space left.",
                    f"The file system {what} has less than {limit:g}% of its space left: free space or grow it "
                    "before jobs fail to write checkpoints.",
                    Case(
                        {
                            f"node_filesystem_size_bytes{_sel(**sample)}": _steady(size),
                            f"node_filesystem_avail_bytes{_sel(**sample)}": _steady(below),
                        },
                        late,
                    ),
                    Case(
                        {
                            f"node_filesystem_size_bytes{_sel(**sample)}": _steady(size),
                            f"node_filesystem_avail_bytes{_sel(**sample)}": _steady(above),
                        },
                        late,
                    ),
                    grouped,
                    for_=rate,
                    labels=grouped
                    if by == "mountpoint"
                    else {},  # one rule per file system: the label tells them apart
                )
            )
    return Group("filesystem", "aicluster-filesystem", tuple(alerts))


# ------------------------------------------------------------------------------------------------
# Slurm: the exporter on the controller
# ------------------------------------------------------------------------------------------------


def slurm_nodes(mon: MonitoringData, state: SlurmNodeState, by: tuple[str, ...] = ()) -> str:
    """PromQL for the number of Slurm nodes in `state`, each node once whatever partitions it is in: the exporter's
    per-node gauge grouped by node (its per-partition slurm_nodes_<state> count a node once per partition, twice for
    a hybrid stack's node in its pool's partition and `hybrid`). Without series in the state it has no value."""
    ex = mon.slurm_exporter
    sel = f'{ex.node_metric}{{job="{SLURM_JOB}", status=~"{ex.node_states[state]}"}}'
    outer = f"by ({', '.join(by)}) " if by else ""
    return f"count {outer}(group by ({', '.join((*by, 'node'))}) ({sel}))"


def slurm_group(controller: str, node: str, partitions: tuple[str, ...], mon: MonitoringData) -> Group:
    """Nodes down or drained, counted once per node; the exporter's own scrape. The tests' node is in each of
    `partitions` (the exporter gives it one series per partition) and must count once."""
    rate = mon.exporters.rate_interval
    late = f"{_minutes(rate) + 10}m"
    ex = mon.slurm_exporter
    inst = {"job": SLURM_JOB, "instance": f"{controller}:{mon.exporters.slurm_exporter_port}"}

    def status(value: str) -> dict[str, str]:
        return {f"{ex.node_metric}{_sel(**inst, node=node, partition=p, status=value)}": _steady(1) for p in partitions}

    cases: tuple[tuple[str, SlurmNodeState, str, str, str, str], ...] = (
        (
            "SlurmNodesDown",
            "down",
            "down*",
            "down",
            "Slurm has nodes down.",
            "`sinfo -R -o '%100E %19H %N'` says why; a cloud node is replaced when its pool's repair runs.",
        ),
        (
            "SlurmNodesDrained",
            "drain",
            "drained",
            "drained",
            "Slurm has drained nodes.",
            "`sinfo -R -o '%100E %19H %N'` gives the reasons (aicluster-health's start with aicluster-health:, "
            "and aicluster-repair acts on those); resume the others yourself.",
        ),
    )
    alerts = tuple(
        Alert(
            name,
            slurm_nodes(mon, state, by=("job", "instance")),
            "warning",
            summary,
            f"Slurm on {{{{ $labels.instance }}}} has {{{{ $value }}}} node(s) {shown} (for {rate}): {action}",
            Case(status(example), late),
            Case(status("idle"), late),
            inst,
            for_=rate,
            value="1",  # one node, in every one of its partitions
        )
        for name, state, example, shown, summary, action in cases
    )
    down = Alert(
        "SlurmExporterDown",
        f'up{{job="{SLURM_JOB}"}} == 0',
        "warning",
        "The Slurm exporter cannot be scraped.",
        f"The Slurm exporter on {{{{ $labels.instance }}}} has not answered for {rate}: node states are not watched.",
        Case({f"up{_sel(**inst)}": _steady(0)}, late),
        Case({f"up{_sel(**inst)}": _steady(1)}, late),
        inst,
        for_=rate,
    )
    return Group("slurm", "aicluster-slurm", (*alerts, down))


def scrapes_slurm(plan: ClusterPlan) -> bool:
    """Whether the Slurm exporter is scraped and alerted on: a Slurm controller with an exporter installed
    (`monitoring.slurm_exporter`); with none, SlurmExporterDown would fire forever on a target nobody installed."""
    return plan.controller is not None and plan.monitoring.slurm_exporter != "none"


def groups(plan: ClusterPlan, catalog: Catalog) -> list[Group]:
    """The rule groups this stack gets: GPU ones where it has GPU pools, Slurm ones where Slurm schedules it and its
    exporter is installed."""
    mon = monitoring_data(catalog)
    node_label = "node"
    first = plan.pools[0]
    wanted = plan.monitoring.alert_groups  # the plan decides which (routes are checked against the same list)
    found: list[Group] = []
    gpu_pools = [p for p in plan.pools if p.accelerator_kind == "gpu"]
    if "gpu" in wanted:
        found.append(gpu_group(gpu_pools, mon, node_label=node_label))
    if "fabric" in wanted:
        found.append(fabric_group(first.node_names()[0], first.name, mon, node_label=node_label))
    if "filesystem" in wanted:
        found.append(filesystem_group(plan, first.node_names()[0], first.name, mon, node_label=node_label))
    if "slurm" in wanted and scrapes_slurm(plan):
        # the test's node is in its pool's partition and a second one, as a hybrid stack's nodes are in `hybrid`
        found.append(slurm_group(plan.controller_host(), first.node_names()[0], (first.name, "hybrid"), mon))
    return found


def monitoring_data(catalog: Catalog) -> MonitoringData:
    if catalog.monitoring is None:
        raise ValueError("the catalog has no data/monitoring.yaml")
    return catalog.monitoring
