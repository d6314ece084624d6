"""Azure stacks as the engine hands them (hand-built props, camelCase, as pulumi-azure-native 3.29 names them):
the facts the pack reads from them, and the cost and compliance rules extended to Azure."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN
from policies import ResourceRule
from policies.cost import bill
from policies.facts import Res, Stack
from policies.facts.aicluster import AICLUSTER_TYPE
from policies.rule import NotApplicable

from .conftest import findings, policy, res, stack_findings

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


# --------------------------------------------------------------------------------------------------
# Facts


def test_scale_sets_and_vms_are_fleets() -> None:
    stack = Stack([vmss(), vmss("spot", nodes=2, priority="Spot", location="East US"), controller()])
    gpu, spot, ctl = stack.fleets
    assert (gpu.instance_type, gpu.nodes, gpu.market, gpu.region) == (ND_H100, 4, "on-demand", "eastus")
    assert (gpu.root_volume_gib, gpu.root_disk_type, gpu.template, gpu.provider) == (
        512.0,
        "Premium_LRS",
        None,
        "azure",
    )
    assert gpu.spec is not None
    assert gpu.spec.accelerator_count == 8
    assert (spot.nodes, spot.market, spot.region) == (2, "spot", "eastus")  # "East US" is eastus
    assert (ctl.instance_type, ctl.nodes, ctl.market, ctl.root_volume_gib) == ("Standard_D8s_v5", 1, "on-demand", 64.0)
    assert Stack([controller(priority="Spot")]).fleets[0].market == "spot"


def test_managed_lustre_and_netapp_pools_are_filesystems() -> None:
    volume = res(ANF_VOLUME, "home-vol", {"location": "eastus", "serviceLevel": "Premium", "usageThreshold": 1.0})
    lustre, home = Stack([amlfs(), anf_pool(), volume]).filesystems  # the volume draws on the pool: not counted
    assert (lustre.service, lustre.provider, lustre.capacity_gib, lustre.throughput_mb_s) == (
        "azure-managed-lustre",
        "azure",
        16384.0,
        4000.0,  # 16 TiB x 250 MB/s per TiB
    )
    assert lustre.tier is not None
    assert lustre.tier.sku == "azure-managed-lustre/AMLFS-Durable-Premium-250/250"
    assert lustre.parallel
    assert (home.service, home.capacity_gib, home.throughput_mb_s, home.parallel) == (
        "azure-netapp-files",
        4096.0,
        pytest.approx(4 * 67.1),
        False,
    )
    assert home.tier is not None
    assert home.tier.deployment == "Premium"
    assert Stack([anf_pool(level="Standard")]).filesystems[0].tier is None  # not in the catalog


# --------------------------------------------------------------------------------------------------
# Cost

BUDGET = "aicluster-cluster-enforce-monthly-budget"
PRICES = "aicluster-cluster-missing-prices"


def test_budget_costs_scale_sets_os_disks_nat_and_public_ip() -> None:
    # catalog list prices, eastus: ND96isr H100 v5 $98.32/h, Premium SSD $0.143/GiB-month, NAT gateway and
    # Standard public IP $0.045/h and $0.005/h; 730-hour months
    gpus = 98.32 * 4 * 730  # 287,094.40
    disks = 4 * 512 * 0.143  # 292.86
    nat_gw = 0.045 * 730  # 32.85
    ip = 0.005 * 730  # 3.65
    total = gpus + disks + nat_gw + ip  # 287,423.76
    stack = [cluster(budgets={"monthly_usd": 250_000.0}), vmss(), nat(), nat_ip()]
    assert [(line.what, line.usd_per_month) for line in bill(Stack(stack))] == [
        (f"gpu: 4 x {ND_H100} on-demand", pytest.approx(gpus, abs=0.005)),
        ("gpu: 2048 GiB Premium_LRS OS disks", pytest.approx(disks, abs=0.005)),
        ("nat: NAT gateway", pytest.approx(nat_gw, abs=0.005)),
        ("nat-ip: public IPv4", pytest.approx(ip, abs=0.005)),
    ]
    over = total - 250_000
    expected = (
        f"monthly cost ${total:,.0f} exceeds the budget $250,000 by ${over:,.0f} ({over / 250_000:.1%}); largest: "
        f"gpu (4 x {ND_H100} on-demand, 2048 GiB Premium_LRS OS disks) ${gpus + disks:,.0f}; "
        f"nat (NAT gateway) ${nat_gw:,.0f}; nat-ip (public IPv4) ${ip:,.0f}. "
        "Shrink or remove a pool, move it to spot or "
        "reserved capacity, or raise "
        "budgets.monthly_usd"
    )
    assert stack_findings(BUDGET, stack) == [expected]
    assert expected.startswith(
        "monthly cost $287,424 exceeds the budget $250,000 by $37,424 (15.0%); largest: gpu (4 x "
        "Standard_ND96isr_H100_v5 on-demand, 2048 GiB Premium_LRS OS disks) $287,387; nat (NAT gateway) $33;"
    )
    assert stack_findings(BUDGET, stack, {"monthly_usd": 300_000}) == []


def test_large_sizes_are_written_in_full() -> None:
    assert bill(Stack([amlfs(tib=1536.0)]))[0].what == "lustre: 1572864 GiB azure-managed-lustre"


def test_os_disks_the_catalog_does_not_price_are_named() -> None:
    lines = bill(Stack([vmss(disk_type="StandardSSD_LRS")]))
    assert [(line.what, line.usd_per_month) for line in lines][1] == ("gpu: 2048 GiB StandardSSD_LRS OS disks", None)


def test_unpriced_managed_lustre_is_named_until_an_override_prices_it() -> None:
    gpus_etc = 98.32 * 4 * 730 + 4 * 512 * 0.143  # 287,387.26
    resources = [vmss(), amlfs()]
    # within budget as far as it is known: the budget passes, the advisory price rule names the gap
    assert stack_findings(BUDGET, [cluster(budgets={"monthly_usd": 300_000.0}), *resources]) == []
    assert stack_findings(PRICES, [cluster(budgets={"monthly_usd": 300_000.0}), *resources]) == [
        "no catalog price for lustre: 16384 GiB azure-managed-lustre: the monthly cost $287,387 + unpriced items "
        "(and the budget "
        "check) leaves them out; add your rates under pricing.overrides"
    ]
    assert stack_findings(BUDGET, [cluster(budgets={"monthly_usd": 200_000.0}), *resources]) == [
        "monthly cost $287,387 + unpriced items exceeds the budget $200,000 by $87,387 (43.7%); largest: gpu (4 x "
        f"{ND_H100} on-demand, 2048 GiB Premium_LRS OS disks) $287,387. Shrink or remove a pool, move it "
        "to spot or reserved capacity, or raise budgets.monthly_usd (not counted, no price: lustre: 16384 GiB "
        "azure-managed-lustre)"
    ]
    assert f"${gpus_etc:,.0f}" == "$287,387"
    override = {"sku": "azure-managed-lustre/AMLFS-Durable-Premium-250/250", "usd_per_gib_month": 0.25}
    priced = cluster(budgets={"monthly_usd": 290_000.0}, pricing={"overrides": [override]})
    lustre = 16384 * 0.25  # 4,096.00
    total = gpus_etc + lustre  # 291,483.26
    assert stack_findings(BUDGET, [priced, *resources]) == [
        f"monthly cost ${total:,.0f} exceeds the budget $290,000 by ${total - 290_000:,.0f} "
        f"({(total - 290_000) / 290_000:.1%}); largest: gpu (4 x {ND_H100} on-demand, 2048 GiB "
        "Premium_LRS OS disks) $287,387; lustre (16384 GiB azure-managed-lustre) $4,096. Shrink or remove a "
        "pool, move it to spot or reserved capacity, or raise budgets.monthly_usd"
    ]
    assert stack_findings(BUDGET, [priced, *resources], {"monthly_usd": 300_000}) == []


def test_unpriced_netapp_pool_is_named() -> None:
    # only the controller is priced: D8s v5 $0.384/h x 730 + 64 GiB Premium SSD x $0.143 = $289.47
    assert stack_findings(BUDGET, [controller(), anf_pool()], {"monthly_usd": 10_000}) == []
    assert stack_findings(PRICES, [controller(), anf_pool()]) == [
        "no catalog price for home: 4096 GiB azure-netapp-files: the monthly cost $289 + unpriced items (and the "
        "budget check) leaves them out; add your rates under pricing.overrides"
    ]


def test_spot_scale_set_needs_a_shared_filesystem() -> None:
    name = "aicluster-spot-missing-checkpoint-storage"
    spot = vmss(priority="Spot")
    with pytest.raises(NotApplicable, match="no spot GPU or TPU pool in the stack"):
        stack_findings(name, [vmss()])  # nothing on spot: nothing to judge
    assert stack_findings(name, [spot, anf_pool()]) == []
    assert stack_findings(name, [spot, amlfs()]) == []
    assert stack_findings(name, [spot]) == [
        f"gpu runs 4 x {ND_H100} on spot with no shared file system in the stack: an interruption loses all "
        "progress since the job started; add storage (kind: lustre) to checkpoint to"
    ]


def test_managed_lustre_takes_the_checkpoints() -> None:
    name = "aicluster-filesystem-enforce-checkpoint-throughput"
    # 32 H100s: a 1,280 GB checkpoint (half of 2,560 GB HBM) at 16 TiB x 250 MB/s = 4 GB/s takes 320 s
    assert stack_findings(name, [vmss(), amlfs()]) == []
    assert stack_findings(name, [vmss(), amlfs()], {"checkpoint_seconds": 60}) == [
        "gpu (32 GPUs in eastus): a 1,280 GB checkpoint takes 320 s at 4.0 GB/s on lustre, over the 60 s target; "
        "raise the file system's capacity or throughput_mb_s_per_tib"
    ]
    assert stack_findings(name, [vmss(), anf_pool()]) == [  # NFS is no parallel file system
        "gpu (32 GPUs in eastus): no parallel file system on their network: a 1,280 GB checkpoint has nowhere fast "
        "to go; add storage (kind: lustre) in the pool's cloud and region"
    ]


def test_power_uses_the_azure_regions_pue() -> None:
    # 4 x 10.2 kW IT x PUE 1.185 (eastus) = 48.35 kW
    assert stack_findings("aicluster-cluster-enforce-power-budget", [vmss()], {"power_kw": 40}) == [
        f"facility power 48.3 kW (IT kW x PUE) exceeds the budget 40.0 kW by 8.3 kW; largest: gpu 4 x {ND_H100} "
        "48.35 kW. Shrink a pool or raise budgets.power_kw"
    ]


# --------------------------------------------------------------------------------------------------
# No public IPs

PUBLIC = "azure-compute-vm-disallow-public-ip"


def test_nodes_without_public_ips_pass() -> None:
    assert findings(PUBLIC, VMSS, vmss().props) == []
    assert findings(PUBLIC, VM, controller().props) == []
    nic = {"location": "eastus", "ipConfigurations": [{"name": "ipv4", "subnet": {"id": UNKNOWN}}]}
    assert findings(PUBLIC, NIC, nic) == []
    rule = policy(PUBLIC)
    assert isinstance(rule, ResourceRule)
    assert rule.types is not None
    assert PUBLIC_IP not in rule.types  # the NAT gateway's address is no node's


def test_scale_set_with_public_ips() -> None:
    props = vmss(ip_config={"publicIPAddressConfiguration": {"name": "pub", "idleTimeoutInMinutes": 4.0}}).props
    assert findings(PUBLIC, VMSS, props) == [
        "virtual machine scale set x gives networkInterfaceConfigurations[0] (primary) ipConfigurations[0] (ipv4) a "
        "public IP (publicIPAddressConfiguration); remove it: nodes egress through the NAT gateway"
    ]


def test_vm_with_an_inline_public_ip() -> None:
    nics = {
        "networkInterfaceConfigurations": [
            {"name": "nic0", "ipConfigurations": [{"name": "ip0", "publicIPAddressConfiguration": {"name": "pub"}}]}
        ]
    }
    assert findings(PUBLIC, VM, controller(networkProfile=nics).props) == [
        "virtual machine x gives networkInterfaceConfigurations[0] (nic0) ipConfigurations[0] (ip0) a public IP "
        "(publicIPAddressConfiguration); remove it: nodes egress through the NAT gateway"
    ]


def test_network_interface_with_a_public_ip() -> None:
    nic = {
        "location": "eastus",
        "ipConfigurations": [{"name": "ipv4", "subnet": {"id": UNKNOWN}, "publicIPAddress": {"id": UNKNOWN}}],
    }
    assert findings(PUBLIC, NIC, nic) == [
        "network interface x ipConfigurations[0] (ipv4) attaches a public IP address; remove publicIPAddress: nodes "
        "egress through the NAT gateway, reach them through Azure Bastion or a VPN"
    ]


# --------------------------------------------------------------------------------------------------
# SSH / RDP from the internet

ADMIN = "azure-network-nsg-disallow-admin-from-internet"
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
LNET = {
    "name": "allow-lnet-inbound",
    "direction": "Inbound",
    "access": "Allow",
    "protocol": "Tcp",
    "priority": 200.0,
    "sourceAddressPrefix": "VirtualNetwork",
    "destinationPortRanges": ["988", "1019-1023"],
}


def allow(priority: float = 300.0, **changes: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "name": "ssh",
        "direction": "Inbound",
        "access": "Allow",
        "protocol": "Tcp",
        "priority": priority,
        "sourceAddressPrefix": "Internet",
        "destinationPortRange": "22",
    }
    return rule | changes


def nsg(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"location": "eastus", "securityRules": list(rules), "tags": TAGS}


def test_aicluster_network_security_groups_pass() -> None:
    assert findings(ADMIN, NSG, nsg(DENY_ADMIN)) == []
    assert findings(ADMIN, NSG, nsg(DENY_ADMIN, LNET, LNET | {"direction": "Outbound"})) == []


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(allow(), id="behind-the-deny"),  # priority 300: the deny at 100 wins
        pytest.param(allow(50.0, direction="Outbound"), id="outbound"),
        pytest.param(allow(50.0, access="Deny"), id="deny"),
        pytest.param(allow(50.0, protocol="Udp"), id="udp"),
        pytest.param(allow(50.0, sourceAddressPrefix="VirtualNetwork"), id="from-the-vnet"),
        pytest.param(allow(50.0, sourceAddressPrefix="10.0.0.0/8"), id="from-a-private-range"),
        pytest.param(allow(50.0, destinationPortRange="443"), id="https"),
        pytest.param(allow(50.0, destinationPortRange="23-3388"), id="range-between"),
    ],
)
def test_rules_that_do_not_open_admin_ports(rule: dict[str, Any]) -> None:
    assert findings(ADMIN, NSG, nsg(DENY_ADMIN, rule)) == []


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        pytest.param(
            allow(50.0),
            "network security group x securityRules[1] (ssh) lets Internet reach SSH (protocol Tcp, ports 22); "
            "remove it and reach nodes through Azure Bastion or a VPN",
            id="ahead-of-the-deny",
        ),
        pytest.param(
            allow(50.0, protocol="*", sourceAddressPrefix="*", destinationPortRange="*"),
            "network security group x securityRules[1] (ssh) lets * reach SSH/RDP (protocol *, ports *); remove it "
            "and reach nodes through Azure Bastion or a VPN",
            id="everything-from-anywhere",
        ),
        pytest.param(
            allow(50.0, sourceAddressPrefix="0.0.0.0/0", destinationPortRange="20-30"),
            "network security group x securityRules[1] (ssh) lets 0.0.0.0/0 reach SSH (protocol Tcp, ports 20-30); "
            "remove it and reach nodes through Azure Bastion or a VPN",
            id="port-range",
        ),
        pytest.param(
            allow(
                50.0,
                sourceAddressPrefix=None,
                sourceAddressPrefixes=["10.0.0.0/8", "::/0"],
                destinationPortRange=None,
                destinationPortRanges=["443", "3389"],
            ),
            "network security group x securityRules[1] (ssh) lets ::/0 reach RDP (protocol Tcp, ports 443, 3389); "
            "remove it and reach nodes through Azure Bastion or a VPN",
            id="lists",
        ),
        pytest.param(
            allow(300.0, sourceAddressPrefix="::/0"),
            "network security group x securityRules[1] (ssh) lets ::/0 reach SSH (protocol Tcp, ports 22); remove "
            "it and reach nodes through Azure Bastion or a VPN",
            id="ipv6-not-behind-an-ipv4-deny",
        ),
    ],
)
def test_rules_that_open_admin_ports(rule: dict[str, Any], expected: str) -> None:
    deny = DENY_ADMIN | {"sourceAddressPrefix": "0.0.0.0/0"} if "::/0" in str(rule) else DENY_ADMIN
    assert findings(ADMIN, NSG, nsg(deny, rule)) == [expected]


def test_standalone_security_rule() -> None:
    rule = allow(100.0, sourceAddressPrefix="*", networkSecurityGroupName="nodes-nsg")
    assert findings(ADMIN, SECURITY_RULE, rule) == [
        "security rule x lets * reach SSH (protocol Tcp, ports 22); remove it and reach nodes through Azure Bastion "
        "or a VPN"
    ]
    assert findings(ADMIN, SECURITY_RULE, rule | {"destinationPortRange": "80"}) == []


# --------------------------------------------------------------------------------------------------
# Required tags

AZURE_TAGS, AWS_TAGS = "azure-resource-missing-required-tags", "aws-resource-missing-required-tags"


def test_tagged_azure_resources_pass() -> None:
    for r in (vmss(), controller(), amlfs(), anf_pool(), nat(), nat_ip()):
        assert findings(AZURE_TAGS, r.type, r.props) == [], r.type
    assert findings(AZURE_TAGS, NSG, nsg(DENY_ADMIN)) == []


def test_untaggable_azure_resources_are_not_judged() -> None:
    # neither class of the SDK takes tags
    assert findings(AZURE_TAGS, ACTIVITY_LOG, {"workspaceId": UNKNOWN, "logs": []}) == []
    assert findings(AZURE_TAGS, "azure-native:network:Subnet", {"addressPrefix": "10.0.0.0/24"}) == []


def test_azure_resources_without_tags() -> None:
    untagged = {k: v for k, v in vmss().props.items() if k != "tags"}
    assert findings(AZURE_TAGS, VMSS, untagged) == [
        "virtual machine scale set x lacks required tags owner, cost-center; add them to the cluster's tags in the "
        "stack file (aicluster:cluster.tags)"
    ]
    # taggable by its SDK class though the program declared no tags at all
    assert findings(AZURE_TAGS, "azure-native:network:VirtualNetwork", {"location": "eastus"}) == [
        "virtual network x lacks required tags owner, cost-center; add them to the cluster's tags in the stack file "
        "(aicluster:cluster.tags)"
    ]
    assert findings(AZURE_TAGS, NSG, nsg() | {"tags": {"owner": "me"}}, {"required_tags": ["owner", "team"]}) == [
        "network security group x lacks required tags team; add them to the cluster's tags in the stack file "
        "(aicluster:cluster.tags)"
    ]


def test_each_tag_policy_judges_its_own_provider() -> None:
    assert findings(AWS_TAGS, VMSS, {"location": "eastus"}) == []
    assert findings(AZURE_TAGS, "aws:ec2/eip:Eip", {"domain": "vpc"}) == []


# --------------------------------------------------------------------------------------------------
# Data residency

REGIONS = "aicluster-resource-enforce-allowed-regions"


def test_azure_locations_are_checked() -> None:
    assert stack_findings(REGIONS, [vmss(location="westeurope"), nat()], {"allowed_regions": ["eastus"]}) == [
        "virtual machine scale set gpu is in westeurope, outside compliance.allowed_regions [eastus]; move it to an "
        "allowed region or add westeurope to allowed_regions"
    ]


def test_azure_location_names_are_normalised_and_global_is_not_a_region() -> None:
    dns = res("azure-native:network:PrivateZone", "dns", {"location": "Global"})
    resources = [vmss(location="East US"), dns, res(ACTIVITY_LOG, "activity", {"workspaceId": UNKNOWN})]
    assert stack_findings(REGIONS, resources, {"allowed_regions": ["eastus"]}) == []
    assert stack_findings(REGIONS, [vmss()], {"allowed_regions": ["East US"]}) == []


# --------------------------------------------------------------------------------------------------
# Audit logging

AUDIT = "aicluster-cluster-missing-audit-logging"
CATEGORIES = ("Administrative", "Security", "ServiceHealth", "Alert", "Recommendation", "Policy", "Autoscale")


def activity_log(**changes: Any) -> Res:
    props: dict[str, Any] = {
        "name": "aicluster-llm",
        "workspaceId": UNKNOWN,  # the workspace's id, known once it exists
        "logs": [{"category": c, "enabled": True} for c in CATEGORIES],
    }
    return res(ACTIVITY_LOG, "llm-audit-activity", props | changes)


SOC2 = {"frameworks": ["soc2"]}


def test_subscription_activity_log_satisfies_the_audit_rule() -> None:
    assert stack_findings(AUDIT, [vmss(), activity_log()], SOC2) == []
    assert (
        stack_findings(AUDIT, [vmss(), activity_log(logs=[{"categoryGroup": "allLogs", "enabled": True}])], SOC2) == []
    )
    workspace = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.OperationalInsights/workspaces/llm-logs"
    assert stack_findings(AUDIT, [vmss(), activity_log(workspaceId=workspace)], SOC2) == []
    with pytest.raises(NotApplicable, match="no framework that requires audit logs"):  # held to none
        stack_findings(AUDIT, [vmss()])
    declared = cluster(compliance={"frameworks": ["hipaa"]})
    assert stack_findings(AUDIT, [declared, vmss(), activity_log()]) == []


def test_azure_stack_without_an_activity_log() -> None:
    assert stack_findings(AUDIT, [vmss()], SOC2) == [
        "the stack is held to soc2 but no Azure diagnostic setting sends activity logs to a workspace: add a "
        "subscription diagnostic setting with workspaceId and the Administrative category enabled (aicluster adds "
        "one when compliance.frameworks names soc2, hipaa, pci-dss or iso27001)"
    ]


@pytest.mark.parametrize(
    ("changes", "gaps"),
    [
        pytest.param({"workspaceId": None}, "workspaceId is not set", id="no-workspace"),
        pytest.param(
            {"logs": [{"category": "Administrative", "enabled": False}, {"category": "Security", "enabled": True}]},
            "the Administrative log category is not enabled",
            id="administrative-off",
        ),
        pytest.param(
            {"workspaceId": "", "logs": []},
            "workspaceId is not set; the Administrative log category is not enabled",
            id="neither",
        ),
    ],
)
def test_activity_log_that_keeps_no_administrative_record(changes: dict[str, Any], gaps: str) -> None:
    assert stack_findings(AUDIT, [vmss(), activity_log(**changes)], SOC2) == [
        f"the stack is held to soc2 but subscription diagnostic setting llm-audit-activity does not keep the Azure "
        f"activity log: {gaps}; send it to a Log Analytics workspace (workspaceId) with the Administrative category "
        "enabled"
    ]
    # one complete setting is enough
    assert stack_findings(AUDIT, [vmss(), activity_log(**changes), activity_log()], SOC2) == []
