"""Load the Pulumi provider SDKs with postponed annotations (PEP 563) for the offline preview.

A provider SDK module is mostly classes whose every property carries a type annotation such as
`Optional[pulumi.Input[Sequence[pulumi.Input['LaunchTemplateNetworkInterfaceArgs']]]]`. Python evaluates each
of them when the class is defined, and building those `typing` objects is about half the time it takes to
import a module such as pulumi_aws.ec2, pulumi_gcp.compute or pulumi_azure_native.network (the largest part
of a cold preview after the imports of our own code). The SDK reads the annotations only through
`typing.get_type_hints` (pulumi/_types.py), which resolves them as well from strings: the same types, when a
resource's outputs are translated. Compiled as if each module began with `from __future__ import
annotations`, the SDK defines the same classes, properties, names and enums, and the annotations become
strings that are resolved only for the few types a preview uses. tests/test_preview_golden.py holds the
preview JSON of every example stack byte-identical.

The compiled code is cached per user with the catalog's cache (aicluster/catalog/cache.py: AICLUSTER_CACHE_DIR,
else $XDG_CACHE_HOME/aicluster or ~/.cache/aicluster; AICLUSTER_NO_CACHE=1 turns it off), one file per SDK
module named by a hash of its path, with the header Python gives its own bytecode (magic number, source mtime
and size). It is used only while that header matches the source, and only from a folder and file owned by the
user and not writable by others, as the catalog's cache is: loading it runs its code. Where nothing can be
cached, the module loads as usual: compiling the large SDK modules on every run would cost more than it
saves. Only the offline engine installs this: `pulumi up` runs the program under the Pulumi CLI's own
language host, which loads the SDKs as usual.
"""

from __future__ import annotations
import __future__

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import marshal
import os
import sys
import tempfile
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import CodeType, ModuleType

from aicluster.catalog import cache

# The provider SDKs (generated code); never pulumi itself, pulumi_policy or our own code.
PACKAGES = ("pulumi_aws", "pulumi_azure_native", "pulumi_gcp", "pulumi_kubernetes", "pulumi_random")
_FLAGS = __future__.annotations.compiler_flag
_OPTIMIZATION = "pep563"


def _folder() -> Path | None:
    root = cache.cache_dir()
    return None if root is None else root / f"sdk-{sys.implementation.cache_tag}-{_OPTIMIZATION}"


def _cache_path(folder: Path, source: str) -> Path:
    return folder / f"{hashlib.sha256(os.fsencode(source)).hexdigest()[:32]}.pyc"


def _header(source: str) -> bytes:
    st = os.stat(source)
    return (
        importlib.util.MAGIC_NUMBER
        + (0).to_bytes(4, "little")  # flags: a timestamp-based pyc, as PEP 552 defines
        + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    )


def _cached(folder: Path, source: str) -> CodeType | None:
    """The code compiled with postponed annotations for `source`, when a current, private one is cached."""
    try:
        if not cache.private(os.stat(folder), want_dir=True):
            return None
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
    except (EOFError, ValueError, TypeError):  # a truncated or foreign file: compile it again
        return None
    return code if isinstance(code, CodeType) else None


def _compile(folder: Path, source: str) -> CodeType | None:
    """Compile `source` with postponed annotations and cache it; None when the cache cannot be written."""
    try:
        header = _header(source)
        with open(source, "rb") as fh:
            code: CodeType = compile(fh.read(), source, "exec", flags=_FLAGS, dont_inherit=True)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not cache.private(os.stat(folder), want_dir=True):
            return None
        fd, partial = tempfile.mkstemp(prefix=".tmp-", suffix=".pyc", dir=folder)  # mode 0600
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(header + marshal.dumps(code))
        os.replace(partial, _cache_path(folder, source))  # atomic: a reader sees the whole file or none
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        return None
    return code


class _Loader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, code: CodeType) -> None:
        super().__init__(fullname, path)
        self._code = code

    def get_code(self, fullname: str) -> CodeType:
        return self._code


class Finder(MetaPathFinder):
    """Finds the modules of `packages` as the path finder does, and loads them with postponed annotations."""

    def __init__(self, packages: Sequence[str]) -> None:
        self.packages = frozenset(packages)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] not in self.packages:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader or not spec.origin:
            return spec
        folder = _folder()
        if folder is None:
            return spec
        code = _cached(folder, spec.origin) or _compile(folder, spec.origin)
        if code is not None:
            spec.loader = _Loader(fullname, spec.origin, code)
        return spec


_FINDER = Finder(PACKAGES)


def install() -> None:
    """Load the provider SDKs' modules not yet imported with postponed annotations (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
