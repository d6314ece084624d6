"""Node Problem Detector on the GPU nodes: its configuration is the catalog's XID table (no second list), its kernel-log
patterns match the driver's XID lines the way NPD matches them, its objects validate against the cluster's Kubernetes
version, and its GPU count check behaves on a node's sysfs and procfs (run with bash on fake trees)."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from aicluster.plan.models import PlannedAddon, PlannedNodeHealth
from aicluster.preview import plan_stack
from aicluster.schedulers.kubernetes.health import (
    CHECK_GPU_COUNT,
    CONFIG_DIGEST,
    COUNT_MONITOR,
    COUNT_SCRIPT,
    XID_MONITOR,
    count_monitor,
    health_objects,
    npd_objects,
    xid_monitor,
)
from aicluster.schedulers.kubernetes.plan import NPD_ADDON, POOL_LABEL
from aicluster.stackfile import find_project, read_stack
from tests.conftest import KUBERNETES_STACKS, ROOT

# The JSON keys NPD reads, from its Go structs at v1.36.0 (json tags): pkg/systemlogmonitor/config.go MonitorConfig
# (+ the watcher's plugin/logPath/lookback) and types.Rule; pkg/custompluginmonitor/types/config.go
# CustomPluginConfig, pluginGlobalConfig and types.go CustomRule; pkg/types/types.go Condition.
LOG_MONITOR_KEYS = {"plugin", "pluginConfig", "logPath", "lookback", "delay", "bufferSize", "source", "conditions"}
LOG_MONITOR_KEYS |= {"rules", "metricsReporting"}
LOG_RULE_KEYS = {"type", "condition", "reason", "pattern", "patternGeneratedMessageSuffix"}
PLUGIN_MONITOR_KEYS = {"plugin", "pluginConfig", "source", "conditions", "rules", "metricsReporting"}
PLUGIN_GLOBAL_KEYS = {"invoke_interval", "timeout", "max_output_length", "concurrency"}
PLUGIN_GLOBAL_KEYS |= {"enable_message_change_based_condition_update", "skip_initial_status"}
PLUGIN_RULE_KEYS = {"type", "condition", "reason", "path", "args", "timeout"}
CONDITION_KEYS = {"type", "reason", "message"}

BASH = shutil.which("bash")


@functools.cache
def stack_plan(stack: str) -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), stack))


def npd_of(plan: ClusterPlan) -> list[dict[str, Any]]:
    assert plan.kubernetes is not None
    (addon,) = [a for a in plan.kubernetes.addons if a.id == NPD_ADDON]
    return npd_objects(plan, addon)


def config_of(plan: ClusterPlan) -> dict[str, str]:
    (cm,) = [o for o in npd_of(plan) if o["kind"] == "ConfigMap"]
    data: dict[str, str] = cm["data"]
    return data


def npd_matches(pattern: str, line: str) -> bool:
    """As NPD's log buffer matches a rule: the pattern must match to the end of the buffer (log_buffer.go appends
    \\z); Python's \\Z is Go's \\z."""
    return re.search(pattern + r"\Z", line) is not None


def health(**gpus: int) -> PlannedNodeHealth:
    return PlannedNodeHealth(
        xid_condition="GpuXidCritical",
        count_condition="GpuCountMismatch",
        drain_xids=(48, 79),
        event_xids=(13,),
        gpus_per_pool=gpus,
        auto_repair="always",
        repair_triggers="NotReady",
    )


ADDON = PlannedAddon(
    id=NPD_ADDON,
    name="Node Problem Detector",
    kind="manifest",
    chart="node-problem-detector.yaml",
    repository="https://example.invalid/npd.yaml",
    version="v1.36.0",
    namespace="kube-system",
    source="k8shealth-npd",
    why="test",
)


# ---------------------------------------------------------------------------------------------- the XID rule set


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_xid_rules_are_the_catalogs_drain_set_and_events_for_the_rest(stack: str, catalog: Catalog) -> None:
    monitor = json.loads(config_of(stack_plan(stack))[XID_MONITOR])
    assert catalog.health is not None
    drains = {f"Xid{x.xid}" for x in catalog.health.xids if x.drains}
    others = {f"Xid{x.xid}" for x in catalog.health.xids if not x.drains}
    permanent = [r for r in monitor["rules"] if r["type"] == "permanent"]
    temporary = [r for r in monitor["rules"] if r["type"] == "temporary"]
    assert {r["reason"] for r in permanent} == drains
    assert {r["reason"] for r in temporary} == others
    assert len(permanent) == len(drains)
    assert len(temporary) == len(others)
    assert {r["condition"] for r in permanent} == {c["type"] for c in monitor["conditions"]} == {"GpuXidCritical"}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        pytest.param(
            "NVRM: Xid (PCI:0000:b7:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            "Xid79",
            id="fallen-off-the-bus",
        ),
        pytest.param("NVRM: Xid (PCI:0000:3b:00): 48, pid=2810, name=python, An uncorrectable ECC", "Xid48", id="dbe"),
        pytest.param("NVRM: Xid (0000:03:00): 13, Graphics Exception: ESR 0x404600=0x80000000", "Xid13", id="old-bus"),
        pytest.param("NVRM: Xid (PCI:0000:b7:00): 119, pid=1, Timeout after 6s of waiting for RPC", "Xid119", id="gsp"),
        pytest.param("NVRM: GPU at PCI:0000:b7:00: GPU-1b2c: Xid 79 (not the driver's format)", None, id="no-match"),
        pytest.param("NVRM: Xid (PCI:0000:b7:00): 7, pid=1, a number no rule has", None, id="unknown-xid"),
    ],
)
def test_patterns_match_the_drivers_xid_line_as_npd_does(line: str, reason: str | None) -> None:
    monitor = json.loads(config_of(stack_plan("eks-p5"))[XID_MONITOR])
    matched = [r["reason"] for r in monitor["rules"] if npd_matches(r["pattern"], line)]
    assert matched == ([reason] if reason else [])
    # only the end of the buffer counts: an XID line followed by another line is no match for its rule
    assert not [r for r in monitor["rules"] if npd_matches(r["pattern"], line + "\nsomething else")]


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_configs_use_only_the_keys_npd_reads(stack: str) -> None:
    data = config_of(stack_plan(stack))
    log = json.loads(data[XID_MONITOR])
    assert set(log) <= LOG_MONITOR_KEYS
    assert log["plugin"] == "kmsg"
    assert all(set(r) <= LOG_RULE_KEYS for r in log["rules"])
    assert all(set(c) == CONDITION_KEYS for c in log["conditions"])
    counts = [json.loads(v) for k, v in data.items() if k.startswith("gpu-count-monitor-")]
    assert counts
    for mon in counts:
        assert set(mon) <= PLUGIN_MONITOR_KEYS
        assert set(mon["pluginConfig"]) <= PLUGIN_GLOBAL_KEYS
        assert all(set(r) <= PLUGIN_RULE_KEYS for r in mon["rules"])
        assert all(set(c) == CONDITION_KEYS for c in mon["conditions"])
        assert all(isinstance(a, str) for r in mon["rules"] for a in r["args"])


# ------------------------------------------------------------------------------------------------------ objects


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_objects_validate_against_the_clusters_kubernetes_version(stack: str) -> None:
    plan = stack_plan(stack)
    assert plan.kubernetes is not None
    objs = npd_of(plan)
    assert [o["kind"] for o in objs][:3] == ["ServiceAccount", "ClusterRoleBinding", "ConfigMap"]
    for obj in objs:
        kubernetes_validate.validate(obj, f"{plan.kubernetes.version}.0", strict=True)


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_each_gpu_pool_is_watched_with_its_own_gpu_count(stack: str) -> None:
    plan = stack_plan(stack)
    ds = [o for o in npd_of(plan) if o["kind"] == "DaemonSet"]
    gpu_pools = {p.name: p.accelerators_per_node for p in plan.pools if p.accelerator_kind == "gpu"}
    watched: dict[str, int] = {}
    for d in ds:
        spec = d["spec"]["template"]["spec"]
        (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        (expr,) = term["matchExpressions"]
        assert expr["key"] == POOL_LABEL
        items = {i["path"]: i["key"] for i in spec["volumes"][1]["configMap"]["items"]}
        count = json.loads(config_of(plan)[items[COUNT_MONITOR]])["rules"][0]["args"]
        watched |= {pool: int(count[0]) for pool in expr["values"]}
        # it keeps watching a node that something tainted, and reads the kernel log
        assert spec["tolerations"] == [{"operator": "Exists"}]
        assert {"name": "kmsg", "hostPath": {"path": "/dev/kmsg", "type": "CharDevice"}} in spec["volumes"]
    assert watched == gpu_pools


def test_one_daemonset_per_gpu_count() -> None:
    objs = health_objects(health(a=8, b=4, c=8), ADDON)
    ds = {o["metadata"]["name"]: o for o in objs if o["kind"] == "DaemonSet"}
    assert set(ds) == {"node-problem-detector-8gpu", "node-problem-detector-4gpu"}
    pools = {
        name: d["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
        for name, d in ds.items()
    }
    assert pools == {"node-problem-detector-8gpu": ["a", "c"], "node-problem-detector-4gpu": ["b"]}
    (cm,) = [o for o in objs if o["kind"] == "ConfigMap"]
    assert json.loads(cm["data"]["gpu-count-monitor-4.json"])["rules"][0]["args"] == ["4"]


def test_a_changed_xid_table_rolls_the_pods() -> None:
    def digest(h: PlannedNodeHealth) -> str:
        (ds,) = [o for o in health_objects(h, ADDON) if o["kind"] == "DaemonSet"]
        value: str = ds["spec"]["template"]["metadata"]["annotations"][CONFIG_DIGEST]
        return value

    before = health(a=8)
    assert digest(before) == digest(health(a=8))
    assert digest(before) != digest(before.model_copy(update={"drain_xids": (48, 79, 95)}))


def test_no_gpu_pools_no_detector() -> None:
    assert xid_monitor(health(a=8))["rules"][-1]["reason"] == "Xid79"
    assert count_monitor(health(a=8), 8)["rules"][0]["args"] == ["8"]
    plan = stack_plan("gke-a3mega")
    assert plan.kubernetes is not None
    assert (
        npd_objects(plan.model_copy(update={"kubernetes": plan.kubernetes.model_copy(update={"health": None})}), ADDON)
        == []
    )


def test_the_service_gpu_checks_are_off_where_the_gpu_operator_owns_the_driver() -> None:
    aks, eks = stack_plan("aks-nd-h100").kubernetes, stack_plan("eks-p5").kubernetes
    assert aks is not None
    assert eks is not None
    assert aks.health is not None
    assert eks.health is not None
    assert aks.health.service_gpu_checks is False  # AKS's NPD skips --gpu-driver none pools
    assert aks.health.auto_repair == "always"
    assert eks.health.service_gpu_checks is True
    assert eks.health.agent_addon == "eks-node-monitoring-agent"


# -------------------------------------------------------------------------------------------- the GPU count check


def _node(root: Path, gpus_on_bus: int, initialised: int | None, switches: int = 4) -> dict[str, str]:
    pci, driver = root / "pci", root / "nvidia-gpus"
    devices = [("0x10de", "0x030200")] * gpus_on_bus + [("0x10de", "0x068000")] * switches + [("0x15b3", "0x020700")]
    for i, (vendor, cls) in enumerate(devices):
        dev = pci / f"0000:{i:02x}:00.0"
        dev.mkdir(parents=True)
        (dev / "vendor").write_text(vendor + "\n")
        (dev / "class").write_text(cls + "\n")
    if initialised is not None:
        driver.mkdir()
        for i in range(initialised):
            (driver / f"0000:{i:02x}:00.0").mkdir()
    return {"AICLUSTER_PCI_DEVICES": str(pci), "AICLUSTER_NVIDIA_GPUS": str(driver), "PATH": "/usr/bin:/bin"}


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize(
    ("on_bus", "initialised", "status", "says"),
    [
        pytest.param(8, 8, 0, "8 of 8 GPUs present", id="healthy"),
        pytest.param(7, 7, 1, "7 of 8 GPUs on the PCI bus", id="gpu-missing-from-the-bus"),
        pytest.param(8, 7, 1, "7 of 8 GPUs initialised by the driver", id="gpu-not-initialised"),
        pytest.param(8, None, 2, "NVIDIA driver not loaded; 8 GPUs on the PCI bus", id="driver-not-loaded-is-unknown"),
        pytest.param(7, None, 1, "7 of 8 GPUs on the PCI bus", id="missing-even-without-driver"),
    ],
)
def test_gpu_count_check(tmp_path: Path, on_bus: int, initialised: int | None, status: int, says: str) -> None:
    script = tmp_path / COUNT_SCRIPT
    script.write_text(CHECK_GPU_COUNT)
    script.chmod(0o555)
    env = _node(tmp_path / "node", on_bus, initialised)
    done = subprocess.run([str(script), "8"], env=env, capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stdout.strip()) == (status, says), done.stderr


@pytest.mark.parametrize("stack", KUBERNETES_STACKS)
def test_the_shipped_script_is_the_checked_one_and_executable(stack: str) -> None:
    plan = stack_plan(stack)
    assert config_of(plan)[COUNT_SCRIPT] == CHECK_GPU_COUNT
    (ds, *_) = [o for o in npd_of(plan) if o["kind"] == "DaemonSet"]
    items = {i["key"]: i["mode"] for i in ds["spec"]["template"]["spec"]["volumes"][1]["configMap"]["items"]}
    assert items[COUNT_SCRIPT] == 0o555
    assert items[XID_MONITOR] == 0o444
