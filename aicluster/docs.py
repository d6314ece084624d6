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
    return "\n".join(lines)


if __name__ == "__main__":
    print(reference(), end="")
