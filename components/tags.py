"""Tags injected once: a resource transformation set on a component and inherited by its children.

`tagging(tags)` returns a Pulumi transformation that merges `tags` into every taggable AWS and Azure
resource, and into the `labels` of every GCP resource that has them, created under the component it is
attached to (whether a type takes them is read from the provider SDK's own class, so a new resource type
needs no list here). GCP labels follow GCP's rules: tag keys and values are lowercased, other characters
become `_` and both are cut to 63 characters (`aicluster:pool` becomes `aicluster_pool`); the spec refuses
tags that would collide or be cut. Nested components add their own (for example
`aicluster:pool`) the same way; Pulumi runs a child's transformations, then its parents'.

AWS resources that need more than a `tags` map are handled here and nowhere else:
- an Auto Scaling group takes a list of `{key, value, propagate_at_launch}`;
- a launch template's `tag_specifications` tag the instances, volumes and interfaces it launches;
- an instance's `volume_tags` tag its root volume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from aicluster.plan import gcp_labels

ASG_TYPE = "aws:autoscaling/group:Group"
LAUNCH_TEMPLATE_TYPE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE_TYPE = "aws:ec2/instance:Instance"
LAUNCHED_RESOURCE_TYPES = ("instance", "volume", "network-interface")
# Pulumi package -> (Python SDK module whose resource classes say whether a type takes them, the input
# that carries them).
SDK_MODULES = {"aws": "pulumi_aws", "azure-native": "pulumi_azure_native", "gcp": "pulumi_gcp"}
TAG_FIELD = {"aws": "tags", "azure-native": "tags", "gcp": "labels"}


def _merge(existing: Any, tags: Mapping[str, str]) -> dict[str, Any]:
    base = dict(existing) if isinstance(existing, Mapping) else {}
    return {**tags, **base}  # a tag set closer to the resource wins


def _asg_tags(existing: Any, tags: Mapping[str, str]) -> list[dict[str, Any]]:
    present = list(existing or [])
    have = {(t["key"] if isinstance(t, Mapping) else t.key) for t in present}
    extra = [{"key": k, "value": v, "propagate_at_launch": True} for k, v in sorted(tags.items()) if k not in have]
    return present + extra


def _tag_specifications(existing: Any, tags: Mapping[str, str]) -> list[dict[str, Any]]:
    specs: dict[str, dict[str, Any]] = {}
    for spec in existing or []:
        rtype = spec["resource_type"] if isinstance(spec, Mapping) else spec.resource_type
        stags = spec.get("tags") if isinstance(spec, Mapping) else spec.tags
        specs[rtype] = {"resource_type": rtype, "tags": dict(stags or {})}
    for rtype in LAUNCHED_RESOURCE_TYPES:
        entry = specs.setdefault(rtype, {"resource_type": rtype, "tags": {}})
        entry["tags"] = _merge(entry["tags"], tags)
    return [specs[k] for k in sorted(specs)]


def tag_props(type_: str, props: Mapping[str, Any], tags: Mapping[str, str]) -> dict[str, Any] | None:
    """The resource's input props with `tags` merged in, or None if the type takes no tags."""
    package = type_.split(":", 1)[0]
    if package not in SDK_MODULES:
        return None
    out = dict(props)
    if type_ == ASG_TYPE:
        out["tags"] = _asg_tags(props.get("tags"), tags)
        return out
    name = TAG_FIELD[package]
    if name not in props and not _takes_tags(type_):
        return None
    out[name] = _merge(props.get(name), gcp_labels(tags) if name == "labels" else tags)
    if type_ == LAUNCH_TEMPLATE_TYPE:
        out["tag_specifications"] = _tag_specifications(props.get("tag_specifications"), tags)
    elif type_ == INSTANCE_TYPE:
        out["volume_tags"] = _merge(props.get("volume_tags"), tags)
    return out


_TAGGABLE_CACHE: dict[str, bool] = {}


def _takes_tags(type_: str) -> bool:
    """Whether the resource class behind a type token has a `tags` (GCP: `labels`) input, from the SDK itself."""
    if type_ not in _TAGGABLE_CACHE:
        import importlib

        # "aws:ec2/vpc:Vpc" -> pulumi_aws.ec2.Vpc; "azure-native:network:VirtualNetwork" ->
        # pulumi_azure_native.network.VirtualNetwork; "gcp:compute/instance:Instance" -> pulumi_gcp.compute.Instance
        package, mod_path, cls_name = type_.split(":")
        module = mod_path.split("/")[0]
        if package not in SDK_MODULES:  # e.g. pulumi:providers:aws
            _TAGGABLE_CACHE[type_] = False
            return False
        try:
            cls = getattr(importlib.import_module(f"{SDK_MODULES[package]}.{module}"), cls_name)
            _TAGGABLE_CACHE[type_] = isinstance(getattr(cls, TAG_FIELD[package], None), property)
        except (ImportError, AttributeError):
            _TAGGABLE_CACHE[type_] = False
    return _TAGGABLE_CACHE[type_]


def tagging(tags: Mapping[str, str]) -> pulumi.ResourceTransformation:
    frozen = dict(tags)

    def transform(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        if isinstance(args.resource, pulumi.ComponentResource | pulumi.ProviderResource):
            return None
        props = tag_props(args.type_, args.props, frozen)
        if props is None:
            return None
        return pulumi.ResourceTransformationResult(props, args.opts)

    return transform
