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

The compiled code is kept beside the interpreter's own bytecode (`__pycache__/<module>.<tag>.opt-pep563.pyc`,
the header Python writes: magic number, source mtime and size), and used only while it matches the source.
Where that folder cannot be written, the module loads as usual: compiling the large SDK modules on every run
would cost more than it saves. Only the offline engine installs this: `pulumi up` runs the program under the
Pulumi CLI's own language host, which loads the SDKs as usual.
"""

from __future__ import annotations
import __future__

import contextlib
import importlib.machinery
import importlib.util
import marshal
import os
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import CodeType, ModuleType

# The provider SDKs (generated code); never pulumi itself, pulumi_policy or our own code.
PACKAGES = ("pulumi_aws", "pulumi_azure_native", "pulumi_gcp", "pulumi_kubernetes", "pulumi_random")
_FLAGS = __future__.annotations.compiler_flag
_OPTIMIZATION = "pep563"


def _cache_path(source: str) -> str:
    return importlib.util.cache_from_source(source, optimization=_OPTIMIZATION)


def _header(source: str) -> bytes:
    st = os.stat(source)
    return (
        importlib.util.MAGIC_NUMBER
        + (0).to_bytes(4, "little")  # flags: a timestamp-based pyc, as PEP 552 defines
        + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    )


def _cached(source: str) -> CodeType | None:
    """The code compiled with postponed annotations for `source`, when a current one is cached."""
    try:
        header = _header(source)
        with open(_cache_path(source), "rb") as fh:
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


def _compile(source: str) -> CodeType | None:
    """Compile `source` with postponed annotations and cache it; None when the cache cannot be written."""
    if sys.dont_write_bytecode:
        return None
    target = _cache_path(source)
    try:
        header = _header(source)
        with open(source, "rb") as fh:
            code: CodeType = compile(fh.read(), source, "exec", flags=_FLAGS, dont_inherit=True)
        os.makedirs(os.path.dirname(target), exist_ok=True)
    except OSError:
        return None
    partial = f"{target}.{os.getpid()}.tmp"
    try:
        with open(partial, "wb") as fh:
            fh.write(header + marshal.dumps(code))
        os.replace(partial, target)  # atomic: a concurrent reader sees the whole file or none
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
        code = _cached(spec.origin) or _compile(spec.origin)
        if code is not None:
            spec.loader = _Loader(fullname, spec.origin, code)
        return spec


_FINDER = Finder(PACKAGES)


def install() -> None:
    """Load the provider SDKs' modules not yet imported with postponed annotations (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
