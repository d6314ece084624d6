"""Azure management locks: every Azure resource whose delete loses data (the catalog's `data-loss` types, which
`protect` guards in Pulumi) is under a CanNotDelete lock, its own or its parent's; the diff knows the lock's rules."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.changes import classify
from tests.changes.harness import base_preview, changed
from tests.changes.test_classify import doc, one
from tests.report.previews import resource

LOCK = "azure-native:authorization:ManagementLockByScope"
AMLFS = "azure-native:storagecache:AmlFilesystem"
# a resource group is never locked itself: a group lock would stop the stack deleting the scale sets and NICs it
# deletes in the normal course; a lock on any resource in it already makes the group undeletable
UNLOCKED = {"azure-native:resources:ResourceGroup"}
AZURE_STACKS = ["aks-nd-h100", "azure-nd-h100", "azure-spot", "azure-nd-h100-250", "hybrid-aws-azure", "three-cloud"]


def locked(preview: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """URN of each locked resource -> its lock's inputs."""
    out = {}
    for r in preview["resources"]:
        if r["type"] == LOCK:
            (target,) = r.get("propertyDependencies", {})["scope"]
            out[target] = r["inputs"]
    return out


@pytest.mark.parametrize("stack", AZURE_STACKS)
def test_every_azure_resource_that_holds_data_is_locked(stack: str, catalog: Catalog) -> None:
    preview = base_preview(stack)
    locks = locked(preview)
    stateful = [
        r
        for r in preview["resources"]
        if r["type"].startswith("azure-native:")
        and "data-loss" in catalog.change_rules[r["type"]].risks
        and r["type"] not in UNLOCKED
    ]
    assert stateful, f"{stack} has no Azure resource that holds data"
    for r in stateful:
        # its own lock, or its parent's (a key's vault, a volume's account: named by a path input)
        parents = {u for key, urns in r.get("propertyDependencies", {}).items() if key.endswith("Name") for u in urns}
        assert r["urn"] in locks or parents & locks.keys(), f"{stack}: {r['name']} ({r['type']}) is not locked"
    for inputs in locks.values():
        assert inputs["level"] == "CanNotDelete"
        assert inputs["lockName"] == "aicluster-cannot-delete"
        assert "pulumi state unprotect" in inputs["notes"]
        assert len(inputs["notes"]) <= 512  # the API's limit (SDK docstring)


def test_resources_that_hold_no_data_are_not_locked(catalog: Catalog) -> None:
    preview = base_preview("azure-nd-h100")
    types = {r["type"] for r in preview["resources"] if r["urn"] in locked(preview)}
    assert types == {"azure-native:storagecache:AmlFilesystem", "azure-native:netapp:Account",
                     "azure-native:operationalinsights:Workspace"}  # fmt: skip
    assert all("data-loss" in catalog.change_rules[t].risks for t in types)


def test_a_replaced_file_system_replaces_its_lock_too(tmp_path: Path) -> None:
    """A new AMLFS (another throughput tier replaces it) has a new id, so its lock's scope changes: a replace, which
    the diff lists next to the file system's (which the change-safety rule blocks)."""
    changes, _ = changed(tmp_path, "azure-nd-h100", lambda c: c["storage"][0].update(throughput_mb_s_per_tib=125))
    by_type = {s.type: s for s in changes.steps}
    assert by_type[AMLFS].op == "replace"
    assert "data-loss" in by_type[AMLFS].risks
    lock = by_type[LOCK]
    assert (lock.op, lock.replace_reasons, lock.risks) == ("replace", ["scope"], [])


def test_new_lock_notes_are_an_update_and_a_new_name_a_replace(catalog: Catalog) -> None:
    old = resource(LOCK, "scratch-amlfs-lock", scope="/subscriptions/s/x", level="CanNotDelete", notes="a",
                   lockName="aicluster-cannot-delete")  # fmt: skip
    notes = copy.deepcopy(old)
    notes["inputs"]["notes"] = "b"
    step = one(classify(doc(old), doc(notes), catalog.change_rules))
    assert (step.op, step.risks, step.replace_reasons) == ("update", [], [])
    renamed = copy.deepcopy(old)
    renamed["inputs"]["lockName"] = "other"
    step = one(classify(doc(old), doc(renamed), catalog.change_rules))
    assert (step.op, step.replace_reasons) == ("replace", ["lockName"])
