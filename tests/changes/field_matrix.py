"""The update policy of each stack field, per platform, observed: the field is changed on a base example stack of the
platform, both stacks previewed offline, the steps classified by the catalog's change rules, and the steps reduced
to one effect. aicluster/catalog/data/update_policies.yaml records what this finds (regenerate with
AICLUSTER_UPDATE_GOLDENS=1 pytest tests/changes/test_update_policies.py); docs/spec-reference.md shows it and
`aicluster validate STACK --base BASE` names it for each field a change touches."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aicluster.catalog import load_catalog
from aicluster.changes import ChangeSet, classify
from tests.changes.harness import preview_doc, scratch_project, stack_doc

# one example stack per platform: the base every field is changed on
PLATFORMS = {  # <provider>-<scheduler kind>
    "aws-slurm": "p5-small",
    "azure-slurm": "azure-nd-h100",
    "gcp-slurm": "gcp-a3mega-slurm",
    "aws-kubernetes": "eks-p5",
    "gcp-kubernetes": "gke-a3mega",
    "azure-kubernetes": "aks-nd-h100",
    "onprem-slurm": "onprem-dgx-h100",
}
Edit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class FieldEdit:
    field: str  # as the spec reference names it, `pools[].nodes`
    change: str  # what the edit does, in words ("grow", "p5 -> p4d")
    platform: str
    edit: Edit
    reverse: bool = False  # the edit makes the base (an upgrade or shrink is the way back)


def _pool(key: str, value: Any) -> Edit:
    return lambda c: c["pools"][0].update({key: value})


def _add_nodes(n: int) -> Edit:
    return lambda c: c["pools"][0].update(nodes=c["pools"][0]["nodes"] + n)


def _fs(key: str, value: Callable[[Any], Any]) -> Edit:
    return lambda c: c["storage"][0].update({key: value(c["storage"][0][key])})


def _sched(key: str, value: Any) -> Edit:
    return lambda c: c["scheduler"].update({key: value})


INSTANCE_TYPES = {
    "aws-slurm": "p4d.24xlarge",
    "azure-slurm": "Standard_ND96asr_v4",
    "gcp-slurm": "a3-highgpu-8g",
    "aws-kubernetes": "p5en.48xlarge",
    "gcp-kubernetes": "a3-highgpu-8g",
    "azure-kubernetes": "Standard_ND96asr_v4",
    "onprem-slurm": "dgx-h200",
}
THROUGHPUT = {"aws-slurm": 500, "azure-slurm": 125, "gcp-slurm": 250}

EDITS: list[FieldEdit] = [
    *(FieldEdit("pools[].nodes", "more nodes", p, _add_nodes(1)) for p in PLATFORMS),
    *(FieldEdit("pools[].nodes", "fewer nodes", p, _add_nodes(1), reverse=True) for p in PLATFORMS),
    *(
        FieldEdit("pools[].instance_type", "another type", p, _pool("instance_type", t))
        for p, t in INSTANCE_TYPES.items()
    ),
    *(FieldEdit("storage[].capacity_tib", "larger", p, _fs("capacity_tib", lambda x: x * 2)) for p in THROUGHPUT),
    *(
        FieldEdit("storage[].capacity_tib", "smaller", p, _fs("capacity_tib", lambda x: x * 2), reverse=True)
        for p in THROUGHPUT
    ),
    *(
        FieldEdit(
            "storage[].throughput_mb_s_per_tib", "another rate", p, _fs("throughput_mb_s_per_tib", lambda _, t=t: t)
        )
        for p, t in THROUGHPUT.items()
    ),
    *(FieldEdit("storage[].mount", "another path", p, _fs("mount", lambda _: "/data")) for p in THROUGHPUT),
    *(
        FieldEdit("scheduler.version", "upgrade", p, _sched("version", "1.34"), reverse=True)
        for p in ("aws-kubernetes", "gcp-kubernetes", "azure-kubernetes")
    ),
]


EFFECTS = ("refused", "replaces-data", "replaces-nodes", "rollout", "removes-nodes", "new-nodes-only", "live", "none")
_SOURCE = re.compile(r"\(([a-z0-9-]+)(?::[^()]*)?\)$")


def effect(changes: ChangeSet) -> tuple[str, list[str]]:
    """The change's effect, the most costly first (EFFECTS), and the catalog sources of the rules that decide it."""
    steps = changes.steps

    def cited(chosen: list[Any]) -> list[str]:
        return sorted({m.group(1) for s in chosen for w in s.why if (m := _SOURCE.search(w))})

    data = [s for s in steps if s.op in ("replace", "delete") and "data-loss" in s.risks]
    if data:
        return "replaces-data", cited(data)
    rolled = [s for s in steps if s.rollout]
    # a group replaced (or deleted) recreates all its nodes at once; a replaced template's nodes are its groups'
    nodes = [s for s in steps if s.op in ("replace", "delete") and "job-kill" in s.risks]
    if nodes and not changes.pools:
        return "replaces-nodes", cited(nodes)
    if rolled:
        return "rollout", cited(rolled)
    if changes.pools:
        return "removes-nodes", cited([s for s in steps if s.nodes_removed])
    drift = [s for s in steps if any("running" in w for w in s.why)]
    if drift:
        return "new-nodes-only", cited(drift)
    return ("live", []) if steps else ("none", [])


_BASES: dict[str, dict[str, Any]] = {}


def observe(edit: FieldEdit, tmp: Path) -> tuple[str, list[str], str]:
    """Preview the platform's example and the edited stack, classify, and reduce to one effect (with the rules'
    sources, and for a change `validate` refuses, its message)."""
    from aicluster.spec import SpecError
    from tests.changes.harness import base_preview

    stack = PLATFORMS[edit.platform]
    doc = copy.deepcopy(stack_doc(stack))
    edit.edit(doc["config"]["aicluster:cluster"])
    try:
        edited = preview_doc(scratch_project(tmp), stack, doc)
    except SpecError as exc:
        message = str(exc).splitlines()[0]
        return "refused", [], message.split(": ", 2)[-1][:300]
    example = base_preview(stack)
    base, head = (edited, example) if edit.reverse else (example, edited)
    found, sources = effect(classify(base, head, load_catalog().change_rules))
    return found, sources, ""


def write(path: Path) -> None:
    """Observe every edit (serially, in one process) and write the update policies."""
    import tempfile

    import yaml

    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for e in EDITS:
        with tempfile.TemporaryDirectory() as tmp:
            found, sources, note = observe(e, Path(tmp))
        entry: dict[str, Any] = {"effect": found}
        if sources:
            entry["sources"] = sources
        if note:
            entry["note"] = note
        rows.setdefault((e.field, e.change), {"field": e.field, "change": e.change, "effects": {}})["effects"][
            e.platform
        ] = entry
    header = (
        "# What changing a stack field does, per platform (the example stack each platform is tried on:\n"
        "# tests/changes/field_matrix.py), observed by previewing both stacks and classifying the steps with the\n"
        "# change rules (data/changes/): the effect, and the sources of the rules that decide it. Regenerate with\n"
        "# `python -m tests.changes.field_matrix`; tests/changes/test_update_policies.py checks it is current.\n"
        "# Effects: refused (validate refuses the change), replaces-data, replaces-nodes, rollout (running nodes\n"
        "# recreated), removes-nodes, new-nodes-only (running nodes keep the old configuration), live, none.\n"
    )
    path.write_text(header + yaml.safe_dump(list(rows.values()), sort_keys=False, width=118), encoding="utf-8")


if __name__ == "__main__":
    from aicluster.catalog import DATA_DIR

    write(DATA_DIR / "update_policies.yaml")
