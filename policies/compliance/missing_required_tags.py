"""Cost-allocation tags: one check over the tag keys each cloud's reader finds on the resources that take tags
(AWS: declared or cost-bearing, an Auto Scaling group's where they propagate; Azure and GCP: what the SDK class takes;
GCP tags are labels), one named policy per cloud.

The GCP policy's name says `labels`, not `tags`: its file stem is the one exception to a name holding its stem."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from aicluster.catalog import REQUIRED_TAGS

from ..facts import aws, azure, gcp
from ..facts.model import TagSet
from ..rule import Ctx, Meta, per_cloud

DEFAULT_REQUIRED_TAGS = REQUIRED_TAGS  # the catalog holds the list: `aicluster validate` checks it too

REQUIRED_TAGS_CONFIG: dict[str, dict[str, Any]] = {
    "required_tags": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Tag keys every resource needs. Default: owner, cost-center.",
    }
}


def _meta(name: str, display_name: str, description: str) -> Meta:
    """One cloud's metadata: its name (waivers name it), title and description; the rest is the rule's."""
    return Meta(
        name=name,
        display_name=display_name,
        description=description,
        concern="compliance",
        severity=Severity.MEDIUM,
        enforcement=EnforcementLevel.MANDATORY,
        remediation="Add the tags under aicluster:cluster.tags; AiCluster applies them to every resource.",
        frameworks=("soc2",),
        controls=("SOC 2 CC1.3",),
        config=REQUIRED_TAGS_CONFIG,
    )


def check(found: Iterable[TagSet], ctx: Ctx, fix: str) -> Iterator[str]:
    """A taggable resource that lacks a required tag is a finding naming every one it lacks."""
    for tags in found:
        required = [str(t) for t in ctx.setting("required_tags", default=DEFAULT_REQUIRED_TAGS)]
        missing = tags.missing(required)
        if missing:
            yield f"{tags.res.kind} {tags.res.name} lacks required {tags.noun} {', '.join(missing)}; {fix}"


AWS = per_cloud(
    _meta(
        "aws-resource-missing-required-tags",
        "Cost-allocation tags",
        "Every taggable resource, and every cost-bearing one, carries the owner and cost-center tags.",
    ),
    aws.TAGS,
    check,
    "add them to the cluster's tags in the stack file (aicluster:cluster.tags) or to the provider's defaultTags",
)

AZURE = per_cloud(
    _meta(
        "azure-resource-missing-required-tags",
        "Cost-allocation tags (Azure)",
        "Every Azure resource that takes tags carries the owner and cost-center tags.",
    ),
    azure.TAGS,
    check,
    "add them to the cluster's tags in the stack file (aicluster:cluster.tags)",
)

GCP = per_cloud(
    _meta(
        "gcp-resource-missing-required-labels",
        "Cost-allocation labels (GCP)",
        "Every GCP resource that takes labels carries the owner and cost-center tags as GCP labels.",
    ),
    gcp.LABELS,
    check,
    "add the tags to the cluster's tags in the stack file (aicluster:cluster.tags); GCP labels are the tag keys "
    "lowercased, other characters than a-z 0-9 _ - replaced by _",
)
