"""A stack's resources and the facts of the whole stack: every cloud's fleets, file systems and Kubernetes node
groups (each cloud's reader makes its own; the stack lists them in one order), owned sites, workloads, the cluster's
declaration and the prices the cost rules judge with."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar, cast

from aicluster.catalog import Catalog, NvlinkDomain, Region, load_catalog
from aicluster.catalog.pricing import (
    compute_price,
    hourly_month,
    service_month,
    service_price,
    storage_month,
    storage_price,
)

from . import aws, azure, gcp, kubernetes
from .aicluster import AICLUSTER_TYPE, ONPREM_SITE, WORKLOAD, declared_domains, site_of, workload_of
from .engine import CATALOG_PROVIDER, UNKNOWN, Res, count, get, items
from .model import ControlPlane, DeclaredDomain, Filesystem, Fleet, NodeGroup, NvlinkGroup, Site, Workload

T = TypeVar("T")
# What a cloud's reader offers the stack: the resource types it reads, each with the function that reads one.
FleetReaders = tuple[tuple[tuple[str, ...], Callable[["Stack", Res], Fleet | None]], ...]
FilesystemReaders = tuple[tuple[tuple[str, ...], Callable[["Stack", Res], Filesystem]], ...]
NvlinkReaders = tuple[tuple[tuple[str, ...], Callable[["Stack", Fleet, NvlinkDomain], NvlinkGroup]], ...]


class Stack:
    """Every resource of a stack, with the cluster declaration (AiCluster inputs) when there is one."""

    def __init__(self, resources: Sequence[Res], catalog: Catalog | None = None) -> None:
        self.resources = list(resources)
        self.catalog = catalog or load_catalog()
        self.by_type: dict[str, list[Res]] = {}
        self._memo: dict[str, Any] = {}
        for r in self.resources:
            self.by_type.setdefault(r.type, []).append(r)

    def of(self, *types: str) -> list[Res]:
        return [r for t in types for r in self.by_type.get(t, [])]

    def memo(self, key: str, make: Callable[[Stack], T]) -> T:
        """A fact of the whole stack worked out once (e.g. the bill, which two cost rules read): a stack's
        resources do not change while the pack judges it."""
        if key not in self._memo:
            self._memo[key] = make(self)
        return cast(T, self._memo[key])

    @cached_property
    def cluster(self) -> Res | None:
        found = self.of(AICLUSTER_TYPE)
        return found[0] if found else None

    def declared(self, *path: str) -> Any:
        """A value the AiCluster component declares (budgets, compliance, pricing, tags)."""
        return get(self.cluster.props, *path) if self.cluster else None

    @cached_property
    def overrides(self) -> list[_Override]:
        return [_Override.of(o) for o in items(self.declared("pricing"), "overrides") if isinstance(o, Mapping)]

    @cached_property
    def fleets(self) -> list[Fleet]:
        """Fleets of every cloud, in the clouds' order (AWS, Azure, GCP), then Kubernetes node groups'."""
        out = [
            f
            for readers in (aws.FLEETS, azure.FLEETS, gcp.FLEETS)
            for types, read in readers
            for r in self.of(*types)
            if (f := read(self, r))
        ]
        out += [g.fleet for g in self.node_groups if g.fleet is not None]
        return out

    @cached_property
    def nvlink_groups(self) -> list[NvlinkGroup]:
        """Every fleet of a rack-scale type (sold in a multi-node NVLink domain), as its cloud's reader places it; a
        Kubernetes node group's by its size alone."""
        readers = {t: read for cloud in (aws.NVLINK, azure.NVLINK, gcp.NVLINK) for types, read in cloud for t in types}
        out = []
        for f in self.fleets:
            domain = f.spec.nvlink_domain if f.spec is not None else None
            if domain is None:
                continue
            read = readers.get(f.res.type)
            out.append(read(self, f, domain) if read else NvlinkGroup(f, domain, size_key="its node count"))
        return out

    @cached_property
    def declared_domains(self) -> list[DeclaredDomain]:
        """The multi-node NVLink domains the AiCluster component declares (what a job's scheduler and IMEX see)."""
        return declared_domains(self.cluster)

    @cached_property
    def node_groups(self) -> list[NodeGroup]:
        """Kubernetes node groups: EKS managed node groups, GKE node pools, AKS agent pools (their own resources
        and the cluster's agentPoolProfiles)."""
        return kubernetes.node_groups(self)

    def control_plane(self, cluster: Res) -> ControlPlane | None:
        """A managed control plane's service record, minor version and support, as it is billed."""
        return kubernetes.control_plane(self, cluster)

    def burst_ceiling(self, group: object) -> int:
        """The most nodes a burst group may reach, as the AiCluster component declares it (0: not a burst group).
        A burst group starts empty and Slurm grows it, so a budget judges it at its ceiling."""
        ceiling = self.declared("burst_groups", group) if isinstance(group, str) else None
        return count(ceiling) or 0

    @cached_property
    def sites(self) -> list[Site]:
        return [site_of(r) for r in self.of(ONPREM_SITE)]

    @cached_property
    def workloads(self) -> list[Workload]:
        return [workload_of(r) for r in self.of(WORKLOAD)]

    @cached_property
    def filesystems(self) -> list[Filesystem]:
        """File systems of every cloud, in the clouds' order (AWS, Azure, GCP)."""
        return [
            read(self, r)
            for readers in (aws.FILESYSTEMS, azure.FILESYSTEMS, gcp.FILESYSTEMS)
            for types, read in readers
            for r in self.of(*types)
        ]

    def region_record(self, provider: str, region: str | None) -> Region | None:
        """The catalog's region; `provider` may be the catalog's or the Pulumi package (`azure-native`)."""
        return self.catalog.region(CATALOG_PROVIDER.get(provider, provider), region) if region else None

    def fleet_month(self, fleet: Fleet) -> float | None:
        """USD per month of a fleet's instances (or TPU chips); None: not priced."""
        price = self.fleet_price(fleet)
        return hourly_month(price, fleet.billed, self.catalog.hours_per_month) if price is not None else None

    def fleet_price(self, fleet: Fleet) -> float | None:
        """USD per node-hour (per chip-hour of a TPU fleet): a declared override, else the catalog's rate for the
        market."""
        priced = fleet.tpu or fleet.spec
        if priced is None or fleet.region is None:
            return None
        resolved = compute_price(priced, fleet.region, fleet.market, self.overrides)
        return resolved.price.usd if resolved.price else None

    def filesystem_price(self, fs: Filesystem) -> float | None:
        """USD per month."""
        if fs.tier is None or fs.region is None or fs.capacity_gib is None:
            return None
        return storage_month(storage_price(fs.tier, fs.region, self.overrides), fs.capacity_gib)

    def service_month(self, provider: str, service: str, region: str | None, quantity: float) -> float | None:
        """USD per month of `quantity` units of a catalog service at a declared override, else the catalog's
        list price (the planner's cost model); None: not priced."""
        return service_month(
            self.catalog, service_price(self.catalog, provider, service, region, self.overrides), quantity
        )


@dataclass(frozen=True)
class _Override:
    sku: str
    region: str | None
    market: str | None
    usd_per_hour: float | None
    usd_per_gib_month: float | None

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> _Override:
        def opt(key: str) -> Any:
            value = get(raw, key)
            return None if value is UNKNOWN else value

        return cls(str(opt("sku")), opt("region"), opt("market"), opt("usd_per_hour"), opt("usd_per_gib_month"))
