"""The update policies in the catalog (data/update_policies.yaml) are what the change rules make of each field's
change today: every field change on every platform is previewed again and classified, and must match. A change of
a component or of a rule that alters a field's effect fails here; regenerate with
`python -m tests.changes.field_matrix` and read the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicluster.catalog import load_catalog
from tests.changes.field_matrix import EDITS, PLATFORMS, FieldEdit, observe, tried

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("edit", EDITS, ids=[f"{e.field}-{e.change}-{e.platform}" for e in EDITS])
def test_the_recorded_update_policy_is_what_the_rules_say(edit: FieldEdit, tmp_path: Path) -> None:
    recorded = {(p.field, p.change): p for p in load_catalog().update_policies}
    policy = recorded[(edit.field, edit.change)]
    found, sources, note = observe(edit, tmp_path)
    expected = policy.effects[edit.platform]
    assert (found, tuple(sources), note) == (expected.effect, expected.sources, expected.note)
    assert tried(edit) == expected.tried


def test_every_recorded_policy_is_tried() -> None:
    tried = {(e.field, e.change, e.platform) for e in EDITS}
    recorded = {(p.field, p.change, platform) for p in load_catalog().update_policies for platform in p.effects}
    assert recorded == tried
    assert {e.platform for e in EDITS} == set(PLATFORMS)
