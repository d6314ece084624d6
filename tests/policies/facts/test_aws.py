"""AWS resources as the engine hands them -> facts: Auto Scaling groups and instances (through their launch
templates) as fleets, FSx and EFS as file systems, and what the cross-cloud rules read of single resources: public
IPs, security group ingress, tags (an Auto Scaling group's where they propagate), and a trail's coverage."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN
from policies.facts import Res, Stack
from policies.facts.aicluster import AICLUSTER_TYPE
from policies.facts.aws import (
    ASG,
    EFS,
    FSX_LUSTRE,
    INGRESS,
    INSTANCE,
    LAUNCH_TEMPLATE,
    PUBLIC_IPS,
    SECURITY_GROUP,
    SG_INGRESS_RULE,
    TAGS,
    TRAIL,
    efa_interfaces,
    trail_ok,
)
from policies.facts.model import Exposure, Ingress, TagSet
from tests.policies.conftest import res

TAGGED = {"owner": "ml-platform", "cost-center": "cc-42"}


def launch_template(**changes: Any) -> Res:
    props: dict[str, Any] = {
        "instanceType": "p5.48xlarge",
        "blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": {"volumeSize": 500.0, "encrypted": "true"}}],
        "networkInterfaces": [
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"},
            {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"},
            {"networkCardIndex": 2, "deviceIndex": 1, "interfaceType": "interface"},
        ],
        "tags": TAGGED,
    }
    return res(LAUNCH_TEMPLATE, "lt", props | changes)


def asg(lt: Res, **changes: Any) -> Res:
    props = {"maxSize": 4.0, "desiredCapacity": 2.0, "availabilityZones": ["us-east-1a"]} | changes
    group = res(ASG, "asg", props, launchTemplate=[lt])
    group.provider_props = {"region": "us-east-1"}
    return group


def test_an_auto_scaling_group_launches_its_templates_type_at_its_maximum() -> None:
    lt = launch_template()
    (fleet,) = Stack([lt, asg(lt)]).fleets
    assert (fleet.instance_type, fleet.nodes, fleet.market, fleet.region, fleet.template) == (
        "p5.48xlarge",
        4,
        "on-demand",
        "us-east-1",
        lt,
    )
    assert fleet.root_volume_gib == 500.0
    assert fleet.spec is not None
    assert fleet.accelerators == 32
    assert Stack([lt, asg(lt, maxSize=None)]).fleets[0].nodes == 2  # no maximum: its desired capacity
    assert Stack([lt]).fleets == []  # the template alone launches nothing


@pytest.mark.parametrize(
    ("changes", "market"),
    [
        pytest.param({}, "on-demand", id="on-demand"),
        pytest.param({"instanceMarketOptions": {"marketType": "spot"}}, "spot", id="spot"),
        pytest.param({"instanceMarketOptions": {"marketType": "capacity-block"}}, "capacity-block", id="block"),
        pytest.param(
            {"capacityReservationSpecification": {"capacityReservationTarget": {"capacityReservationId": "cr-1"}}},
            "reserved",
            id="reservation",
        ),
    ],
)
def test_the_launch_template_says_the_market(changes: dict[str, Any], market: str) -> None:
    lt = launch_template(**changes)
    assert Stack([lt, asg(lt)]).fleets[0].market == market


def test_an_instance_is_a_fleet_of_one_of_its_own_type_or_its_templates() -> None:
    own = res(INSTANCE, "ctl", {"instanceType": "m7i.2xlarge", "rootBlockDevice": {"volumeSize": 100.0}})
    lt = launch_template()
    templated = res(INSTANCE, "node", {"instanceMarketOptions": {"marketType": "spot"}}, launchTemplate=[lt])
    ctl, node = Stack([own, lt, templated]).fleets
    assert (ctl.instance_type, ctl.nodes, ctl.root_volume_gib, ctl.template) == ("m7i.2xlarge", 1, 100.0, None)
    assert (node.instance_type, node.market, node.root_volume_gib, node.template) == ("p5.48xlarge", "spot", 500.0, lt)


def test_fsx_and_efs_are_filesystems() -> None:
    fsx = res(
        FSX_LUSTRE,
        "scratch",
        {"storageCapacity": 48000.0, "deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": 250.0},
    )
    efs = res(EFS, "home", {"tags": {"aicluster:storage": "home"}})
    declared = res(AICLUSTER_TYPE, "llm", {"filesystems": {"home": {"capacity_gib": 2048.0}}})
    lustre, nfs = Stack([fsx, efs, declared]).filesystems
    assert (lustre.service, lustre.capacity_gib, lustre.parallel) == ("fsx-lustre", 48000.0, True)
    assert lustre.throughput_mb_s == pytest.approx(48000 / 1024 * 250)
    assert lustre.tier is not None
    assert (nfs.service, nfs.capacity_gib, nfs.parallel) == ("efs", 2048.0, False)  # the size it was planned for
    assert Stack([efs]).filesystems[0].capacity_gib is None  # billed per GiB stored: no size declared


def test_efa_interfaces_are_the_efa_and_efa_only_ones() -> None:
    assert [n["networkCardIndex"] for n in efa_interfaces(launch_template())] == [0, 1]


def test_public_ips_name_the_interface_and_the_fix() -> None:
    nics = [{"networkCardIndex": 3, "deviceIndex": 1, "associatePublicIpAddress": "true"}]
    assert list(PUBLIC_IPS.read(launch_template(networkInterfaces=nics))) == [
        Exposure(
            "launch template lt gives network interface 0 (card 3) a public IP (associatePublicIpAddress = true)",
            "set it false: nodes egress through NAT",
        )
    ]
    instance = res(INSTANCE, "ctl", {"associatePublicIpAddress": True})
    assert [e.fix for e in PUBLIC_IPS.read(instance)] == ["set it false and reach the node through SSM or a bastion"]
    assert list(PUBLIC_IPS.read(launch_template())) == []
    assert PUBLIC_IPS.types == {LAUNCH_TEMPLATE, INSTANCE}


def test_ingress_reads_protocol_ports_and_the_internet_sources() -> None:
    sg = res(
        SECURITY_GROUP,
        "nodes",
        {
            "ingress": [
                {"protocol": "-1", "fromPort": 0.0, "toPort": 0.0, "cidrBlocks": ["0.0.0.0/0", "10.0.0.0/8"]},
                {"protocol": "tcp", "fromPort": 20.0, "toPort": 25.0, "ipv6CidrBlocks": ["::/0"]},
                {"protocol": "udp", "fromPort": 22.0, "toPort": 22.0, "cidrBlocks": ["0.0.0.0/0"]},
            ]
        },
    )
    every, ssh, udp = INGRESS.read(sg)
    assert every == Ingress("security group nodes ingress[0]", ("0.0.0.0/0",), None, "protocol -1, ports 0.0-0.0")
    assert (ssh.open_to, ssh.ports, ssh.admits(22), ssh.admits(3389)) == (("::/0",), ((20.0, 25.0),), True, False)
    assert (udp.ports, udp.admits(22)) == ((), False)
    (rule,) = INGRESS.read(res(SG_INGRESS_RULE, "r", {"ipProtocol": "tcp", "fromPort": 22.0, "toPort": 22.0}))
    assert (rule.where, rule.open_to) == ("security group r rule", ())


def test_tags_are_the_resources_and_the_providers_defaults() -> None:
    lt = launch_template(tags={"owner": "me"})
    lt.provider_props = {"defaultTags": {"tags": {"cost-center": "cc-42"}}}
    (tags,) = TAGS.read(lt)
    assert tags == TagSet(lt, frozenset({"owner", "cost-center"}), "tags")
    assert tags.missing(["owner", "cost-center", "team"]) == ["team"]
    group = asg(launch_template(), tags=[{"key": "owner", "value": "me", "propagateAtLaunch": True}, {"key": "team"}])
    (propagated,) = TAGS.read(group)
    assert (propagated.keys, propagated.noun) == ({"owner"}, "tags that propagate at launch")
    assert list(TAGS.read(launch_template(tags=UNKNOWN))) == []  # judged once known
    assert list(TAGS.read(res("aws:iam/role:Role", "r", {}))) == []  # untagged and costs nothing
    assert list(TAGS.read(res("gcp:compute/network:Network", "n", {"tags": {}}))) == []  # another cloud's
    assert (TAGS.types, TAGS.provider) == (None, "aws")


def test_a_trail_records_every_regions_activity_with_validated_logs() -> None:
    ok = {"isMultiRegionTrail": True, "enableLogFileValidation": "true"}
    assert trail_ok(res(TRAIL, "t", ok))
    assert not trail_ok(res(TRAIL, "t", ok | {"enableLogging": False}))
    assert not trail_ok(res(TRAIL, "t", ok | {"isMultiRegionTrail": False}))
