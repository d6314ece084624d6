"""The rules that keep the CLI package straight (issue 26), checked by parsing its source: the host knows the
commands, the commands know a small framework, never the host.

1. Imports run one way: a command imports the framework (exits, console, options, inputs, stack_outputs,
   planned_inventory, suggest, views) and the core; never the package root, the app or another command. No cycle.
2. One command protocol: NAME, HELP, STACK, add_arguments(p), run(args); the file stem is NAME; every module in
   commands/ is in COMMANDS once, and `aicluster --help` lists them in that order.
3. A flag two commands take is declared once, in options.py.
4. Only views/ and console.py import rich.
5. No private name crosses a module boundary.
6. A command module's top level imports only the standard library and aicluster.cli; the core loads in run(); no
   module of the package loads the heavy layers (preview, report, inventory, tune, the SDKs) outside a function.
7. Only views/pool_notes.py branches on a provider.
And no file of the package is over 450 lines.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import io
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from aicluster.cli.commands import COMMANDS
from tests.conftest import ROOT

CLI = ROOT / "aicluster" / "cli"
FILES = sorted(CLI.rglob("*.py"))
COMMAND_FILES = sorted(p for p in (CLI / "commands").glob("*.py") if p.name != "__init__.py")
FRAMEWORK = ("exits", "console", "options", "inputs", "stack_outputs", "planned_inventory", "suggest", "views")
PROVIDERS = ("aws", "azure", "gcp", "onprem", "tpu")
PROVIDER_BRANCHES_ALLOWED = {CLI / "views" / "pool_notes.py"}
MAX_LINES = 450
OURS = ("aicluster", "components", "policies")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The statements that run when the module is imported: the body and what nests in its if/try/with blocks,
    leaving out functions, classes and `if TYPE_CHECKING:` blocks."""
    found: list[ast.stmt] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending += node.orelse
            continue
        found.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            for child in getattr(node, field, []):
                pending += child.body if isinstance(child, ast.ExceptHandler) else [child]
    return found


def _imports(path: Path, *, top_level_only: bool = False) -> list[tuple[str, list[str], int]]:
    """(module, names, line) for each import of the file; `from pkg import sub` names the submodule pkg.sub. With
    top_level_only, only the imports that run when the module is imported (see _module_level)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    nodes = _module_level(tree) if top_level_only else list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            names = [a.name for a in node.names]
            subs = [n for n in names if _is_module(f"{module}.{n}")]
            found += [(f"{module}.{n}", [], node.lineno) for n in subs]
            if len(subs) < len(names):
                found.append((module, [n for n in names if n not in subs], node.lineno))
    return found


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_commands_never_import_the_host_or_each_other() -> None:
    bad = []
    for path in COMMAND_FILES:
        for module, _, line in _imports(path):
            if module in ("aicluster.cli", "aicluster.cli.app") or (
                module.startswith("aicluster.cli.commands") and module != _module_name(path)
            ):
                bad.append(f"{_rel(path)}:{line} imports {module}")
            elif module.startswith("aicluster.cli.") and module.split(".")[2] not in FRAMEWORK:
                bad.append(f"{_rel(path)}:{line} imports {module}, which is not the framework")
    assert bad == []


def test_the_framework_and_views_never_import_a_command() -> None:
    bad = [
        f"{_rel(path)}:{line} imports {module}"
        for path in FILES
        if CLI / "commands" not in path.parents and path not in (CLI / "app.py", CLI / "__init__.py")
        for module, _, line in _imports(path)
        if module.startswith("aicluster.cli.commands")
    ]
    assert bad == []


def test_no_import_cycle_among_the_package_modules() -> None:
    """Module-level imports between the package's modules form no cycle (a cycle that happens not to raise today
    breaks as soon as a name moves)."""
    graph = {
        _module_name(p): {m for m, _, _ in _imports(p, top_level_only=True) if m.startswith("aicluster.cli")}
        for p in FILES
    }
    for module, deps in graph.items():  # a module imports its parent package first: not an edge of a cycle
        graph[module] = {m for m in deps if not module.startswith(m + ".") and m in graph}
    cycles = []
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                cycles.append(" -> ".join([*path[path.index(dep) :], dep]))
            elif dep not in state:
                visit(dep, [*path, dep])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_only_the_package_entry_points_import_the_app() -> None:
    entry_points = {CLI / "__init__.py", CLI / "__main__.py"}
    bad = [
        f"{_rel(path)}:{line} imports {module}"
        for path in FILES
        if path not in entry_points
        for module, _, line in _imports(path)
        if module == "aicluster.cli.app" or (module == "aicluster.cli" and path.parent == CLI)
    ]
    assert bad == []


@pytest.mark.parametrize("module", [_module_name(p) for p in FILES if p.name != "__main__.py"])
def test_each_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    """An import cycle shows as a module that cannot be imported before the others."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_every_command_module_is_listed_once_and_follows_the_protocol() -> None:
    listed = [m.__name__ for m in COMMANDS]
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(_module_name(p) for p in COMMAND_FILES)
    for command in COMMANDS:
        stem = command.__name__.rpartition(".")[2]
        assert isinstance(command.NAME, str), command.__name__
        assert stem == command.NAME.replace("-", "_"), command.__name__
        assert isinstance(command.HELP, str), command.__name__
        assert command.HELP, command.__name__
        assert isinstance(command.STACK, bool), command.__name__
        assert callable(command.add_arguments), command.__name__
        assert callable(command.run), command.__name__


def test_help_lists_the_commands_in_registry_order() -> None:
    from aicluster.cli.app import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == [c.NAME for c in COMMANDS]
    text = io.StringIO()
    with redirect_stdout(text):
        parser.print_help()
    assert "{" + ",".join(c.NAME for c in COMMANDS) + "}" in text.getvalue()


def _flags(path: Path) -> set[str]:
    """The option strings a module declares with add_argument."""
    flags = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            flags.update(a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-"))
    return flags


def test_a_flag_two_commands_take_is_declared_once_in_options() -> None:
    shared = _flags(CLI / "options.py")
    owners: dict[str, list[str]] = {}
    for path in COMMAND_FILES:
        for flag in _flags(path):
            owners.setdefault(flag, []).append(path.stem)
    assert {f: o for f, o in owners.items() if len(o) > 1} == {}
    assert {f: o for f, o in owners.items() if f in shared} == {}, "declared in options.py: use its helper"


def test_only_views_and_the_console_import_rich() -> None:
    bad = [
        f"{_rel(path)}:{line} imports {module}"
        for path in FILES
        if path != CLI / "console.py" and CLI / "views" not in path.parents
        for module, _, line in _imports(path)
        if module == "rich" or module.startswith("rich.")
    ]
    assert bad == []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def test_no_private_name_crosses_a_module_boundary() -> None:
    bad = [
        f"{_rel(path)}:{line} imports {name} from {module}"
        for path in FILES
        for module, names, line in _imports(path)
        for name in names
        if _private(name)
    ]
    for path in FILES:  # `console._WIDTH` through a module the file imported
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = {  # names the file binds to a module of ours
            (a.asname or a.name).split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for a in node.names
            if (isinstance(node, ast.Import) and a.name.split(".")[0] in OURS)
            or (isinstance(node, ast.ImportFrom) and _is_module(f"{_imports_base(path, node)}.{a.name}"))
        }
        bad += [
            f"{_rel(path)}:{node.lineno} reads {node.value.id}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and _private(node.attr)
        ]
    assert bad == []


def _imports_base(path: Path, node: ast.ImportFrom) -> str:
    """The module a `from X import ...` reads from, resolved against the file's package."""
    if not node.level:
        return node.module or ""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base


def test_a_command_loads_the_core_only_when_it_runs() -> None:
    stdlib = sys.stdlib_module_names
    bad = [
        f"{_rel(path)}:{line} imports {module} at the top"
        for path in COMMAND_FILES
        for module, _, line in _imports(path, top_level_only=True)
        if module.split(".")[0] not in stdlib and not module.startswith("aicluster.cli.")
    ]
    assert bad == []


HEAVY = (
    "aicluster.preview",
    "aicluster.report",
    "aicluster.inventory",
    "aicluster.tune",
    "aicluster.discover",
    "aicluster.render",
    "aicluster.schedulers",
    "components",
    "policies",
    "pulumi",
    "pulumi_policy",
    "grpc",
    "ansible_runner",
    "cryptography",
)


def test_no_module_of_the_package_loads_a_heavy_layer_on_import() -> None:
    """Views and the framework import plan types under TYPE_CHECKING and the heavy layers inside functions: so do
    commands (test_a_command_loads_the_core_only_when_it_runs)."""
    bad = [
        f"{_rel(path)}:{line} imports {module} at the top"
        for path in FILES
        for module, _, line in _imports(path, top_level_only=True)
        if any(module == h or module.startswith(h + ".") for h in HEAVY)
    ]
    assert bad == []


def test_building_the_parser_loads_no_engine() -> None:
    """`aicluster --help` and every command's argument parsing: no Pulumi SDK, policy engine or preview."""
    script = (
        "import sys\n"
        "from aicluster.cli.app import build_parser\n"
        "build_parser()\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _provider_branches(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in PROVIDERS:
            found.append(f"{_rel(path)}:{node.lineno} reads .{node.attr}")
        elif isinstance(node, ast.Compare):
            for value in [node.left, *node.comparators]:
                items = value.elts if isinstance(value, ast.Tuple | ast.List | ast.Set) else [value]
                for item in items:
                    if isinstance(item, ast.Constant) and item.value in PROVIDERS:
                        found.append(f"{_rel(path)}:{node.lineno} compares with {item.value!r}")
        elif (
            isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant) and node.value.value in PROVIDERS
        ):
            found.append(f"{_rel(path)}:{node.value.lineno} matches {node.value.value!r}")
    return found


def test_only_the_pool_notes_branch_on_a_provider() -> None:
    bad = [b for path in FILES if path not in PROVIDER_BRANCHES_ALLOWED for b in _provider_branches(path)]
    assert bad == []
    assert all(_provider_branches(p) for p in PROVIDER_BRANCHES_ALLOWED), "an allowance no longer needed: drop it"


def test_no_file_of_the_package_is_over_450_lines() -> None:
    long = {_rel(p): n for p in FILES if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_the_commands_package_is_the_only_registry() -> None:
    """No second way to add a command: the old aicluster/commands package and aicluster/cli.py are gone."""
    assert not list((ROOT / "aicluster" / "commands").glob("*.py"))  # a stale __pycache__ does not count
    assert not (ROOT / "aicluster" / "cli.py").exists()
    assert importlib.import_module("aicluster.cli.commands").COMMANDS is COMMANDS
