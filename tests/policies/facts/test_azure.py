"""Azure resources as the engine hands them -> facts: scale sets and VMs as fleets, Managed Lustre and NetApp pools
as file systems; NSG rules as ingress in priority order (an earlier Deny closes ports first), public IP
configurations, tags where the SDK class takes them, and what an activity-log diagnostic setting lacks."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN
from policies.facts import Stack
from policies.facts.azure import INGRESS, PUBLIC_IPS, TAGS, activity_log_gaps
from tests.policies.conftest import res
from tests.policies.resources.azure import (
    ACTIVITY_LOG,
    ANF_VOLUME,
    DENY_ADMIN,
    ND_H100,
    NSG,
    SECURITY_RULE,
    VMSS,
    amlfs,
    anf_pool,
    controller,
    nsg,
    vmss,
)


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


def test_an_earlier_deny_closes_the_ports_it_covers_to_the_same_sources() -> None:
    allow = {
        "name": "ssh",
        "direction": "Inbound",
        "access": "Allow",
        "protocol": "Tcp",
        "priority": 300.0,
        "sourceAddressPrefix": "Internet",
        "destinationPortRanges": ["22", "80-90", "bad"],
    }
    (behind,) = INGRESS.read(res(NSG, "nsg", nsg(DENY_ADMIN, allow)))
    assert behind.open_to == ("Internet",)
    assert behind.ports == ((22, 22), (80, 90))  # a spec that is no port range opens none
    assert behind.shown == "protocol Tcp, ports 22, 80-90, bad"
    assert behind.closed == ((22, 22), (3389, 3389))  # the deny at priority 100 is evaluated first
    assert not behind.admits(22)
    (ahead,) = INGRESS.read(res(NSG, "nsg", nsg(DENY_ADMIN, allow | {"priority": 50.0})))
    assert (ahead.closed, ahead.admits(22)) == ((), True)
    ipv6_deny = DENY_ADMIN | {"sourceAddressPrefix": "0.0.0.0/0"}
    (v6,) = INGRESS.read(res(NSG, "nsg", nsg(ipv6_deny, allow | {"sourceAddressPrefix": "::/0"})))
    assert v6.closed == ()  # an IPv4 deny does not close ports to IPv6 sources


def test_only_inbound_tcp_allow_rules_are_ingress() -> None:
    rule = {"direction": "Inbound", "access": "Allow", "protocol": "*", "destinationPortRange": "*"}
    (every,) = INGRESS.read(res(SECURITY_RULE, "r", rule | {"sourceAddressPrefix": "*"}))
    assert (every.where, every.open_to, every.admits(3389)) == ("security rule r", ("*",), True)
    for change in ({"direction": "Outbound"}, {"access": "Deny"}, {"protocol": "Udp"}):
        assert list(INGRESS.read(res(SECURITY_RULE, "r", rule | change))) == []


def test_public_ips_name_the_ip_configuration_and_the_fix() -> None:
    props = vmss(ip_config={"publicIPAddressConfiguration": {"name": "pub"}}).props
    (exposure,) = PUBLIC_IPS.read(res(VMSS, "gpu", props))
    assert exposure.what.endswith("ipConfigurations[0] (ipv4) a public IP (publicIPAddressConfiguration)")
    assert exposure.fix == "remove it: nodes egress through the NAT gateway"
    assert list(PUBLIC_IPS.read(vmss())) == []


def test_tags_are_read_where_the_sdk_class_takes_them() -> None:
    (untagged,) = TAGS.read(res("azure-native:network:VirtualNetwork", "vnet", {"location": "eastus"}))
    assert (untagged.keys, untagged.noun) == (frozenset(), "tags")
    assert list(TAGS.read(res("azure-native:network:Subnet", "s", {}))) == []  # the SDK class takes no tags
    (tagged,) = TAGS.read(vmss())
    assert tagged.missing(["owner", "cost-center"]) == []


@pytest.mark.parametrize(
    ("changes", "gaps"),
    [
        pytest.param({}, [], id="complete"),
        pytest.param({"workspaceId": UNKNOWN}, [], id="workspace-known-at-up"),
        pytest.param({"workspaceId": None}, ["workspaceId is not set"], id="no-workspace"),
        pytest.param(
            {"logs": [{"categoryGroup": "allLogs", "enabled": "true"}]}, [], id="a-category-group-that-holds-it"
        ),
        pytest.param(
            {"logs": [{"category": "Security", "enabled": True}]},
            ["the Administrative log category is not enabled"],
            id="not-administrative",
        ),
    ],
)
def test_activity_log_gaps(changes: dict[str, Any], gaps: list[str]) -> None:
    props: dict[str, Any] = {"workspaceId": "w", "logs": [{"category": "Administrative", "enabled": True}]}
    assert activity_log_gaps(res(ACTIVITY_LOG, "a", props | changes)) == gaps
