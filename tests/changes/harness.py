"""Preview an example stack as it is and with one field changed, in a scratch project, and classify the change."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from aicluster.catalog import load_catalog
from aicluster.changes import ChangeSet, classify
from aicluster.preview import preview_stack
from aicluster.stackfile import find_project, read_stack
from tests.conftest import ROOT

_BASES: dict[str, dict[str, Any]] = {}


def stack_doc(stack: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text(encoding="utf-8"))


def preview_doc(project: Path, name: str, doc: dict[str, Any]) -> dict[str, Any]:
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return preview_stack(read_stack(find_project(project), name)).to_json()


def scratch_project(tmp: Path) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", tmp / "__main__.py")
    (tmp / "stacks").mkdir(exist_ok=True)
    return tmp


def base_preview(stack: str) -> dict[str, Any]:
    """The example stack's own preview (cached per process: every edit of it compares to the same base)."""
    if stack not in _BASES:
        _BASES[stack] = preview_stack(read_stack(find_project(ROOT), stack)).to_json()
    return _BASES[stack]


def changed(tmp: Path, stack: str, edit: Callable[[dict[str, Any]], None]) -> tuple[ChangeSet, dict[str, Any]]:
    """The example stack with `edit` applied to its cluster, previewed under the same stack name, and the steps
    from the example's preview to it."""
    doc = copy.deepcopy(stack_doc(stack))
    edit(doc["config"]["aicluster:cluster"])
    head = preview_doc(scratch_project(tmp), stack, doc)
    return classify(base_preview(stack), head, load_catalog().change_rules), head
