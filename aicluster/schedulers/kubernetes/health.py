"""Node Problem Detector on the GPU nodes of a Kubernetes cluster, configured from the plan's node health (itself
from the catalog's XID table, data/health.yaml, the one the Slurm node checker reads):

- a kernel-log monitor (NPD's kmsg plugin): a permanent condition (`GpuXidCritical`, reason `Xid<n>`) for each XID
  whose catalog entry drains a Slurm node, a temporary event for each other catalog XID;
- a custom plugin per GPU count: the node's GPUs on the PCI bus and those the driver initialised, against its pool's
  count (`GpuCountMismatch`; unknown while the driver is not loaded).

NPD only reports: a condition is a signal on the Node. What acts on it is the service's managed repair where it
acts on GPU faults (EKS, from its own agent's condition; aicluster tells it per XID what the catalog's bucket asks
for), and the device plugin, which takes a faulty GPU out of the node's allocatable GPUs. The objects follow
upstream's deployment/ (ServiceAccount, a binding to the built-in `system:node-problem-detector` ClusterRole, a
privileged DaemonSet reading /dev/kmsg), one DaemonSet per GPU count, on the nodes of the pools with that count.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from aicluster.plan import ClusterPlan
from aicluster.plan.models import PlannedAddon, PlannedNodeHealth

from .plan import POOL_LABEL

NPD_IMAGE = "registry.k8s.io/node-problem-detector/node-problem-detector"
NPD_NAME = "node-problem-detector"  # upstream's ServiceAccount name
NPD_ROLE = "system:node-problem-detector"  # built into Kubernetes' RBAC bootstrap policy
CONFIG_DIR = "/etc/aicluster-npd"  # not /config: the image's own configs stay where they are
XID_MONITOR = "gpu-xid-monitor.json"
COUNT_MONITOR = "gpu-count-monitor.json"
COUNT_SCRIPT = "check_gpu_count.sh"
GPUS_LABEL = "aicluster.io/gpus-per-node"
CONFIG_DIGEST = "aicluster.io/config-sha256"
# upstream's container resources (deployment/node-problem-detector.yaml)
RESOURCES = {"requests": {"cpu": "10m", "memory": "80Mi"}, "limits": {"cpu": "10m", "memory": "80Mi"}}
COUNT_INTERVAL = "60s"
COUNT_TIMEOUT = "10s"
READ_ONLY, EXECUTABLE = 0o444, 0o555

# The driver's kernel-log line: `NVRM: Xid (PCI:0000:b7:00): 79, pid=..., GPU has fallen off the bus.` (older
# drivers print the bus id without `PCI:`). NPD appends \z: a pattern must match to the end of the line.
XID_PATTERN = r"NVRM: Xid \((?:PCI:)?[0-9a-fA-F:.]+\): {xid},.*"

# The GPU count check, a Node Problem Detector custom plugin (exit 0 OK, 1 NonOK, 2 Unknown). The expected count is
# its argument; the two roots may be moved for a test.
CHECK_GPU_COUNT = r"""#!/bin/bash
# aicluster GPU count check (Node Problem Detector custom plugin): NVIDIA GPUs on the PCI bus and GPUs the driver
# initialised (/proc/driver/nvidia/gpus), each against the pool's count. Exit 0 OK, 1 NonOK, 2 Unknown.
set -u
expected="${1:?usage: check_gpu_count.sh EXPECTED_GPUS}"
pci_root="${AICLUSTER_PCI_DEVICES:-/sys/bus/pci/devices}"
driver_root="${AICLUSTER_NVIDIA_GPUS:-/proc/driver/nvidia/gpus}"
on_bus=0
for dev in "$pci_root"/*; do
  [ -r "$dev/vendor" ] && [ -r "$dev/class" ] || continue
  read -r vendor < "$dev/vendor"
  read -r class < "$dev/class"
  # NVIDIA (0x10de) display controllers: 3D controller (0x0302xx) or VGA (0x0300xx); not NVSwitches (bridges)
  if [ "$vendor" = 0x10de ] && { [ "${class:0:6}" = 0x0302 ] || [ "${class:0:6}" = 0x0300 ]; }; then
    on_bus=$((on_bus + 1))
  fi
done
if [ "$on_bus" -lt "$expected" ]; then
  echo "$on_bus of $expected GPUs on the PCI bus"
  exit 1
fi
if [ ! -d "$driver_root" ]; then
  echo "NVIDIA driver not loaded; $on_bus GPUs on the PCI bus"
  exit 2
fi
initialised=0
for gpu in "$driver_root"/*; do
  [ -e "$gpu" ] && initialised=$((initialised + 1))
done
if [ "$initialised" -lt "$expected" ]; then
  echo "$initialised of $expected GPUs initialised by the driver"
  exit 1
fi
echo "$initialised of $expected GPUs present"
exit 0
"""


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/managed-by": "aicluster", **labels}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def xid_monitor(health: PlannedNodeHealth) -> dict[str, Any]:
    """NPD's system log monitor config (pkg/systemlogmonitor MonitorConfig): the kernel log through /dev/kmsg, one
    rule per catalog XID: permanent (the condition) where the XID drains, temporary (an event) where not."""
    rules: list[dict[str, Any]] = [
        {"type": "temporary", "reason": f"Xid{x}", "pattern": XID_PATTERN.format(xid=x)} for x in health.event_xids
    ]
    rules += [
        {
            "type": "permanent",
            "condition": health.xid_condition,
            "reason": f"Xid{x}",
            "pattern": XID_PATTERN.format(xid=x),
        }
        for x in health.drain_xids
    ]
    return {
        "plugin": "kmsg",
        "logPath": "/dev/kmsg",
        "lookback": "5m",
        "bufferSize": 10,
        "source": "gpu-xid-monitor",
        "metricsReporting": True,
        "conditions": [
            {
                "type": health.xid_condition,
                "reason": "NoCriticalXid",
                "message": "no XID that drains a node (aicluster's XID catalog) since the detector started",
            }
        ],
        "rules": rules,
    }


def count_monitor(health: PlannedNodeHealth, gpus: int) -> dict[str, Any]:
    """NPD's custom plugin monitor config (pkg/custompluginmonitor): the GPU count check every minute; the
    condition clears when the check passes again."""
    return {
        "plugin": "custom",
        "pluginConfig": {
            "invoke_interval": COUNT_INTERVAL,
            "timeout": COUNT_TIMEOUT,
            "max_output_length": 160,
            "concurrency": 1,
        },
        "source": "gpu-count-monitor",
        "metricsReporting": True,
        "conditions": [
            {"type": health.count_condition, "reason": "GpuCountMatches", "message": f"{gpus} GPUs present"}
        ],
        "rules": [
            {
                "type": "permanent",
                "condition": health.count_condition,
                "reason": "GpuCountBelowExpected",
                "path": f"{CONFIG_DIR}/{COUNT_SCRIPT}",
                "args": [str(gpus)],
                "timeout": COUNT_TIMEOUT,
            }
        ],
    }


def _count_key(gpus: int) -> str:
    return f"gpu-count-monitor-{gpus}.json"


def _daemonset(
    health: PlannedNodeHealth, addon: PlannedAddon, gpus: int, config_map: str, digest: str
) -> dict[str, Any]:
    name = f"{NPD_NAME}-{gpus}gpu"
    selector = {"app.kubernetes.io/name": NPD_NAME, GPUS_LABEL: str(gpus)}
    pools = sorted(p for p, n in health.gpus_per_pool.items() if n == gpus)
    container = {
        "name": NPD_NAME,
        "image": f"{NPD_IMAGE}:{addon.version}",
        "command": [
            "/node-problem-detector",
            "--logtostderr",
            f"--config.system-log-monitor={CONFIG_DIR}/{XID_MONITOR}",
            f"--config.custom-plugin-monitor={CONFIG_DIR}/{COUNT_MONITOR}",
        ],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "resources": RESOURCES,
        # reading /dev/kmsg needs it (upstream runs privileged too)
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": "kmsg", "mountPath": "/dev/kmsg", "readOnly": True},
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(name, addon.namespace, **selector),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": selector, "annotations": {CONFIG_DIGEST: digest}},
                "spec": {
                    "serviceAccountName": NPD_NAME,
                    "priorityClassName": "system-node-critical",
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": pools}]}
                                ]
                            }
                        }
                    },
                    # every taint: the GPU taint, and whatever a repair puts on a faulty node, which it keeps watching
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [container],
                    "volumes": [
                        {"name": "kmsg", "hostPath": {"path": "/dev/kmsg", "type": "CharDevice"}},
                        {
                            "name": "config",
                            "configMap": {
                                "name": config_map,
                                "items": [
                                    {"key": XID_MONITOR, "path": XID_MONITOR, "mode": READ_ONLY},
                                    {"key": _count_key(gpus), "path": COUNT_MONITOR, "mode": READ_ONLY},
                                    {"key": COUNT_SCRIPT, "path": COUNT_SCRIPT, "mode": EXECUTABLE},
                                ],
                            },
                        },
                    ],
                },
            },
        },
    }


def npd_objects(plan: ClusterPlan, addon: PlannedAddon) -> list[dict[str, Any]]:
    """The Node Problem Detector add-on's objects, in apply order: its ServiceAccount, the binding to the built-in
    role, the ConfigMap (the XID monitor, a count monitor per GPU count, the count script), a DaemonSet per GPU
    count; none without GPU node groups. The pods carry a digest of the ConfigMap, so that a change of the catalog's
    XID table rolls them (a mounted ConfigMap is re-read by no one)."""
    kube = plan.kubernetes
    return [] if kube is None or kube.health is None else health_objects(kube.health, addon)


def health_objects(health: PlannedNodeHealth, addon: PlannedAddon) -> list[dict[str, Any]]:
    """`npd_objects` for one node health plan (see there)."""
    config_map = f"{NPD_NAME}-gpu"
    counts = sorted(set(health.gpus_per_pool.values()))
    data = {XID_MONITOR: json.dumps(xid_monitor(health), indent=2) + "\n", COUNT_SCRIPT: CHECK_GPU_COUNT}
    data |= {_count_key(n): json.dumps(count_monitor(health, n), indent=2) + "\n" for n in counts}
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NPD_NAME, addon.namespace)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(f"aicluster-{NPD_NAME}"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NPD_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": NPD_NAME, "namespace": addon.namespace}],
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(config_map, addon.namespace), "data": data},
        *(_daemonset(health, addon, n, config_map, digest) for n in counts),
    ]
