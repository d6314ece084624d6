"""The aicluster CrossGuard policy pack: cost, power, compliance, fabric, storage, Kubernetes and workload guardrails.

Policies judge resources as the Pulumi engine hands them (type tokens, camelCase props), so they
also guard programs that do not use aicluster's components. They import only `aicluster.catalog`.
Run by the Pulumi CLI as `pulumi preview --policy-pack policies`, and in-process by `aicluster preview`.

One folder per concern (cost, power, compliance, fabric, storage, onprem, vpn, kubernetes, workloads), one rule a
module; each folder's POLICIES lists its rules in the pack's order, and POLICIES here is theirs, one explicit list
(nothing registers itself on import). A rule reads resources through policies.facts: the reading is per cloud, the
judging is written once (a rule the clouds share is bound once per cloud, rule.per_cloud).

The rules are `pulumi_policy` policies, so loading them loads the Pulumi SDK. This package loads them on first
use of POLICIES (or of a concern's package), not on import: `aicluster validate` reads only the policies' names
(policies.names) and never needs the SDK.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from . import compliance, cost, fabric, kubernetes, onprem, power, storage, vpn, workloads
    from .rule import Meta, ResourceRule, Rule, StackRule, Waived

    POLICIES: list[Rule]

__all__ = [
    "PACK_NAME",
    "POLICIES",
    "Meta",
    "ResourceRule",
    "Rule",
    "StackRule",
    "Waived",
    "compliance",
    "cost",
    "fabric",
    "kubernetes",
    "onprem",
    "pack_version",
    "power",
    "storage",
    "vpn",
    "workloads",
]

PACK_NAME = "aicluster"

# The concerns, in the order the engine runs the pack: POLICIES is their POLICIES, one explicit list.
_CONCERNS = ("cost", "power", "compliance", "fabric", "storage", "onprem", "vpn", "kubernetes", "workloads")
_RULE_TYPES = ("Meta", "ResourceRule", "Rule", "StackRule", "Waived")


def _policies() -> list[Rule]:
    from . import compliance, cost, fabric, kubernetes, onprem, power, storage, vpn, workloads

    return [
        *cost.POLICIES,
        *power.POLICIES,
        *compliance.POLICIES,
        *fabric.POLICIES,
        *storage.POLICIES,
        *onprem.POLICIES,
        *vpn.POLICIES,
        *kubernetes.POLICIES,
        *workloads.POLICIES,
    ]


def __getattr__(name: str) -> Any:
    """POLICIES, the rule types and the rule modules, loaded on first use (PEP 562) and kept."""
    if name == "POLICIES":
        value: Any = _policies()
    elif name in _RULE_TYPES:
        value = getattr(importlib.import_module(".rule", __name__), name)
    elif name in _CONCERNS:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def pack_version() -> str:
    """The version the Pulumi CLI reports: PulumiPolicy.yaml's."""
    doc = yaml.safe_load((Path(__file__).parent / "PulumiPolicy.yaml").read_text(encoding="utf-8"))
    return str(doc["version"])
