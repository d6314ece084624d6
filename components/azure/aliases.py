"""Every Azure component drops the azure-native SDK's API-version aliases from the resources beneath it.

Each azure-native resource class adds one alias per API version of its type (`azure-native:network/v20230901:
Subnet` and so on: 29 for a scale set, 60 for a subnet, over 100 for an AKS cluster), so that state written by a
program that used an explicitly versioned module (`azure.network.v20230901`) still matches. This program never
imports a versioned module (it uses the default-version ones only), so no state it wrote can hold those types.
Pulumi's Python SDK resolves every alias of every resource into a chain of Outputs and asyncio tasks, in a
real `pulumi preview`/`up` as in the offline one: for the 29 resources of an 8-node Azure stack, about 27k
`contains_unknowns` calls and 30k event-loop callbacks, over 85% of the program's time. Dropping those
aliases (and no other: a rename such as `azure-native:insights:DiagnosticSetting` -> `monitor` stays) removes
that cost and changes nothing the engine is told about a resource's type, name, inputs, parent or dependencies.

`azure_component_opts(opts)` adds the transformation to a component's own options; Pulumi hands a component's
transformations to everything created beneath it.
"""

from __future__ import annotations

import copy
import re

import pulumi

# "azure-native:<module>/v<api version>:<Type>": the type as an explicitly versioned module names it
VERSIONED_TYPE = re.compile(r"azure-native:[A-Za-z0-9]+/v\d[A-Za-z0-9]*:[A-Za-z0-9]+")


def is_api_version_alias(alias: object) -> bool:
    """Whether `alias` only says "this resource was once of an API-versioned azure-native type" (nothing else set)."""
    if not isinstance(alias, pulumi.Alias):
        return False
    others: tuple[object, ...] = (alias.name, alias.parent, alias.stack, alias.project)  # `...`: not set
    return (
        all(v is ... for v in others)
        and isinstance(alias.type_, str)
        and VERSIONED_TYPE.fullmatch(alias.type_) is not None
    )


def without_api_version_aliases(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    """A resource transformation: the resource's options without the SDK's API-version aliases."""
    aliases = args.opts.aliases
    if not aliases or not args.type_.startswith("azure-native:"):
        return None
    kept = [a for a in aliases if not is_api_version_alias(a)]
    if len(kept) == len(aliases):
        return None
    opts = copy.copy(args.opts)
    opts.aliases = kept or None
    return pulumi.ResourceTransformationResult(args.props, opts)


def azure_component_opts(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """`opts` plus the transformation above, for an Azure component's own `super().__init__`."""
    return pulumi.ResourceOptions.merge(
        opts or pulumi.ResourceOptions(), pulumi.ResourceOptions(transformations=[without_api_version_aliases])
    )
