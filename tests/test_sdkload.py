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
    folder = sdkload._folder()
    assert folder is not None
    return sdkload._cache_path(folder, str(source))


def _fresh(name: str) -> object:
    sys.modules.pop(f"{name}.mod", None)
    importlib.invalidate_caches()
    return importlib.import_module(f"{name}.mod")


def test_annotations_are_postponed_and_resolve_to_the_same_types(probe: tuple[str, Path, sdkload.Finder]) -> None:
    name, package, _ = probe
    mod = _fresh(name)
    assert mod.EVALUATED == []  # type: ignore[attr-defined]  # nothing evaluated when the class was defined
    assert mod.Args.__annotations__ == {"size": "seen('size')"}  # type: ignore[attr-defined]
    import typing

    assert typing.get_type_hints(mod.Args) == {"size": int | None}  # type: ignore[attr-defined]
    assert _cache_file(package / "mod.py").is_file()
    assert _cache_file(package / "mod.py").stat().st_mode & 0o777 == 0o600


def test_a_changed_source_is_compiled_again(probe: tuple[str, Path, sdkload.Finder]) -> None:
    name, package, _ = probe
    _fresh(name)
    source = package / "mod.py"
    source.write_text(PROBE + "\nADDED = 1\n")
    os.utime(source, (1, 1))  # a different mtime and size from the cached header's
    assert _fresh(name).ADDED == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("damage", [b"", b"garbage", None])
def test_a_truncated_or_foreign_cache_file_is_ignored_and_rewritten(
    probe: tuple[str, Path, sdkload.Finder], damage: bytes | None
) -> None:
    name, package, _ = probe
    _fresh(name)
    cache = _cache_file(package / "mod.py")
    good = cache.read_bytes()
    cache.write_bytes(good[: len(good) // 2] if damage is None else damage)
    assert _fresh(name).EVALUATED == []  # type: ignore[attr-defined]
    assert cache.read_bytes() == good


def test_an_unwritable_cache_folder_loads_the_module_as_usual(
    probe: tuple[str, Path, sdkload.Finder], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _, _ = probe
    (tmp_path / "a-file").write_text("a file where the folder would be: nothing can be written under it")
    monkeypatch.setenv("AICLUSTER_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
    assert _fresh(name).EVALUATED == ["size", "value"]  # type: ignore[attr-defined]


def test_with_the_cache_turned_off_the_module_loads_as_usual(
    probe: tuple[str, Path, sdkload.Finder], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _, _ = probe
    _fresh(name)  # cached while the cache was on
    monkeypatch.setenv("AICLUSTER_NO_CACHE", "1")
    assert _fresh(name).EVALUATED == ["size", "value"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_cache_others_can_write_is_not_loaded(probe: tuple[str, Path, sdkload.Finder], where: str) -> None:
    """Loading the cache runs its code: a file or folder writable by others is never read."""
    name, package, _ = probe
    _fresh(name)
    cache = _cache_file(package / "mod.py")
    (cache if where == "file" else cache.parent).chmod(0o666 if where == "file" else 0o777)
    evaluated = _fresh(name).EVALUATED  # type: ignore[attr-defined]
    if where == "folder":  # nothing is read from or written to it: the module loads as usual
        assert evaluated == ["size", "value"]
    else:  # the file is ignored, compiled again and replaced by a private one
        assert evaluated == []
        assert cache.stat().st_mode & 0o777 == 0o600


def test_only_the_provider_sdks_are_loaded_this_way() -> None:
    finder = sdkload.Finder(sdkload.PACKAGES)
    assert finder.find_spec("pulumi", None) is None
    assert finder.find_spec("pulumi_policy", None) is None
    assert finder.find_spec("aicluster", None) is None
    spec = finder.find_spec("pulumi_random", None)
    assert spec is not None
    assert spec.loader is not None


def test_an_sdk_resource_class_keeps_its_output_types() -> None:
    """In a fresh interpreter, the SDK loaded with postponed annotations gives pulumi the same resolved output
    types for a resource as the SDK loaded as usual (what the engine translates outputs with)."""
    script = textwrap.dedent(
        """
        import sys
        from aicluster.preview import sdkload
        if sys.argv[1] == "postponed":
            sdkload.install()
        import pulumi._types as t
        import pulumi_aws.ec2 as ec2
        import pulumi_gcp.compute as gce
        for cls in (ec2.LaunchTemplate, gce.InstanceTemplate):
            for name, typ in sorted(t._types_from_py_properties(cls).items()):
                print(cls.__name__, name, typ)
        print(type(ec2.LaunchTemplate.__dict__["network_interfaces"].fget.__annotations__["return"]).__name__)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    usual, postponed = (
        subprocess.run(
            [sys.executable, "-c", script, how], capture_output=True, text=True, check=True, env=env, timeout=120
        ).stdout.splitlines()
        for how in ("usual", "postponed")
    )
    assert len(usual) > 50
    assert usual[:-1] == postponed[:-1]
    assert (usual[-1], postponed[-1]) != ("str", "str")  # the postponed one did load as strings
    assert postponed[-1] == "str"
