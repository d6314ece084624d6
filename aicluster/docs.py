"""Generate the stack-file reference (docs/spec-reference.md) from the published JSON schema.

`python -m aicluster.docs > docs/spec-reference.md`. Defaults and allowed values come from the
schema itself, never from prose, so the reference cannot drift from the code (a test checks it is
current).
"""

from __future__ import annotations

import json
from typing import Any

from .spec import json_schema


def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "const" in prop:
        return f"`{prop['const']}`"
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    if "anyOf" in prop:
        parts = [_type(p) for p in prop["anyOf"] if p.get("type") != "null"]
        opt = any(p.get("type") == "null" for p in prop["anyOf"])
        return " \\| ".join(parts) + (" (optional)" if opt else "")
    if "oneOf" in prop:
        return " \\| ".join(_type(p) for p in prop["oneOf"])
    t = prop.get("type", "any")
    if t == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if t == "object":
        extra = prop.get("additionalProperties")
        return f"map of string to {_type(extra)}" if isinstance(extra, dict) else "mapping"
    return str(t)


def _constraints(prop: dict[str, Any]) -> str:
    keys = {
        "minimum": ">=",
        "exclusiveMinimum": ">",
        "maximum": "<=",
        "maxLength": "max length",
        "minLength": "min length",
        "minItems": "min items",
        "pattern": "pattern",
    }
    out = []
    for key, label in keys.items():
        if key in prop:
            value = prop[key]
            out.append(f"{label} `{value}`")
    return ", ".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reference() -> str:
    schema = json_schema()
    defs: dict[str, Any] = schema.get("$defs", {})
    lines = [
        "# Stack file reference: `aicluster:cluster`",
        "",
        "Generated from `schema/cluster.schema.json` by `make schema`; do not edit by hand.",
        "Every mapping is strict: unknown keys are rejected with a did-you-mean.",
        "Stack files are read as YAML 1.2, as the Pulumi CLI reads them, not as YAML 1.1: a plain value that YAML",
        "1.1 reads otherwise (`1:30`, `yes`/`no`/`on`/`off`, `0777`, `0o17`, `0b101`, `1_000`) is refused; write the",
        'number in plain decimal (`90`), `true`/`false`, or quote the text (`"1:30"`).',
        "",
    ]
    sections = [("ClusterSpec", schema), *sorted(defs.items())]
    for name, model in sections:
        lines += [f"## {name}", "", _cell(model.get("description", "")).strip(), ""]
        lines += ["| field | type | default | description |", "|---|---|---|---|"]
        required = set(model.get("required", []))
        for field, prop in model.get("properties", {}).items():
            default = "required" if field in required else f"`{json.dumps(prop.get('default'))}`"
            desc = _cell(prop.get("description", ""))
            cons = _constraints(prop)
            if cons:
                desc = f"{desc} ({_cell(cons)})" if desc else _cell(cons)
            lines.append(f"| `{field}` | {_type(prop)} | {default} | {desc} |")
        lines.append("")
    lines += update_policies()
    return "\n".join(lines)


EFFECT_WORDS = {
    "refused": "refused",
    "replaces-data": "**replaces: data lost**",
    "replaces-nodes": "**replaces the nodes**",
    "rollout": "**rolls the nodes**",
    "removes-nodes": "removes nodes",
    "new-nodes-only": "new nodes only",
    "live": "applied live",
    "none": "no resource change",
}


def update_policies() -> list[str]:
    """What changing a field does, per platform (the catalog's update policies, observed with its change rules)."""
    from .catalog import load_catalog

    policies = load_catalog().update_policies
    platforms = {
        "aws-slurm": "AWS Slurm",
        "azure-slurm": "Azure Slurm",
        "gcp-slurm": "GCP Slurm",
        "aws-kubernetes": "EKS",
        "gcp-kubernetes": "GKE",
        "azure-kubernetes": "AKS",
        "onprem-slurm": "on-prem Slurm",
    }
    lines = [
        "## Update policies",
        "",
        "What changing a field does to a deployed cluster, per platform, as `aicluster diff` and `aicluster preview "
        "--base` classify it (aicluster/catalog/data/update_policies.yaml, observed on the example stacks of "
        "tests/changes/field_matrix.py with the change rules of aicluster/catalog/data/changes/; each cell there "
        "records the example and the exact change tried, and the sources of the rules that decide it; every pool, "
        "storage and scheduler field has a row). *refused*: `validate` refuses the edited stack, or the cloud's "
        "API refuses an update the provider previews, so `pulumi up` fails (the YAML says why). *applied live*: "
        "updated in place, nothing recreated; *new nodes only*: nodes started later get it, running ones keep the old "
        "configuration; *removes nodes*: the jobs on them are killed; *rolls the nodes*: running nodes are "
        "recreated by the platform's rolling update; *replaces the nodes*: the group is deleted and created again; "
        "*replaces: data lost*: a file system is replaced (`preview --base` fails unless a waiver names it); "
        "*no resource change*: Pulumi manages no resource for it (on-prem nodes: the inventory and `tune` apply "
        "it). `aicluster validate STACK --base BASE` names these for the fields a change touches.",
        "",
        "| field | change | " + " | ".join(platforms.values()) + " |",
        "|---|---|" + "---|" * len(platforms),
    ]
    for p in policies:
        cells = []
        for platform in platforms:
            eff = p.effects.get(platform)
            cells.append(EFFECT_WORDS[eff.effect] if eff else "")
        lines.append(f"| `{p.field}` | {_cell(p.change)} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


if __name__ == "__main__":
    print(reference(), end="")
