"""Kueue flavors tolerate their nodes' taints: every ResourceFlavor tolerates the NoSchedule/NoExecute taints of
the node groups its nodeLabels select, or the jobs it admits stay Pending."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, Severity

from ..facts.engine import UNKNOWN, Res, get, items
from ..facts.kubernetes import RESOURCE_FLAVORS
from ..facts.model import Taint
from ..facts.stack import Stack
from ..rule import Ctx, Meta, StackRule

MANDATORY = EnforcementLevel.MANDATORY


def _tolerates(toleration: Any, taint: Taint) -> bool:
    """Kubernetes' rule: key (or empty key with Exists), Equal value or Exists, effect (or empty: any)."""
    key, operator = get(toleration, "key", default=""), get(toleration, "operator", default="Equal")
    effect = get(toleration, "effect", default="")
    if effect and effect != taint.effect:
        return False
    if operator == "Exists":
        return key in ("", taint.key)
    return bool(key == taint.key and get(toleration, "value", default="") == taint.value)


def _flavors(stack: Stack, ctx: Ctx) -> Iterator[tuple[Res | None, str]]:
    for flavor in stack.of(*RESOURCE_FLAVORS):
        selector = flavor.get("spec", "nodeLabels")
        if selector is UNKNOWN or not isinstance(selector, Mapping) or not selector:
            continue  # a flavor that selects no labels selects no node group to judge against
        tolerations = items(flavor.props, "spec", "tolerations")
        if flavor.get("spec", "tolerations") is UNKNOWN:
            continue
        shown = get(flavor.props, "metadata", "name", default=flavor.name)
        for g in stack.node_groups:
            if not all(g.labels.get(k) == v for k, v in selector.items()):
                continue
            missing = [t for t in g.holding if not any(_tolerates(x, t) for x in tolerations)]
            if missing:
                yield (
                    flavor,
                    f"Kueue ResourceFlavor {shown} selects {g.name} (nodeLabels {dict(selector)}) but does not "
                    f"tolerate its taint {', '.join(str(t) for t in missing)}, so the jobs it admits stay Pending; "
                    "add spec.tolerations ["
                    + ", ".join(
                        f"{{key: {t.key}, operator: Equal, value: {t.value}, effect: {t.effect}}}" for t in missing
                    )
                    + "]",
                )


POLICY = StackRule(
    Meta(
        name="aicluster-kueue-resourceflavor-missing-tolerations",
        display_name="Kueue flavors tolerate their nodes' taints",
        description="Every Kueue ResourceFlavor tolerates the NoSchedule/NoExecute taints of the node groups its "
        "nodeLabels select.",
        concern="fabric",
        severity=Severity.HIGH,
        enforcement=MANDATORY,
        remediation="Give the flavor spec.tolerations matching its node groups' taints.",
    ),
    _flavors,
    types=RESOURCE_FLAVORS,
)
