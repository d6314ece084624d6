"""Cost-allocation tags, per cloud: p5-small mutated (AWS tags, an ASG's propagated tags), Azure tags and GCP labels
on hand-built resources; each policy judges its own provider."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview.engine import UNKNOWN, Capture
from tests.policies.conftest import ASG, DELETE, LT, findings, judge, messages, mutated, set_at
from tests.policies.resources import azure, gcp
from tests.policies.resources.azure import ACTIVITY_LOG, DENY_ADMIN, NSG, VMSS, amlfs, anf_pool, nat, nat_ip, nsg, vmss
from tests.policies.resources.gcp import (
    FIREWALL,
    MIG,
    NETWORK,
    TEMPLATE,
    filestore,
    firewall,
    lustre,
    parallelstore,
    template,
    tpu_vm,
)

AZURE_TAGS, AWS_TAGS = "azure-resource-missing-required-tags", "aws-resource-missing-required-tags"

GCP_LABELS = "gcp-resource-missing-required-labels"

CASES = [
    pytest.param(
        "aws-resource-missing-required-tags",
        {LT: set_at("tags.owner", DELETE)},
        "launch template llm-dev-h100-lt lacks required tags owner; add them to the cluster's tags in the stack file "
        "(aicluster:cluster.tags) or to the provider's defaultTags",
        id="tags-missing",
    ),
    pytest.param(
        "aws-resource-missing-required-tags",
        {ASG: lambda i: i.update(tags=[t for t in i["tags"] if t["key"] != "cost-center"])},
        "group llm-dev-h100-asg lacks required tags that propagate at launch cost-center; add them to the cluster's "
        "tags in the stack file (aicluster:cluster.tags) or to the provider's defaultTags",
        id="asg-tags-missing",
    ),
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_tagged_azure_resources_pass() -> None:
    for r in (vmss(), azure.controller(), amlfs(), anf_pool(), nat(), nat_ip()):
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


def test_labelled_gcp_resources_pass() -> None:
    for r in (template(), gcp.controller(), tpu_vm(), lustre(), parallelstore(), filestore()):
        assert findings(GCP_LABELS, r.type, r.props) == [], r.type


def test_gcp_resources_without_labels_are_judged_by_their_sdk_class() -> None:
    # pulumi_gcp.compute.Network and Firewall take no labels; a MIG neither (its template carries them)
    assert findings(GCP_LABELS, NETWORK, {"autoCreateSubnetworks": False}) == []
    assert findings(GCP_LABELS, FIREWALL, firewall()) == []
    assert findings(GCP_LABELS, MIG, {"zone": "us-central1-a", "targetSize": 4.0}) == []
    # ... a global address does, though the program gave it none
    assert findings(GCP_LABELS, "gcp:compute/globalAddress:GlobalAddress", {"purpose": "VPC_PEERING"}) == [
        "global address x lacks required labels owner, cost-center; add the tags to the cluster's tags in the stack "
        "file (aicluster:cluster.tags); GCP labels are the tag keys lowercased, other characters than a-z 0-9 _ - "
        "replaced by _"
    ]


def test_required_tags_are_checked_as_gcp_labels() -> None:
    config = {"required_tags": ["owner", "aicluster:cluster", "Team.Name"]}
    assert findings(GCP_LABELS, TEMPLATE, template().props, config) == [
        "instance template x lacks required labels team_name (tag Team.Name); add the tags to the cluster's tags in "
        "the stack file (aicluster:cluster.tags); GCP labels are the tag keys lowercased, other characters than a-z "
        "0-9 _ - replaced by _"
    ]
    assert findings(GCP_LABELS, TEMPLATE, template(labels={"owner": "me"}).props, {"required_tags": ["owner"]}) == []
    assert findings(GCP_LABELS, TEMPLATE, template(labels=UNKNOWN).props) == []


def test_each_label_policy_judges_its_own_provider() -> None:
    assert findings("aws-resource-missing-required-tags", TEMPLATE, template(labels={}).props) == []
    assert findings(GCP_LABELS, "aws:ec2/eip:Eip", {"domain": "vpc"}) == []
