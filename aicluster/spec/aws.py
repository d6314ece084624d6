"""AWS pools in the stack file."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    model_validator,
)

from .base import (
    CAPACITY_RESERVATION_RE,
    PLACEMENT_GROUP_RE,
    AwsMarket,
    Count,
    DnsLabel,
    InstanceType,
    PoolRollout,
    Problem,
    Rollout,
    Strict,
    _pattern,
    _Problems,
)

# ------------------------------------------------------------------------------------------------
# Pools
# ------------------------------------------------------------------------------------------------


class AwsPool(Strict):
    """A fleet of identical AWS accelerator nodes in one Availability Zone."""

    name: Annotated[DnsLabel, Field(description="Pool name, unique in the cluster (e.g. `h100`).")]
    provider: Annotated[Literal["aws"], Field(description="Cloud or site that runs the pool.")]
    region: Annotated[
        str,
        Field(
            pattern=_pattern(
                r"^[a-z]{2}(-gov)?-[a-z]+-\d$",
                (
                    "must be an AWS region name: lowercase, two letters, an area and a digit (e.g. us-east-1, "
                    "us-gov-west-1)"
                ),
            ),
            description="AWS region (e.g. `us-east-1`).",
        ),
    ]
    zone: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^[a-z]{2}(-gov)?-[a-z]+-\d(-[a-z]{3}-\d)?[a-z]$",
                "must be an AWS Availability Zone name: the region and a letter (e.g. us-east-1a), or a Local Zone "
                "name (e.g. us-east-1-dfw-2a)",
            ),
            description="Availability Zone (e.g. `us-east-1a`), or a Local Zone of the region where the catalog "
            "offers the type there (p6e-gb200: `us-east-1-dfw-2a`). Required for EFA instance types: EFA traffic does "
            "not cross zones.",
        ),
    ] = None
    instance_type: Annotated[InstanceType, Field(description="EC2 instance type (e.g. `p5.48xlarge`).")]
    nodes: Annotated[Count, Field(ge=1, le=100_000, description="Number of nodes (e.g. `64`).")]
    rollout: PoolRollout = Rollout()
    market: Annotated[
        AwsMarket,
        Field(
            description="How capacity is bought: `on-demand`, `spot`, `capacity-block` (EC2 Capacity "
            "Blocks for ML; needs `reservation`) or `reserved` (On-Demand Capacity Reservation or "
            "savings commitment)."
        ),
    ] = "on-demand"
    reservation: Annotated[
        str | None,
        Field(
            pattern=CAPACITY_RESERVATION_RE,
            description="Capacity Reservation or Capacity Block id (e.g. `cr-0123abcd`); "
            "required for `capacity-block` (or `reservations`), optional for `reserved`.",
        ),
    ] = None
    reservations: Annotated[
        list[Annotated[str, Field(pattern=CAPACITY_RESERVATION_RE)]] | None,
        Field(
            min_length=1,
            max_length=1_000,
            description="The Capacity Blocks of an UltraServer pool, one per UltraServer in the order the plan "
            "cuts the pool (whole UltraServers first, then a smaller one): a pool of 36 `p6e-gb200.36xlarge` is two "
            "`u-p6e-gb200x72` UltraServers, each bought as its own block (e.g. `[cr-0a1b2c3d, cr-0e5f6a7b]`). "
            "`market: capacity-block` only; instead of `reservation`.",
        ),
    ] = None
    placement_group: Annotated[
        str | None,
        Field(
            pattern=PLACEMENT_GROUP_RE,
            description="Existing cluster placement group to launch into (e.g. the one your capacity "
            "reservation was created in). Default: a new cluster placement group, except for "
            "capacity blocks and targeted reservations.",
        ),
    ] = None
    image: Annotated[
        str | None,
        Field(
            pattern=_pattern(
                r"^(ami-[0-9a-f]{8,17}|resolve:ssm:/[A-Za-z0-9_./-]+(:[0-9]+)?|[a-z0-9][a-z0-9-]*)$",
                (
                    "must be a catalog image id (e.g. dlami-base-gpu-ubuntu22), an AMI id: ami- and 8 to 17 hex digits "
                    "(e.g. ami-0123abcd), or an SSM parameter (e.g. resolve:ssm:/aws/service/ami or "
                    "resolve:ssm:/my/ami:3)"
                ),
            ),
            description="Catalog image id (e.g. `dlami-base-gpu-ubuntu22`), an AMI id (`ami-0123abcd...`) or an "
            "SSM parameter (`resolve:ssm:/path`, pinned with `:<version>`). Default: the catalog's GPU image.",
        ),
    ] = None
    root_volume_gib: Annotated[
        Count, Field(ge=50, le=16_384, description="Encrypted gp3 root volume size, GiB (e.g. `500`).")
    ] = 500

    @model_validator(mode="after")
    def _market_rules(self) -> AwsPool:
        problems: list[Problem] = []
        if self.market == "capacity-block" and not self.reservation and not self.reservations:
            problems.append(
                Problem(
                    ("reservation",),
                    "market capacity-block needs the id (cr-...) of the Capacity Block you purchased (an UltraServer "
                    "pool: reservations, one block per UltraServer)",
                )
            )
        if self.reservations is not None:
            if self.reservation is not None:
                problems.append(
                    Problem(
                        ("reservations",),
                        "give the pool's Capacity Blocks once: reservation (one block) or reservations (one per "
                        "UltraServer), not both",
                    )
                )
            if self.market != "capacity-block":
                problems.append(
                    Problem(
                        ("reservations",),
                        "reservations names one Capacity Block per UltraServer, which only market capacity-block "
                        "buys; set market: capacity-block, or "
                        + (
                            "give the reserved pool's one reservation as reservation"
                            if self.market == "reserved"
                            else "drop reservations"
                        ),
                    )
                )
            seen: set[str] = set()
            for k, rid in enumerate(self.reservations):
                if rid in seen:
                    problems.append(
                        Problem(
                            ("reservations", k),
                            "named twice: each UltraServer is its own Capacity Block, with its own id",
                            rid,
                            True,
                        )
                    )
                seen.add(rid)
        if self.market in ("spot", "on-demand") and self.reservation:
            problems.append(
                Problem(
                    ("reservation",),
                    f"a {self.market} pool cannot target a capacity reservation; drop `reservation` or use market "
                    "reserved (or capacity-block)",
                    self.reservation,
                    True,
                )
            )
        if self.market == "capacity-block" and self.placement_group:
            problems.append(
                Problem(
                    ("placement_group",),
                    "capacity blocks must not be launched into a placement group (launches fail with "
                    "insufficient capacity outside the block); drop `placement_group`",
                    self.placement_group,
                    True,
                )
            )
        if self.zone and not self.zone.startswith(self.region):
            problems.append(
                Problem(
                    ("zone",),
                    f"not a zone of region {self.region}",
                    self.zone,
                    True,
                    f'did you mean "{self.region}{self.zone[-1]}"?',
                )
            )
        if problems:
            raise _Problems(problems)
        return self
