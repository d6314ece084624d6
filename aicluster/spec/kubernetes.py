"""A Kubernetes scheduler in the stack file: a managed control plane (EKS, GKE or AKS) in the cloud of the pools."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from .base import (
    DnsLabel,
    HostCheck,
    InstanceType,
    NetworkCidr,
    Problem,
    Strict,
    _pattern,
)

if TYPE_CHECKING:
    from . import ClusterSpec


class SystemPool(Strict):
    instance_type: Annotated[
        InstanceType | None,
        Field(
            description="CPU instance type of the system node group (kube-system, Kueue, the operators' controllers). "
            "Default: from the catalog."
        ),
    ] = None
    nodes: Annotated[
        int,
        Field(ge=1, le=100, description="System nodes, spread over two zones where the region has them."),
    ] = 2


class KubernetesScheduler(Strict):
    kind: Annotated[
        Literal["kubernetes"],
        Field(
            description="`kubernetes`: a managed control plane (EKS, GKE or AKS) in the cloud of the pools, the pools "
            "as fabric-wired node groups, the GPU and network operators, and Kueue."
        ),
    ]
    version: Annotated[
        str,
        Field(
            pattern=_pattern(
                r"^1\.\d{2}$",
                "must be a Kubernetes minor version: 1. and two digits (e.g. 1.35)",
            ),
            description="Kubernetes minor version (e.g. `1.35`); the catalog lists what each cloud offers.",
        ),
    ] = "1.35"
    endpoint: Annotated[
        Literal["private", "public"],
        Field(
            description="`private`: the API server is reachable only from the cluster network (and networks joined "
            "to it); `public`: reachable from `authorized_networks` only."
        ),
    ] = "private"
    authorized_networks: Annotated[
        tuple[NetworkCidr, ...],
        Field(
            max_length=40,
            description="With a public endpoint: the CIDRs allowed to reach the API server (e.g. your office's).",
        ),
    ] = ()
    system_pool: Annotated[SystemPool, Field(description="CPU nodes for the cluster's own services.")] = SystemPool()
    namespace: Annotated[
        DnsLabel,
        Field(description="Namespace of the Kueue LocalQueue that jobs submit to, and of the acceptance JobSet."),
    ] = "training"

    def site_problems(self, spec: ClusterSpec, left_out: frozenset[str], host: HostCheck) -> list[Problem]:
        """A managed control plane runs on no site host (a stack with sites is refused by `problems`)."""
        return []

    def problems(self, spec: ClusterSpec) -> list[Problem]:
        """One managed control plane, in the one cloud of the pools; the endpoint's rules."""
        problems: list[Problem] = []
        base: tuple[str | int, ...] = ("scheduler",)
        if self.endpoint == "public" and not self.authorized_networks:
            problems.append(
                Problem(
                    (*base, "authorized_networks"),
                    "a public API endpoint needs authorized_networks (the CIDRs allowed to reach it, e.g. your "
                    "office's): add them, or set endpoint: private",
                )
            )
        if self.endpoint == "private" and self.authorized_networks:
            problems.append(
                Problem(
                    (*base, "authorized_networks"),
                    "these apply to a public endpoint; a private one is reachable only from the cluster network: drop "
                    "them, or set endpoint: public",
                    ", ".join(self.authorized_networks),
                    True,
                )
            )
        for j, cidr in enumerate(self.authorized_networks):
            if ipaddress.IPv4Network(cidr).prefixlen == 0:
                problems.append(
                    Problem(
                        (*base, "authorized_networks", j),
                        "opens the API server to the whole internet: list the networks that need it, or set endpoint: "
                        "private",
                        cidr,
                        True,
                    )
                )
        for i, site in enumerate(spec.sites):
            problems.append(
                Problem(
                    ("sites", i),
                    "aicluster builds managed Kubernetes control planes (EKS, GKE, AKS) in a cloud, and their nodes "
                    "must be that cloud's VMs; an owned site's nodes join a Slurm cluster: use scheduler kind slurm "
                    "for a stack with sites",
                    site.name,
                    True,
                )
            )
        clouds = sorted({p.provider for p in spec.pools if p.provider != "onprem"})
        for i, pool in enumerate(spec.pools):
            image = getattr(pool, "image", None)
            if image is not None:
                problems.append(
                    Problem(
                        ("pools", i, "image"),
                        "Kubernetes node groups boot the cloud's own GPU node image (EKS's accelerated AMI type, GKE's "
                        "image type, AKS's OS SKU), which its control plane keeps in step with the Kubernetes version: "
                        "drop image",
                        image,
                        True,
                    )
                )
            if pool.provider == "onprem" and not spec.sites:
                problems.append(
                    Problem(
                        ("pools", i, "provider"),
                        "on-prem nodes cannot join a managed control plane (EKS, GKE, AKS): use scheduler kind slurm",
                        "onprem",
                        True,
                    )
                )
        if len(clouds) > 1:
            first = spec.pools[0].provider
            for i, pool in enumerate(spec.pools):
                if pool.provider not in (first, "onprem"):
                    problems.append(
                        Problem(
                            ("pools", i, "provider"),
                            f"a managed control plane runs nodes of its own cloud only, and this stack's first pool is "
                            f"on {first}; queueing across clusters needs MultiKueue, which aicluster does not build: "
                            "write one stack per cloud (each gets its own control plane and Kueue)",
                            pool.provider,
                            True,
                        )
                    )
        return problems
