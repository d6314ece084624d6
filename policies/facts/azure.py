"""Azure resources as the engine hands them (pulumi-azure-native type tokens, camelCase props) -> facts.

Azure reads VM sizes case-insensitively and takes location display names ("East US"); a scale set keeps its NICs in
its VM profile; an NSG's rules are evaluated by priority, an earlier Deny winning, and `*`/`Internet`/`Any` name
the internet.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from aicluster.catalog import InstanceType, NvlinkDomain, load_catalog

from .engine import UNKNOWN, Reader, Res, count, get, items, truthy
from .model import Exposure, Filesystem, Fleet, Ingress, NvlinkGroup, PortRange, TagSet
from .regions import azure_location
from .tags import sdk_tag_set

if TYPE_CHECKING:
    from .stack import FilesystemReaders, FleetReaders, NvlinkReaders, Stack

__all__ = ["azure_location"]  # Azure's spelling of a region, with its other readers

AZURE_VMSS = "azure-native:compute:VirtualMachineScaleSet"
AZURE_VM = "azure-native:compute:VirtualMachine"
AZURE_LUSTRE = "azure-native:storagecache:AmlFilesystem"
AZURE_NETAPP_POOL = "azure-native:netapp:CapacityPool"
AZURE_NAT_GATEWAY = "azure-native:network:NatGateway"
AZURE_PUBLIC_IP = "azure-native:network:PublicIPAddress"
AZURE_NIC = "azure-native:network:NetworkInterface"
AZURE_NSG = "azure-native:network:NetworkSecurityGroup"
AZURE_SECURITY_RULE = "azure-native:network:SecurityRule"
AZURE_VNET = "azure-native:network:VirtualNetwork"
AZURE_VPN_GATEWAY = "azure-native:network:VirtualNetworkGateway"
AZURE_VPN_CONNECTION = "azure-native:network:VirtualNetworkGatewayConnection"
AZURE_SUBSCRIPTION_DIAGNOSTICS = "azure-native:monitor:SubscriptionDiagnosticSetting"
AZURE_MONITOR_WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"  # managed Prometheus metrics
DIAGNOSTIC_SETTINGS = ("azure-native:insights:DiagnosticSetting", "azure-native:monitor:DiagnosticSetting")
AZURE_AUDIT = (AZURE_SUBSCRIPTION_DIAGNOSTICS, *DIAGNOSTIC_SETTINGS)
AZURE_AUDIT_CATEGORY = "Administrative"  # the activity log's record of every create, update and delete
AZURE_AUDIT_GROUPS = ("alllogs", "audit")  # category groups that include it

AZURE_ANYWHERE = {"*", "internet", "any", "0.0.0.0/0", "::/0"}  # source prefixes the internet matches
_AZURE_ALL_INTERNET = {"*", "internet", "any"}  # ... of which these cover IPv4 and IPv6 alike


def vm_size(stack: Stack, size: str) -> InstanceType | None:
    """The catalog's record of an Azure VM size (Azure reads sizes case-insensitively)."""
    found = stack.catalog.instance_type("azure", size)
    if found is None:
        name = next((n for n in stack.catalog.instance_type_names("azure") if n.lower() == size.lower()), None)
        found = stack.catalog.instance_type("azure", name) if name else None
    return found


def azure_market(priority: Any) -> str:
    # "Low" is the retired name of Spot priority; both are evicted when Azure needs the capacity
    return "spot" if isinstance(priority, str) and priority.lower() in ("spot", "low") else "on-demand"


def _azure_os_disk(os_disk: Any) -> tuple[float, str | None]:
    size = get(os_disk, "diskSizeGB")
    kind = get(os_disk, "managedDisk", "storageAccountType")
    return (float(size) if isinstance(size, int | float) else 0.0), (kind if isinstance(kind, str) else None)


def _azure_vmss_fleet(stack: Stack, vmss: Res) -> Fleet | None:
    size = vmss.get("sku", "name")
    nodes = count(vmss.get("sku", "capacity"))
    if not isinstance(size, str) or nodes is None:
        return None
    profile = vmss.get("virtualMachineProfile")
    nodes = max(nodes, stack.burst_ceiling(get(profile, "osProfile", "computerNamePrefix")))
    root_gib, disk_type = _azure_os_disk(get(profile, "storageProfile", "osDisk"))
    market = azure_market(get(profile, "priority"))
    return Fleet(vmss, size, nodes, market, vmss.region, root_gib, vm_size(stack, size), None, disk_type)


def _azure_vm_fleet(stack: Stack, vm: Res) -> Fleet | None:
    size = vm.get("hardwareProfile", "vmSize")
    if not isinstance(size, str):
        return None
    root_gib, disk_type = _azure_os_disk(vm.get("storageProfile", "osDisk"))
    market = azure_market(vm.get("priority"))
    return Fleet(vm, size, 1, market, vm.region, root_gib, vm_size(stack, size), None, disk_type)


def _amlfs(stack: Stack, fs: Res) -> Filesystem:
    """Azure Managed Lustre: capacity in TiB, throughput per TiB set by the SKU (AMLFS-Durable-Premium-250)."""
    tib = fs.get("storageCapacityTiB")
    sku = fs.get("sku", "name")
    tier = next((t for t in stack.catalog.storage_tiers_for("azure", "lustre") if t.deployment == sku), None)
    rate = tier.throughput_mb_s_per_tib if tier else None
    if rate is None and isinstance(sku, str) and sku.rsplit("-", 1)[-1].isdigit():
        rate = float(sku.rsplit("-", 1)[-1])
    capacity_gib = float(tib) * 1024 if isinstance(tib, int | float) else None
    throughput = float(tib) * rate if isinstance(tib, int | float) and rate is not None else None
    return Filesystem(fs, "azure-managed-lustre", capacity_gib, throughput, tier, fs.region)


def _netapp_pool(stack: Stack, pool: Res) -> Filesystem:
    """Azure NetApp Files: the capacity pool is what is billed (size in bytes, per service level); its
    volumes draw on it."""
    size = pool.get("size")
    level = pool.get("serviceLevel")
    tier = next((t for t in stack.catalog.storage_tiers_for("azure", "nfs") if t.deployment == level), None)
    capacity_gib = float(size) / 2**30 if isinstance(size, int | float) else None
    throughput = capacity_gib / 1024 * tier.throughput_mb_s_per_tib if capacity_gib is not None and tier else None
    return Filesystem(pool, "azure-netapp-files", capacity_gib, throughput, tier, pool.region)


FLEETS: FleetReaders = (((AZURE_VMSS,), _azure_vmss_fleet), ((AZURE_VM,), _azure_vm_fleet))


def _azure_nvlink(stack: Stack, fleet: Fleet, domain: NvlinkDomain) -> NvlinkGroup:
    """A scale set of a rack-scale size (ND GB200/GB300 v6) is one rack: Azure maps a rack's VMs to the scale set's
    one placement group, and aicluster plans one scale set per rack (whether Azure lets one span two is not
    published, rack-scale.md section 6), so a scale set holds exactly one whole NVLink domain."""
    vmss = fleet.res.type == AZURE_VMSS
    return NvlinkGroup(fleet, domain, size_key="sku.capacity" if vmss else "the VM count", one_domain=vmss)


NVLINK: NvlinkReaders = (((AZURE_VMSS, AZURE_VM), _azure_nvlink),)
FILESYSTEMS: FilesystemReaders = (((AZURE_LUSTRE,), _amlfs), ((AZURE_NETAPP_POOL,), _netapp_pool))


def infiniband_scale_set(res: Res) -> bool:
    """A scale set of a size the catalog puts on InfiniBand."""
    size = res.get("sku", "name")
    if not isinstance(size, str):
        return False
    it = load_catalog().instance_type("azure", size)
    return it is not None and it.network.fabric == "infiniband"


def _public_ips(res: Res) -> Iterator[Exposure]:
    if res.type == AZURE_NIC:
        for j, ip in enumerate(items(res.props, "ipConfigurations")):
            if isinstance(get(ip, "publicIPAddress"), Mapping):
                yield Exposure(
                    f"network interface {res.name} ipConfigurations[{j}] ({get(ip, 'name', default='?')}) attaches a "
                    "public IP address",
                    "remove publicIPAddress: nodes egress through the NAT gateway, reach them through Azure Bastion or "
                    "a VPN",
                )
        return
    # a scale set's NICs live in its VM profile; a VM may declare its NICs inline the same way
    profile = res.get("virtualMachineProfile") if res.type == AZURE_VMSS else res.props
    for i, nic in enumerate(items(profile, "networkProfile", "networkInterfaceConfigurations")):
        for j, ip in enumerate(items(nic, "ipConfigurations")):
            if isinstance(get(ip, "publicIPAddressConfiguration"), Mapping):
                yield Exposure(
                    f"{res.kind} {res.name} gives networkInterfaceConfigurations[{i}] "
                    f"({get(nic, 'name', default='?')}) ipConfigurations[{j}] ({get(ip, 'name', default='?')}) a "
                    "public IP (publicIPAddressConfiguration)",
                    "remove it: nodes egress through the NAT gateway",
                )


# not PublicIPAddress itself: the NAT gateway's address is fine
PUBLIC_IPS = Reader(_public_ips, frozenset({AZURE_VMSS, AZURE_VM, AZURE_NIC}))


def _port_specs(rule: Any) -> list[str]:
    return [str(p) for p in [get(rule, "destinationPortRange"), *items(rule, "destinationPortRanges")] if p]


def _port_range(spec: str) -> PortRange | None:
    """An NSG port spec ("22", "20-30", "*") as a range; None when it is none."""
    spec = spec.strip()
    if spec == "*":
        return (0, 65535)
    lo, _, hi = spec.partition("-")
    try:
        return int(lo), int(hi or lo)
    except ValueError:
        return None


def _ranges(rule: Any) -> tuple[PortRange, ...]:
    return tuple(r for s in _port_specs(rule) if (r := _port_range(s)) is not None)


def _sources(rule: Any) -> list[str]:
    return [str(p) for p in [get(rule, "sourceAddressPrefix"), *items(rule, "sourceAddressPrefixes")] if p]


def _inbound_tcp(rule: Any, access: str) -> bool:
    """Whether a rule is an inbound TCP (or any protocol) rule with this access (allow/deny)."""
    if str(get(rule, "direction", default="")).lower() != "inbound":
        return False
    return str(get(rule, "access", default="")).lower() == access and str(get(rule, "protocol")).lower() in ("tcp", "*")


def _denied_first(rule: Any, sources: list[str], rules: list[Any]) -> tuple[PortRange, ...]:
    """The ports Deny rules of the same group, evaluated earlier (lower priority number), close to every internet
    source of `rule` first."""
    priority = get(rule, "priority")
    if not isinstance(priority, int | float):
        return ()
    closed: list[PortRange] = []
    for other in rules:
        first = get(other, "priority")
        if other is rule or not isinstance(first, int | float) or first >= priority:
            continue
        if not _inbound_tcp(other, "deny"):
            continue
        denied = {s.lower() for s in _sources(other)}
        if all(denied & _AZURE_ALL_INTERNET or s.lower() in denied for s in sources):
            closed += _ranges(other)
    return tuple(closed)


def _ingress(res: Res) -> Iterator[Ingress]:
    """A network security group's inbound allow rules, or a standalone security rule."""
    if res.type == AZURE_NSG:
        rules = items(res.props, "securityRules")
        named = [
            (f"network security group {res.name} securityRules[{i}] ({get(r, 'name', default='?')})", r)
            for i, r in enumerate(rules)
        ]
    else:
        rules = [res.props]
        named = [(f"security rule {res.name}", res.props)]
    for where, rule in named:
        if not _inbound_tcp(rule, "allow"):
            continue
        open_to = [s for s in _sources(rule) if s.lower() in AZURE_ANYWHERE]
        shown = f"protocol {get(rule, 'protocol')}, ports {', '.join(_port_specs(rule))}"
        yield Ingress(where, tuple(open_to), _ranges(rule), shown, _denied_first(rule, open_to, rules))


INGRESS = Reader(_ingress, frozenset({AZURE_NSG, AZURE_SECURITY_RULE}))


def _tags(res: Res) -> Iterator[TagSet]:
    """Every resource whose SDK class takes tags, declared or not."""
    return sdk_tag_set(res, "azure-native", "tags", ("defaultTags", "tags"), "tags")


TAGS = Reader(_tags, provider="azure-native")


def activity_log_gaps(setting: Res) -> list[str]:
    """Why a diagnostic setting does not keep the Administrative activity log in a Log Analytics workspace
    (empty: it does). Values unknown during preview (the workspace's id) are taken as set."""
    gaps = []
    workspace = setting.get("workspaceId")
    if workspace is not UNKNOWN and not (isinstance(workspace, str) and workspace):
        gaps.append("workspaceId is not set")
    logs = setting.get("logs")

    def administrative(log: Any) -> bool:
        if log is UNKNOWN:
            return True
        enabled = get(log, "enabled")
        category = str(get(log, "category", default="")).lower()
        group = str(get(log, "categoryGroup", default="")).lower()
        named = category == AZURE_AUDIT_CATEGORY.lower() or group in AZURE_AUDIT_GROUPS
        return named and (enabled is UNKNOWN or truthy(enabled))

    if logs is not UNKNOWN and not any(administrative(log) for log in items(setting.props, "logs")):
        gaps.append(f"the {AZURE_AUDIT_CATEGORY} log category is not enabled")
    return gaps
