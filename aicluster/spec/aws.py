"""AWS pools in the stack file."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    model_validator,
)

from .base import (
    PLACEMENT_GROUP_RE,
    AwsMarket,
    Count,
    DnsLabel,
    InstanceType,
    Problem,
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
                r"^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$",
                "must be an AWS Availability Zone name: the region and a letter (e.g. us-east-1a)",
            ),
            description="Availability Zone (e.g. `us-east-1a`). Required for EFA instance types: "
            "EFA traffic does not cross zones.",
        ),
    ] = None
    instance_type: Annotated[InstanceType, Field(description="EC2 instance type (e.g. `p5.48xlarge`).")]
    nodes: Annotated[Count, Field(ge=1, le=100_000, description="Number of nodes (e.g. `64`).")]
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
            pattern=_pattern(
                r"^cr-[0-9a-f]{8,17}$",
                "must be a Capacity Reservation id: cr- and 8 to 17 lowercase hex digits (e.g. cr-0123abcd)",
            ),
            description="Capacity Reservation or Capacity Block id (e.g. `cr-0123abcd`); "
            "required for `capacity-block`, optional for `reserved`.",
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
        if self.market == "capacity-block" and not self.reservation:
            problems.append(
                Problem(
                    ("reservation",),
                    "market capacity-block needs the id (cr-...) of the Capacity Block you purchased",
                )
            )
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
