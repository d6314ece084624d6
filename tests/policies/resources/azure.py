"""Azure resources as pulumi-azure-native 3.29 names them: a ND H100 v5 scale set, a controller VM, Managed Lustre,
a NetApp pool, the NAT gateway and its address, an NSG; all tagged as aicluster tags them."""

from __future__ import annotations

from typing import Any

from aicluster.preview.engine import UNKNOWN
from policies.facts import Res
from policies.facts.aicluster import AICLUSTER_TYPE
from tests.policies.conftest import res

VMSS = "azure-native:compute:VirtualMachineScaleSet"
VM = "azure-native:compute:VirtualMachine"
NIC = "azure-native:network:NetworkInterface"
NSG = "azure-native:network:NetworkSecurityGroup"
SECURITY_RULE = "azure-native:network:SecurityRule"
NAT = "azure-native:network:NatGateway"
PUBLIC_IP = "azure-native:network:PublicIPAddress"
AMLFS = "azure-native:storagecache:AmlFilesystem"
ANF_POOL = "azure-native:netapp:CapacityPool"
ANF_VOLUME = "azure-native:netapp:CapacityPoolVolume"
ACTIVITY_LOG = "azure-native:monitor:SubscriptionDiagnosticSetting"

ND_H100 = "Standard_ND96isr_H100_v5"
TAGS = {"owner": "ml-platform", "cost-center": "cc-42"}
GIB = 2**30


def vmss(
    name: str = "gpu",
    *,
    nodes: int = 4,
    size: str = ND_H100,
    priority: str = "Regular",
    location: str = "eastus",
    disk_gib: float = 512.0,
    disk_type: str = "Premium_LRS",
    ip_config: dict[str, Any] | None = None,
) -> Res:
    ip: dict[str, Any] = {"name": "ipv4", "primary": True, "subnet": {"id": UNKNOWN}, **(ip_config or {})}
    profile: dict[str, Any] = {
        "priority": priority,
        "storageProfile": {
            "osDisk": {
                "createOption": "FromImage",
                "diskSizeGB": disk_gib,
                "managedDisk": {"storageAccountType": disk_type},
            },
            "imageReference": {
                "publisher": "microsoft-dsvm",
                "offer": "ubuntu-hpc",
                "sku": "2204",
                "version": "latest",
            },
        },
        "networkProfile": {
            "networkInterfaceConfigurations": [
                {
                    "name": "primary",
                    "primary": True,
                    "enableAcceleratedNetworking": True,
                    "networkSecurityGroup": {"id": UNKNOWN},
                    "ipConfigurations": [ip],
                }
            ]
        },
        "osProfile": {
            "computerNamePrefix": "gpu",
            "adminUsername": "azureuser",
            "linuxConfiguration": {"disablePasswordAuthentication": True, "ssh": {"publicKeys": []}},
        },
    }
    if priority == "Spot":
        profile |= {"evictionPolicy": "Delete", "billingProfile": {"maxPrice": -1.0}}
    return res(
        VMSS,
        name,
        {
            "location": location,
            "sku": {"name": size, "capacity": float(nodes), "tier": "Standard"},
            "singlePlacementGroup": True,
            "platformFaultDomainCount": 1.0,
            "overprovision": False,
            "virtualMachineProfile": profile,
            "tags": TAGS,
        },
    )


def controller(**props: Any) -> Res:
    base: dict[str, Any] = {
        "location": "eastus",
        "hardwareProfile": {"vmSize": "Standard_D8s_v5"},
        "storageProfile": {"osDisk": {"diskSizeGB": 64.0, "managedDisk": {"storageAccountType": "Premium_LRS"}}},
        "networkProfile": {"networkInterfaces": [{"id": UNKNOWN, "primary": True}]},
        "tags": TAGS,
    }
    return res(VM, "ctl", base | props)


def amlfs(name: str = "lustre", tib: float = 16.0, sku: str = "AMLFS-Durable-Premium-250") -> Res:
    return res(
        AMLFS,
        name,
        {"location": "eastus", "sku": {"name": sku}, "storageCapacityTiB": tib, "zones": ["1"], "tags": TAGS},
    )


def anf_pool(tib: int = 4, level: str = "Premium") -> Res:
    return res(
        ANF_POOL, "home", {"location": "eastus", "serviceLevel": level, "size": float(tib * 1024 * GIB), "tags": TAGS}
    )


def nat() -> Res:
    return res(NAT, "nat", {"location": "eastus", "sku": {"name": "Standard"}, "tags": TAGS})


def nat_ip() -> Res:
    return res(
        PUBLIC_IP,
        "nat-ip",
        {"location": "eastus", "sku": {"name": "Standard"}, "publicIPAllocationMethod": "Static", "tags": TAGS},
    )


def cluster(**declared: Any) -> Res:
    return res(AICLUSTER_TYPE, "llm", declared)


DENY_ADMIN = {  # what aicluster's NSGs start with
    "name": "deny-admin-from-internet",
    "direction": "Inbound",
    "access": "Deny",
    "protocol": "Tcp",
    "priority": 100.0,
    "sourceAddressPrefix": "Internet",
    "sourcePortRange": "*",
    "destinationAddressPrefix": "*",
    "destinationPortRanges": ["22", "3389"],
}


def nsg(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"location": "eastus", "securityRules": list(rules), "tags": TAGS}


def ib_vmss(**changes: Any) -> dict[str, Any]:
    """An InfiniBand scale set's props as aicluster declares them: 100 VMs in one placement group."""
    props: dict[str, Any] = {
        "sku": {"name": "Standard_ND96isr_H100_v5", "capacity": 100.0},
        "singlePlacementGroup": True,
        "platformFaultDomainCount": 1.0,
        "overprovision": False,
    }
    props.update(changes)
    return props
