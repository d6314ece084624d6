"""Resources as the engine hands them (type token, camelCase props) -> facts the rules judge.

One module per concern of reading, none a hub:
- engine: values unknown during preview, `get`/`items`/`truthy`, `Res` (one resource and its links), `walk`;
- regions: how each cloud spells a region;
- model: the facts, the same for every cloud (Fleet, Filesystem, NodeGroup, Site, Workload, Exposure, Ingress, TagSet);
- aws, azure, gcp, kubernetes, aicluster: each cloud's type tokens and readers (aicluster: its own resources);
- tags: tag maps and which Azure/GCP types take them;
- stack: `Stack`, the facts of the whole stack, which lists every cloud's readers in one order.

This package re-exports what code outside the pack imports (the preview engine's `Res`, the planner tests'
`gcp_region`) and the engine's reads; the rules import the module that defines a name.
"""

from __future__ import annotations

from .engine import UNKNOWN, Res, get, items, truthy, walk
from .regions import gcp_region
from .stack import Stack

__all__ = ["UNKNOWN", "Res", "Stack", "gcp_region", "get", "items", "truthy", "walk"]
