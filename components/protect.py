"""Pulumi's `protect` on every resource whose replace or delete loses data (file systems, buckets, keys, log
stores: the plan's `stateful_types`, from the catalog's change rules). The engine then refuses to delete or replace
one: `pulumi up` stops with "unable to replace resource ... as it is currently marked for protection", and a
deliberate removal takes `pulumi state unprotect URN` first. `aicluster preview --base` says the same before merge."""

from __future__ import annotations

from collections.abc import Iterable

import pulumi


def protecting(types: Iterable[str]) -> pulumi.ResourceTransformation:
    stateful = frozenset(types)

    def transform(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        if args.type_ not in stateful or args.opts.protect is not None:
            return None  # a resource given its own protect keeps it
        return pulumi.ResourceTransformationResult(
            args.props, pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(protect=True))
        )

    return transform
