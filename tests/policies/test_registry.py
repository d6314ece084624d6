"""The pack's registry: one explicit list, unique names, complete metadata, valid config schemas."""

from __future__ import annotations

import ast
import re

import jsonschema
import pytest

from policies import (
    POLICIES,
    ResourceRule,
    StackRule,
    compliance,
    cost,
    fabric,
    kubernetes,
    names,
    onprem,
    power,
    storage,
    vpn,
    workloads,
)
from tests.conftest import ROOT

NAME = re.compile(
    r"^(aws|gcp|azure|aicluster)-[a-z0-9]+(-[a-z0-9]+)*-(disallow|enforce|enable|disable|configure|missing)-[a-z0-9-]+$"
)
FRAMEWORKS = {"soc2", "gdpr", "hipaa", "pci-dss", "iso27001", "cis-aws"}


def test_names_are_unique_and_follow_the_convention() -> None:
    names = [p.name for p in POLICIES]
    assert len(names) == len(set(names))
    assert [n for n in names if not NAME.match(n)] == []


def test_every_rule_module_is_in_the_pack() -> None:
    modules = [
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
    assert modules == POLICIES
    assert all(isinstance(p, ResourceRule | StackRule) for p in POLICIES)


@pytest.mark.parametrize("rule", POLICIES, ids=lambda p: p.name)
def test_metadata_is_complete(rule: ResourceRule | StackRule) -> None:
    m = rule.meta
    assert m.display_name
    assert m.description
    assert m.remediation
    assert m.description.endswith(".")
    assert "\n" not in m.description
    assert set(m.frameworks) <= FRAMEWORKS
    assert rule.severity == m.severity
    assert rule.enforcement_level == m.enforcement
    assert rule.remediation_steps == m.remediation
    schema = {"type": "object", "properties": rule.config_schema.properties}
    jsonschema.Draft7Validator.check_schema(schema)
    assert "waivers" in schema["properties"]
    assert "enforcementLevel" not in schema["properties"]


def test_main_builds_the_pack_from_the_explicit_list_only() -> None:
    tree = ast.parse((ROOT / "policies" / "__main__.py").read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [c.func.id for c in calls if isinstance(c.func, ast.Name)] == ["PolicyPack", "list"]
    assert not [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]


def test_the_names_validate_reads_are_the_packs() -> None:
    """policies.names: what `validate` knows of the pack without loading it (waivers, the checks it runs early)."""
    assert list(names.NAMES) == [p.name for p in POLICIES]
    assert cost.monthly_budget.POLICY.name == names.MONTHLY_BUDGET
    assert cost.missing_checkpoint_storage.POLICY.name == names.SPOT_CHECKPOINTS
    assert power.power_budget.POLICY.name == names.POWER_BUDGET
    assert compliance.missing_required_tags.AWS.name == names.AWS_REQUIRED_TAGS
    assert compliance.missing_required_tags.AZURE.name == names.AZURE_REQUIRED_TAGS
    assert compliance.missing_required_tags.GCP.name == names.GCP_REQUIRED_LABELS
    assert compliance.enforce_allowed_regions.POLICY.name == names.ALLOWED_REGIONS
