"""The aicluster CrossGuard policy pack: cost, power, compliance, fabric, storage, Kubernetes and workload guardrails.

Policies judge resources as the Pulumi engine hands them (type tokens, camelCase props), so they
also guard programs that do not use aicluster's components. They import only `aicluster.catalog`.
Run by the Pulumi CLI as `pulumi preview --policy-pack policies`, and in-process by `aicluster preview`.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from . import compliance, cost, fabric, kubernetes, onprem, power, storage, vpn, workloads
from .rule import Meta, ResourceRule, Rule, StackRule, Waived

__all__ = ["PACK_NAME", "POLICIES", "Meta", "ResourceRule", "Rule", "StackRule", "Waived", "pack_version"]

PACK_NAME = "aicluster"

# The pack, in the order the engine runs it: one explicit list.
POLICIES: list[Rule] = [
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


def pack_version() -> str:
    """The version the Pulumi CLI reports: PulumiPolicy.yaml's."""
    doc = yaml.safe_load((Path(__file__).parent / "PulumiPolicy.yaml").read_text(encoding="utf-8"))
    return str(doc["version"])
