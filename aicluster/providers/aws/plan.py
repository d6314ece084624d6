"""AWS's planner: EFA NICs and the zone they need, AMI references, one NAT gateway per zone in use."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from aicluster.catalog import InstanceType, Region
from aicluster.plan.context import Placed, PlanCtx
from aicluster.plan.models import AwsGroup, PlannedPool, PoolNvlink
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
        groups: tuple[AwsGroup, ...] = ()
        if it.nvlink_domain is not None and it.nvlink_domain.unit == "ultraserver":
            assert nvlink is not None  # plan_pool refused a count that splits an UltraServer
            blocks = aws.ultraserver_blocks(pool)
            if len(blocks) != len(nvlink.domains):
                ctx.problem(
                    ("pools", i, "reservations" if pool.reservations else "reservation"),
                    _blocks_problem(it, nvlink, pool.nodes, len(blocks)),
                    len(blocks) if pool.reservations else pool.reservation,
                )
                return None
            groups = aws.ultraserver_groups(it, nvlink, blocks)
        elif pool.reservations:
            ctx.problem(
                ("pools", i, "reservations"),
                f"one Capacity Block per UltraServer is for UltraServer types (p6e-gb200.36xlarge); {it.name} is "
                "bought as one block: give it as reservation",
            )
            return None
        details = aws.details(pool, it, image, groups)
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
        if zone in reg.local_zones:
            ctx.warnings.append(
                f"pools[{i}] ({pool.name}) runs in {zone}, a Local Zone of {pool.region}: opt the account into its "
                f"zone group first (aws ec2 modify-availability-zone-group --region {pool.region} --group-name "
                f"{zone[:-1]} --opt-in-status opted-in); its nodes reach the internet through the NAT gateway of "
                f"{reg.zones[0]}"
            )
        return Placed(zone, aws.ip_addresses_per_node(details.nics), {"aws": details})

    def subnets(self, block: str, region: Region, zones: dict[str | None, int], roles: dict[str, int]) -> list[Cut]:
        return aws_subnets(block, region.zones, zones, region.local_zones)

    def nat_gateways(self, zones: dict[str | None, int], layout: Sequence[Cut]) -> int:
        """One NAT gateway (and its public IPv4 address) per public subnet: per zone in use, a Local Zone's being
        its region's first zone's."""
        return sum(1 for cut in layout if cut.role == "public")


PLANNER = AwsPlanner()


def _blocks_problem(it: InstanceType, nvlink: PoolNvlink, nodes: int, given: int) -> str:
    """What a pool of UltraServers needs: one Capacity Block per UltraServer, named in the plan's order."""
    dom = it.nvlink_domain
    assert dom is not None
    counts: dict[int, int] = {}
    for d in nvlink.domains:
        counts[d.nodes] = counts.get(d.nodes, 0) + 1
    servers = " and ".join(
        f"{n} x {dom.unit_type(size) or f'{size}-instance UltraServer'} ({size} instances{' each' if n > 1 else ''})"
        for size, n in counts.items()
    )
    need = len(nvlink.domains)
    return (
        f"{nodes} {it.name} nodes are {need} UltraServer{'s' if need > 1 else ''} ({servers}), each bought as its "
        f"own Capacity Block, but the pool names {given}: list {need} block id{'s' if need > 1 else ''} under "
        "reservations, one per UltraServer in that order"
        + (", or change nodes to match the blocks you bought" if given else "")
    )
