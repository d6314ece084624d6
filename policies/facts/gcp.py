"""GCP resources as the engine hands them (pulumi-gcp type tokens, camelCase props) -> facts.

A managed instance group launches its instance template's machine type; a Cloud TPU slice (queued resource or TPU
VM) is billed per chip; file-system sizes may come as strings; a zone stands for its region; a firewall rule with
no ports opens them all; tags are labels (lowercased keys).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from aicluster.catalog import Catalog, InstanceType, NvlinkDomain, TpuType

from .engine import UNKNOWN, Reader, Res, count, get, items
from .model import INTERNET, Exposure, Filesystem, Fleet, Ingress, NvlinkGroup, PortRange, TagSet
from .regions import GLOBAL_LOCATION, gcp_region
from .tags import sdk_tag_set

if TYPE_CHECKING:
    from .stack import FilesystemReaders, FleetReaders, NvlinkReaders, Stack

__all__ = ["GLOBAL_LOCATION", "gcp_region"]  # GCP's spelling of a region, with its other readers

GCP_MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
GCP_REGION_MIG = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"
GCP_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
GCP_REGION_TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
GCP_TEMPLATES = (GCP_TEMPLATE, GCP_REGION_TEMPLATE)
GCP_INSTANCE = "gcp:compute/instance:Instance"
GCP_RESIZE_REQUEST = "gcp:compute/resizeRequest:ResizeRequest"
GCP_RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
GCP_NETWORK = "gcp:compute/network:Network"
GCP_SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
GCP_FIREWALL = "gcp:compute/firewall:Firewall"
GCP_ROUTER_NAT = "gcp:compute/routerNat:RouterNat"
GCP_VPN_TUNNEL = "gcp:compute/vPNTunnel:VPNTunnel"
GCP_TPU_QUEUED = "gcp:tpu/v2QueuedResource:V2QueuedResource"
GCP_TPU_VM = "gcp:tpu/v2Vm:V2Vm"
GCP_LUSTRE = "gcp:lustre/instance:Instance"
GCP_PARALLELSTORE = "gcp:parallelstore/instance:Instance"
GCP_FILESTORE = "gcp:filestore/instance:Instance"
GCP_PROJECT_AUDIT = "gcp:projects/iAMAuditConfig:IAMAuditConfig"
GCP_AUDIT = (
    GCP_PROJECT_AUDIT,
    "gcp:organizations/iamAuditConfig:IamAuditConfig",
    "gcp:folder/iamAuditConfig:IamAuditConfig",
)
# GCP writes Admin Activity audit logs always; Data Access logs (ADMIN_READ, DATA_READ, DATA_WRITE) only where an
# audit config turns them on, for every service (allServices).
GCP_AUDIT_SERVICE = "allServices"
GCP_AUDIT_LOG_TYPES = ("ADMIN_READ", "DATA_READ", "DATA_WRITE")
# GCP carries tags as labels: keys and values lowercase, characters other than a-z 0-9 _ - become `_`, at
# most 63 characters (the tag `aicluster:cluster` is the label `aicluster_cluster`).
GCP_LABEL_MAX = 63
_GCP_LABEL_BAD = re.compile(r"[^a-z0-9_-]")


def gcp_market(res: Res | None) -> str:
    """The market of an instance template or VM. A specific reservation is taken as reserved capacity (its rate
    is what the reservation or commitment costs). A VM that merely may consume a matching reservation
    (ANY_RESERVATION, GCP's default) is on-demand: a stack that says `market: reserved` without naming a
    reservation declares nothing a resource shows, so such a pool is costed here at the on-demand rate."""
    if res is None:
        return "on-demand"
    model = res.get("scheduling", "provisioningModel")
    if model == "SPOT" or res.get("scheduling", "preemptible") is True:
        return "spot"
    if model == "FLEX_START":
        return "flex-start"
    if model == "RESERVATION_BOUND" or res.get("reservationAffinity", "type") == "SPECIFIC_RESERVATION":
        return "reserved"
    return "on-demand"


def machine_type(stack: Stack, machine: str) -> InstanceType | None:
    # a machine type may be given as a URL (zones/us-central1-a/machineTypes/a3-megagpu-8g)
    return stack.catalog.instance_type("gcp", machine.rsplit("/", 1)[-1])


def _gcp_boot_disk(template: Res) -> tuple[float, str | None]:
    """(size GiB, diskType) of a template's boot disk: the disk marked `boot`, else the first."""
    disks = [d for d in items(template.props, "disks") if isinstance(d, Mapping)]
    boot = next((d for d in disks if get(d, "boot") is True), disks[0] if disks else None)
    size = get(boot, "diskSizeGb")
    kind = get(boot, "diskType")
    return (float(size) if isinstance(size, int | float) else 0.0), (kind if isinstance(kind, str) else None)


def _resize_requests(stack: Stack, mig: Res) -> int:
    """VMs that flex-start resize requests add to a managed instance group (its target size stays 0)."""
    total = 0
    for rr in stack.of(GCP_RESIZE_REQUEST):
        name = rr.get("instanceGroupManager")
        linked = mig in rr.linked("instanceGroupManager")
        if linked or (isinstance(name, str) and name and name == mig.get("name")):
            total += count(rr.get("resizeBy")) or 0
    return total


def _gcp_mig_fleet(stack: Stack, mig: Res) -> Fleet | None:
    templates = mig.linked("versions")
    template = next((t for t in templates if t.type in GCP_TEMPLATES), None)
    machine = template.get("machineType") if template else None
    size = mig.get("targetSize", default=0)
    target = count(size)
    if not isinstance(machine, str) or target is None:
        return None
    target = max(target, stack.burst_ceiling(mig.get("baseInstanceName")))
    assert template is not None
    root_gib, disk_type = _gcp_boot_disk(template)
    return Fleet(
        mig,
        machine,
        target + _resize_requests(stack, mig),
        gcp_market(template),
        mig.region or template.region,
        root_gib,
        machine_type(stack, machine),
        template,
        disk_type,
    )


def _gcp_instance_fleet(stack: Stack, vm: Res) -> Fleet | None:
    templates = [t for t in vm.linked("sourceInstanceTemplate") if t.type in GCP_TEMPLATES]
    template = templates[0] if templates else None
    machine = vm.get("machineType")
    if not isinstance(machine, str) and template is not None:
        machine = template.get("machineType")
    if not isinstance(machine, str):
        return None
    size = vm.get("bootDisk", "initializeParams", "size")
    kind = vm.get("bootDisk", "initializeParams", "type")
    root_gib, disk_type = (
        (float(size) if isinstance(size, int | float) else 0.0),
        (kind if isinstance(kind, str) else None),
    )
    if template is not None and not root_gib:
        root_gib, disk_type = _gcp_boot_disk(template)
    market = gcp_market(vm) if vm.get("scheduling") or vm.get("reservationAffinity") else gcp_market(template)
    return Fleet(vm, machine, 1, market, vm.region, root_gib, machine_type(stack, machine), template, disk_type)


def tpu_slice(catalog: Catalog, accelerator_type: str) -> tuple[TpuType, int, int] | None:
    """(generation, chips, hosts) of one slice of a TPU accelerator type: v5p-256 counts TensorCores (128 chips on
    32 hosts), v5litepod-16 and v6e-16 count chips. None for a type the catalog does not know."""
    prefix, _, size = accelerator_type.rpartition("-")
    tpu = next((t for t in catalog.tpu_types.values() if t.type_prefix == prefix), None)
    if tpu is None or not size.isdigit():
        return None
    chips = int(size) // tpu.tensorcores_per_chip
    hosts = 1 if chips <= tpu.single_host_max_chips else max(1, chips // tpu.chips_per_host)
    return tpu, chips, hosts


def _gcp_tpu_fleet(stack: Stack, res: Res) -> Fleet | None:
    """A queued resource (each node spec a slice, or `multisliceParams.nodeCount` of them; on-demand: the
    provider's queued resource asks for no spot or reserved capacity) or a TPU VM (one slice, its
    schedulingConfig says spot or reserved)."""
    if res.type == GCP_TPU_VM:
        specs = [(res.get("acceleratorType"), 1)]
        scheduling = res.get("schedulingConfig")
        spot = get(scheduling, "spot") is True or get(scheduling, "preemptible") is True
        market = "spot" if spot else "reserved" if get(scheduling, "reserved") is True else "on-demand"
    else:
        specs = [
            (get(spec, "node", "acceleratorType"), count(get(spec, "multisliceParams", "nodeCount")) or 1)
            for spec in items(res.props, "tpu", "nodeSpecs")
        ]
        market = "on-demand"
    tpu: TpuType | None = None
    chips = hosts = 0
    names = []
    for accelerator_type, slices in specs:
        found = tpu_slice(stack.catalog, accelerator_type) if isinstance(accelerator_type, str) else None
        if found is None or (tpu is not None and found[0] is not tpu):
            return None
        tpu = found[0]
        chips += found[1] * slices
        hosts += found[2] * slices
        names.append(accelerator_type if slices == 1 else f"{slices} x {accelerator_type}")
    if tpu is None:
        return None
    return Fleet(res, " + ".join(names), hosts, market, res.region, 0.0, None, None, None, tpu, chips)


def _gcp_capacity(value: Any) -> float | None:
    """GCP file-system sizes come as strings ("144000") in some APIs, numbers in others."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _gcp_lustre(stack: Stack, fs: Res) -> Filesystem:
    """Google Cloud Managed Lustre: capacity in GiB and throughput per TiB, both as strings."""
    capacity_gib = _gcp_capacity(fs.get("capacityGib"))
    per_tib = _gcp_capacity(fs.get("perUnitStorageThroughput"))
    tier = next(
        (
            t
            for t in stack.catalog.storage_tiers_for("gcp", "lustre")
            if t.service == "gcp-managed-lustre" and t.throughput_mb_s_per_tib == per_tib
        ),
        None,
    )
    throughput = capacity_gib / 1024 * per_tib if capacity_gib is not None and per_tib is not None else None
    return Filesystem(fs, "gcp-managed-lustre", capacity_gib, throughput, tier, fs.region)


def _parallelstore(stack: Stack, fs: Res) -> Filesystem:
    capacity_gib = _gcp_capacity(fs.get("capacityGib"))
    deployment = fs.get("deploymentType")
    if deployment in (None, "DEPLOYMENT_TYPE_UNSPECIFIED"):
        deployment = "SCRATCH"  # the API's default
    tier = next(
        (
            t
            for t in stack.catalog.storage_tiers_for("gcp", "lustre")
            if t.service == "parallelstore" and t.deployment == deployment
        ),
        None,
    )
    throughput = capacity_gib / 1024 * tier.throughput_mb_s_per_tib if capacity_gib is not None and tier else None
    return Filesystem(fs, "parallelstore", capacity_gib, throughput, tier, fs.region)


def _filestore(stack: Stack, fs: Res) -> Filesystem:
    """Filestore: the catalog splits a tier (ZONAL) by the capacity range it is sold in (ZONAL below 10 TiB,
    ZONAL-10-100TiB above); the share's size picks the range."""
    capacity_gib = _gcp_capacity(fs.get("fileShares", "capacityGb"))
    tier_name = fs.get("tier")
    tier = None
    if isinstance(tier_name, str) and capacity_gib is not None:
        tier = next(
            (
                t
                for t in stack.catalog.storage_tiers_for("gcp", "nfs")
                if t.service == "filestore"
                and t.deployment.split("-", 1)[0] == tier_name
                and t.min_capacity_gib <= capacity_gib <= (t.max_capacity_gib or capacity_gib)
            ),
            None,
        )
    throughput = capacity_gib / 1024 * tier.throughput_mb_s_per_tib if capacity_gib is not None and tier else None
    return Filesystem(fs, "filestore", capacity_gib, throughput, tier, fs.region)


FLEETS: FleetReaders = (
    ((GCP_MIG, GCP_REGION_MIG), _gcp_mig_fleet),
    ((GCP_INSTANCE,), _gcp_instance_fleet),
    ((GCP_TPU_QUEUED, GCP_TPU_VM), _gcp_tpu_fleet),
)


def _asked_topology(holders: list[Res]) -> str | None:
    """The NVLink domain topology the resource policies of `holders` ask for: a workload policy's
    acceleratorTopology (a MIG's), a compact placement policy's gpuTopology (a VM's or an instance template's).
    UNKNOWN where a holder names policies the pack cannot read (not in the stack, or not known during preview)."""
    unreadable = False
    for holder in holders:
        policies = holder.linked("resourcePolicies", GCP_RESOURCE_POLICY)
        for policy in policies:
            for path in (("workloadPolicy", "acceleratorTopology"), ("groupPlacementPolicy", "gpuTopology")):
                found = policy.get(*path)
                if found is UNKNOWN:
                    unreadable = True
                elif isinstance(found, str) and found:
                    return found
        named = holder.get("resourcePolicies")
        if not policies and (named is UNKNOWN or (named and named != {})):
            unreadable = True
    return UNKNOWN if unreadable else None


def _gcp_nvlink(stack: Stack, fleet: Fleet, domain: NvlinkDomain) -> NvlinkGroup:
    """A MIG or VM of a rack-scale machine type (A4X): each NVLink domain is one sub-block, which the VMs get only
    when a policy asks for its topology ("1x72": 18 VMs x 4 GPUs). A MIG takes a workload policy with
    acceleratorTopology (GCP requires one for A4X MIGs); VMs (and, as aicluster's template does, an instance
    template) a compact placement policy with gpuTopology."""
    per_node = fleet.spec.accelerator_count if fleet.spec else 0
    holders = [fleet.res] + ([fleet.template] if fleet.template is not None else [])
    mig = fleet.res.type in (GCP_MIG, GCP_REGION_MIG)
    return NvlinkGroup(
        fleet,
        domain,
        size_key="targetSize" if mig else "the VM count",
        wants=f"1x{domain.nodes * per_node}",
        asks=_asked_topology(holders),
        fix_topology=(
            "attach a workload policy (type HIGH_THROUGHPUT, acceleratorTopology {t}) through resourcePolicies."
            "workloadPolicy"
            if mig
            else "attach a compact placement policy with gpuTopology {t} through resourcePolicies"
        ),
    )


NVLINK: NvlinkReaders = (((GCP_MIG, GCP_REGION_MIG, GCP_INSTANCE), _gcp_nvlink),)

FILESYSTEMS: FilesystemReaders = (
    ((GCP_LUSTRE,), _gcp_lustre),
    ((GCP_PARALLELSTORE,), _parallelstore),
    ((GCP_FILESTORE,), _filestore),
)


def _public_ips(res: Res) -> Iterator[Exposure]:
    if res.type in (GCP_TPU_VM, GCP_TPU_QUEUED):
        configs = (
            [("networkConfig", res.get("networkConfig"))]
            if res.type == GCP_TPU_VM
            else [
                (f"tpu.nodeSpecs[{i}].node.networkConfig", get(spec, "node", "networkConfig"))
                for i, spec in enumerate(items(res.props, "tpu", "nodeSpecs"))
            ]
        )
        for where, config in configs:
            if get(config, "enableExternalIps") is True:
                yield Exposure(
                    f"{res.kind} {res.name} gives its TPU VMs external IPs ({where}.enableExternalIps = true)",
                    "set it false: TPU VMs egress through Cloud NAT, reach them through IAP",
                )
        return
    for i, nic in enumerate(items(res.props, "networkInterfaces")):
        for key in ("accessConfigs", "ipv6AccessConfigs"):
            configs = get(nic, key)
            if configs is UNKNOWN or not items(nic, key):
                continue
            yield Exposure(
                f"{res.kind} {res.name} gives networkInterfaces[{i}] an external IP ({key})",
                f"remove {key}: nodes egress through Cloud NAT, reach them through IAP TCP forwarding",
            )


PUBLIC_IPS = Reader(_public_ips, frozenset({*GCP_TEMPLATES, GCP_INSTANCE, GCP_TPU_VM, GCP_TPU_QUEUED}))


def _port_range(spec: str) -> PortRange | None:
    """A firewall port spec ("22", "20-30") as a range; None when it is none."""
    lo, _, hi = spec.strip().partition("-")
    try:
        return int(lo), int(hi or lo)
    except ValueError:
        return None


def _ingress(res: Res) -> Iterator[Ingress]:
    """An enabled ingress firewall rule's allows entries (TCP, or all protocols) from the internet; an entry that
    names no ports opens them all."""
    direction = res.get("direction")
    if direction not in (None, "INGRESS") or res.get("disabled") is True:
        return
    sources = res.get("sourceRanges")
    if sources is UNKNOWN:
        return
    open_to = sorted({str(c) for c in items(res.props, "sourceRanges")} & INTERNET)
    if not open_to:
        return
    for i, allow in enumerate(items(res.props, "allows")):
        proto = str(get(allow, "protocol", default="")).lower()
        if proto not in ("tcp", "6", "all"):
            continue
        ports = [str(p) for p in items(allow, "ports")]
        if get(allow, "ports") is UNKNOWN:
            continue
        opened = tuple(r for p in ports if (r := _port_range(p)) is not None) if ports else None
        shown = f"protocol {proto}, ports {', '.join(ports) if ports else 'all'}"
        yield Ingress(f"firewall {res.name} allows[{i}]", tuple(open_to), opened, shown)


INGRESS = Reader(_ingress, frozenset({GCP_FIREWALL}))


def gcp_label_key(tag: str) -> str:
    return _GCP_LABEL_BAD.sub("_", tag.lower())[:GCP_LABEL_MAX]


def _labels(res: Res) -> Iterator[TagSet]:
    """Every resource whose SDK class takes labels, declared or not; the provider's defaultLabels count too."""
    return sdk_tag_set(res, "gcp", "labels", ("defaultLabels",), "labels", gcp_label_key)


LABELS = Reader(_labels, provider="gcp")


def audit_config_gaps(config: Res) -> list[str]:
    """Why an IAM audit config does not turn on Data Access logs for every service (empty: it does). Values
    unknown during preview are taken as set."""
    gaps = []
    service = config.get("service")
    if service is not UNKNOWN and service != GCP_AUDIT_SERVICE:
        gaps.append(f"service is {service!r}, not {GCP_AUDIT_SERVICE}")
    if config.get("auditLogConfigs") is UNKNOWN:
        return gaps
    logs = items(config.props, "auditLogConfigs")
    if any(log is UNKNOWN or get(log, "logType") is UNKNOWN for log in logs):
        return gaps
    have = {str(get(log, "logType")) for log in logs}
    missing = [t for t in GCP_AUDIT_LOG_TYPES if t not in have]
    if missing:
        gaps.append(f"log types {', '.join(missing)} are not enabled")
    return gaps
