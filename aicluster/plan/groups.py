"""Splitting a pool into node groups a provider keeps together (Azure scale sets, GCP placement groups).

Groups are filled, not balanced: 250 nodes at 100 per group become 100 + 100 + 50, so a job as large as
one group still fits inside one (balanced 84 + 83 + 83 would leave no group that holds it).
"""

from __future__ import annotations

import hashlib
import math


def fill(nodes: int, limit: int) -> list[tuple[int, int]]:
    """(first node, size) of each group of at most `limit` nodes."""
    return [(first, min(limit, nodes - first)) for first in range(0, nodes, limit)] if nodes else []


def groups_needed(nodes: int, limit: int) -> int:
    return math.ceil(nodes / limit)


def bounded(name: str, tail: str, limit: int) -> str:
    """`name + tail` in at most `limit` characters: a name too long to fit is cut and given 4 characters of
    its hash, so two long names that share a beginning never collide."""
    room = limit - len(tail)
    if len(name) > room:
        digest = hashlib.sha256(name.encode()).hexdigest()[:4]
        name = name[: room - 4].rstrip("-") + digest
    return name + tail
