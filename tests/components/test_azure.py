"""Azure components: scale sets that keep InfiniBand whole, a network with no way in, encrypted storage."""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Callable
from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN
from components.tags import _takes_tags
from tests.components.conftest import Built
from tests.helpers import SSH_KEY, azure_cluster, azure_pool

Build = Callable[[dict[str, Any]], Built]

VMSS = "azure-native:compute:VirtualMachineScaleSet"
VM = "azure-native:compute:VirtualMachine"
NIC = "azure-native:network:NetworkInterface"
SUBNET = "azure-native:network:Subnet"
NSG = "azure-native:network:NetworkSecurityGroup"
NAT = "azure-native:network:NatGateway"
PIP = "azure-native:network:PublicIPAddress"
RG = "azure-native:resources:ResourceGroup"
AMLFS = "azure-native:storagecache:AmlFilesystem"
ANF_POOL = "azure-native:netapp:CapacityPool"
ANF_VOLUME = "azure-native:netapp:CapacityPoolVolume"
DIAG = "azure-native:monitor:SubscriptionDiagnosticSetting"
WORKSPACE = "azure-native:operationalinsights:Workspace"


def scale_sets(b: Built) -> list[dict[str, Any]]:
    return [r.inputs for r in sorted(b.of_type(VMSS), key=lambda r: r.name)]


def subnet(b: Built, suffix: str) -> dict[str, Any]:
    return b.one(SUBNET, suffix).inputs


def test_scale_set_keeps_the_infiniband_fabric_whole(build: Build) -> None:
    (vmss,) = scale_sets(build(azure_cluster()))
    assert vmss["singlePlacementGroup"] is True
    assert vmss["platformFaultDomainCount"] == 1
    assert vmss["overprovision"] is False
    assert vmss["orchestrationMode"] == "Uniform"
    assert vmss["upgradePolicy"] == {"mode": "Manual"}
    assert vmss["sku"] == {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 16}
    assert vmss["zones"] == ["1"]
    assert vmss["location"] == "eastus"


def test_scale_set_nodes_have_no_public_ip_and_use_accelerated_networking(build: Build) -> None:
    (vmss,) = scale_sets(build(azure_cluster()))
    (nic,) = vmss["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"]
    assert nic["enableAcceleratedNetworking"] is True
    assert nic["primary"] is True
    (ipc,) = nic["ipConfigurations"]
    assert "publicIPAddressConfiguration" not in ipc
    assert ipc["subnet"]["id"] is UNKNOWN  # the compute subnet, known after creation
    assert nic["networkSecurityGroup"]["id"] is UNKNOWN


def test_scale_set_identity_image_disk_and_login(build: Build) -> None:
    (vmss,) = scale_sets(build(azure_cluster()))
    assert vmss["identity"]["type"] == "UserAssigned"
    assert len(vmss["identity"]["userAssignedIdentities"]) == 1
    profile = vmss["virtualMachineProfile"]
    storage = profile["storageProfile"]
    assert storage["imageReference"] == {
        "publisher": "microsoft-dsvm",
        "offer": "ubuntu-hpc",
        "sku": "2204",
        "version": "latest",
    }
    assert storage["osDisk"] == {
        "createOption": "FromImage",
        "caching": "ReadWrite",
        "diskSizeGB": 512,
        "managedDisk": {"storageAccountType": "Premium_LRS"},  # encrypted at rest by the platform
    }
    os_profile = profile["osProfile"]
    assert os_profile["adminUsername"] == "aicluster"
    linux = os_profile["linuxConfiguration"]
    assert linux["disablePasswordAuthentication"] is True
    assert linux["ssh"]["publicKeys"] == [{"path": "/home/aicluster/.ssh/authorized_keys", "keyData": SSH_KEY}]
    assert "adminPassword" not in os_profile
    text = base64.b64decode(os_profile["customData"]).decode()
    assert text.startswith("#cloud-config\n")
    assert '"fabric": "infiniband"' in text
    assert profile["priority"] == "Regular"
    assert "evictionPolicy" not in profile
    assert "billingProfile" not in profile


@pytest.mark.parametrize(
    ("nodes", "sizes"),
    [
        pytest.param(100, [100], id="100-one-domain"),
        pytest.param(101, [100, 1], id="101-two-domains"),
        pytest.param(250, [100, 100, 50], id="250-three-domains"),
        pytest.param(1000, [100] * 10, id="1000-ten-domains"),
    ],
)
def test_pool_splits_into_scale_sets_of_at_most_100_vms(build: Build, nodes: int, sizes: list[int]) -> None:
    b = build(azure_cluster(pools=[azure_pool(nodes=nodes)], storage=[]))
    sets = scale_sets(b)
    assert [s["sku"]["capacity"] for s in sets] == sizes
    assert [s["virtualMachineProfile"]["osProfile"]["computerNamePrefix"] for s in sets] == [
        f"h100-ib{k}-" for k in range(len(sizes))
    ]
    assert all(s["singlePlacementGroup"] is True for s in sets)
    domains = b.plan.pools[0].ib_domains()
    assert [len(r) for _, r in domains] == sizes
    assert [r.start for _, r in domains] == [100 * k for k in range(len(sizes))]


def test_spot_pool_sets_priority_eviction_and_max_price(build: Build) -> None:
    spot = azure_pool(instance_type="Standard_ND96amsr_A100_v4", market="spot", zone=None)
    (vmss,) = scale_sets(build(azure_cluster(pools=[spot], storage=[])))
    profile = vmss["virtualMachineProfile"]
    assert profile["priority"] == "Spot"
    assert profile["evictionPolicy"] == "Delete"
    assert profile["billingProfile"] == {"maxPrice": -1}
    assert "zones" not in vmss  # regional
    kept = azure_pool(instance_type="Standard_ND96amsr_A100_v4", market="spot", spot_eviction="deallocate")
    (vmss,) = scale_sets(build(azure_cluster(pools=[kept], storage=[])))
    assert vmss["virtualMachineProfile"]["evictionPolicy"] == "Deallocate"


def test_long_pool_names_get_distinct_15_character_host_prefixes(build: Build) -> None:
    pools = [azure_pool(name="pretraining-east-a", nodes=2), azure_pool(name="pretraining-east-b", nodes=2)]
    b = build(azure_cluster(pools=pools, storage=[]))
    prefixes = [s["virtualMachineProfile"]["osProfile"]["computerNamePrefix"] for s in scale_sets(b)]
    assert len(set(prefixes)) == 2
    assert all(len(p) <= 15 for p in prefixes)


def test_network_subnets_sizes_and_delegation(build: Build) -> None:
    home = {"name": "home", "kind": "nfs", "capacity_tib": 4, "mount": "/shared"}
    b = build(azure_cluster(storage=[*azure_cluster()["storage"], home]))
    vnet = b.one("azure-native:network:VirtualNetwork").inputs
    assert vnet["addressSpace"] == {"addressPrefixes": ["10.65.0.0/16"]}  # eastus's fixed slot
    compute = subnet(b, "-compute")
    assert compute["addressPrefix"] == "10.65.0.0/19"
    assert compute["defaultOutboundAccess"] is False
    assert compute["natGateway"]["id"] is UNKNOWN
    lustre = subnet(b, "-lustre")
    assert ipaddress.ip_network(lustre["addressPrefix"]).prefixlen <= 23  # at least the /23 Managed Lustre needs
    netapp = subnet(b, "-netapp")
    assert netapp["delegations"] == [{"name": "netapp", "serviceName": "Microsoft.NetApp/volumes"}]
    prefixes = [ipaddress.ip_network(s["addressPrefix"]) for s in (compute, lustre, netapp)]
    assert not any(a.overlaps(c) for i, a in enumerate(prefixes) for c in prefixes[i + 1 :])
    assert all(p.subnet_of(ipaddress.ip_network("10.65.0.0/16")) for p in prefixes)


def test_smallest_network_still_gives_lustre_a_23(build: Build) -> None:
    b = build(azure_cluster(network={"network_prefix": 20}))
    assert subnet(b, "-lustre")["addressPrefix"].endswith("/23")
    assert subnet(b, "-compute")["addressPrefix"].endswith("/23")


def test_no_subnet_for_storage_the_cluster_does_not_have(build: Build) -> None:
    b = build(azure_cluster(storage=[]))
    assert [r.name for r in b.of_type(SUBNET)] == ["nd-train-eastus-compute"]


def test_security_groups_deny_ssh_and_rdp_from_the_internet_and_allow_lnet(build: Build) -> None:
    b = build(azure_cluster())
    groups = {r.name: r.inputs["securityRules"] for r in b.of_type(NSG)}
    assert set(groups) == {"nd-train-eastus-nodes-nsg", "nd-train-eastus-lustre-nsg"}
    for rules in groups.values():
        deny = next(r for r in rules if r["name"] == "deny-admin-from-internet")
        assert deny == {
            "name": "deny-admin-from-internet",
            "direction": "Inbound",
            "access": "Deny",
            "protocol": "Tcp",
            "priority": 100,
            "sourceAddressPrefix": "Internet",
            "sourcePortRange": "*",
            "destinationAddressPrefix": "*",
            "destinationPortRanges": ["22", "3389"],
        }
        assert not any(r["access"] == "Allow" and r.get("sourceAddressPrefix") in ("*", "Internet") for r in rules)
    lnet = [r for r in groups["nd-train-eastus-lustre-nsg"] if r["access"] == "Allow"]
    assert {r["direction"] for r in lnet} == {"Inbound", "Outbound"}
    assert all(r["destinationPortRanges"] == ["988", "1019-1023"] for r in lnet)
    assert all(r["sourceAddressPrefix"] == "VirtualNetwork" for r in lnet)


def test_egress_through_one_nat_gateway_and_its_only_public_ip(build: Build) -> None:
    b = build(azure_cluster())
    nat = b.one(NAT).inputs
    assert nat["sku"] == {"name": "Standard"}
    (ip,) = b.of_type(PIP)
    assert ip.inputs["publicIPAllocationMethod"] == "Static"
    assert ip.inputs["sku"]["name"] == "Standard"
    controller_nic = b.one(NIC).inputs
    assert all("publicIPAddress" not in c for c in controller_nic["ipConfigurations"])


def test_managed_lustre_uses_the_planned_sku_size_zone_and_subnet(build: Build) -> None:
    b = build(azure_cluster())
    fs = b.one(AMLFS)
    assert fs.inputs["sku"] == {"name": "AMLFS-Durable-Premium-500"}
    assert fs.inputs["storageCapacityTiB"] == 16
    assert fs.inputs["zones"] == ["1"]
    assert fs.inputs["maintenanceWindow"] == {"dayOfWeek": "Sunday", "timeOfDayUTC": "02:00"}
    assert fs.property_dependencies["filesystemSubnet"] == [b.one(SUBNET, "-lustre").urn]
    assert fs.inputs["tags"]["aicluster:storage"] == "scratch"


def test_capacity_rounds_to_the_sku_step(build: Build) -> None:
    st = {"name": "scratch", "kind": "lustre", "capacity_tib": 20, "throughput_mb_s_per_tib": 125, "mount": "/lustre"}
    b = build(azure_cluster(storage=[st]))
    assert b.one(AMLFS).inputs["storageCapacityTiB"] == 32  # 16-TiB steps
    assert b.plan.filesystems[0].rounding is not None


def test_netapp_files_pool_and_volume_exported_to_the_compute_subnet_only(build: Build) -> None:
    home = {"name": "home", "kind": "nfs", "capacity_tib": 3.5, "mount": "/shared"}
    b = build(azure_cluster(storage=[home]))
    pool = b.one(ANF_POOL).inputs
    assert pool["serviceLevel"] == "Premium"
    assert pool["size"] == 4 * 2**40  # rounded up to whole TiB
    volume = b.one(ANF_VOLUME).inputs
    assert volume["usageThreshold"] == 4 * 2**40
    assert volume["protocolTypes"] == ["NFSv4.1"]
    (rule,) = volume["exportPolicy"]["rules"]
    assert rule["allowedClients"] == "10.65.0.0/19"
    assert rule["nfsv41"] is True
    assert rule["nfsv3"] is False
    assert volume["poolName"] == pool["poolName"] == "home"


def test_existing_resource_group_is_used_not_created(build: Build) -> None:
    b = build(azure_cluster(pools=[azure_pool(resource_group="rg-ml-prod")]))
    assert b.of_type(RG) == []
    names = {r.inputs.get("resourceGroupName") for r in b.capture.custom() if r.type.startswith("azure-native:")}
    names.discard(None)  # the subscription diagnostic setting and the provider take no resource group
    assert names == {"rg-ml-prod"}


def test_controller_vm_is_private_and_key_only(build: Build) -> None:
    b = build(azure_cluster())
    vm = b.one(VM).inputs
    assert vm["hardwareProfile"] == {"vmSize": "Standard_D8s_v5"}
    assert vm["zones"] == ["1"]
    assert vm["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"] is True
    assert vm["storageProfile"]["osDisk"]["diskSizeGB"] == 128
    assert vm["storageProfile"]["imageReference"]["offer"] == "ubuntu-24_04-lts"


def test_audit_log_only_where_a_framework_requires_it(build: Build) -> None:
    assert build(azure_cluster()).of_type(DIAG) == []
    b = build(azure_cluster(compliance={"frameworks": ["hipaa"]}))
    diag = b.one(DIAG).inputs
    assert {c["category"] for c in diag["logs"] if c["enabled"]} >= {"Administrative", "Security", "Policy"}
    assert diag["workspaceId"] is UNKNOWN
    assert b.one(WORKSPACE).inputs["retentionInDays"] == 365


def test_every_taggable_resource_is_tagged_once_from_the_spec(build: Build) -> None:
    b = build(azure_cluster())
    want = {"owner": "ml-platform", "cost-center": "4711", "aicluster:cluster": "nd-train"}
    tagged = 0
    for r in b.capture.custom():
        if not r.type.startswith("azure-native:"):
            continue
        if _takes_tags(r.type):
            assert want.items() <= r.inputs["tags"].items(), r.name
            tagged += 1
    assert tagged >= 10
    (vmss,) = scale_sets(b)
    assert vmss["tags"]["aicluster:pool"] == "h100"
    assert "aicluster:pool" not in b.one("azure-native:network:VirtualNetwork").inputs["tags"]


def test_raised_limit_is_declared_for_the_policy_pack(build: Build) -> None:
    b = build(azure_cluster(pools=[azure_pool(nodes=250, ib_domain_max_vms=300)], storage=[]))
    assert [s["sku"]["capacity"] for s in scale_sets(b)] == [250]
    assert b.one("aicluster:index:AiCluster").inputs["fabric"] == {"ib_domain_max_vms": 300}
