"""AWS's planner: EFA NICs and the zone they need, AMI references, one NAT gateway per zone in use."""

from __future__ import annotations

import re
from typing import ClassVar

from aicluster.catalog import InstanceType, Region
from aicluster.plan.context import Placed, PlanCtx
from aicluster.plan.models import PlannedPool, PoolNvlink
from aicluster.plan.network import Cut, aws_subnets
from aicluster.plan.pools import CloudPlanner
from aicluster.spec import AwsPool

from . import pool as aws

# Huge pages a pod using EFA requests (EKS user guide, ml/node-efa: the EFA driver pre-allocates 5128 x 2 MiB)
EFA_HUGEPAGES = "5120Mi"


class AwsPlanner(CloudPlanner):
    name: ClassVar[str] = "aws"
    image_forms: ClassVar[str] = "an AMI id or resolve:ssm: path"
    controller_root_gib: ClassVar[int] = aws.CONTROLLER_ROOT_VOLUME_GIB
    controller_imds_hop_limit: ClassVar[int | None] = aws.CONTROLLER_IMDS_HOP_LIMIT

    kubernetes_pod_overlay: ClassVar[bool] = False  # the VPC CNI gives pods VPC addresses

    def kubernetes_resources(self, pool: PlannedPool) -> dict[str, str]:
        """Plus every EFA interface, and the 2 MiB huge pages the EFA driver's queues need (EKS's EFA guide: the
        p5 NCCL test pod requests vpc.amazonaws.com/efa 32 and hugepages-2Mi 5120Mi)."""
        out = super().kubernetes_resources(pool)
        if pool.aws is not None and pool.aws.efa_devices:
            out |= {"vpc.amazonaws.com/efa": str(pool.aws.efa_devices), "hugepages-2Mi": EFA_HUGEPAGES}
        return out

    def is_image_reference(self, text: str) -> bool:
        return text.startswith("resolve:ssm:") or bool(re.fullmatch(r"ami-[0-9a-f]{8,17}", text))

    def place(
        self,
        ctx: PlanCtx,
        i: int,
        pool: AwsPool,
        it: InstanceType,
        reg: Region,
        zones: tuple[str, ...],
        image: str,
        nvlink: PoolNvlink | None,
    ) -> Placed | None:
        details = aws.details(pool, it, image)
        zone = pool.zone
        if zone is None:
            if details.efa_devices:
                ctx.problem(
                    ("pools", i, "zone"),
                    f"{it.name} uses EFA, which does not cross Availability Zones: set the zone the pool "
                    f"runs in; zones of {pool.region}: {', '.join(zones)}",
                )
                return None
            zone = zones[0]
            ctx.warnings.append(f"pools[{i}] ({pool.name}) has no zone; placed in {zone}")
        return Placed(zone, aws.ip_addresses_per_node(details.nics), {"aws": details})

    def subnets(self, block: str, region: Region, zones: dict[str | None, int], roles: dict[str, int]) -> list[Cut]:
        return aws_subnets(block, region.zones, zones)

    def nat_gateways(self, zones: dict[str | None, int]) -> int:
        """One NAT gateway (and its public IPv4 address) per zone in use."""
        return len(zones)


PLANNER = AwsPlanner()
