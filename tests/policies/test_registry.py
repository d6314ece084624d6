"""The pack's registry: one explicit list, unique names, complete metadata, valid config schemas; and its layout:
one rule a module under a folder per concern, each listed in its concern's POLICIES, named after its file, with a
test file that mirrors it."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path
from types import ModuleType

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
from policies.rule import Rule
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


CONCERNS = {
    "cost": cost,
    "power": power,
    "compliance": compliance,
    "fabric": fabric,
    "storage": storage,
    "onprem": onprem,
    "vpn": vpn,
    "kubernetes": kubernetes,
    "workloads": workloads,
}
# A policy's name holds its file's stem (`disallow_public_ip` -> aws-ec2-instance-disallow-public-ip), except where
# the name says it otherwise: GCP calls tags labels (compliance/missing_required_tags.py binds it).
STEM_EXCEPTIONS = {"gcp-resource-missing-required-labels": "missing_required_tags"}
# The cloud readers of policies.facts, each with its tests/policies/facts/test_<cloud>.py
READERS = ("aws", "azure", "gcp", "kubernetes")
HUB_LINES = 450  # no module of the pack grows into a hub again


def test_every_concern_folder_is_a_concern_of_the_pack() -> None:
    """A new folder of rules is in CONCERNS (and so in POLICIES, with its layout checked), never beside it."""
    import policies as pack

    folders = sorted(m.name for m in pkgutil.iter_modules(pack.__path__) if m.ispkg and m.name != "facts")
    assert folders == sorted(CONCERNS)


def rule_modules(concern: ModuleType) -> dict[str, ModuleType]:
    """A concern's rule modules by file stem: every module of its folder but `_shared` ones (no rule of theirs)."""
    found = pkgutil.iter_modules(concern.__path__)
    return {
        m.name: importlib.import_module(f"{concern.__name__}.{m.name}") for m in found if not m.name.startswith("_")
    }


def rules_of(module: ModuleType) -> list[Rule]:
    return [v for v in vars(module).values() if isinstance(v, ResourceRule | StackRule)]


def test_concerns_are_the_packs_in_its_order() -> None:
    assert [m.__name__.removeprefix("policies.") for m in CONCERNS.values()] == list(CONCERNS)
    assert [p for c in CONCERNS.values() for p in c.POLICIES] == POLICIES


@pytest.mark.parametrize("concern", list(CONCERNS))
def test_every_rule_file_appears_in_its_concerns_policies(concern: str) -> None:
    """Each module of the folder defines a rule the folder lists; the folder lists no rule defined elsewhere."""
    package = CONCERNS[concern]
    modules = rule_modules(package)
    assert modules
    for stem, module in modules.items():
        assert rules_of(module), f"{concern}/{stem}.py defines no rule"
        assert [r for r in rules_of(module) if r not in package.POLICIES] == [], f"{concern}/{stem}.py"
    defined = [r for m in modules.values() for r in rules_of(m)]
    assert sorted(r.name for r in package.POLICIES) == sorted(r.name for r in defined)
    assert len(package.POLICIES) == len(set(map(id, package.POLICIES)))


@pytest.mark.parametrize("concern", list(CONCERNS))
def test_each_concern_lists_its_rules_explicitly(concern: str) -> None:
    """POLICIES is a literal list of the folder's modules' rules: nothing registers itself on import."""
    tree = ast.parse((ROOT / "policies" / concern / "__init__.py").read_text(encoding="utf-8"))
    (value,) = [
        n.value for n in tree.body if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "POLICIES" and n.value
    ]
    assert isinstance(value, ast.List)
    assert all(isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) for e in value.elts)
    assert not [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]


@pytest.mark.parametrize("concern", list(CONCERNS))
def test_every_policy_name_holds_its_file_stem(concern: str) -> None:
    for stem, module in rule_modules(CONCERNS[concern]).items():
        for rule in rules_of(module):
            if STEM_EXCEPTIONS.get(rule.name) == stem:
                continue
            assert stem.replace("_", "-") in rule.name, f"{concern}/{stem}.py: {rule.name}"


def test_the_stem_exceptions_are_still_needed() -> None:
    names = [p.name for p in POLICIES]
    for name, stem in STEM_EXCEPTIONS.items():
        assert name in names
        assert stem.replace("_", "-") not in name


@pytest.mark.parametrize("concern", list(CONCERNS))
def test_each_rule_file_has_its_mirrored_test_file(concern: str) -> None:
    tests = ROOT / "tests" / "policies" / concern
    missing = [stem for stem in rule_modules(CONCERNS[concern]) if not (tests / f"test_{stem}.py").is_file()]
    assert missing == [], f"tests/policies/{concern}/test_<stem>.py for each of {missing}"


def test_each_cloud_reader_has_its_test_file() -> None:
    facts = ROOT / "policies" / "facts"
    assert all((facts / f"{cloud}.py").is_file() for cloud in READERS)
    missing = [c for c in READERS if not (ROOT / "tests" / "policies" / "facts" / f"test_{c}.py").is_file()]
    assert missing == []


def test_no_module_of_the_pack_is_a_hub() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted(Path(ROOT / "policies").rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > HUB_LINES
    }
    assert long == {}
