"""A Slurm scheduler in the stack file: where slurmctld runs (a cloud VM, or a host of an owned site)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from .base import (
    DnsLabel,
    HostCheck,
    InstanceType,
    Problem,
    Provider,
    RegionName,
    Strict,
    did_you_mean,
)
from .onprem import PrivateIp

if TYPE_CHECKING:
    from . import ClusterSpec


class Controller(Strict):
    instance_type: Annotated[
        InstanceType | None,
        Field(description="Controller instance type (e.g. `m7i.4xlarge`). Default: from the catalog."),
    ] = None
    provider: Annotated[
        Provider | None,
        Field(description="Default: `onprem` when the stack has sites, else the provider of the first pool."),
    ] = None
    region: Annotated[RegionName | None, Field(description="Default: the region of the first pool.")] = None
    site: Annotated[
        DnsLabel | None, Field(description="On-prem: the site slurmctld runs at. Default: the first site.")
    ] = None
    host: Annotated[DnsLabel | None, Field(description="On-prem: the host that runs slurmctld (e.g. `slurm01`).")] = (
        None
    )
    address: Annotated[
        PrivateIp | None, Field(description="On-prem: the host's address, inside the site's CIDRs (e.g. `10.200.0.5`).")
    ] = None


class SlurmScheduler(Strict):
    kind: Annotated[Literal["slurm"], Field(description="`slurm`: a Slurm controller plus the pools as partitions.")]
    controller: Annotated[Controller, Field(description="Where slurmctld runs.")] = Controller()

    def site_problems(self, spec: ClusterSpec, left_out: frozenset[str], host: HostCheck) -> list[Problem]:
        """A stack with sites runs slurmctld on a host of a site, named with its address; an on-prem controller
        needs a site. `left_out`: top-level parts the parser left out (nothing is judged against what is not there)."""
        problems: list[Problem] = []
        c = self.controller
        base: tuple[str | int, ...] = ("scheduler", "controller")
        if not spec.sites:
            if c.provider == "onprem":
                problems.append(
                    Problem(
                        (*base, "provider"),
                        "an on-prem controller needs a site: describe it under sites",
                        c.provider,
                        True,
                    )
                )
            return problems
        sites = [site.name for site in spec.sites]
        if c.provider not in (None, "onprem"):
            problems.append(
                Problem(
                    (*base, "provider"),
                    "a stack with sites runs slurmctld on-prem, with the clouds as burst capacity: drop provider, or "
                    "set it to onprem",
                    c.provider,
                    True,
                )
            )
        at = c.site or sites[0]
        if c.site is not None and c.site not in sites and "sites" not in left_out:
            problems.append(
                Problem((*base, "site"), "no site of this name under sites", c.site, True, did_you_mean(c.site, sites))
            )
        for key in ("host", "address"):
            if getattr(c, key) is None and "scheduler" not in left_out:
                problems.append(
                    Problem(
                        (*base, key),
                        "a stack with sites runs slurmctld on a host of the site: give the controller's host and "
                        "address (e.g. host: slurm01, address: 10.200.0.5)",
                    )
                )
        if c.host is not None:
            problems.extend(host(base, c.host, c.address, at, key="host"))
        return problems

    def problems(self, spec: ClusterSpec) -> list[Problem]:
        """Slurm's rules beyond its controller's: none (the pools' and sites' own rules cover its partitions)."""
        return []
