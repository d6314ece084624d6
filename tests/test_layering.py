"""The layering rules of DESIGN.md, checked by parsing imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("aicluster", "components", "policies")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    pkg = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            found.add(mod)
    return {m for m in found if m.split(".")[0] in OURS}


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def allowed(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize(
    ("folder", "may_import"),
    [
        pytest.param("aicluster/spec.py", ("aicluster.spec",), id="spec-is-a-leaf"),
        pytest.param("aicluster/catalog", ("aicluster.catalog",), id="catalog-is-a-leaf"),
        pytest.param("aicluster/stackfile.py", ("aicluster.spec",), id="stackfile-reads-files-into-the-spec"),
        pytest.param("aicluster/plan", ("aicluster.plan", "aicluster.spec", "aicluster.catalog"), id="plan"),
        pytest.param(
            "components",
            ("components", "aicluster.plan", "aicluster.render"),
            id="components-read-the-plan",
        ),
        pytest.param("policies", ("policies", "aicluster.catalog"), id="policies-only-catalog"),
        pytest.param("aicluster/report", ("aicluster.report",), id="reports-read-only-the-preview-json"),
        pytest.param("aicluster/burst", ("aicluster.burst",), id="burst-programs-are-self-contained"),
    ],
)
def test_layering(folder: str, may_import: tuple[str, ...]) -> None:
    target = ROOT / folder
    files = [target] if target.is_file() else modules(folder)
    bad = {f"{f.relative_to(ROOT)} imports {m}" for f in files for m in imports_of(f) if not allowed(m, may_import)}
    assert not bad


def test_components_never_read_pulumi_config() -> None:
    for f in modules("components"):
        assert "pulumi.Config" not in f.read_text(encoding="utf-8"), f
