"""Azure planning: InfiniBand domains, costs against hand-computed figures, and located problems.

Catalog figures used by hand: Standard_ND96isr_H100_v5 eastus pay-as-you-go $98.32/h, 10.2 kW (DGX H100
proxy); Standard_ND96amsr_A100_v4 eastus spot $3.6047/h, 6.5 kW; Standard_D8s_v5 $0.384/h, 0.044 kW; eastus
PUE 1.185, 379.1 gCO2e/kWh; Premium SSD $0.143/GiB-month; NAT gateway $0.045/h; public IPv4 $0.005/h.
"""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from tests.helpers import azure_cluster, azure_pool, plan_of, plan_problems, pool


def planned(catalog: Catalog, **changes: Any) -> ClusterPlan:
    return plan_of(catalog, azure_cluster(**changes))


def problems(catalog: Catalog, **changes: Any) -> list[str]:
    return plan_problems(catalog, azure_cluster(**changes))


def test_ib_domains_are_filled_scale_sets_with_node_ranges(catalog: Catalog) -> None:
    p = planned(catalog, pools=[azure_pool(nodes=250)], storage=[])
    pool_plan = p.pools[0]
    assert pool_plan.azure is not None
    assert [(s.name, s.nodes, s.first_node) for s in pool_plan.azure.scale_sets] == [
        ("h100-ib0", 100, 0),
        ("h100-ib1", 100, 100),
        ("h100-ib2", 50, 200),
    ]
    assert pool_plan.azure.infiniband is True
    assert [w for w in p.warnings if "InfiniBand domain" in w] == [
        "pools[0] (h100): 250 VMs exceed one InfiniBand domain (100 VMs per scale set): h100-ib0 = nodes 0-99, "
        "h100-ib1 = nodes 100-199, h100-ib2 = nodes 200-249; jobs that span domains talk over Ethernet between them"
    ]


def test_pay_as_you_go_cost_power_and_carbon(catalog: Catalog) -> None:
    p = planned(catalog, storage=[])
    pool_plan = p.pools[0]
    assert pool_plan.instances_usd_per_month == 1148377.6  # 16 x 98.32 x 730
    assert pool_plan.volumes_usd_per_month == round(16 * 512 * 0.143, 2)  # 1,171.46: Premium SSD OS disks
    assert pool_plan.cost_usd_per_month == 1149549.06
    assert pool_plan.power_kw_it == 163.2  # 16 x 10.2
    assert pool_plan.power_kw_facility == round(163.2 * 1.185, 2)
    assert pool_plan.co2e_t_per_month == round(163.2 * 1.185 * 730 * 379.1 / 1e6, 2)
    (net,) = p.networks
    assert net.nat_gateways == 1
    assert net.cost_usd_per_month == round((0.045 + 0.005) * 730, 2)  # 36.50
    assert p.controller is not None
    assert p.controller.cost_usd_per_month == round(0.384 * 730 + 128 * 0.143, 2)
    assert p.totals.cost_usd_per_month == round(1149549.06 + 36.5 + p.controller.cost_usd_per_month, 2)


def test_spot_cost_uses_the_spot_rate(catalog: Catalog) -> None:
    spot = azure_pool(instance_type="Standard_ND96amsr_A100_v4", market="spot", nodes=32, zone=None)
    pool_plan = planned(catalog, pools=[spot], storage=[]).pools[0]
    assert pool_plan.price.basis == "catalog spot eastus"
    assert pool_plan.instances_usd_per_month == round(32 * 3.6047 * 730, 2)
    assert pool_plan.azure is not None
    assert pool_plan.azure.priority == "Spot"


def test_unpriced_storage_is_planned_with_a_warning_and_an_override_prices_it(catalog: Catalog) -> None:
    p = planned(catalog)
    fs = p.filesystems[0]
    assert fs.price is None
    assert fs.cost_usd_per_month is None  # unpriced is never 0
    assert fs.cost_usd_per_hour is None
    assert "storage scratch (azure-managed-lustre)" in p.totals.unpriced
    assert any("no azure-managed-lustre AMLFS-Durable-Premium-500 price in eastus" in w for w in p.warnings)
    rate = {"sku": "azure-managed-lustre/AMLFS-Durable-Premium-500/500", "usd_per_gib_month": 0.3}
    fs = planned(catalog, pricing={"overrides": [rate]}).filesystems[0]
    assert fs.price is not None
    assert fs.price.basis == "pricing.overrides[0]"
    assert fs.cost_usd_per_month == 16 * 1024 * 0.3


def test_managed_lustre_above_the_default_maximum_warns_about_the_support_request(catalog: Catalog) -> None:
    big = {"name": "data", "kind": "lustre", "capacity_tib": 200, "throughput_mb_s_per_tib": 250, "mount": "/data"}
    p = planned(catalog, storage=[big])
    assert p.filesystems[0].capacity_tib == 200
    assert any(
        "above the 128 TiB that azure-managed-lustre AMLFS-Durable-Premium-250 allows by default" in w
        for w in p.warnings
    )


def test_regional_pool_and_zonal_lustre_warns(catalog: Catalog) -> None:
    p = planned(catalog, pools=[azure_pool(zone=None)])
    assert p.filesystems[0].zone == "1"
    assert any("pool(s) h100 have no zone and may land in another one" in w for w in p.warnings)


def test_mixed_with_aws_networks_do_not_overlap(catalog: Catalog) -> None:
    p = planned(catalog, pools=[pool(), azure_pool(name="nd")], storage=[])
    cidrs = {n.key: n.cidr for n in p.networks}
    assert cidrs == {"aws-us-east-1": "10.8.0.0/16", "azure-eastus": "10.65.0.0/16"}
    assert p.totals.gpus == 4 * 8 + 16 * 8


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"access": {}},
            "t: access.ssh_public_keys: Azure creates every Linux VM with an admin account that needs an SSH public "
            "key (password login stays off): add yours, e.g. the line in ~/.ssh/id_ed25519.pub",
            id="no-ssh-key",
        ),
        pytest.param(
            {"network": {"cidrs": {"azure/eastus": "172.16.0.0/16"}}},
            't: network.cidrs.azure/eastus: got "172.16.0.0/16"; the azure/eastus network 172.16.0.0/16 (pinned '
            "under network.cidrs) overlaps 172.16.0.0/16, which Azure reserves for its InfiniBand (RDMA) network; "
            "pin another block under network.cidrs (azure/eastus: <cidr>)",
            id="rdma-reserved-range",
        ),
        pytest.param(
            {"pools": [azure_pool(resource_group="rg-a"), azure_pool(name="b", resource_group="rg-b")]},
            't: pools[1].resource_group: got "rg-b"; pools[0] in the same region deploys into rg-a; the pools of one '
            "region share its network and resource group: name the same one, or drop resource_group from both",
            id="resource-group-conflict",
        ),
        pytest.param(
            {"pools": [azure_pool(region="westus", zone="1", instance_type="Standard_ND96isr_H100_v5")]},
            't: pools[0].zone: got "1"; not a zone of westus; zones: ',
            id="zone-in-region-without-zones",
        ),
        pytest.param(
            {"pools": [azure_pool(instance_type="Standard_ND96isr_H200_v5")]},
            't: pools[0].region: got "eastus"; Standard_ND96isr_H200_v5 is not offered in eastus per the catalog; '
            "offered in: no region the catalog has a source for; if it is offered there to you, say so under "
            "pricing.overrides (sku: Standard_ND96isr_H200_v5, region: eastus, offered: true, reason: ..., "
            "usd_per_hour: ...)",
            id="h200-needs-a-rate",
        ),
        pytest.param(
            {"storage": [{"name": "home", "kind": "nfs", "capacity_tib": 101, "mount": "/home2"}]},
            "t: storage[0].capacity_tib: got 101.0; larger than the azure-netapp-files maximum of 100 TiB",
            id="netapp-volume-limit",
        ),
        pytest.param(
            {"pools": [azure_pool(image="ubuntu-hpc-9999")]},
            't: pools[0].image: got "ubuntu-hpc-9999"; not a Marketplace URN publisher:offer:sku:version or a catalog '
            "image; catalog images: ",
            id="unknown-image",
        ),
    ],
)
def test_azure_rules_name_field_value_and_fix(catalog: Catalog, changes: dict[str, Any], expected: str) -> None:
    found = problems(catalog, **changes)
    assert any(f.startswith(expected) for f in found), found


def test_h200_with_a_negotiated_rate_plans_and_says_where_the_price_came_from(catalog: Catalog) -> None:
    rate = {
        "sku": "Standard_ND96isr_H200_v5",
        "region": "eastus",
        "offered": True,
        "reason": "quota granted",
        "usd_per_hour": 110.0,
    }
    p = planned(catalog, pools=[azure_pool(instance_type="Standard_ND96isr_H200_v5")], pricing={"overrides": [rate]})
    assert p.pools[0].instances_usd_per_month == 16 * 110.0 * 730
    assert any("does not list Standard_ND96isr_H200_v5 in eastus" in w for w in p.warnings)


def test_a_raised_placement_group_limit_makes_larger_ib_domains_and_says_what_it_needs(catalog: Catalog) -> None:
    p = planned(catalog, pools=[azure_pool(nodes=250, ib_domain_max_vms=300)], storage=[])
    assert p.pools[0].azure is not None
    assert [s.nodes for s in p.pools[0].azure.scale_sets] == [250]
    assert p.ib_domain_max_vms() == 300
    assert any("need the placement-group limit raised from 100 by Azure support" in w for w in p.warnings)
    assert planned(catalog, storage=[]).ib_domain_max_vms() == 100


def test_a_second_managed_lustre_in_one_region_is_refused(catalog: Catalog) -> None:
    two = [
        {"name": "a", "kind": "lustre", "capacity_tib": 16, "throughput_mb_s_per_tib": 500, "mount": "/a"},
        {"name": "b", "kind": "lustre", "capacity_tib": 16, "throughput_mb_s_per_tib": 500, "mount": "/b"},
    ]
    assert problems(catalog, storage=two) == [
        't: storage[1].kind: got "lustre"; storage[0] is already the Managed Lustre file system of azure/eastus, '
        "and each one needs a subnet of its own, which aicluster gives one per region: grow that file system "
        "instead, or put this one in another region"
    ]


def test_controller_follows_a_regional_pool_and_a_zonal_one(catalog: Catalog) -> None:
    regional = planned(catalog, pools=[azure_pool(zone=None)], storage=[])
    assert regional.controller is not None
    assert regional.controller.zone is None  # an Azure VM need not be zonal
    assert regional.controller.imds_hop_limit is None  # AWS only
    zonal = planned(catalog, storage=[])
    assert zonal.controller is not None
    assert zonal.controller.zone == "1"
