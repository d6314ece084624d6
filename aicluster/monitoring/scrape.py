"""prometheus.yml, its target files and dcgm-exporter's counters CSV for a stack.

Targets are file_sd files (targets/*.yml), one group per pool, named after the plan's nodes (`h100-000:9400`)
and labelled `pool` (and `node`, from the name); replace a name with an address where names do not resolve, and
Prometheus rereads the file without a restart. Kubernetes stacks name their nodes in the cloud, so their target
files are the plan's names to replace; prometheus.yml shows, commented, the kubernetes_sd jobs that find them
instead (Debian's Prometheus is built without kubernetes_sd, so the active config does not depend on it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from aicluster.catalog import MonitoringData
from aicluster.plan.models import ClusterPlan
from aicluster.render.monitoring import DCGM_JOB, NODE_JOB, kubernetes_jobs

from .rules import SLURM_JOB, Group, scrapes_slurm


def _dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, width=120)


def _target(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # an IPv6 address goes in brackets


def targets(plan: ClusterPlan, mon: MonitoringData, addresses: Mapping[str, str] | None = None) -> dict[str, str]:
    """targets/<job>.yml: file_sd groups per pool (Slurm stacks; Kubernetes finds its targets itself). A node whose
    address is known (`addresses`: node name -> address, as the inventory has them) is scraped there, in a group of
    its own labelled with its name; the others by name, in their pool's group."""
    ex = mon.exporters
    known = addresses or {}

    def groups(port: int, gpu_only: bool) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for pool in plan.pools:
            if gpu_only and pool.accelerator_kind != "gpu":
                continue
            names = pool.node_names()
            by_name = [_target(n, port) for n in names if n not in known]
            if by_name:
                found.append({"targets": by_name, "labels": {"pool": pool.name}})
            found += [
                {"targets": [_target(known[n], port)], "labels": {"pool": pool.name, "node": n}}
                for n in names
                if n in known
            ]
        return found

    files = {
        f"targets/{NODE_JOB}.yml": groups(ex.node_exporter_port, False),
        f"targets/{DCGM_JOB}.yml": groups(ex.dcgm_exporter_port, True),
    }
    if plan.controller is not None:  # a Slurm controller (the only scheduler with one)
        host = plan.controller_host()
        at = known.get(host, host)
        named = {"node": host} if host in known else {}
        files[f"targets/{NODE_JOB}.yml"].append(
            {"targets": [_target(at, ex.node_exporter_port)], "labels": {"pool": "controller", **named}}
        )
        if scrapes_slurm(plan):  # an exporter is installed (monitoring.slurm_exporter)
            files[f"targets/{SLURM_JOB}.yml"] = [{"targets": [_target(at, ex.slurm_exporter_port)], "labels": named}]
    return {path: _dump(doc) for path, doc in files.items() if doc}


def _node_from_address() -> dict[str, Any]:
    """`node`: the target's host name, without the port (the rules and dashboards group by it), unless its target
    group names it (a node scraped at its address). A new dict for each job: a shared one would be dumped as a YAML
    anchor."""
    return {
        "source_labels": ["node", "__address__"],
        "separator": ";",
        "regex": ";(.+):[0-9]+",
        "target_label": "node",
    }


def _file_job(name: str) -> dict[str, Any]:
    return {
        "job_name": name,
        "file_sd_configs": [{"files": [f"targets/{name}.yml"]}],
        "relabel_configs": [_node_from_address()],
    }


def remote_write(plan: ClusterPlan, url: str) -> dict[str, Any]:
    """The remote_write entry for the plan's managed workspace, signed as the service requires (AMP: SigV4 in the
    workspace's region, with the instance role's credentials)."""
    m = plan.monitoring
    entry: dict[str, Any] = {"url": url}
    if m.write_auth == "sigv4":
        entry["sigv4"] = {"region": m.region}
    return entry


def prometheus_yml(
    plan: ClusterPlan,
    mon: MonitoringData,
    groups: list[Group],
    target_files: dict[str, str],
    remote_write_url: str | None = None,
) -> str:
    ex = mon.exporters
    jobs = [_file_job(job) for job in (NODE_JOB, DCGM_JOB, SLURM_JOB) if f"targets/{job}.yml" in target_files]
    doc = {
        "global": {
            "scrape_interval": f"{ex.scrape_interval_s}s",
            "evaluation_interval": f"{ex.scrape_interval_s}s",
            "external_labels": {"cluster": plan.name},
        },
        "rule_files": [f"rules/{g.file}.yml" for g in groups],
        "scrape_configs": jobs,
    }
    port = plan.monitoring.alertmanager_port
    if port is not None:  # monitoring.alerts, self-hosted: the Alertmanager beside it (alertmanager.yml)
        doc["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [f"localhost:{port}"]}]}]}
    if remote_write_url is not None:
        doc["remote_write"] = [remote_write(plan, remote_write_url)]
    head = (
        f"# Prometheus for the aicluster cluster {plan.name} ({plan.scheduler}), written by `aicluster monitoring`.\n"
        "# Paths are relative to this file: keep rules/ and targets/ next to it.\n"
    )
    text = head + _dump(doc)
    if plan.kubernetes is not None:
        alt = _dump({"scrape_configs": kubernetes_jobs(plan.monitoring)})
        deployed = (
            "# `pulumi up` deploys a Prometheus in the cluster (the kube-prometheus-stack add-on) with these rules,\n"
            "# scraping node_exporter and dcgm-exporter by PodMonitors as these jobs do"
            + (", and its Alertmanager with alertmanager.yml" if plan.monitoring.alerts is not None else "")
            + "; this file is for a Prometheus of\n# your own.\n"
            if plan.monitoring.service is None
            else "# A managed Prometheus takes the rules/ files.\n"
        )
        text += (
            deployed
            + "# Kubernetes: the target files hold the plan's node names, which the cloud does not use; fill them\n"
            "# from `kubectl get nodes -L aicluster.io/pool -o wide`, or, with a Prometheus built with kubernetes_sd\n"
            "# running in the cluster (GPU Operator's dcgm-exporter, a node_exporter DaemonSet on the host network),\n"
            "# use these jobs instead.\n" + "".join(f"#   {line}\n" for line in alt.splitlines())
        )
    return text


# dcgm-exporter's counters, in its default-counters.csv format (`field, type, help`): what the dashboards show
# and the rules read. ECC, retired pages, NVLink errors, violations and the row-remap pending flag are off in
# its default file, so a health-oriented deployment passes this one with -f.
COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Frame buffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Frame buffer memory used (in MiB)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors."),
    ("DCGM_FI_DEV_RETIRED_SBE", "counter", "Total number of retired pages due to single-bit errors."),
    ("DCGM_FI_DEV_RETIRED_DBE", "counter", "Total number of retired pages due to double-bit errors."),
    ("DCGM_FI_DEV_RETIRED_PENDING", "counter", "Total number of pages pending retirement."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether a row remap is pending until the next GPU reset."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in us)."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in us)."),
    ("DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "counter", "Throttling duration due to board limit constraints (in us)."),
    ("DCGM_FI_DEV_RELIABILITY_VIOLATION", "counter", "Throttling duration due to reliability constraints (in us)."),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event (throttle) reasons, a bit mask."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "counter", "The number of bytes of active PCIe tx data."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "counter", "The number of bytes of active PCIe rx data."),
)


def counters_csv() -> str:
    lines = [
        "# dcgm-exporter counters written by `aicluster monitoring`: pass with -f (or --collectors).",
        "# Format: DCGM field, Prometheus metric type, help message",
        "",
        *(f"{name}, {kind}, {help_}" for name, kind, help_ in COUNTERS),
    ]
    return "\n".join(lines) + "\n"


def slurm_exporter_args(mon: MonitoringData, port: int | None = None) -> list[str]:
    """The Slurm exporter's command-line arguments (the slurm_exporter role's unit runs it with them): listen on the
    catalog's port (`port` in its place: a test's free one), and leave off the collectors whose commands need
    slurmdbd, which an aicluster controller does not run (fairshare's sshare would fail on every scrape)."""
    ex = mon.slurm_exporter
    listen = port if port is not None else mon.exporters.slurm_exporter_port
    return [f"{ex.listen_address_flag}=:{listen}", *(f"--no-collector.{c}" for c in ex.needs_slurmdbd)]
