"""mypy skips the provider SDK modules this code does not use (pyproject.toml): every one it does use, and every SDK
module those import, must still be followed, or their types would silently be Any to mypy."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import re
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from mypy.config_parser import parse_config_file
from mypy.options import Options

from tests.conftest import ROOT

SDKS = ("pulumi_aws", "pulumi_azure_native", "pulumi_gcp", "pulumi_kubernetes")
# `from .. import iam as _iam`, `from ... import meta as _meta`, `from .. import _utilities, _tables`
RELATIVE = re.compile(r"^\s*from (\.+)([\w.]*) import \(?([\w,\s]+?)\)?\s*$", re.M)
ABSOLUTE = re.compile(r"^\s*import (pulumi_\w+(?:\.\w+)+)", re.M)


@cache
def options() -> Options:
    opts = Options()
    parse_config_file(opts, lambda *_: None, str(ROOT / "pyproject.toml"), io.StringIO(), io.StringIO())
    return opts


def followed(module: str) -> bool:
    return options().clone_for_module(module).follow_imports == "normal"


@cache
def sdk_root(sdk: str) -> Path:
    spec = importlib.util.find_spec(sdk)
    assert spec is not None, f"{sdk} is not installed"
    assert spec.origin is not None
    return Path(spec.origin).parent


def module_path(module: str) -> Path | None:
    """The file or package directory of an SDK module, or None when `module` is no module (a class, a function)."""
    sdk, *parts = module.split(".")
    base = sdk_root(sdk).joinpath(*parts)
    if (base / "__init__.py").exists():
        return base
    if base.with_suffix(".py").exists():
        return base.with_suffix(".py")
    return None


def checked_files() -> list[Path]:
    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    return sorted(p for f in files for p in (ROOT / f).rglob("*.py"))


def chain(node: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything else."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(names)]


def deepest_module(dotted: list[str]) -> str:
    """The longest prefix of `dotted` (an SDK name) that is a module; a name at an SDK's root (aws.Provider,
    aws.get_region) resolves to the root module that defines it."""
    sdk = dotted[0]
    module = sdk
    for part in dotted[1:]:
        if module_path(f"{module}.{part}") is None:
            if module == sdk:  # a name the root re-exports from one of its modules
                defined_in = getattr(getattr(importlib.import_module(sdk), part), "__module__", None)
                if isinstance(defined_in, str) and defined_in.startswith(f"{sdk}."):
                    return defined_in
            break
        module = f"{module}.{part}"
    return module


def sdk_uses(path: Path) -> Iterator[tuple[str, int]]:
    """The SDK modules `path` uses, each with a line that uses it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound: dict[str, list[str]] = {}  # a local name -> the SDK name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                dotted = alias.name.split(".")
                if dotted[0] in SDKS:
                    yield deepest_module(dotted), node.lineno
                    # `import a.b as x` binds x to a.b; `import a.b` binds a
                    bound[alias.asname or dotted[0]] = dotted if alias.asname else dotted[:1]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in SDKS:
            for alias in node.names:
                assert alias.name != "*", f"{path}:{node.lineno}: import the SDK names it uses, not *"
                bound[alias.asname or alias.name] = [*node.module.split("."), alias.name]
                yield deepest_module(bound[alias.asname or alias.name]), node.lineno
    for node in ast.walk(tree):
        for names in _chains(node):
            if names[0] in bound:
                yield deepest_module([*bound[names[0]], *names[1:]]), node.lineno


def _chains(node: ast.AST) -> Iterator[list[str]]:
    """The dotted names `node` stands for: itself when it is an attribute chain, and those inside a string that is
    an expression (an annotation in quotes, a `cast("aws.ec2.Vpc", ...)` type), which mypy reads as well."""
    if isinstance(node, ast.Attribute):
        names = chain(node)
        if names:
            yield names
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 500:
        try:
            parsed = ast.parse(node.value.strip(), mode="eval")
        except (SyntaxError, ValueError):  # prose, a docstring, text Python cannot encode
            return
        for inner in ast.walk(parsed):
            if isinstance(inner, ast.Attribute) and (names := chain(inner)):
                yield names


def sdk_imports(module: str) -> Iterator[str]:
    """The SDK modules that `module`'s files import (relative imports of sibling packages, absolute submodules)."""
    path = module_path(module)
    assert path is not None
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
    for file in files:
        text = file.read_text(encoding="utf-8")
        package = file.relative_to(sdk_root(module.split(".", maxsplit=1)[0]).parent).with_suffix("").parts[:-1]
        for dots, rest, names in RELATIVE.findall(text):
            base = list(package[: len(package) - (len(dots) - 1)])
            base += [p for p in rest.split(".") if p]
            for name in (n.split(" as ")[0].strip() for n in names.split(",")):
                target = ".".join([*base, name])
                yield target if module_path(target) is not None else ".".join(base)
        yield from ABSOLUTE.findall(text)


def unchecked(paths: list[Path]) -> list[str]:
    """The SDK modules that `paths` use, directly or through the SDK modules they use, and mypy skips."""
    uses: dict[str, str] = {}
    for path in paths:
        for module, line in sdk_uses(path):
            uses.setdefault(module, f"{path.name}:{line}")
    # ...and what those import, inside their SDK (pulumi_kubernetes.core.v1 -> meta.v1, _utilities); not what an SDK's
    # root imports: it names every module of the SDK for type checkers, and mypy follows those the code uses, above.
    todo = [u for u in uses if "." in u]
    seen = set(uses)
    while todo:
        importer = todo.pop()
        for imported in sdk_imports(importer):
            if imported.split(".")[0] in SDKS and imported not in seen and module_path(imported) is not None:
                seen.add(imported)
                uses[imported] = f"imported by {importer}"
                todo.append(imported)
    return sorted(f"{m} ({where})" for m, where in uses.items() if not followed(m))


def test_every_sdk_module_the_code_uses_is_type_checked() -> None:
    files = checked_files()
    assert len(files) > 100
    assert any(f.name == "gpu_pool.py" for f in files)
    skipped = unchecked(files)
    assert not skipped, (
        "mypy skips these SDK modules although the code uses them (their types would be Any): add them to the "
        f'follow_imports = "normal" list in pyproject.toml: {skipped}'
    )


def test_a_new_use_of_a_skipped_sdk_module_is_found(tmp_path: Path) -> None:
    code = tmp_path / "new.py"
    code.write_text(
        "import pulumi_aws as aws\n"
        "from pulumi_gcp.bigquery import Dataset\n"
        "import pulumi_kubernetes\n"
        "aws.sagemaker.Model('m')\n"
        "aws.get_region()\n"  # a function at the SDK's root, defined in its own module
        "pulumi_kubernetes.batch.v1.Job('j')\n"
        "aws.ec2.Vpc('v')\n"  # followed
        "def f(m: 'aws.ecs.Service', t: 'list[aws.ecr.Repository]') -> None:\n"
        "    cast('aws.lb.LoadBalancer', m)\n"
        '    """A docstring that names aws.glue.Job in prose names no module."""\n'
    )
    found = unchecked([code])
    assert {
        "pulumi_aws.get_region (new.py:5)",
        "pulumi_aws.sagemaker (new.py:4)",
        "pulumi_gcp.bigquery (new.py:2)",
        "pulumi_kubernetes.batch.v1 (new.py:6)",
        "pulumi_aws.sagemaker.outputs (imported by pulumi_aws.sagemaker)",
        "pulumi_aws.ecs (new.py:8)",  # names in quotes, which mypy reads too
        "pulumi_aws.ecr (new.py:8)",
        "pulumi_aws.lb (new.py:9)",
    } <= set(found)
    assert not [f for f in found if f.startswith("pulumi_aws.glue")]
    assert not [f for f in found if f.startswith("pulumi_aws.ec2")]


def test_the_sdk_modules_nothing_uses_are_skipped() -> None:
    # the point of the lists: mypy reads a few hundred SDK modules, not 12,000
    assert not followed("pulumi_azure_native.storage")
    assert not followed("pulumi_aws.sagemaker.model")
    assert not followed("pulumi_gcp.bigquery")
    assert not followed("pulumi_kubernetes.batch.v1")
    assert followed("pulumi_kubernetes.meta.v1._inputs")
    assert followed("pulumi_aws")
    assert followed("aicluster.plan")
