"""The on-disk catalog cache: same catalog, invalidated by any data edit, never trusted when it is not private."""

from __future__ import annotations

import os
import pickle
import shutil
import stat
import tempfile
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

import aicluster.catalog as catalog_pkg
from aicluster.catalog import DATA_DIR, Catalog
from aicluster.catalog import cache as catalog_cache

# load_catalog without its in-process cache (functools.cache), so every call goes to the disk cache or the files
load = catalog_pkg.load_catalog.__wrapped__
parse = catalog_pkg._load


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("AICLUSTER_CACHE_DIR", str(folder))
    monkeypatch.delenv("AICLUSTER_NO_CACHE", raising=False)
    return folder


@pytest.fixture
def fresh() -> Catalog:
    """The catalog parsed from the files, no cache involved."""
    return parse(DATA_DIR)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Records every data directory parsed from its files (a cache hit parses none)."""
    calls: list[Path] = []

    def counting(data_dir: Path) -> Catalog:
        calls.append(data_dir)
        return parse(data_dir)

    monkeypatch.setattr(catalog_pkg, "_load", counting)
    return calls


def _cache_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("catalog-*.pickle"))


def test_cached_catalog_equals_the_freshly_loaded_one(cache_dir: Path, fresh: Catalog, parses: list[Path]) -> None:
    first = load(DATA_DIR)
    assert parses == [DATA_DIR]
    (written,) = _cache_files(cache_dir)
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    second = load(DATA_DIR)
    assert parses == [DATA_DIR], "the second load must come from the cache"
    assert second == first == fresh
    assert second is not first
    # the records are the catalog's own frozen models, with their lookups working
    it = second.instance_type("aws", "p5.48xlarge")
    assert it is not None
    assert it == fresh.instance_type("aws", "p5.48xlarge")
    assert second.cite(it, "vcpus") == fresh.cite(it, "vcpus")


def test_editing_any_data_file_invalidates_the_cache(
    cache_dir: Path, tmp_path: Path, parses: list[Path], fresh: Catalog
) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    assert load(data) == fresh
    assert load(data) == fresh
    assert parses == [data]
    common = data / "sources" / "common.yaml"
    text = common.read_text(encoding="utf-8")
    assert "retrieved: 2026-11-21" in text
    common.write_text(text.replace("retrieved: 2026-11-21", "retrieved: 2026-11-20", 1), encoding="utf-8")
    edited = load(data)
    assert parses == [data, data]
    assert edited.sources["aws-ec2-pricing-730h"].retrieved.isoformat() == "2026-11-20"
    assert len(_cache_files(cache_dir)) == 2
    assert load(data) == edited
    assert parses == [data, data]
    # a new file, even one the loader does not read, changes the key too: every file is hashed
    key = catalog_cache.catalog_key(data)
    (data / "NOTES.txt").write_text("x", encoding="utf-8")
    assert catalog_cache.catalog_key(data) != key


def test_a_change_to_the_catalog_code_changes_the_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key = catalog_cache.catalog_key(DATA_DIR)
    code = tmp_path / "code"
    shutil.copytree(Path(catalog_cache.__file__).parent, code, ignore=shutil.ignore_patterns("data", "__pycache__"))
    monkeypatch.setattr(catalog_cache, "_PACKAGE", code)
    assert catalog_cache.catalog_key(DATA_DIR) == key
    models = code / "models.py"
    models.write_text(models.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    assert catalog_cache.catalog_key(DATA_DIR) != key


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "other-key", "wrong-type"])
def test_a_corrupt_or_truncated_cache_file_is_ignored_and_rewritten(
    cache_dir: Path, fresh: Catalog, parses: list[Path], damage: str
) -> None:
    load(DATA_DIR)
    (path,) = _cache_files(cache_dir)
    blob = path.read_bytes()
    header_end = blob.index(b"\n", len(catalog_cache._FORMAT)) + 1
    damaged = {
        "garbage": blob[:header_end] + b"\x80\x05not a pickle at all",
        "truncated": blob[: len(blob) // 2],
        "empty": b"",
        "other-key": catalog_cache._FORMAT + b"0" * 64 + b"\n" + blob[header_end:],
        "wrong-type": blob[:header_end] + pickle.dumps({"not": "a catalog"}),
    }[damage]
    path.write_bytes(damaged)
    assert load(DATA_DIR) == fresh
    assert parses == [DATA_DIR, DATA_DIR]
    assert path.read_bytes() == blob, "the next good load rewrites the file"
    assert load(DATA_DIR) == fresh
    assert parses == [DATA_DIR, DATA_DIR]


class _RunsCode:
    ran: ClassVar[list[str]] = []

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (_RunsCode.ran.append, ("unpickled",))


def test_a_cache_file_naming_other_callables_is_not_unpickled(
    cache_dir: Path, fresh: Catalog, parses: list[Path]
) -> None:
    load(DATA_DIR)
    (path,) = _cache_files(cache_dir)
    blob = path.read_bytes()
    header_end = blob.index(b"\n", len(catalog_cache._FORMAT)) + 1
    path.write_bytes(blob[:header_end] + pickle.dumps(_RunsCode()))
    assert load(DATA_DIR) == fresh
    assert _RunsCode.ran == []
    assert parses == [DATA_DIR, DATA_DIR]


def test_a_group_or_world_writable_cache_file_or_dir_is_ignored(
    cache_dir: Path, fresh: Catalog, parses: list[Path]
) -> None:
    load(DATA_DIR)
    (path,) = _cache_files(cache_dir)
    path.chmod(0o666)
    assert load(DATA_DIR) == fresh
    assert len(parses) == 2, "a world-writable file is not read"
    path.chmod(0o600)
    load(DATA_DIR)
    assert len(parses) == 2
    cache_dir.chmod(0o770)
    assert load(DATA_DIR) == fresh
    assert len(parses) == 3, "a group-writable directory is not read"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    cache_dir.chmod(0o700)


def test_a_cache_file_owned_by_someone_else_is_ignored(
    cache_dir: Path, fresh: Catalog, parses: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    load(DATA_DIR)
    load(DATA_DIR)
    assert len(parses) == 1
    # the files are ours; seen by another user they are foreign-owned
    someone_else = os.getuid() + 1
    monkeypatch.setattr(os, "getuid", lambda: someone_else)
    assert load(DATA_DIR) == fresh
    assert len(parses) == 2


def test_a_link_in_place_of_the_cache_file_is_not_followed(
    cache_dir: Path, tmp_path: Path, fresh: Catalog, parses: list[Path]
) -> None:
    load(DATA_DIR)
    (path,) = _cache_files(cache_dir)
    elsewhere = tmp_path / "elsewhere.pickle"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    assert load(DATA_DIR) == fresh
    assert len(parses) == 2
    assert not path.is_symlink(), "the link is replaced by a file of ours"


@pytest.mark.parametrize("value", ["1", "yes", "true"])
def test_aicluster_no_cache_turns_it_off(
    cache_dir: Path, fresh: Catalog, parses: list[Path], monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AICLUSTER_NO_CACHE", value)
    assert load(DATA_DIR) == fresh
    assert load(DATA_DIR) == fresh
    assert len(parses) == 2
    assert not cache_dir.exists()


def test_nothing_is_written_where_the_cache_dir_cannot_be_written(
    cache_dir: Path, fresh: Catalog, parses: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir.mkdir(mode=0o500)
    if os.access(cache_dir, os.W_OK):  # root ignores the mode: make the writes fail as a read-only mount would

        def read_only(*args: object, **kwargs: object) -> None:
            raise OSError(30, "Read-only file system")

        monkeypatch.setattr(tempfile, "mkstemp", read_only)
    assert load(DATA_DIR) == fresh
    assert load(DATA_DIR) == fresh
    assert len(parses) == 2
    assert list(cache_dir.iterdir()) == []


def test_a_cache_dir_under_a_file_is_no_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: Catalog, parses: list[Path]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("AICLUSTER_CACHE_DIR", str(blocker / "cache"))
    assert load(DATA_DIR) == fresh
    assert len(parses) == 1


def test_the_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AICLUSTER_NO_CACHE", raising=False)
    monkeypatch.delenv("AICLUSTER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert catalog_cache.cache_dir() == tmp_path / "xdg" / "aicluster"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert catalog_cache.cache_dir() == tmp_path / "home" / ".cache" / "aicluster"
    monkeypatch.setenv("AICLUSTER_CACHE_DIR", str(tmp_path / "mine"))
    assert catalog_cache.cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("AICLUSTER_NO_CACHE", "1")
    assert catalog_cache.cache_dir() is None


def test_old_cache_files_are_pruned(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_cache, "_KEEP", 2)
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    note = data / "NOTES.txt"
    for i in range(catalog_cache._KEEP + 2):
        note.write_text(str(i), encoding="utf-8")
        load(data)
        newest = catalog_cache._path(cache_dir, catalog_cache.catalog_key(data))
        os.utime(newest, (1_000_000 + i, 1_000_000 + i))
    assert len(_cache_files(cache_dir)) == catalog_cache._KEEP
    assert newest in _cache_files(cache_dir)


@pytest.mark.parametrize("path", sorted(DATA_DIR.rglob("*.yaml")), ids=lambda p: p.relative_to(DATA_DIR).as_posix())
def test_the_c_yaml_loader_reads_every_data_file_as_the_pure_one_does(path: Path) -> None:
    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML built without libyaml: the catalog uses the pure loader")
    text = path.read_text(encoding="utf-8")
    pure = yaml.load(text, Loader=yaml.SafeLoader)
    fast = yaml.load(text, Loader=yaml.CSafeLoader)

    def typed(x: object) -> object:
        """The value with the type of every node, so 1 == 1.0 == True cannot hide a difference."""
        if isinstance(x, dict):
            return {typed(k): typed(v) for k, v in x.items()}
        if isinstance(x, list):
            return [typed(v) for v in x]
        return (type(x).__name__, x)

    assert typed(fast) == typed(pure)
