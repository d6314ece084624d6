"""The offline engine's SDK loader: postponed annotations, its bytecode cache, and the fall-backs."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from aicluster.preview import sdkload

ROOT = Path(__file__).resolve().parents[1]

PROBE = textwrap.dedent(
    """
    from typing import Optional

    EVALUATED = []


    def seen(name):
        EVALUATED.append(name)
        return Optional[int]


    class Args:
        size: seen("size")

        def value(self) -> seen("value"):
            return 1
    """
)


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path, sdkload.Finder]]:
    """A package `aicl_sdkprobe_<n>` on sys.path and a finder for it, with its own cache folder; all removed
    afterwards."""
    monkeypatch.setenv("AICLUSTER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("AICLUSTER_NO_CACHE", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as by default (this environment may say otherwise)
    name = f"aicl_sdkprobe_{os.getpid()}_{len(list(tmp_path.parent.iterdir()))}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(PROBE)
    finder = sdkload.Finder([name])
    sys.path.insert(0, str(tmp_path))
    sys.meta_path.insert(0, finder)
    try:
        yield name, package, finder
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(tmp_path))
        for key in [k for k in sys.modules if k.partition(".")[0] == name]:
            del sys.modules[key]


def _cache_file(source: Path) -> Path:
    folder = sdkload._environment_folder()
    assert folder is not None
    return sdkload._cache_path(folder, str(source))


def _fresh(name: str, finder: sdkload.Finder) -> object:
    sys.modules.pop(f"{name}.mod", None)
    importlib.invalidate_caches()
    finder._folder = None  # a new process would look at the folder again
    return importlib.import_module(f"{name}.mod")


def _usual(mod: object) -> bool:
    """The module ran as usual: its annotations were evaluated when its class was defined."""
    return mod.EVALUATED == ["size", "value"]  # type: ignore[attr-defined, no-any-return]


def test_a_first_run_loads_as_usual_and_later_runs_from_the_filled_cache(
    probe: tuple[str, Path, sdkload.Finder],
) -> None:
    name, package, finder = probe
    assert _usual(_fresh(name, finder))  # nothing cached yet: Python's own loading, no compile on the way
    assert finder.missed == [str(package / "__init__.py"), str(package / "mod.py")]
    assert finder.fill() == 2
    assert _cache_file(package / "mod.py").stat().st_mode & 0o777 == 0o600
    mod = _fresh(name, finder)
    assert mod.EVALUATED == []  # type: ignore[attr-defined]  # nothing evaluated when the class was defined
    assert mod.Args.__annotations__ == {"size": "seen('size')"}  # type: ignore[attr-defined]
    import typing

    assert typing.get_type_hints(mod.Args) == {"size": int | None}  # type: ignore[attr-defined]
    assert finder.missed == []


def test_a_fill_stops_at_its_budget_and_a_later_run_goes_on(probe: tuple[str, Path, sdkload.Finder]) -> None:
    name, package, finder = probe
    _fresh(name, finder)
    assert finder.fill(budget_s=0) == 0
    assert not _cache_file(package / "mod.py").exists()
    assert _usual(_fresh(name, finder))  # missed again, so the next fill has it
    assert finder.fill() == 1  # the package's __init__ ran once, in the first run only


def test_a_changed_source_loads_as_usual_until_filled_again(probe: tuple[str, Path, sdkload.Finder]) -> None:
    name, package, finder = probe
    _fresh(name, finder)
    finder.fill()
    source = package / "mod.py"
    source.write_text(PROBE + "\nADDED = 1\n")
    os.utime(source, (1, 1))  # a different mtime and size from the cached header's
    mod = _fresh(name, finder)
    assert mod.ADDED == 1  # type: ignore[attr-defined]
    assert _usual(mod)
    assert finder.fill() == 1
    assert _fresh(name, finder).EVALUATED == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("damage", [b"", b"garbage", None])
def test_a_truncated_or_foreign_cache_file_is_ignored_and_rewritten(
    probe: tuple[str, Path, sdkload.Finder], damage: bytes | None
) -> None:
    name, package, finder = probe
    _fresh(name, finder)
    finder.fill()
    cache = _cache_file(package / "mod.py")
    good = cache.read_bytes()
    cache.write_bytes(good[: len(good) // 2] if damage is None else damage)
    assert _usual(_fresh(name, finder))
    assert finder.fill() == 1
    assert cache.read_bytes() == good


def test_an_unwritable_cache_folder_loads_the_module_as_usual(
    probe: tuple[str, Path, sdkload.Finder], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _, finder = probe
    (tmp_path / "a-file").write_text("a file where the folder would be: nothing can be written under it")
    monkeypatch.setenv("AICLUSTER_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
    assert _usual(_fresh(name, finder))
    assert finder.fill() == 0


def test_with_the_cache_turned_off_the_module_loads_as_usual(
    probe: tuple[str, Path, sdkload.Finder], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _, finder = probe
    _fresh(name, finder)
    finder.fill()  # cached while the cache was on
    monkeypatch.setenv("AICLUSTER_NO_CACHE", "1")
    assert _usual(_fresh(name, finder))
    assert finder.fill() == 0


def test_nothing_is_written_where_python_writes_no_bytecode(
    probe: tuple[str, Path, sdkload.Finder], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, package, finder = probe
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert _usual(_fresh(name, finder))
    assert finder.fill() == 0
    assert not _cache_file(package / "mod.py").exists()


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_cache_others_can_write_is_not_loaded(probe: tuple[str, Path, sdkload.Finder], where: str) -> None:
    """Loading the cache runs its code: a file or folder writable by others is never read."""
    name, package, finder = probe
    _fresh(name, finder)
    finder.fill()
    cache = _cache_file(package / "mod.py")
    (cache if where == "file" else cache.parent).chmod(0o666 if where == "file" else 0o777)
    assert _usual(_fresh(name, finder))
    if where == "folder":  # nothing is read from or written to it
        assert finder.fill() == 0
    else:  # the file is replaced by a private one
        assert finder.fill() == 1
        assert cache.stat().st_mode & 0o777 == 0o600


def test_only_the_newest_environments_are_kept(probe: tuple[str, Path, sdkload.Finder]) -> None:
    name, _, finder = probe
    current = sdkload._environment_folder()
    assert current is not None
    for i in range(6):  # other venvs' folders, older than this one
        old = current.parent / f"old{i}-{sdkload._FORMAT}"
        old.mkdir(parents=True, mode=0o700)
        (old / "x.pyc").write_bytes(b"")
        os.utime(old, (1000 + i, 1000 + i))
    earlier_format = current.parent / current.name.rsplit("-", 1)[0]  # this venv's, as an earlier version wrote it
    earlier_format.mkdir(mode=0o700)
    (earlier_format / "x.pyc").write_bytes(b"")
    _fresh(name, finder)
    finder.fill()
    kept = sorted(p.name for p in current.parent.iterdir())
    assert len(kept) == sdkload._KEEP_ENVIRONMENTS
    assert current.name in kept
    assert {f"old{i}-{sdkload._FORMAT}" for i in (5, 4, 3)} <= set(kept)
    assert not earlier_format.exists()


def test_only_the_provider_sdks_are_loaded_this_way() -> None:
    finder = sdkload.Finder(sdkload.PACKAGES)
    assert finder.find_spec("pulumi", None) is None
    assert finder.find_spec("pulumi_policy", None) is None
    assert finder.find_spec("aicluster", None) is None
    spec = finder.find_spec("pulumi_random", None)
    assert spec is not None
    assert isinstance(spec.loader, sdkload._Loader)


def test_nothing_of_ours_reads_typeddict_key_sets() -> None:
    """The one thing postponed annotations change in the SDKs: their TypedDicts' required and optional key sets
    (NotRequired[...] is a string to their metaclass). Neither pulumi's preview path nor our code reads them."""
    for folder in ("aicluster", "components", "policies"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "sdkload.py":  # its docstring names them
                continue
            text = path.read_text()
            assert "__required_keys__" not in text, path
            assert "__optional_keys__" not in text, path
    assert (ROOT / "__main__.py").read_text().count("_keys__") == 0


def test_an_sdk_resource_class_keeps_its_output_types(tmp_path: Path) -> None:
    """In fresh interpreters, the SDK loaded from the filled cache gives pulumi the same resolved output types for
    a resource as the SDK loaded as usual (what the engine translates outputs with)."""
    script = textwrap.dedent(
        """
        import sys
        from aicluster.preview import sdkload
        if sys.argv[1] != "usual":
            sdkload.install()
        import pulumi._types as t
        import pulumi_aws.ec2 as ec2
        import pulumi_gcp.compute as gce
        for cls in (ec2.LaunchTemplate, gce.InstanceTemplate):
            for name, typ in sorted(t._types_from_py_properties(cls).items()):
                print(cls.__name__, name, typ)
        print(type(ec2.LaunchTemplate.__dict__["network_interfaces"].fget.__annotations__["return"]).__name__)
        sdkload.fill(budget_s=600)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PYTHONPATH": str(ROOT), "AICLUSTER_CACHE_DIR": str(tmp_path / "cache")}
    usual, filling, postponed = (
        subprocess.run(
            [sys.executable, "-c", script, how], capture_output=True, text=True, check=True, env=env, timeout=180
        ).stdout.splitlines()
        for how in ("usual", "filling", "postponed")
    )
    assert len(usual) > 50
    assert usual == filling  # the run that fills the cache loads as usual
    assert usual[:-1] == postponed[:-1]
    assert usual[-1] != "str"
    assert postponed[-1] == "str"  # the annotations were postponed


LAZY_INIT = textwrap.dedent(
    """
    # generated: a package that only gathers its modules' names
    import typing
    from ._private import *
    from .first import *
    from .second import *
    from .get_thing import *
    from .exports_later import *
    from .later import *
    from . import extra
    if typing.TYPE_CHECKING:
        import os as __v1
        v1 = __v1
    else:
        v1 = "v1 at run time"
    """
)


def _package(package: Path, init: str = LAZY_INIT) -> None:
    (package / "__init__.py").write_text(init)
    modules = {
        "_private": "__all__ = ['Private']\nPrivate = 0\n",
        "first": "__all__ = ['Shared', 'First']\nRAN = True\nShared = 'first'\nFirst = 1\n",
        "second": "__all__ = ['Shared', 'Second']\nShared = 'second'\nSecond = 2\n",
        # a module named as the function it exports (the SDKs' get_vpc, kubernetes' Namespace)
        "get_thing": "__all__ = ['get_thing', 'get_thing_output']\ndef get_thing(): ...\ndef get_thing_output(): ...\n",
        # exports a name that a module imported after it is named: the module wins, as its import binds it
        "exports_later": "__all__ = ['later', 'early']\nlater = 'a name'\nearly = 'e'\n",
        "later": "__all__ = ['Later']\nLater = 3\n",
        "extra": "VALUE = 3\n",
    }
    for module, text in modules.items():
        (package / f"{module}.py").write_text(text)


def _fresh_package(name: str, finder: sdkload.Finder) -> object:
    for key in [k for k in sys.modules if k.partition(".")[0] == name]:
        del sys.modules[key]
    importlib.invalidate_caches()
    finder._folder = None
    return importlib.import_module(name)


def _kinds(namespace: dict[str, object]) -> dict[str, str]:
    return {n: f"{type(v).__name__} {getattr(v, '__name__', v)}" for n, v in namespace.items() if n != "__builtins__"}


def test_a_package_that_only_gathers_its_modules_names_loads_them_when_asked(
    probe: tuple[str, Path, sdkload.Finder],
) -> None:
    name, package, finder = probe
    _package(package)
    usual = _fresh_package(name, finder)
    usual_names = _kinds({n: getattr(usual, n) for n in vars(usual) if not n.startswith("_")})
    usual_star: dict[str, object] = {}
    exec(f"from {name} import *", usual_star)
    assert f"{name}.first" in sys.modules  # loaded as written, every module with it
    assert finder.fill() >= 8
    lazy = _fresh_package(name, finder)
    assert f"{name}.first" not in sys.modules
    assert f"{name}.second" not in sys.modules
    assert f"{name}.extra" in sys.modules  # its own `from . import extra` still runs with it
    assert lazy.Second == 2  # type: ignore[attr-defined]
    assert f"{name}.second" in sys.modules
    assert f"{name}.first" not in sys.modules
    assert lazy.Shared == "second"  # type: ignore[attr-defined]  # the later module's name, as with star imports
    assert lazy.first.RAN is True  # type: ignore[attr-defined]  # its modules are attributes, as when imported
    lazy.get_thing_output  # type: ignore[attr-defined]  # noqa: B018  # imports the module named get_thing first
    assert callable(lazy.get_thing)  # type: ignore[attr-defined]  # the function, not the module
    importlib.import_module(f"{name}.later")
    assert lazy.later.Later == 3  # type: ignore[attr-defined]
    assert lazy.v1 == "v1 at run time"  # type: ignore[attr-defined]
    assert lazy.Private == 0  # type: ignore[attr-defined]
    star: dict[str, object] = {}
    exec(f"from {name} import *", star)
    assert _kinds(star) == _kinds(usual_star)
    assert "v1" in star
    assert "_private" not in star
    assert set(usual_names) <= set(dir(lazy))
    assert _kinds({n: getattr(lazy, n) for n in usual_names}) == usual_names
    with pytest.raises(AttributeError, match="has no attribute 'Missing'"):
        lazy.Missing  # type: ignore[attr-defined]  # noqa: B018
    assert finder.missed == []


def test_a_module_imported_directly_leaves_the_names_the_star_imports_left(
    probe: tuple[str, Path, sdkload.Finder],
) -> None:
    name, package, finder = probe
    _package(package, LAZY_INIT.replace("from .later import *\n", "").replace("exports_later", "later_first"))
    (package / "later_first.py").write_text("__all__ = ['get_thing']\nget_thing = 'shadows the module'\n")
    usual = _fresh_package(name, finder)
    assert usual.get_thing == "shadows the module"  # type: ignore[attr-defined]
    finder.fill()
    lazy = _fresh_package(name, finder)
    assert f"{name}.later_first" not in sys.modules
    importlib.import_module(f"{name}.get_thing")  # binds the module to the package, as any import does
    assert lazy.get_thing == "shadows the module"  # type: ignore[attr-defined]


def test_a_lazy_package_loads_as_written_when_a_module_changed(probe: tuple[str, Path, sdkload.Finder]) -> None:
    name, package, finder = probe
    _package(package)
    _fresh_package(name, finder)
    finder.fill()
    (package / "second.py").write_text("__all__ = ['Shared', 'Second', 'Third']\nShared = Second = Third = 0\n")
    mod = _fresh_package(name, finder)
    assert f"{name}.first" in sys.modules  # its table of names is not current: the package ran as written
    assert mod.Third == 0  # type: ignore[attr-defined]
    assert str(package / "__init__.py") in finder.missed


@pytest.mark.parametrize(
    "init",
    [
        LAZY_INIT + "VERSION = Second\n",  # uses a name it gathered
        LAZY_INIT.replace("from .second import *", "from .second import *\nfrom .nameless import *"),
        LAZY_INIT + "Second = 5\n",
    ],
    ids=["other statements", "a module without a literal __all__", "a name bound twice"],
)
def test_a_package_that_does_more_loads_as_written(probe: tuple[str, Path, sdkload.Finder], init: str) -> None:
    name, package, finder = probe
    _package(package, init)
    (package / "nameless.py").write_text("Nameless = 1\n")
    _fresh_package(name, finder)
    finder.fill()
    _fresh_package(name, finder)
    assert f"{name}.first" in sys.modules
    assert finder.missed == []  # loaded from the cache, compiled as written


SDK_PACKAGES = (
    "pulumi_aws.ec2",
    "pulumi_azure_native.network",
    "pulumi_gcp.compute",
    "pulumi_kubernetes.core.v1",
    "pulumi_kubernetes.yaml",
)


def test_sdk_packages_offer_the_same_names_when_loaded_lazily(tmp_path: Path) -> None:
    """The generated SDK packages a preview uses, in fresh interpreters: loaded as written (nothing cached yet), then
    lazily from the filled cache. The same public names, each the same kind of object from the same module, also
    when a module named as one of its names (get_vpc, Namespace) was imported first for another of its names."""
    script = textwrap.dedent(
        """
        import importlib, sys
        from aicluster.preview import sdkload
        sdkload.install()
        first = {
            "pulumi_aws.ec2": ("get_vpc_output", "get_vpc"),
            "pulumi_azure_native.network": ("GetVirtualNetworkResult", "get_virtual_network"),
            "pulumi_gcp.compute": ("get_network_output", "get_network"),
            "pulumi_kubernetes.core.v1": ("NamespaceInitArgs", "Namespace"),
        }
        for package in PACKAGES:
            mod = importlib.import_module(package)
            mod._utilities  # runs the package (pulumi imports subpackages lazily)
            loaded = sum(1 for m in list(sys.modules) if m.startswith(package + "."))
            print(package, "modules run with the package:", "few" if loaded < 10 else "many")
            if package in first:
                asked, then = first[package]
                getattr(mod, asked)
                print(package, then, "after", asked, type(getattr(mod, then)).__name__)
            names = {}
            exec(f"from {package} import *", names)
            for name in sorted(n for n in names if n != "__builtins__"):
                value = names[name]
                print(package, name, type(value).__name__, getattr(value, "__module__", ""))
        # the packages' own code is what loads lazily; their modules may load as written (a faster fill)
        sdkload._FINDER.missed = [m for m in sdkload._FINDER.missed if m.endswith("__init__.py")]
        print("filled", sdkload.fill(budget_s=600) >= len(PACKAGES))
        """
    ).replace("PACKAGES", repr(SDK_PACKAGES))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "AICLUSTER_NO_CACHE")}
    env |= {"PYTHONPATH": str(ROOT), "AICLUSTER_CACHE_DIR": str(tmp_path / "cache")}
    usual, lazy = (
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env, timeout=300
        ).stdout.splitlines()
        for _ in range(2)
    )
    assert len(usual) > 3000
    assert usual[-1] == "filled True"
    for package in SDK_PACKAGES[:-1]:  # kubernetes.yaml has one module (and `v2`, a subpackage imported lazily)
        assert f"{package} modules run with the package: many" in usual
        assert f"{package} modules run with the package: few" in lazy
    lines = [line for line in usual if "modules run with" not in line and not line.startswith("filled")]
    assert [line for line in lazy if "modules run with" not in line and not line.startswith("filled")] == lines
    assert "pulumi_kubernetes.core.v1 Namespace after NamespaceInitArgs type" in lines
    assert "pulumi_aws.ec2 get_vpc after get_vpc_output function" in lines
    assert any(line.startswith("pulumi_kubernetes.yaml v2 ") for line in lines)
