"""The engine's side of a resource: values unknown during preview, reads that survive them, and `Res`.

Values unknown during preview come back as `UNKNOWN`; ids are usually unknown, so links between resources follow
the engine's property dependencies (an ASG's `launchTemplate` -> the launch template resource), as the engine
reports them. Nothing here knows about a cloud beyond how it names a region (facts.regions); the cloud readers
(facts.aws, facts.azure, facts.gcp, facts.kubernetes) build on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pulumi_policy.proxy import UnknownValueError

from .regions import azure_location, gcp_region

F = TypeVar("F")

# Pulumi package (the type token's first segment) -> the catalog's provider.
CATALOG_PROVIDER = {"aws": "aws", "gcp": "gcp", "azure-native": "azure"}

# The engine's sentinels for values not known until `up` (pulumi_policy.proxy).
_SENTINELS = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown during preview>"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()

# What a value is to `get` and `items`, by its type: worked out once per type, since the SDK's proxies are
# Mapping/Sequence by ABC, and an ABC isinstance is several times dearer than a dict lookup.
_STR, _MAP, _SEQ, _OTHER = 1, 2, 3, 0
_KINDS: dict[type, int] = {}


def _kind(t: type) -> int:
    kind = _KINDS.get(t)
    if kind is None:
        kind = _KINDS[t] = (
            _STR if issubclass(t, str) else _MAP if issubclass(t, Mapping) else _SEQ if issubclass(t, Sequence) else 0
        )
    return kind


def get(value: Any, *path: str | int, default: Any = None) -> Any:
    """`value[path[0]][path[1]]...`: `default` when a key is absent or null, `UNKNOWN` when a value on
    the way is not known during preview. Works on plain dicts and on the SDK's unknown-checking proxy."""
    cur = value
    try:
        for key in path:
            kind = _KINDS.get(type(cur)) or _kind(type(cur))
            if kind == _STR:  # no key or index reads into a string: unknown, or absent
                return UNKNOWN if cur in _SENTINELS else default
            if isinstance(key, int):
                if kind != _SEQ or not -len(cur) <= key < len(cur):
                    return default
                cur = cur[key]
            else:
                if kind != _MAP:
                    return default
                try:  # one read, not `key in cur` and then `cur[key]` (each a read through the SDK's proxy)
                    cur = cur[key]
                except KeyError:
                    return default
    except UnknownValueError:
        return UNKNOWN
    if isinstance(cur, str) and cur in _SENTINELS:
        return UNKNOWN
    return default if cur is None else cur


def items(value: Any, *path: str) -> list[Any]:
    """A list-valued prop as a list; empty when absent or unknown."""
    found = get(value, *path)
    if found is UNKNOWN or (_KINDS.get(type(found)) or _kind(type(found))) != _SEQ:
        return []
    out = []
    for i in range(len(found)):
        try:
            item = found[i]
        except UnknownValueError:
            item = UNKNOWN
        out.append(UNKNOWN if isinstance(item, str) and item in _SENTINELS else item)
    return out


def truthy(value: Any) -> bool:
    """AWS launch-template booleans are strings ("true"); unknown is not true."""
    if value is UNKNOWN or value is None:
        return False
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def num(value: Any) -> float | None:
    """A number as a float (never a bool); None otherwise."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def count(value: Any) -> int | None:
    """A count as an int (a float truncated, never a bool); None otherwise."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def finite(value: Any) -> float | None:
    n = num(value)
    return n if n is not None and math.isfinite(n) else None


def whole(value: Any) -> int | None:
    n = finite(value)
    return int(n) if n is not None and n.is_integer() else None


def text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(eq=False)
class Res:
    """One resource: what a resource policy sees, plus (in a stack) its links."""

    type: str
    name: str
    urn: str
    props: Any  # Mapping (possibly the SDK's unknown-checking proxy)
    provider_props: Any = None
    parent: Res | None = None
    property_dependencies: dict[str, list[Res]] = field(default_factory=dict)
    provider: str = field(init=False, repr=False)  # the type token's package (aws, azure-native, gcp, ...)

    def get(self, *path: str | int, default: Any = None) -> Any:
        return get(self.props, *path, default=default)

    def linked(self, prop: str, type_: str | None = None) -> list[Res]:
        return [r for r in self.property_dependencies.get(prop, []) if type_ is None or r.type == type_]

    def __post_init__(self) -> None:
        self.provider = self.type.split(":", 1)[0]  # read by many rules for every resource: worked out once

    @property
    def kind(self) -> str:
        """`launch template`, `security group`, ...: the type's last segment, spaced, as findings name it."""
        last = self.type.rsplit(":", 1)[-1]
        words = [last[0]]
        for ch in last[1:]:
            words.append(f" {ch}" if ch.isupper() and not words[-1][-1:].isupper() else ch)
        return "".join(words).lower()

    @property
    def catalog_provider(self) -> str:
        """The provider as the catalog names it (`azure` for `azure-native:` types)."""
        return CATALOG_PROVIDER.get(self.provider, self.provider)

    @property
    def region(self) -> str | None:
        """The resource's region: its own `region`/`location` input (GCP: also `zone`), else its provider's.
        Azure locations are normalised as Azure does ("East US" -> "eastus"); a GCP zone stands for its region
        (us-central1-a -> us-central1). Resources that are not regional say `global`."""
        keys = ("region", "zone", "location") if self.provider == "gcp" else ("region", "location")
        for key in keys:
            value = self.get(key)
            if isinstance(value, str) and value:
                if self.provider == "azure-native":
                    return azure_location(value)
                return gcp_region(value) if self.provider == "gcp" else value
        value = get(self.provider_props, "region")
        return value if isinstance(value, str) else None


def walk(resources: Sequence[Any]) -> Iterator[Res]:
    """`Res` for each of the SDK's PolicyResource objects, links resolved."""
    made: dict[int, Res] = {}

    def one(r: Any) -> Res:
        if id(r) not in made:
            provider = getattr(r, "provider", None)
            made[id(r)] = Res(r.resource_type, r.name, r.urn, r.props, provider.props if provider else None)
        return made[id(r)]

    for r in resources:
        res = one(r)
        if r.parent is not None:
            res.parent = one(r.parent)
        res.property_dependencies = {k: [one(d) for d in v] for k, v in (r.property_dependencies or {}).items()}
        yield res


@dataclass(frozen=True)
class Reader(Generic[F]):
    """One cloud's facts of one kind, read from single resources (what a cross-cloud resource rule judges): `read`
    turns a resource of `types` (None: any resource of `provider`) into facts."""

    read: Callable[[Res], Iterable[F]]
    types: frozenset[str] | None = None
    provider: str | None = None
