"""Which stack field a policy finding comes from, and its line in the stack file.

The pack judges resources as Pulumi hands them and never sees the stack file; code scanning (SARIF)
wants a line to point at. The field is what the finding's remediation tells the user to change:
the budget a cost finding exceeds, the tags a tag finding lacks, the region of the pool a resource
outside the allowed regions belongs to; for other findings, the pool or file system the resource
belongs to (by its logical name, `<cluster>-<pool>-...`). A field the stack file leaves to its
default points at the nearest enclosing field it does write. None where nothing fits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

Path = tuple[str | int, ...]

# Findings about one stack-wide setting, by policy.
_SETTING: dict[str, Path] = {
    "aicluster-cluster-enforce-monthly-budget": ("budgets", "monthly_usd"),
    "aicluster-cluster-enforce-power-budget": ("budgets", "power_kw"),
    "aicluster-node-enforce-rack-power": ("budgets", "rack_kw"),
    "aicluster-cluster-missing-audit-logging": ("compliance", "frameworks"),
    "aicluster-cluster-missing-prices": ("pricing",),
    "aicluster-filesystem-enforce-checkpoint-throughput": ("storage",),
    "aws-resource-missing-required-tags": ("tags",),
    "azure-resource-missing-required-tags": ("tags",),
    "gcp-resource-missing-required-labels": ("tags",),
    # on-prem: the finding names the site; its power, racks, fabric and network are under sites[]
    "aicluster-site-enforce-power-ceiling": ("sites",),
    "aicluster-site-enforce-rack-power": ("sites",),
    "aicluster-site-enforce-rack-cooling": ("sites",),
    "aicluster-fabric-enforce-oversubscription": ("sites",),
    "aicluster-fabric-enforce-design-limits": ("sites",),
    "aicluster-site-disallow-overlapping-cidrs": ("sites",),
    # workloads: the finding names the workload's record; the field is its workloads[] entry (by name, below)
    "aicluster-workload-enforce-fit": ("workloads",),
    "aicluster-workload-enforce-target-days": ("workloads",),
    "aicluster-workload-enforce-min-goodput": ("workloads",),
}
_WORKLOAD_PREFIX = "workload-"  # a workload's record is named `<cluster>-workload-<name>`
_REGIONS = "aicluster-resource-enforce-allowed-regions"
_SPOT = "aicluster-spot-missing-checkpoint-storage"


def _named(cluster: Mapping[str, Any], section: str) -> list[tuple[int, str]]:
    items = cluster.get(section)
    if not isinstance(items, list):
        return []
    return [(i, x["name"]) for i, x in enumerate(items) if isinstance(x, Mapping) and isinstance(x.get("name"), str)]


def _owner(cluster: Mapping[str, Any], resource: str) -> Path | None:
    """The pool or file system whose components name this resource (`llm-dev-h100-asg` -> pools[0]);
    the longest matching name wins, so pool `h100-spot` is not taken for pool `h100`."""
    prefix = f"{cluster.get('name')}-"
    if not resource.startswith(prefix):
        return None
    rest = resource[len(prefix) :]
    found = [
        (len(name), (section, i))
        for section in ("pools", "storage")
        for i, name in _named(cluster, section)
        if rest == name or rest.startswith(f"{name}-")
    ]
    return max(found)[1] if found else None


def stack_field(cluster: Mapping[str, Any], policy: str, resource: str, message: str) -> Path | None:
    """The stack field (a path under `aicluster:cluster`) that a finding comes from."""
    if policy in _SETTING:
        if _SETTING[policy] == ("workloads",):
            record = f"{cluster.get('name')}-{_WORKLOAD_PREFIX}"
            name = resource[len(record) :] if resource.startswith(record) else None
            found = [i for i, n in _named(cluster, "workloads") if n == name]
            return ("workloads", found[0]) if found else ("workloads",)
        return _SETTING[policy]
    owner = _owner(cluster, resource)
    if policy == _REGIONS:
        region = re.search(r"\bis in ([a-z0-9-]+)", message)
        if owner is None and region:  # a resource of the network or the controller: the first pool in that region
            pools = cluster.get("pools")
            owner = next(
                (
                    ("pools", i)
                    for i, p in enumerate(pools if isinstance(pools, list) else [])
                    if isinstance(p, Mapping) and p.get("region") == region.group(1)
                ),
                None,
            )
        return (*owner, "region") if owner else ("compliance", "allowed_regions")
    if policy == _SPOT and owner and owner[0] == "pools":
        return (*owner, "market")
    return owner


def stack_line(lines: Mapping[Path, int], path: Path | None) -> tuple[Path, int] | None:
    """The field's line, or that of the nearest enclosing field the file writes (a default has none)."""
    while path:
        if path in lines:
            return path, lines[path]
        path = path[:-1]
    return None


def dotted(path: Path) -> str:
    """`("pools", 0, "region")` as `pools[0].region`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text
