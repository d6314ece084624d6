"""Rack-scale pools as their clouds require them: a p6e-gb200 launch template and Auto Scaling group per UltraServer,
each on its own Capacity Block in the Dallas Local Zone; an ND GB200 v6 scale set per NVL72 rack, arm64 image."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pulumi

from aicluster.catalog import Catalog
from aicluster.plan import plan
from aicluster.preview.engine import UNKNOWN, run
from aicluster.spec import parse_cluster
from components import AiCluster
from tests.components.conftest import Built
from tests.helpers import azure_cluster, azure_pool, cluster, pool

Build = Callable[[dict[str, Any]], Built]

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
PG = "aws:ec2/placementGroup:PlacementGroup"
SUBNET = "aws:ec2/subnet:Subnet"
NAT = "aws:ec2/natGateway:NatGateway"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
VMSS = "azure-native:compute:VirtualMachineScaleSet"

BLOCKS = ["cr-0a1b2c3d4e5f60001", "cr-0a1b2c3d4e5f60002"]


def p6e(nodes: int = 36) -> dict[str, Any]:
    return cluster(
        pools=[
            pool(
                name="gb200",
                instance_type="p6e-gb200.36xlarge",
                zone="us-east-1-dfw-2a",
                nodes=nodes,
                market="capacity-block",
                reservations=BLOCKS[: nodes // 18],
            )
        ],
        pricing={"overrides": [{"sku": "p6e-gb200.36xlarge", "usd_per_hour": 42.328}]},
    )


def test_each_ultraserver_is_a_template_and_group_on_its_own_capacity_block(build: Build) -> None:
    b = build(p6e(36))
    templates = {r.name: r.inputs for r in b.of_type(LT) if "-gb200-" in r.name}
    assert sorted(templates) == ["llm-train-gb200-nvl0-lt", "llm-train-gb200-nvl1-lt"]
    for k, block in enumerate(BLOCKS):
        lt = templates[f"llm-train-gb200-nvl{k}-lt"]
        assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
        assert lt["capacityReservationSpecification"] == {"capacityReservationTarget": {"capacityReservationId": block}}
        assert lt["instanceType"] == "p6e-gb200.36xlarge"
        assert lt["imageId"].startswith("resolve:ssm:/aws/service/deeplearning/ami/arm64/")
        assert "placement" not in lt
    groups = {r.name: r.inputs for r in b.of_type(ASG)}
    assert sorted(groups) == ["llm-train-gb200-nvl0-asg", "llm-train-gb200-nvl1-asg"]
    for asg in groups.values():
        assert (asg["minSize"], asg["maxSize"], asg["desiredCapacity"]) == (18, 18, 18)
        assert "placementGroup" not in asg  # the block is the placement
        assert asg["vpcZoneIdentifiers"] == [UNKNOWN]
    assert b.of_type(PG) == []


def test_the_stack_outputs_name_every_ultraservers_group(catalog: Catalog) -> None:
    p = plan(parse_cluster(p6e(36), "test"), catalog)

    def program() -> None:
        pulumi.export("cluster", AiCluster(p.name, {"plan": p}).outputs)

    out = run(program, "aicluster", "test").outputs["cluster"]["pools"]["gb200"]
    assert out["asg_names"].keys() == {"gb200-nvl0", "gb200-nvl1"}
    assert out["nodes"] == 36


def test_every_node_has_an_ena_primary_and_one_efa_only_interface_per_gpu(build: Build) -> None:
    b = build(p6e(18))
    nics = b.one(LT, "-gb200-nvl0-lt").inputs["networkInterfaces"]
    assert [(n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in nics] == [
        (0, 0, "interface"),
        (1, 0, "efa-only"),
        (5, 0, "efa-only"),
        (9, 0, "efa-only"),
        (13, 0, "efa-only"),
    ]
    assert nics[0]["associatePublicIpAddress"] == "false"
    assert [len(n["securityGroups"]) for n in nics] == [2, 1, 1, 1, 1]  # primary: node + EFA groups
    text = base64.b64decode(b.one(LT, "-gb200-nvl0-lt").inputs["userData"]).decode()
    assert '"efa_devices": 4' in text


def test_the_local_zone_subnet_has_no_nat_gateway_of_its_own(build: Build) -> None:
    b = build(p6e(18))
    subnets = {r.inputs["availabilityZone"]: r.inputs["cidrBlock"] for r in b.of_type(SUBNET)}
    assert subnets == {"us-east-1-dfw-2a": "10.8.192.0/19", "us-east-1a": "10.8.0.0/19"} | {
        k: v for k, v in subnets.items() if v == "10.8.224.0/26"
    }
    assert [r.name for r in b.of_type(NAT)] == ["llm-train-us-east-1-nat-us-east-1a"]
    local_rt = b.one(ROUTE_TABLE, "-compute-us-east-1-dfw-2a-rt").inputs
    assert local_rt["routes"] == [{"cidrBlock": "0.0.0.0/0", "natGatewayId": UNKNOWN}]


def test_p6_b300_declares_cards_1_to_16_and_no_efa_on_card_0(build: Build) -> None:
    b = build(cluster(pools=[pool(name="b300", instance_type="p6-b300.48xlarge", nodes=2)]))
    nics = b.one(LT, "-b300-lt").inputs["networkInterfaces"]
    layout = [(n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in nics]
    assert layout == [(0, 0, "interface")] + [(c, 0, "efa-only") for c in range(1, 17)]


def test_each_nd_gb200_rack_is_one_infiniband_scale_set_of_18_arm64_vms(build: Build) -> None:
    b = build(
        azure_cluster(
            pools=[azure_pool(name="gb200", instance_type="Standard_ND128isr_NDR_GB200_v6", nodes=36)],
            pricing={
                "overrides": [
                    {
                        "sku": "Standard_ND128isr_NDR_GB200_v6",
                        "region": "eastus",
                        "offered": True,
                        "reason": "quota granted",
                        "usd_per_hour": 48.0,
                    }
                ]
            },
        )
    )
    sets = {r.name: r.inputs for r in b.of_type(VMSS)}
    assert sorted(sets) == ["nd-train-gb200-nvl0", "nd-train-gb200-nvl1"]
    for vmss in sets.values():
        assert vmss["sku"] == {"name": "Standard_ND128isr_NDR_GB200_v6", "tier": "Standard", "capacity": 18}
        assert vmss["singlePlacementGroup"] is True  # InfiniBand needs the scale set in one placement group
        assert (vmss["platformFaultDomainCount"], vmss["overprovision"]) == (1, False)
        assert vmss["zones"] == ["1"]
        profile = vmss["virtualMachineProfile"]
        assert profile["storageProfile"]["imageReference"] == {
            "publisher": "Canonical",
            "offer": "ubuntu-24_04-lts",
            "sku": "server-arm64",
            "version": "latest",
        }
        (nic,) = profile["networkProfile"]["networkInterfaceConfigurations"]
        assert nic["enableAcceleratedNetworking"] is True
    prefixes = [s["virtualMachineProfile"]["osProfile"]["computerNamePrefix"] for s in sets.values()]
    assert len(set(prefixes)) == 2  # each rack's hosts are told apart by name
