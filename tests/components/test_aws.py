"""AWS components: the real properties that make a GPU fabric work (or silently not)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN
from components.tags import _takes_tags
from tests.components.conftest import Built
from tests.helpers import cluster, pool

Build = Callable[[dict[str, Any]], Built]

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
SG = "aws:ec2/securityGroup:SecurityGroup"
PG = "aws:ec2/placementGroup:PlacementGroup"


def pool_lt(b: Built) -> dict[str, Any]:
    return b.one(LT, "-h100-lt").inputs


@pytest.mark.parametrize(
    ("instance_type", "efa_cards"),
    [pytest.param("p5.48xlarge", 32, id="p5"), pytest.param("p5en.48xlarge", 16, id="p5en")],
)
def test_launch_template_declares_every_efa_card(build: Build, instance_type: str, efa_cards: int) -> None:
    b = build(cluster(pools=[pool(instance_type=instance_type)]))
    nics = pool_lt(b)["networkInterfaces"]
    assert len(nics) == efa_cards + 1
    layout = [(n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in nics]
    assert layout[0] == (0, 0, "interface")  # ENA primary on card 0, device 0 (cannot be EFA-only)
    assert layout[1] == (0, 1, "efa-only")
    assert layout[2:] == [(c, 0, "efa-only") for c in range(1, efa_cards)]
    assert nics[0]["associatePublicIpAddress"] == "false"  # eth0 only; EFA-only interfaces have no IPs
    assert not any("associatePublicIpAddress" in n for n in nics[1:])
    assert not any("subnetId" in n for n in nics)  # the ASG's one subnet applies
    assert [len(n["securityGroups"]) for n in nics] == [2] + [1] * efa_cards  # primary: node + EFA groups


def test_launch_template_requires_imdsv2_and_encrypts_the_root_volume(build: Build) -> None:
    lt = pool_lt(build(cluster()))
    assert lt["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 2}
    (root,) = lt["blockDeviceMappings"]
    assert root["ebs"] == {"volumeSize": 500, "volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true"}
    assert lt["instanceType"] == "p5.48xlarge"
    assert lt["imageId"].startswith("resolve:ssm:/aws/service/deeplearning/")
    assert "vpcSecurityGroupIds" not in lt  # not allowed together with network interfaces


def test_user_data_is_the_rendered_cloud_init(build: Build) -> None:
    b = build(cluster())
    text = base64.b64decode(pool_lt(b)["userData"]).decode()
    assert text.startswith("#cloud-config\n")
    assert '"efa_devices": 32' in text


def test_asg_lives_in_exactly_one_subnet_and_is_sized_to_the_pool(build: Build) -> None:
    asg = build(cluster(pools=[pool(nodes=64)])).one(ASG).inputs
    assert asg["vpcZoneIdentifiers"] == [UNKNOWN]
    assert (asg["minSize"], asg["maxSize"], asg["desiredCapacity"]) == (64, 64, 64)
    assert asg["waitForCapacityTimeout"] == "0"
    assert asg["capacityRebalance"] is False


def test_on_demand_pool_gets_a_cluster_placement_group(build: Build) -> None:
    b = build(cluster())
    assert b.one(PG).inputs["strategy"] == "cluster"
    assert b.one(ASG).inputs["placementGroup"] == UNKNOWN  # the new group's name


def test_capacity_block_has_no_placement_group_and_targets_the_block(build: Build) -> None:
    b = build(cluster(pools=[pool(market="capacity-block", reservation="cr-0123abcd")]))
    assert b.of_type(PG) == []
    assert "placementGroup" not in b.one(ASG).inputs
    lt = pool_lt(b)
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123abcd"}
    }


def test_spot_pool_uses_spot_market_and_capacity_rebalancing(build: Build) -> None:
    b = build(cluster(pools=[pool(market="spot")]))
    assert pool_lt(b)["instanceMarketOptions"]["marketType"] == "spot"
    assert b.one(ASG).inputs["capacityRebalance"] is True
    assert "capacityReservationSpecification" not in pool_lt(b)


def test_existing_placement_group_is_used_by_name(build: Build) -> None:
    b = build(cluster(pools=[pool(market="reserved", reservation="cr-0123abcd", placement_group="odcr-pg")]))
    assert b.of_type(PG) == []
    assert b.one(ASG).inputs["placementGroup"] == "odcr-pg"


def test_efa_security_group_allows_all_traffic_to_and_from_itself_only(build: Build) -> None:
    efa = build(cluster()).one(SG, "-efa").inputs
    expected = {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}
    assert [{k: r[k] for k in expected} for r in efa["ingress"]] == [expected]
    assert [{k: r[k] for k in expected} for r in efa["egress"]] == [expected]
    assert "cidrBlocks" not in efa["ingress"][0]


def test_nothing_is_reachable_from_the_internet(build: Build) -> None:
    b = build(cluster())
    for sg in b.of_type(SG):
        for rule in sg.inputs.get("ingress", []):
            assert "0.0.0.0/0" not in rule.get("cidrBlocks", []), sg.name
    for subnet in b.of_type("aws:ec2/subnet:Subnet"):
        assert subnet.inputs["mapPublicIpOnLaunch"] is False


def test_lustre_file_system_and_its_security_group(build: Build) -> None:
    b = build(cluster())
    fs = b.one("aws:fsx/lustreFileSystem:LustreFileSystem").inputs
    assert (fs["deploymentType"], fs["storageCapacity"], fs["perUnitStorageThroughput"]) == ("PERSISTENT_2", 48000, 250)
    assert fs["subnetIds"] == UNKNOWN
    ports = {(r["fromPort"], r["toPort"]) for r in b.one(SG, "-scratch-sg").inputs["ingress"]}
    assert ports == {(988, 988), (1018, 1023)}


def test_nfs_storage_is_encrypted_efs_with_a_mount_target(build: Build) -> None:
    b = build(cluster(storage=[{"name": "home", "kind": "nfs", "capacity_tib": 1, "mount": "/shared"}]))
    assert b.one("aws:efs/fileSystem:FileSystem").inputs["encrypted"] is True
    assert b.one("aws:efs/mountTarget:MountTarget").inputs["subnetId"] == UNKNOWN
    (rule,) = b.one(SG, "-home-sg").inputs["ingress"]
    assert (rule["fromPort"], rule["toPort"], rule["protocol"]) == (2049, 2049, "tcp")


def test_controller_is_private_with_imdsv2(build: Build) -> None:
    b = build(cluster())
    lt = b.one(LT, "-slurmctld-lt").inputs
    (nic,) = lt["networkInterfaces"]
    assert nic["associatePublicIpAddress"] == "false"
    assert lt["metadataOptions"]["httpTokens"] == "required"
    assert lt["blockDeviceMappings"][0]["ebs"]["encrypted"] == "true"
    assert b.one("aws:ec2/instance:Instance").inputs["metadataOptions"]["httpTokens"] == "required"


def test_every_taggable_resource_is_tagged_once_from_the_spec(build: Build) -> None:
    b = build(cluster())
    want = {"owner": "ml-platform", "cost-center": "4711", "aicluster:cluster": "llm-train"}
    tagged = 0
    for r in b.capture.custom():
        if r.type == ASG:
            tags = {t["key"]: t["value"] for t in r.inputs["tags"]}
            assert all(t["propagateAtLaunch"] for t in r.inputs["tags"])
        elif _takes_tags(r.type):
            tags = r.inputs["tags"]
        else:
            continue
        tagged += 1
        assert want.items() <= tags.items(), r.name
    assert tagged >= 20


def test_pool_and_storage_resources_carry_their_own_tag(build: Build) -> None:
    b = build(cluster())
    assert pool_lt(b)["tags"]["aicluster:pool"] == "h100"
    specs = {s["resourceType"]: s["tags"] for s in pool_lt(b)["tagSpecifications"]}
    assert set(specs) == {"instance", "volume", "network-interface"}
    assert specs["instance"]["aicluster:pool"] == "h100"
    assert b.one("aws:fsx/lustreFileSystem:LustreFileSystem").inputs["tags"]["aicluster:storage"] == "scratch"
    assert "aicluster:pool" not in b.one("aws:ec2/vpc:Vpc").inputs["tags"]


def test_resources_are_parented_under_one_component_per_real_thing(build: Build) -> None:
    b = build(cluster())
    top = b.one("aicluster:index:AiCluster")
    assert top.parent == "urn:pulumi:test::aicluster::pulumi:pulumi:Stack::aicluster-test"
    components = {r.urn: r for r in b.capture.resources if not r.custom}
    for r in b.capture.custom():
        if r.type.startswith("pulumi:providers:"):
            continue
        assert r.parent in components, r.name
        assert components[r.parent].type.startswith("aicluster:aws:"), r.name
    assert top.inputs["budgets"] == {}
    assert top.inputs["cluster"] == "llm-train"


def test_resources_are_pinned_to_the_pool_region(build: Build) -> None:
    b = build(cluster(pools=[pool(region="us-west-2", zone="us-west-2a")], storage=[]))
    regional = [r for r in b.capture.custom() if r.type.startswith("aws:") and not r.type.startswith("aws:iam/")]
    assert {r.inputs["region"] for r in regional} == {"us-west-2"}


def test_subnets_come_from_the_plan(build: Build) -> None:
    b = build(cluster(network={"cidrs": {"aws/us-east-1": "10.20.0.0/16"}}))
    assert b.one("aws:ec2/vpc:Vpc").inputs["cidrBlock"] == "10.20.0.0/16"
    subnets = sorted(r.inputs["cidrBlock"] for r in b.of_type("aws:ec2/subnet:Subnet"))
    assert subnets == ["10.20.0.0/19", "10.20.224.0/26"]


def test_resource_count_does_not_grow_with_nodes(build: Build) -> None:
    small = build(cluster(pools=[pool(nodes=8)]))
    large = build(cluster(pools=[pool(nodes=3072)]))
    assert len(small.capture.resources) == len(large.capture.resources)


def test_efs_has_a_mount_target_in_every_client_zone(build: Build) -> None:
    b = build(
        cluster(
            pools=[pool(), pool(name="b", zone="us-east-1b", instance_type="p4d.24xlarge", market="spot")],
            storage=[{"name": "home", "kind": "nfs", "capacity_tib": 1, "mount": "/shared"}],
        )
    )
    targets = sorted(r.name for r in b.of_type("aws:efs/mountTarget:MountTarget"))
    assert targets == ["llm-train-home-us-east-1a", "llm-train-home-us-east-1b"]


def test_template_versions_do_not_churn_the_controller_or_the_group(build: Build) -> None:
    b = build(cluster())
    assert b.one("aws:ec2/instance:Instance").inputs["launchTemplate"]["version"] == "$Default"
    assert b.one(ASG).inputs["launchTemplate"]["version"] == "$Latest"


def test_resizing_a_pool_changes_only_the_pool(build: Build) -> None:
    def inputs(b: Built) -> dict[str, Any]:
        return {r.urn: r.inputs for r in b.capture.resources}

    small, large = inputs(build(cluster(pools=[pool(nodes=4)]))), inputs(build(cluster(pools=[pool(nodes=40)])))
    changed = sorted(urn.rsplit("::", 1)[1] for urn in small if small[urn] != large[urn])
    assert changed == ["llm-train-h100-asg"]


def test_the_default_provider_is_recorded_as_the_engine_registers_it(build: Build) -> None:
    b = build(cluster())
    (provider,) = b.of_type("pulumi:providers:aws")
    assert provider.urn == "urn:pulumi:test::aicluster::pulumi:providers:aws::default_7_51_1"
    assert provider.inputs == {"version": "7.51.1"}
    assert {r.provider for r in b.capture.custom() if r.type.startswith("aws:")} == {provider.urn}


TRAIL = "aws:cloudtrail/trail:Trail"


@pytest.mark.parametrize(
    ("frameworks", "trails"),
    [
        pytest.param([], 0, id="none"),
        pytest.param(["gdpr"], 0, id="gdpr-needs-no-audit-log"),
        pytest.param(["soc2"], 1, id="soc2"),
        pytest.param(["hipaa", "pci-dss"], 1, id="hipaa-pci"),
    ],
)
def test_audit_trail_when_a_framework_requires_it(build: Build, frameworks: list[str], trails: int) -> None:
    b = build(cluster(compliance={"frameworks": frameworks}))
    assert len(b.of_type(TRAIL)) == trails
    if trails:
        trail = b.one(TRAIL).inputs
        assert trail["isMultiRegionTrail"] is True
        assert trail["enableLogFileValidation"] is True
        assert trail["includeGlobalServiceEvents"] is True
        block = b.one("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs
        assert all(
            block[k] is True
            for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
        )
        sse = b.one("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration").inputs
        assert sse["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
        policy = b.one("aws:s3/bucketPolicy:BucketPolicy")
        assert policy.urn in b.one(TRAIL).dependencies  # CloudTrail checks bucket access on create
