"""A per-user cache of the loaded, validated and cross-checked catalog.

Parsing ~40 YAML files costs far more than anything else in :func:`aicluster.catalog.load_catalog`, and the
files only change when the catalog is edited. The cache stores the finished :class:`~aicluster.catalog.Catalog`
(pickled) under a key that is a hash of:

- every file's relative path and bytes under the data directory (all files are read on every load, so an edit
  to any of them is seen; hashing them takes well under a millisecond);
- the source of this package's modules (the models, the cross-checks and this file), so a model change
  invalidates it; and the Python and pydantic versions, whose pickles it relies on.

Where it lives: ``$AICLUSTER_CACHE_DIR``, else ``$XDG_CACHE_HOME/aicluster``, else ``~/.cache/aicluster``.
``AICLUSTER_NO_CACHE=1`` turns it off.

It is never fatal and never trusted blindly:

- the directory and the file must be owned by the current user and not writable by group or others, and the
  file must be a regular file (not a link), else the cache is ignored;
- the file carries its full key after a magic line; an unreadable, truncated, corrupt or stale file is ignored
  (and rewritten by the next successful load);
- unpickling is restricted to this package's record classes and ``datetime.date``: no other callable can be
  named by the file, so even a tampered file cannot run code;
- files are written atomically (temp file + rename, mode 0600, directory 0700); any OS error while writing
  (a read-only directory, a full disk) just means no cache.

This module imports nothing else of the project.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import os
import pickle
import stat
import sys
from pathlib import Path
from typing import Any, TypeVar

import pydantic

# Bump when the file layout or what the key covers changes.
_FORMAT = b"aicluster-catalog-cache 1\n"
_PREFIX = "catalog-"
_SUFFIX = ".pickle"
# Content-addressed files from older data or code are pruned on write, newest kept.
_KEEP = 8
_PACKAGE = Path(__file__).resolve().parent

T = TypeVar("T")


def cache_dir() -> Path | None:
    """Where the cache lives; None: the cache is turned off (``AICLUSTER_NO_CACHE``) or no home is known."""
    if os.environ.get("AICLUSTER_NO_CACHE", "").strip().lower() not in ("", "0", "false", "no"):
        return None
    if not hasattr(os, "getuid"):  # the ownership checks below need POSIX owners
        return None
    if override := os.environ.get("AICLUSTER_CACHE_DIR"):
        return Path(override)
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg) / "aicluster"
    try:
        return Path.home() / ".cache" / "aicluster"
    except RuntimeError:
        return None


def _files(root: Path) -> list[tuple[str, str]]:
    """(relative posix path, full path) of every file under `root`, sorted (os.walk: Path.rglob compiles a
    pattern per call, which costs more than hashing the files)."""
    out: list[tuple[str, str]] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, root)
        out.extend(
            (name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"), os.path.join(folder, name)) for name in names
        )
    return sorted(out)


def catalog_key(data_dir: Path) -> str:
    """Hash of every data file (path and bytes), this package's source and the versions the pickle relies on."""
    h = hashlib.sha256(_FORMAT)
    h.update(f"{sys.version_info[:2]} {pydantic.VERSION}\n".encode())
    code = sorted((n, os.path.join(_PACKAGE, n)) for n in os.listdir(_PACKAGE) if n.endswith(".py"))
    for files in (code, _files(data_dir)):
        h.update(b"\0dir\0")
        for rel, path in files:
            with open(path, "rb") as fh:
                body = fh.read()
            h.update(f"{rel}\0{len(body)}\0".encode())
            h.update(body)
    return h.hexdigest()


def private(st: os.stat_result, want_dir: bool) -> bool:
    """Owned by us, not writable by group or others, and of the expected kind."""
    kind_ok = stat.S_ISDIR(st.st_mode) if want_dir else stat.S_ISREG(st.st_mode)
    return kind_ok and st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _path(folder: Path, key: str) -> Path:
    return folder / f"{_PREFIX}{key}{_SUFFIX}"


class _Unpickler(pickle.Unpickler):
    """Only the catalog's own classes and `datetime.date` may be named by a cache file."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("datetime", "date"):
            return dt.date
        if module == "aicluster.catalog" or module.startswith("aicluster.catalog."):
            obj = super().find_class(module, name)
            if isinstance(obj, type) and (issubclass(obj, pydantic.BaseModel) or name == "Catalog"):
                return obj
        raise pickle.UnpicklingError(f"catalog cache names {module}.{name}, which it may not")


def read(key: str, expect: type[T]) -> T | None:
    """The cached object for `key` if there is a private, intact, current one of type `expect`; else None."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        if not private(os.stat(folder), want_dir=True):
            return None
        fd = os.open(_path(folder, key), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not private(os.fstat(fh.fileno()), want_dir=False):
                return None
            blob = fh.read()
    except OSError:
        return None
    header = _FORMAT + key.encode() + b"\n"
    if not blob.startswith(header):
        return None
    try:
        obj = _Unpickler(io.BytesIO(blob[len(header) :])).load()
    except Exception:  # a truncated or corrupt file of ours: ignore it, the next load rewrites it
        return None
    return obj if isinstance(obj, expect) else None


def write(key: str, obj: Any) -> None:
    """Store `obj` under `key` atomically; silently does nothing where the cache cannot be written."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        blob = _FORMAT + key.encode() + b"\n" + pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(os.stat(folder), want_dir=True):
            return
        import tempfile  # only here: a cache hit does not pay for it (it imports shutil, random, bz2, lzma)

        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=_SUFFIX, dir=folder)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            os.replace(tmp, _path(folder, key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _prune(folder, keep=_path(folder, key))
    except Exception:  # never fatal: no cache is only slower
        return


def _prune(folder: Path, keep: Path) -> None:
    """Drop all but the newest few cache files (old data or old code); errors are ignored."""
    entries = []
    for path in folder.glob(f"{_PREFIX}*{_SUFFIX}"):
        try:
            entries.append((path.stat().st_mtime, path))
        except OSError:
            continue
    entries.sort(reverse=True)
    for _, path in entries[_KEEP:]:
        if path != keep:
            path.unlink(missing_ok=True)
