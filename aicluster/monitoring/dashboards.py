"""Grafana dashboards for a stack, built with grafana-foundation-sdk (typed builders, not hand-written JSON).

Each dashboard picks its Prometheus data source with a `datasource` variable and filters by `pool` and `node`
(the labels prometheus.yml gives every target), so one file serves any Grafana the user imports it into.
"""

from __future__ import annotations

import json

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

from aicluster.catalog import MonitoringData
from aicluster.plan.models import ClusterPlan
from aicluster.render.monitoring import DCGM_JOB, NODE_JOB

from .rules import SLURM_JOB, slurm_nodes

_DS = DataSourceRef(type_val="prometheus", uid="${datasource}")


def _query(expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).datasource(_DS)


def _series(title: str, expr: str, legend: str, unit: str = "short") -> timeseries.Panel:
    return (
        timeseries.Panel().title(title).datasource(_DS).unit(unit).height(8).span(12).with_target(_query(expr, legend))
    )


def _stat(title: str, expr: str, legend: str) -> stat.Panel:
    return stat.Panel().title(title).datasource(_DS).height(4).span(6).with_target(_query(expr, legend))


def _base(plan: ClusterPlan, uid: str, title: str, job: str) -> dashboard.Dashboard:
    sel = f'job="{job}", pool=~"$pool"'
    return (
        dashboard.Dashboard(f"{plan.name} / {title}")
        .uid(f"{plan.name}-{uid}"[:40])
        .tags(["aicluster", plan.name, uid])
        .time("now-6h", "now")
        .refresh("1m")
        .with_variable(dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(
            dashboard.QueryVariable("pool")
            .label("Pool")
            .datasource(_DS)
            .query(f'label_values(up{{job="{NODE_JOB}"}}, pool)')
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .multi(True)
            .include_all(True)
        )
        .with_variable(
            dashboard.QueryVariable("node")
            .label("Node")
            .datasource(_DS)
            .query(f"label_values(up{{{sel}}}, node)")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .multi(True)
            .include_all(True)
        )
    )


def gpu_dashboard(plan: ClusterPlan) -> dashboard.Dashboard:
    f = f'{{job="{DCGM_JOB}", node=~"$node"}}'
    legend = "{{node}} GPU {{gpu}}"
    return (
        _base(plan, "gpu", "GPU health", NODE_JOB)
        .with_row(dashboard.Row("Errors"))
        .with_panel(
            _stat(
                "GPUs with a pending row remap", f"count(DCGM_FI_DEV_ROW_REMAP_PENDING{f} > 0) or vector(0)", "pending"
            )
        )
        .with_panel(
            _stat("GPUs with a failed row remap", f"count(DCGM_FI_DEV_ROW_REMAP_FAILURE{f} > 0) or vector(0)", "failed")
        )
        .with_panel(_stat("GPUs whose last XID is not 0", f"count(DCGM_FI_DEV_XID_ERRORS{f} > 0) or vector(0)", "xid"))
        .with_panel(_stat("GPUs seen", f"count(DCGM_FI_DEV_GPU_TEMP{f})", "gpus"))
        .with_panel(_series("Last XID", f"DCGM_FI_DEV_XID_ERRORS{f} > 0", legend))
        .with_panel(
            _series("Uncorrectable ECC errors (increase)", f"increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{f}[5m])", legend)
        )
        .with_panel(_series("Uncorrectable remapped rows", f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{f}", legend))
        .with_panel(
            _series(
                "NVLink recovery and replay errors (increase)",
                f"increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{f}[5m]) "
                f"+ increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{f}[5m])",
                legend,
            )
        )
        .with_row(dashboard.Row("Thermals and power"))
        .with_panel(_series("GPU temperature", f"DCGM_FI_DEV_GPU_TEMP{f}", legend, "celsius"))
        .with_panel(_series("Power draw", f"DCGM_FI_DEV_POWER_USAGE{f}", legend, "watt"))
        .with_panel(
            _series(
                "Thermal throttling (share of time)",
                f"rate(DCGM_FI_DEV_THERMAL_VIOLATION{f}[5m]) / 1e6",
                legend,
                "percentunit",
            )
        )
        .with_panel(
            _series(
                "Power throttling (share of time)",
                f"rate(DCGM_FI_DEV_POWER_VIOLATION{f}[5m]) / 1e6",
                legend,
                "percentunit",
            )
        )
        .with_row(dashboard.Row("Use"))
        .with_panel(_series("GPU utilisation", f"DCGM_FI_DEV_GPU_UTIL{f}", legend, "percent"))
        .with_panel(_series("Tensor pipe active", f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{f}", legend, "percentunit"))
    )


def node_dashboard(plan: ClusterPlan) -> dashboard.Dashboard:
    f = f'{{job="{NODE_JOB}", node=~"$node"}}'
    legend = "{{node}} {{device}} port {{port}}"
    board = (
        _base(plan, "fabric", "Fabric and file systems", NODE_JOB)
        .with_row(dashboard.Row("InfiniBand"))
        .with_panel(_stat("Ports not ACTIVE", f"count(node_infiniband_state_id{f} != 4) or vector(0)", "down"))
        .with_panel(_stat("Nodes answering", f"sum(up{f})", "up"))
        .with_panel(_series("Port state (4 = ACTIVE)", f"node_infiniband_state_id{f}", legend))
        .with_panel(_series("Link downed (increase)", f"increase(node_infiniband_link_downed_total{f}[5m])", legend))
        .with_panel(_series("Symbol errors per hour", f"increase(node_infiniband_symbol_error_total{f}[1h])", legend))
        .with_panel(
            _series("Receive errors per second", f"rate(node_infiniband_port_errors_received_total{f}[5m])", legend)
        )
        .with_panel(
            _series(
                "Port data",
                f"rate(node_infiniband_port_data_received_bytes_total{f}[5m]) "
                f"+ rate(node_infiniband_port_data_transmitted_bytes_total{f}[5m])",
                legend,
                "Bps",
            )
        )
        .with_row(dashboard.Row("File systems"))
    )
    for fs in plan.filesystems:
        m = f'{{job="{NODE_JOB}", mountpoint="{fs.mount}"}}'
        board = board.with_panel(
            _series(
                f"{fs.name} ({fs.mount}): space available",
                f"max(node_filesystem_avail_bytes{m} / node_filesystem_size_bytes{m})",
                fs.mount,
                "percentunit",
            )
        )
    return board


def slurm_dashboard(plan: ClusterPlan, mon: MonitoringData) -> dashboard.Dashboard:
    """Node states, each node counted once (rules.slurm_nodes: not the exporter's per-partition counts, which
    count a hybrid stack's nodes twice)."""
    ex = mon.slurm_exporter
    board = _base(plan, "slurm", "Slurm nodes", NODE_JOB).with_row(dashboard.Row("Node states"))
    for state in ex.node_states:
        # `or vector(0)`: no node in the state is 0, not "No data"
        board = board.with_panel(_stat(f"Nodes {state}", f"{slurm_nodes(mon, state)} or vector(0)", state))
    return board.with_panel(
        _series(
            "Nodes by state",
            f'count by (status) (group by (node, status) ({ex.node_metric}{{job="{SLURM_JOB}"}}))',
            "{{status}}",
        )
    )


def dashboards(plan: ClusterPlan, mon: MonitoringData) -> dict[str, str]:
    boards = {"dashboards/fabric.json": node_dashboard(plan)}
    if any(p.accelerator_kind == "gpu" for p in plan.pools):
        boards["dashboards/gpu.json"] = gpu_dashboard(plan)
    if plan.controller is not None:  # a Slurm controller (the only scheduler with one)
        boards["dashboards/slurm.json"] = slurm_dashboard(plan, mon)
    return {path: json.dumps(b.build(), cls=JSONEncoder, indent=2, sort_keys=True) + "\n" for path, b in boards.items()}
