"""GCP's planner: GPU NIC VPCs and their MTUs, compact placement, the RoCE zone rule, and Cloud TPU slices."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from aicluster.catalog import CpuTopology, InstanceType, Region
from aicluster.catalog.pricing import compute_price, instance_override_hint
from aicluster.plan.context import (
    UNPRICED_NOTE,
    NodeFacts,
    Placed,
    PlanCtx,
    offered_zones,
    pool_record,
    region_of,
)
from aicluster.plan.models import GcpVpc, PlannedPool, PoolNvlink
from aicluster.plan.network import Cut, gcp_subnets
from aicluster.plan.pools import CloudPlanner
from aicluster.spec import GcpPool

from . import pool as gcp


class GcpPlanner(CloudPlanner):
    name: ClassVar[str] = "gcp"
    image_forms: ClassVar[str] = "an image path projects/<project>/global/images/[family/]<name>"
    # GCP's managed file systems take their addresses from the network's private services access range
    storage_subnets: ClassVar[Mapping[str, str]] = {"gcp-managed-lustre": "services", "filestore": "services"}
    controller_root_gib: ClassVar[int] = gcp.CONTROLLER_ROOT_VOLUME_GIB
    boot_disk_fallback: ClassVar[str] = gcp.BOOT_DISK_DEFAULT

    def is_image_reference(self, text: str) -> bool:
        return gcp.is_image_path(text)

    def plan_pool(self, ctx: PlanCtx, i: int, pool: Any) -> PlannedPool | None:
        """A pool of GPU VMs, or of Cloud TPU slices (one GcpPool model: the schema keeps its discriminator)."""
        if pool.tpu is not None:
            return self._plan_tpu_pool(ctx, i, pool)
        return super().plan_pool(ctx, i, pool)

    def place(
        self,
        ctx: PlanCtx,
        i: int,
        pool: GcpPool,
        it: InstanceType,
        reg: Region,
        zones: tuple[str, ...],
        image: str,
        nvlink: PoolNvlink | None,
    ) -> Placed | None:
        zone = pool.zone
        if zone is None:
            zone = zones[0]
            ctx.warnings.append(
                f"pools[{i}] ({pool.name}) has no zone; placed in {zone} (a GPU pool is a zonal managed instance group)"
            )
        details = gcp.details(pool, it, image, self.boot_disk(ctx, it), nvlink)
        path: tuple[str | int, ...] = ("pools", i, "region")
        key = f"gcp-{pool.region}"
        ctx.state("gcp").setdefault("fabrics", {}).setdefault(key, set()).add(it.network.fabric)
        nodes = pool.nodes or 0
        shared = gcp.shared_rdma_subnet(it)
        for nic in details.nics[1:]:
            if nic.subnet_role == "rdma" and shared:
                continue  # the vpc-roce-metal profile makes the RoCE VPC's one subnet itself (no address block)
            role = "gvnic" if nic.subnet_role == "gvnic" else f"{nic.subnet_role}-{nic.subnet_index}"
            ctx.need(path, "gcp", pool.region, None, nodes, role=role)
        if it.network.fabric == gcp.RDMA_FABRIC:
            profile = gcp.nic_layout(it).rdma_network_profile
            first = ctx.state("gcp").setdefault("rdma_zones", {}).setdefault(key, (i, zone, profile, it.name))
            if first[1] != zone:
                ctx.problem(
                    ("pools", i, "zone"),
                    f"pools[{first[0]}] already puts the {pool.region} RoCE network in {first[1]}; a RoCE VPC is "
                    f"created with a zonal network profile ({first[1]}-{first[2]}), so every RDMA pool ({first[3]}, "
                    f"{it.name}) of a region must share its zone: set zone {first[1]}, or use another region",
                    zone,
                )
                return None
            if first[2] != profile:
                ctx.problem(
                    ("pools", i, "region"),
                    f"pools[{first[0]}] ({first[3]}) makes the {pool.region} RoCE network with the profile "
                    f"{zone}-{first[2]}, and {it.name} needs {zone}-{profile}; a region has one RoCE VPC, so put "
                    "this pool in another region",
                    pool.region,
                )
                return None
        if len(details.groups) > 1 and nvlink is None:
            ctx.warnings.append(
                f"pools[{i}] ({pool.name}): {nodes} VMs exceed one compact placement policy "
                f"({details.max_vms_per_policy} VMs): "
                + ", ".join(f"{g.name} = nodes {g.first_node}-{g.first_node + g.nodes - 1}" for g in details.groups)
                + "; jobs that span groups cross a longer network path"
            )
        return Placed(zone, 1, {"gcp": details})

    def _plan_tpu_pool(self, ctx: PlanCtx, i: int, pool: GcpPool) -> PlannedPool | None:
        """A pool of Cloud TPU slices: the slice shape from the catalog, priced per chip-hour."""
        base: tuple[str | int, ...] = ("pools", i)
        assert pool.tpu is not None
        reg = region_of(ctx, (*base, "region"), "gcp", pool.region)
        tpu = gcp.tpu_generation(ctx.catalog.tpu_types, pool.tpu)
        if tpu is None:
            known = ", ".join(f"{t.type_prefix}-N" for t in ctx.catalog.tpu_types.values())
            ctx.problem((*base, "tpu"), f"no TPU generation in the catalog has this name; known: {known}", pool.tpu)
            return None
        chips, why = gcp.slice_chips(tpu, pool.tpu)
        if chips is None:
            ctx.problem((*base, "tpu"), why, pool.tpu)
            return None
        if ctx.scheduler.tpu_node_pools and tpu.gke_shape(chips) is None:
            known = ", ".join(f"{tpu.type_prefix}-{c * tpu.tensorcores_per_chip}" for c in sorted(tpu.topologies))
            ctx.problem(
                (*base, "tpu"),
                f"a GKE TPU node pool needs the slice topology, and the catalog has no documented topology for "
                f"{chips} {tpu.name} chips; use a size with one ({known}), or scheduler kind slurm",
                pool.tpu,
            )
            return None
        if reg is None:
            return None
        off = tpu.offering(pool.region)
        resolved = compute_price(tpu, pool.region, pool.market, ctx.spec.pricing.overrides)
        zones = offered_zones(
            ctx,
            base,
            f"pools[{i}] ({pool.name})",
            f"TPU {tpu.name}",
            tpu.accelerator,
            reg,
            off is not None,
            off.zones if off else (),
            [o.region for o in tpu.offerings],
            pool.zone,
        )
        if zones is None:
            return None
        zone = pool.zone or zones[0]
        if pool.zone is None:
            ctx.warnings.append(f"pools[{i}] ({pool.name}) has no zone; placed in {zone} (TPU slices are zonal)")
        if resolved.price is None:
            ctx.warnings.append(
                f"pools[{i}] ({pool.name}): the catalog has no {pool.market} price for TPU {tpu.name} in "
                f"{pool.region}, so the pool's chips are left out of the cost ({UNPRICED_NOTE}); add your rate per "
                f"chip-hour under pricing.overrides {instance_override_hint(tpu.accelerator, pool.region, pool.market)}"
            )
        details = gcp.tpu_details(pool, tpu, chips)
        hosts = details.hosts_per_slice * len(details.slices)
        key = ctx.need((*base, "region"), "gcp", pool.region, zone, hosts)
        ctx.state("gcp").setdefault("fabrics", {}).setdefault(key, set()).add("ici")
        if tpu.host_power_kw is None:
            ctx.warnings.append(
                f"pools[{i}] ({pool.name}): Google publishes no power figure for TPU {tpu.name} hosts, so the pool's "
                "power and carbon are not in the totals"
            )
        acc = ctx.catalog.accelerators[tpu.accelerator]
        facts = NodeFacts(
            name=pool.tpu,
            family=f"TPU {tpu.name}",
            accelerator=acc.id,
            accelerator_name=acc.name,
            accelerator_kind=acc.kind,
            bf16_tflops=acc.bf16_tflops,
            per_node=details.chips_per_host,
            vcpus=tpu.host_vcpus or 0,
            cpu_topology=CpuTopology(sockets=None, cores_per_socket=None, threads_per_core=None),  # not in the catalog
            memory_gib=tpu.host_memory_gib or 0.0,
            fabric="ici",
            bandwidth_gbps=(acc.interconnect_gb_s or 0.0) * 8 * details.chips_per_host,
            node_power_kw=tpu.host_power_kw or 0.0,
            power_basis="datasheet" if tpu.host_power_kw else "unpublished",
        )
        return pool_record(
            ctx,
            i,
            pool.name,
            "gcp",
            reg,
            zone,
            key,
            facts,
            hosts,
            pool.market,
            resolved.price,
            chips * len(details.slices),
            0.0,  # a TPU VM's boot disk comes with it
            tpu=details,
        )

    def subnets(self, block: str, region: Region, zones: dict[str | None, int], roles: dict[str, int]) -> list[Cut]:
        return gcp_subnets(block, zones, roles)

    def network_fields(self, ctx: PlanCtx, key: str, roles: dict[str, int]) -> dict[str, object]:
        """The host VPC's MTU and the extra VPCs the network's GPU NICs need."""
        fabrics: set[str] = ctx.state("gcp").get("fabrics", {}).get(key, set())
        # 8244 for the GPUDirect-TCPX(O) layouts; 8896 (the VPC maximum) for RDMA and TPU networks
        # (Multislice traffic crosses the host VPC) and networks with no GPU fabric.
        jumbo = bool(fabrics & {gcp.RDMA_FABRIC, "ici"}) or not fabrics & gcp.TCPX_FABRICS
        vpcs = [
            GcpVpc(name=f"gpu-{k}", role="gpu", mtu=gcp.MTU_TCPX, subnets=(k,)) for k in range(8) if f"gpu-{k}" in roles
        ]
        if "gvnic" in roles:
            vpcs.append(GcpVpc(name="gvnic-1", role="gvnic", mtu=gcp.MTU_JUMBO, subnets=(0,)))
        rdma = tuple(k for k in range(8) if f"rdma-{k}" in roles)
        placed = ctx.state("gcp").get("rdma_zones", {}).get(key)
        if placed is not None:
            _, zone, profile, _ = placed
            vpcs.append(
                GcpVpc(
                    name="rdma",
                    role="rdma",
                    mtu=gcp.MTU_JUMBO,
                    subnets=() if profile == "vpc-roce-metal" else rdma,  # the metal profile makes its own subnet
                    network_profile_zone=zone,
                    firewall_internal=False,  # a RoCE VPC accepts no firewall rules
                    network_profile=profile,
                )
            )
        return {"mtu": gcp.MTU_JUMBO if jumbo else gcp.MTU_TCPX, "vpcs": tuple(vpcs)}


PLANNER = GcpPlanner()
