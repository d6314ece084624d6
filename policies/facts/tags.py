"""Tags as the clouds take them: a map on the resource (AWS and Azure `tags`, GCP `labels`) plus what the provider
adds to every resource (AWS `defaultTags`, GCP `defaultLabels`); on Azure and GCP, whether a type takes them at all
is what the SDK's resource class says (the components' tagging transformation decides the same way)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .engine import UNKNOWN, Res, get
from .model import TagSet

# Pulumi package -> the Python SDK whose resource classes say whether a type takes tags/labels.
SDK_MODULES = {"azure-native": "pulumi_azure_native", "gcp": "pulumi_gcp"}
_TAKES: dict[tuple[str, str], bool] = {}


def sdk_takes(type_: str, field: str) -> bool:
    """Whether the SDK class behind a type token has the input: `azure-native:network:VirtualNetwork` ->
    pulumi_azure_native.network.VirtualNetwork.tags; `gcp:compute/instance:Instance` ->
    pulumi_gcp.compute.Instance.labels."""
    if (type_, field) not in _TAKES:
        parts = type_.split(":")
        found = False
        if len(parts) == 3 and all(parts) and parts[0] in SDK_MODULES:
            # azure-native modules may nest (network/v20240301); a GCP token's module is the part before `/`
            module_path = parts[1].replace("/", ".") if parts[0] == "azure-native" else parts[1].split("/")[0]
            try:
                module = importlib.import_module(f"{SDK_MODULES[parts[0]]}.{module_path}")
                found = isinstance(getattr(getattr(module, parts[2]), field, None), property)
            except (ImportError, AttributeError):
                found = False
        _TAKES[(type_, field)] = found
    return _TAKES[(type_, field)]


def map_keys(tags: Any) -> set[str]:
    """The keys of a tag map (nothing for anything else)."""
    return {str(k) for k in tags} if isinstance(tags, Mapping) else set()


def provider_keys(res: Res, *path: str) -> set[str]:
    """The keys of the tag map the resource's provider adds to every resource (at `path` in the provider's props)."""
    return map_keys(get(res.provider_props, *path))


def sdk_tag_set(
    res: Res, package: str, field: str, defaults: tuple[str, ...], noun: str, spell: Callable[[str], str] | None = None
) -> Iterator[TagSet]:
    """The tags of a `package` resource whose SDK class takes them (Azure `tags`, GCP `labels`), declared or not, with
    those its provider adds to every resource (at `defaults` in the provider's props); none while they are unknown."""
    if res.provider != package or not (field in res.props or sdk_takes(res.type, field)):
        return
    tags = res.get(field)
    if tags is UNKNOWN:
        return
    yield TagSet(res, frozenset(map_keys(tags) | provider_keys(res, *defaults)), noun, spell)
