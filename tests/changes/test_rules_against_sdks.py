"""The change rules name inputs the pinned provider SDKs have: each rule's top-level input is a parameter of the
resource's constructor in pulumi_aws, pulumi_gcp, pulumi_azure_native or pulumi_random (camelCase as in the
preview JSON). A rule read from a provider source of another version that names an input the SDK lacks would never
match a change, and the diff would call a replacement an update."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from aicluster.catalog import ChangeRule, load_catalog

PACKAGES = {"aws": "pulumi_aws", "gcp": "pulumi_gcp", "azure-native": "pulumi_azure_native", "random": "pulumi_random"}


def _constructor_inputs(type_: str) -> set[str] | None:
    provider, module, name = type_.split(":")
    package = PACKAGES.get(provider)
    if package is None:
        return None
    folder = module.split("/")[0]
    mod = importlib.import_module(package if folder == "index" else f"{package}.{folder.replace('-', '_')}")
    params = inspect.signature(getattr(mod, name)._internal_init).parameters
    # camelCase as the preview writes them, compared without case (azure-native's `diskEncryptionSetID`); the PUT
    # path's `resourceName` is the constructor's `resource_name_`
    return {
        re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), p.rstrip("_")).lower()
        for p in params
        if p not in ("self", "resource_name", "opts")
    }


def _top(path: str) -> str:
    return re.split(r"[.\[]", path, maxsplit=1)[0]


RULES = [r for r in load_catalog().change_rules.values() if r.type.split(":")[0] in PACKAGES]


@pytest.mark.parametrize("rule", RULES, ids=[r.type for r in RULES])
def test_every_rule_names_an_input_of_the_sdk(rule: ChangeRule) -> None:
    inputs = _constructor_inputs(rule.type)
    assert inputs is not None
    paths = [
        *rule.replace,
        *rule.replace_on_add_or_remove,
        *(c.path for c in rule.replace_if),
        *rule.rollout,
        *rule.capacity,
        *rule.rejected_by_api,
        *rule.rollout_unless,
        *rule.rollout_batch,
        *([rule.rollout_requires] if rule.rollout_requires else []),
        *(c.path for c in rule.rollout_cases),
        *rule.unordered,
        *rule.version_aliases,
    ]
    tops = {t for p in paths if p != "*" for t in _top(p).split("|")}  # `a|b`: a rule on either input
    unknown = sorted(t for t in tops if t.lower() not in inputs)
    assert unknown == [], f"{rule.type}: {unknown} not inputs of the SDK"
