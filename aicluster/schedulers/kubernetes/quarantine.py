"""The GPU node quarantine controller's objects (aicluster/repair/quarantine.py): what acts on the conditions Node
Problem Detector sets (health.py). It taints and cordons a GPU node whose `GpuXidCritical` or `GpuCountMismatch` is
True, gives it back when the condition clears, and keeps within the circuit breaker aicluster-repair keeps (the
catalog's max_share_in_repair of the GPU nodes at once).

No image of ours: the controller is standard-library Python, shipped with its breaker in a ConfigMap and run by a
pinned stock Python image (the add-on's repository and version), mounted as the namespace packages
`aicluster.repair.{quarantine,breaker}`. Least privilege: nodes list and patch (a ClusterRole), events create in
`default` only (a Role there: the API keeps a Node's events in `default`); a non-root, read-only container.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import Any

from aicluster.plan import ClusterPlan
from aicluster.plan.models import PlannedAddon, PlannedNodeHealth
from aicluster.repair.quarantine import EVENT_NAMESPACE, PROG

from .plan import POOL_LABEL

NAME = PROG  # the ServiceAccount, roles, ConfigMap and Deployment
CONFIG_DIR = "/etc/aicluster-quarantine"
CODE_DIR = "/opt/aicluster"  # PYTHONPATH: the modules sit at aicluster/repair/*.py below it
CONFIG_FILE = "config.json"
MODULES = ("quarantine.py", "breaker.py")  # aicluster/repair/<file>, standard library only
CONFIG_DIGEST = "aicluster.io/config-sha256"
INTERVAL_S = 30  # seconds between passes (NPD's kmsg monitor reports within seconds; a cordon is not urgent to the s)
NOBODY = 65534
READ_ONLY = 0o444
# a single-threaded loop over the node list: a 1,000-node list is ~10 MB of JSON (our estimate)
RESOURCES = {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {"app.kubernetes.io/managed-by": "aicluster", "app.kubernetes.io/name": NAME},
    }
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def controller_config(health: PlannedNodeHealth, share: float, taint: str) -> dict[str, Any]:
    """The controller's configuration (aicluster.repair.quarantine.load_config reads it)."""
    return {
        "pool_label": POOL_LABEL,
        "pools": sorted(health.gpus_per_pool),
        "conditions": [health.xid_condition, health.count_condition],
        "taint_key": taint,
        "max_share": share,
        "interval_s": INTERVAL_S,
    }


def module_sources() -> dict[str, str]:
    """The controller's modules as shipped: file name -> source text, read from the installed package."""
    pkg = resources.files("aicluster.repair")
    return {m: pkg.joinpath(m).read_text(encoding="utf-8") for m in MODULES}


def quarantine_objects(plan: ClusterPlan, addon: PlannedAddon) -> list[dict[str, Any]]:
    """The controller's objects, in apply order: ServiceAccount, ClusterRole and binding (nodes), Role and binding
    (events in `default`), ConfigMap (configuration and modules), Deployment; none without GPU node health or
    without the catalog's circuit breaker."""
    kube = plan.kubernetes
    health = kube.health if kube is not None else None
    if health is None or health.quarantine_max_share is None or health.quarantine_taint is None:
        return []
    ns = addon.namespace
    config = controller_config(health, health.quarantine_max_share, health.quarantine_taint)
    data = {CONFIG_FILE: json.dumps(config, indent=2) + "\n"}
    data |= module_sources()
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    subject = [{"kind": "ServiceAccount", "name": NAME, "namespace": ns}]
    selector = {"app.kubernetes.io/name": NAME}
    container = {
        "name": "controller",
        "image": f"{addon.repository}:{addon.version}",
        "command": ["python", "-m", "aicluster.repair.quarantine", "--config", f"{CONFIG_DIR}/{CONFIG_FILE}"],
        "env": [
            {"name": "PYTHONPATH", "value": CODE_DIR},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
        ],
        "resources": RESOURCES,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "code", "mountPath": CODE_DIR, "readOnly": True},
        ],
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, ns)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(NAME),
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "patch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(NAME),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
            "subjects": subject,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(NAME, EVENT_NAMESPACE),
            "rules": [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(NAME, EVENT_NAMESPACE),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": subject,
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(NAME, ns), "data": data},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(NAME, ns),
            "spec": {
                "replicas": 1,
                # never two at once: one pass decides against one breaker count
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": selector},
                "template": {
                    "metadata": {"labels": selector, "annotations": {CONFIG_DIGEST: digest}},
                    "spec": {
                        "serviceAccountName": NAME,
                        "priorityClassName": "system-cluster-critical",
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": NOBODY,
                            "runAsGroup": NOBODY,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        # off the GPU nodes it may quarantine
                        "affinity": {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {
                                            "matchExpressions": [
                                                {
                                                    "key": POOL_LABEL,
                                                    "operator": "NotIn",
                                                    "values": sorted(health.gpus_per_pool),
                                                }
                                            ]
                                        }
                                    ]
                                }
                            }
                        },
                        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
                        "containers": [container],
                        "volumes": [
                            {
                                "name": "config",
                                "configMap": {
                                    "name": NAME,
                                    "items": [{"key": CONFIG_FILE, "path": CONFIG_FILE, "mode": READ_ONLY}],
                                },
                            },
                            {
                                "name": "code",
                                "configMap": {
                                    "name": NAME,
                                    "items": [
                                        {"key": m, "path": f"aicluster/repair/{m}", "mode": READ_ONLY} for m in MODULES
                                    ],
                                },
                            },
                        ],
                    },
                },
            },
        },
    ]
