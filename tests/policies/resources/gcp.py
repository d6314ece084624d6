"""GCP resources as pulumi-gcp 10.2 names them: an A3 Mega instance template and its managed instance group, a
controller VM, Cloud TPU slices (queued resource, TPU VM), Managed Lustre, Parallelstore, Filestore, Cloud NAT and
aicluster's IAP-only SSH firewall rule; all labelled as aicluster labels them."""

from __future__ import annotations

from typing import Any

from aicluster.preview.engine import UNKNOWN
from policies.facts import Res
from policies.facts.aicluster import AICLUSTER_TYPE
from tests.policies.conftest import res

MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
VM = "gcp:compute/instance:Instance"
RESIZE = "gcp:compute/resizeRequest:ResizeRequest"
NETWORK = "gcp:compute/network:Network"
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
NAT = "gcp:compute/routerNat:RouterNat"
QUEUED = "gcp:tpu/v2QueuedResource:V2QueuedResource"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
LUSTRE = "gcp:lustre/instance:Instance"
PARALLELSTORE = "gcp:parallelstore/instance:Instance"
FILESTORE = "gcp:filestore/instance:Instance"
AUDIT_CONFIG = "gcp:projects/iAMAuditConfig:IAMAuditConfig"
LOG_BUCKET = "gcp:logging/projectBucketConfig:ProjectBucketConfig"

A3_MEGA = "a3-megagpu-8g"
LABELS = {"owner": "ml-platform", "cost-center": "4711", "aicluster_cluster": "llm"}

GCP_STACKS = ["gcp-a3mega-slurm", "gcp-a3ultra-reservation", "gcp-tpu-v5p", "hybrid-aws-gcp", "three-cloud"]


def nics(machine: str = A3_MEGA) -> list[dict[str, Any]]:
    count = {"a3-highgpu-8g": 5, A3_MEGA: 9}.get(machine)
    if count is not None:
        return [{"nicType": "GVNIC", "network": UNKNOWN, "subnetwork": UNKNOWN} for _ in range(count)]
    return [{"nicType": "GVNIC", "network": UNKNOWN, "subnetwork": UNKNOWN} for _ in range(2)] + [
        {"nicType": "MRDMA", "network": UNKNOWN, "subnetwork": UNKNOWN} for _ in range(8)
    ]


def template(
    name: str = "gpu",
    *,
    machine: str = A3_MEGA,
    model: str = "STANDARD",
    affinity: dict[str, Any] | None = None,
    disk_gib: float = 500.0,
    disk_type: str = "pd-balanced",
    **changes: Any,
) -> Res:
    props: dict[str, Any] = {
        "machineType": machine,
        "region": "us-central1",
        "disks": [
            {"boot": True, "autoDelete": True, "diskSizeGb": disk_gib, "diskType": disk_type, "sourceImage": "img"}
        ],
        "networkInterfaces": nics(machine),
        "scheduling": {"onHostMaintenance": "TERMINATE", "provisioningModel": model, "preemptible": model == "SPOT"},
        "reservationAffinity": affinity or {"type": "ANY_RESERVATION"},
        "shieldedInstanceConfig": {"enableVtpm": True, "enableIntegrityMonitoring": True},
        "labels": LABELS | {"aicluster_pool": "gpu"},
    }
    return res(TEMPLATE, name, props | changes)


def mig(tpl: Res, *, nodes: int = 4, zone: str = "us-central1-a") -> Res:
    props = {"versions": [{"instanceTemplate": UNKNOWN}], "targetSize": float(nodes), "zone": zone}
    return res(MIG, tpl.name, props, versions=[tpl])


def controller(**changes: Any) -> Res:
    props: dict[str, Any] = {
        "machineType": "n2-standard-8",
        "zone": "us-central1-a",
        "bootDisk": {"initializeParams": {"size": 100.0, "type": "pd-balanced", "image": "img"}},
        "networkInterfaces": [{"network": UNKNOWN, "subnetwork": UNKNOWN}],
        "labels": LABELS,
    }
    return res(VM, "ctl", props | changes)


def queued(name: str = "s0", accelerator_type: str = "v5p-256", zone: str = "us-east5-a", **node: Any) -> Res:
    spec = {
        "acceleratorType": accelerator_type,
        "runtimeVersion": "v2-alpha-tpuv5",
        "networkConfig": {"network": UNKNOWN, "subnetwork": UNKNOWN, "enableExternalIps": False},
    } | node
    return res(QUEUED, name, {"zone": zone, "tpu": {"nodeSpecs": [{"parent": UNKNOWN, "nodeId": name, "node": spec}]}})


def tpu_vm(accelerator_type: str = "v5p-256", *, spot: bool = False, reserved: bool = False, **changes: Any) -> Res:
    props: dict[str, Any] = {
        "zone": "us-east5-a",
        "acceleratorType": accelerator_type,
        "runtimeVersion": "v2-alpha-tpuv5",
        "networkConfig": {"network": UNKNOWN, "subnetwork": UNKNOWN, "enableExternalIps": False},
        "schedulingConfig": {"spot": spot, "reserved": reserved},
        "labels": LABELS,
    }
    return res(TPU_VM, "slice", props | changes)


def lustre(capacity: str = "144000", per_tib: str = "500") -> Res:
    props = {"capacityGib": capacity, "perUnitStorageThroughput": per_tib, "location": "us-central1-a"}
    return res(LUSTRE, "scratch", props | {"network": UNKNOWN, "filesystem": "scratch", "labels": LABELS})


def parallelstore(capacity: str = "12288", **changes: Any) -> Res:
    props = {"capacityGib": capacity, "location": "us-central1-a", "network": UNKNOWN, "labels": LABELS}
    return res(PARALLELSTORE, "ps", props | changes)


def filestore(gib: float = 2560.0, tier: str = "ZONAL") -> Res:
    props = {
        "tier": tier,
        "location": "us-central1-a",
        "fileShares": {"capacityGb": gib, "name": "home"},
        "networks": [{"network": UNKNOWN, "modes": ["MODE_IPV4"]}],
        "labels": LABELS,
    }
    return res(FILESTORE, "home", props)


def nat(**changes: Any) -> Res:
    props = {"region": "us-central1", "router": UNKNOWN, "natIpAllocateOption": "AUTO_ONLY"}
    return res(NAT, "nat", props | changes)


def cluster(**declared: Any) -> Res:
    return res(AICLUSTER_TYPE, "llm", declared)


def firewall(**changes: Any) -> dict[str, Any]:
    """aicluster's SSH rule: IAP's range only."""
    props: dict[str, Any] = {
        "direction": "INGRESS",
        "network": UNKNOWN,
        "sourceRanges": ["35.235.240.0/20"],
        "allows": [{"protocol": "tcp", "ports": ["22"]}],
    }
    return props | changes
