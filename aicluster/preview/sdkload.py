"""Load the Pulumi provider SDKs with postponed annotations (PEP 563) for the offline preview.

A provider SDK module is mostly classes whose every property carries a type annotation such as
`Optional[pulumi.Input[Sequence[pulumi.Input['LaunchTemplateNetworkInterfaceArgs']]]]`. Python evaluates each
of them when the class is defined, and building those `typing` objects is about half the time it takes to
import a module such as pulumi_aws.ec2, pulumi_gcp.compute or pulumi_azure_native.network (the largest part
of a cold preview after the imports of our own code). Pulumi reads the annotations only through
`typing.get_type_hints` (pulumi/_types.py), which resolves strings to the same types: for every class the
SDKs define, its resource, input and output types, return hints, required properties and enum members come out
identical either way. Compiled as if each module began with `from __future__ import annotations`, the SDK
defines the same classes, properties, names and enums, and the annotations are resolved only for the few types
a preview uses. One difference: the SDKs' `...ArgsDict` TypedDicts, whose `NotRequired[...]` is then a string
their metaclass cannot see, list every key in `__required_keys__`; nothing in Pulumi's preview path or in
this project reads those (tests/test_sdkload.py checks our code). tests/test_preview_golden.py holds the
preview JSON of every example stack byte-identical.

The SDKs' generated packages (pulumi_aws.ec2, pulumi_azure_native.network, pulumi_gcp.compute, ...) do nothing but
import every one of their modules' names (`from .vpc import *`, hundreds of lines); a stack uses a few of them.
Where a package's `__init__` is exactly that (its other imports, a docstring, an `if typing.TYPE_CHECKING:` block)
and each module declares its names in one literal `__all__`, its cached code keeps the other imports and gives
the package a module `__getattr__` that imports the module defining a name when the name is first asked for, an
`__all__` and a `__dir__` with every name: the names, the objects and `from package import *` are the same
(tests/test_sdkload.py compares them for the SDK packages our components use), and only the modules a stack
uses run (an Azure example preview ran 565 SDK modules, now 37). The cached package holds its modules' sizes and
modification times, and runs as written when one of them changed.

The cache: one file per SDK module, under the per-user cache folder (aicluster/catalog/cache.py:
AICLUSTER_CACHE_DIR, else $XDG_CACHE_HOME/aicluster or ~/.cache/aicluster; AICLUSTER_NO_CACHE=1 turns it off),
in a subfolder per Python environment (the newest few are kept), with the header Python gives its own bytecode
(magic number, source mtime and size). A file is used only while that header matches the source, and only from
a folder and file owned by the user and not writable by others, as the catalog's cache is: loading it runs its
code. A module without a current copy loads as usual, from Python's own bytecode, and is noted; `fill()`
compiles noted modules after a command has written all its output (aicluster.cli.app.entry), for at most
FILL_BUDGET_S seconds a run: a run without the cache is never slower to show its output, and exits at most that
much later, until the cache holds what the stack uses. Nothing is written where Python writes no bytecode
(PYTHONDONTWRITEBYTECODE, -B) or the folder cannot be made private. Only the offline engine installs this:
`pulumi up` runs the program under the Pulumi CLI's language host, which loads the SDKs as usual.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import hashlib
import importlib.machinery
import importlib.util
import marshal
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from aicluster.catalog import cache

# The provider SDKs (generated code); never pulumi itself, pulumi_policy or our own code.
PACKAGES = ("pulumi_aws", "pulumi_azure_native", "pulumi_gcp", "pulumi_kubernetes", "pulumi_random")
_FLAGS = __future__.annotations.compiler_flag
_KEEP_ENVIRONMENTS = 4  # subfolders of Python environments kept; older ones are removed when one is filled
# Seconds one command may spend after its output compiling what it missed: a stack's SDK modules take 1.5-6.5 s
# to compile, so the first few previews on a machine fill the cache a part each, and none waits long.
FILL_BUDGET_S = 0.5
# What the cached files hold (2: packages compiled lazily); a folder of another format is never read, and pruned.
_FORMAT = "2"


def _environment_folder() -> Path | None:
    """This Python environment's subfolder of the cache (not created here); None: the cache is off."""
    root = cache.cache_dir()
    if root is None:
        return None
    env = hashlib.sha256(os.fsencode(os.path.realpath(sys.prefix))).hexdigest()[:16]
    return root / f"sdk-{sys.implementation.cache_tag}-pep563" / f"{env}-{_FORMAT}"


def _cache_path(folder: Path, source: str) -> Path:
    return folder / f"{hashlib.sha256(os.fsencode(os.path.realpath(source))).hexdigest()[:32]}.pyc"


def _header(source: str) -> bytes:
    st = os.stat(source)
    return (
        importlib.util.MAGIC_NUMBER
        + (0).to_bytes(4, "little")  # flags: a timestamp-based pyc, as PEP 552 defines
        + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    )


def _private_folder(folder: Path) -> bool:
    try:
        return cache.private(os.stat(folder), want_dir=True)
    except OSError:
        return False


def _cached(folder: Path, source: str) -> CodeType | None:
    """The code compiled with postponed annotations for `source`, when a current, private one is cached."""
    try:
        header = _header(source)
        fd = os.open(_cache_path(folder, source), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            if not cache.private(os.fstat(fh.fileno()), want_dir=False):
                return None
            data = fh.read()
    except OSError:
        return None
    if data[: len(header)] != header:
        return None
    try:
        code = marshal.loads(data[len(header) :])
    except (EOFError, ValueError, TypeError):  # a truncated or foreign file: compiled again by fill()
        return None
    if isinstance(code, tuple) and len(code) == 2:  # a lazy package: its code holds its submodules' names
        stamps, code = code
        if not _current(Path(source).parent, stamps):
            return None
    return code if isinstance(code, CodeType) else None


def _stamp(path: Path) -> tuple[str, int, int]:
    st = os.stat(path)
    return (path.name, int(st.st_mtime), st.st_size)


def _current(folder: Path, stamps: Any) -> bool:
    """Whether the submodules a lazy package's table was read from are as they were (name, mtime, size)."""
    try:
        return all(_stamp(folder / name) == (name, mtime, size) for name, mtime, size in stamps)
    except (OSError, TypeError, ValueError):
        return False


def _static_all(path: Path) -> list[str] | None:
    """A module's `__all__` where it is one top-level assignment of a literal list or tuple of strings (the
    generated layout), else None. Only that statement is parsed: a resource module is thousands of lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = _ALL.search(text)
    if found is None or text.count("__all__") != 1:  # added to, or bound elsewhere: not known without running it
        return None
    try:
        tree = ast.parse(text[found.start() : text.index("]", found.end()) + 1])
    except (SyntaxError, ValueError):
        return None
    node = tree.body[0] if len(tree.body) == 1 else None
    if (
        isinstance(node, ast.Assign)
        and isinstance(node.value, (ast.List, ast.Tuple))
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts)
    ):
        return [e.value for e in node.value.elts]  # type: ignore[attr-defined]
    return None


_ALL = re.compile(r"^__all__ = \[", re.MULTILINE)


def _bound_names(node: ast.stmt, in_else: bool = False) -> list[str] | None:
    """The names a statement the package keeps binds when it runs; None where the package cannot be lazy: a
    statement other than imports, a docstring and an `if typing.TYPE_CHECKING:` block whose `else:` only imports
    or assigns names (the generated `v1 = _utilities.lazy_import(...)`)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).partition(".")[0] for a in node.names]
    if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) or isinstance(node, ast.Pass):
        return []
    if in_else and isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        return [t.id for t in node.targets]  # type: ignore[attr-defined]
    if not in_else and isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING":
        names: list[str] = []  # only the `else:` runs
        for stmt in node.orelse:
            bound = _bound_names(stmt, in_else=True)
            if bound is None:
                return None
            names += bound
        return names
    return None


def _reads(node: ast.stmt) -> set[str]:
    """The global names a kept statement reads when it runs."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


# The lazy package's own machinery, run before the statements it keeps. `_aicluster_final` maps each name the star
# imports bound, in order, to what was left under it: (module, None) for a module (the import system binds a module
# it imports to its parent), (module, name) for a name one of them exported. The import system binds a module to the
# package when anything imports it; the package's class rebinds that name to what the star imports left there (the
# generated `get_vpc` module exports the function `get_vpc`, which replaced the module as soon as it was imported).
_LAZY_MACHINERY = """
import importlib as _aicluster_importlib
import sys as _aicluster_sys
import types as _aicluster_types


class _AiclusterNoModule:  # a module has no __module__; its class's would show through
    def __get__(self, obj, owner=None):
        raise AttributeError("__module__")

    def __set__(self, obj, value):
        raise AttributeError("__module__")


class _AiclusterLazyPackage(_aicluster_types.ModuleType):
    __module__ = _AiclusterNoModule()

    def __setattr__(self, name, value):
        target = _aicluster_final.get(name)
        if (
            target is not None
            and isinstance(value, _aicluster_types.ModuleType)
            and value.__name__ == __name__ + "." + name
            and target != (name, None)
        ):
            if target[0] != name:
                self.__dict__.pop(name, None)  # left to another module's name: __getattr__ finds it
                return
            value = getattr(value, target[1])
        super().__setattr__(name, value)


def __getattr__(name):
    target = _aicluster_final.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _aicluster_importlib.import_module(__name__ + "." + target[0])
    value = module if target[1] is None else getattr(module, target[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_aicluster_final})


_aicluster_sys.modules[__name__].__class__ = _AiclusterLazyPackage
"""


def _lazy_package(source: str, text: bytes) -> tuple[tuple[tuple[str, int, int], ...], CodeType] | None:
    """The code of an SDK package whose `__init__` only imports its modules' names (`from .m import *`, the
    generated layout): the statements it keeps (its other imports, its docstring, its `if typing.TYPE_CHECKING:`
    block) and a module `__getattr__` that imports a module of the package when one of its names is first asked
    for, as if it had been imported with the package, with `__all__` the names a star import of that package took.
    A preview uses a few of each package's resources (pulumi_azure_native.network has 287 modules; an Azure stack
    uses 5). None where the package does anything else, a module's names are not a literal `__all__`, or a name
    is also bound otherwise: such a package loads as written."""
    try:
        tree = ast.parse(text, source)
    except (SyntaxError, ValueError):
        return None
    folder = Path(source).parent
    kept: list[ast.stmt] = []
    bound: list[str] = []
    final: dict[str, tuple[str, str | None]] = {}
    stamps: list[tuple[str, int, int]] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and [a.name for a in node.names] == ["*"]:
            module = node.module or ""
            path = folder / f"{module}.py"
            names = _static_all(path) if module.isidentifier() and path.is_file() else None
            if names is None:
                return None
            final[module] = (module, None)  # the import binds the module, then its names
            final.update((name, (module, name)) for name in names)
            try:
                stamps.append(_stamp(path))
            except OSError:
                return None
        else:
            names = _bound_names(node)
            if names is None:
                return None
            kept.append(node)
            bound += names
    # A name the star imports bound is not a global of the lazy package until asked for: its own statements may
    # neither rebind one nor read one.
    if not final or (set(bound) | {name for node in kept for name in _reads(node)}) & final.keys():
        return None
    public = [name for name in dict.fromkeys([*bound, *final]) if not name.startswith("_")]
    table = f"_aicluster_final = {final!r}\n__all__ = {public!r}\n"
    program = table + _LAZY_MACHINERY + "\n".join(ast.unparse(node) for node in kept) + "\n"
    code = compile(program, source, "exec", flags=_FLAGS, dont_inherit=True)
    return tuple(stamps), code


def _write(folder: Path, source: str) -> bool:
    """Compile `source` with postponed annotations into the cache; False where it cannot be."""
    try:
        header = _header(source)
        with open(source, "rb") as fh:
            text = fh.read()
        lazy = _lazy_package(source, text) if os.path.basename(source) == "__init__.py" else None
        payload = marshal.dumps(
            lazy if lazy is not None else compile(text, source, "exec", flags=_FLAGS, dont_inherit=True)
        )
        fd, partial = tempfile.mkstemp(prefix=".tmp-", suffix=".pyc", dir=folder)  # mode 0600
    except (OSError, SyntaxError, ValueError):
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(header + payload)
        os.replace(partial, _cache_path(folder, source))  # atomic: a reader sees the whole file or none
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        return False
    except BaseException:  # interrupted: leave no partial file behind
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return True


class _Loader(importlib.machinery.SourceFileLoader):
    """Runs a module from the cache when it holds a current copy, else as the path finder's loader would."""

    def __init__(self, fullname: str, path: str, finder: Finder) -> None:
        super().__init__(fullname, path)
        self._finder = finder

    def get_code(self, fullname: str) -> CodeType | None:
        folder, readable = self._finder.folder()
        if folder is not None:
            code = _cached(folder, self.path) if readable else None
            if code is not None:
                return code
            self._finder.missed.append(self.path)
        return super().get_code(fullname)


class Finder(MetaPathFinder):
    """Finds the modules of `packages` as the path finder does; they load from the postponed-annotation cache
    when it has them (looked up when a module runs, not when it is found: the SDKs find every submodule of a
    package for their lazy imports, and most never run)."""

    def __init__(self, packages: Sequence[str]) -> None:
        self.packages = frozenset(packages)
        self.missed: list[str] = []
        self._folder: tuple[Path | None, bool] | None = None  # None: not looked at yet

    def folder(self) -> tuple[Path | None, bool]:
        """This environment's cache folder (None: the cache is off) and whether it can be read (it exists and
        is private); looked at once per process."""
        if self._folder is None:
            found = _environment_folder()
            self._folder = (found, found is not None and _private_folder(found))
        return self._folder

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] not in self.packages:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader or not spec.origin:
            return spec
        spec.loader = _Loader(fullname, spec.origin, self)
        return spec

    def fill(self, budget_s: float = FILL_BUDGET_S) -> int:
        """Compile the modules that ran without a current cached copy, in the order they ran, until `budget_s`
        seconds are spent; how many were written (the rest are compiled by later runs). Nothing is written where
        Python writes no bytecode or the folder cannot be made private."""
        missed, self.missed = self.missed, []
        target = _environment_folder()
        if not missed or target is None or sys.dont_write_bytecode:
            return 0
        try:
            target.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            return 0
        if not _private_folder(target) or not _private_folder(target.parent):
            return 0
        deadline = time.perf_counter() + budget_s
        written = 0
        for source in dict.fromkeys(missed):
            if time.perf_counter() >= deadline:
                break
            written += _write(target, source)
        _prune(target)
        self._folder = None  # look again: it exists now
        return written


def _prune(keep: Path) -> None:
    """Remove all but the newest few environments' subfolders (other venvs, older checkouts); errors are ignored."""
    with contextlib.suppress(OSError):
        os.utime(keep)
        folders = sorted(
            (p for p in keep.parent.iterdir() if p.is_dir() and not p.is_symlink()),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        current = [p for p in folders if p.name.endswith(f"-{_FORMAT}")]
        for old in [*(p for p in folders if p not in current), *current[_KEEP_ENVIRONMENTS:]]:
            if old != keep:
                for f in old.iterdir():
                    with contextlib.suppress(OSError):
                        f.unlink()
                with contextlib.suppress(OSError):
                    old.rmdir()


_FINDER = Finder(PACKAGES)


def install() -> None:
    """Load the provider SDKs' modules not yet imported with postponed annotations (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def fill(budget_s: float = FILL_BUDGET_S) -> int:
    """Cache the SDK modules this process loaded without a cached copy (after a command's output is complete)."""
    return _FINDER.fill(budget_s)
