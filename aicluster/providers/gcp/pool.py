"""GCP specifics of a pool: the GPU NIC layout each machine type needs, compact placement groups,
how capacity is bought; and Cloud TPU slices.

NIC layouts (catalog instance_types/gcp.yaml header, sources gcp-ct-a3high-blueprint,
gcp-ct-a3mega-blueprint, gcp-ct-a3ultra-blueprint, gcp-dranet-gce):
- a3-highgpu-8g (GPUDirect-TCPX): nic0 in the host VPC, then 4 GPU NICs, each in a VPC of its own.
- a3-megagpu-8g (GPUDirect-TCPXO): nic0, then 8 GPU NICs, one VPC each.
- a3-ultragpu-8g, a4-highgpu-8g (GPUDirect RDMA): nic0 and nic1 are gVNICs in two VPCs, then 8 MRDMA
  NICs in one RoCE VPC (network profile `<zone>-vpc-roce`), one subnet per NIC; a4x-highgpu-4g the same with 4.
- a4x-maxgpu-4g-metal (bare metal, catalog `network.gcp`, gcp-ct-a4xmax): nic0 and nic1 are IDPF NICs in the
  same two VPCs, then 8 IPv6-only MRDMA NICs in one RoCE VPC made with `<zone>-vpc-roce-metal`, whose profile
  makes the VPC's one subnet itself: every MRDMA NIC is on it.
An A3 Mega without its eight GPU NICs still boots, and NCCL silently falls back to TCP at about 1% of the
bandwidth: the layout is derived here from the catalog, never written by hand in a stack.
"""

from __future__ import annotations

from aicluster.catalog import GcpNicLayout, InstanceType, TpuType
from aicluster.plan.groups import bounded, fill
from aicluster.plan.models import GcpNic, GcpPoolDetails, PlacementGroup, PoolNvlink, TpuDetails, TpuSlice
from aicluster.spec import GcpPool

# The host and GPU VPCs of A3 High/Mega are pinned to 8244 (the GKE A3 blueprints; Slurm blueprints leave the
# GPU VPCs at 8896, so pin it rather than inherit it); the VPCs of A3 Ultra/A4 use 8896, the VPC maximum
# (gcp-ct-a3mega-blueprint, gcp-ct-a3ultra-blueprint, gcp-rdma-vpc).
MTU_TCPX = 8244
MTU_JUMBO = 8896
TCPX_FABRICS = frozenset({"gpudirect-tcpx", "gpudirect-tcpxo"})
RDMA_FABRIC = "gpudirect-rdma"
# Slurm-GCP never puts more than 1,500 VMs under one compact placement policy (gcp-ct-slurm-resume):
# larger pools are split into groups, each its own policy, instance template and MIG.
PLACEMENT_MAX_VMS = 1500
# How many VMs one policy may hold at each max distance, as Slurm-GCP sizes them (gcp-ct-slurm-resume):
# 1 -> 22, 2 -> 256 for A3 (150 for other series), 3 -> 1,500. A group gets the tightest distance that holds
# it; GCP refuses a max distance for A3 Ultra/A4 and with reservations, and flex-start takes no policy.
MAX_DISTANCE_VMS: tuple[tuple[int, int, int], ...] = ((1, 22, 22), (2, 256, 150), (3, 1500, 1500))
# MIG VMs are named <base instance name>-<4 characters>, and instance names are at most 63 characters.
BASE_INSTANCE_NAME_MAX = 58
BOOT_DISK_DEFAULT = "pd-balanced"
CONTROLLER_ROOT_VOLUME_GIB = 100
# Identity-Aware Proxy's TCP forwarding range: the only source SSH is allowed from (gcp-iap-tcp).
IAP_SSH_RANGE = "35.235.240.0/20"


def is_image_path(image: str) -> bool:
    return image.startswith("projects/")


def image_pinned(image: str) -> bool:
    return "/global/images/family/" not in image


def nic_layout(it: InstanceType) -> GcpNicLayout:
    """How the type's NICs differ from the VM layout (catalog `network.gcp`; bare-metal A4X Max), else the VM one."""
    return it.network.gcp or GcpNicLayout()


def shared_rdma_subnet(it: InstanceType) -> bool:
    """The RoCE VPC's profile makes its one subnet itself, and every MRDMA NIC is on it (vpc-roce-metal)."""
    return nic_layout(it).rdma_network_profile == "vpc-roce-metal"


def nics(it: InstanceType) -> tuple[GcpNic, ...]:
    """Every NIC of the machine type, in the order GCP attaches them (nic0 first)."""
    layout = nic_layout(it)
    host = layout.host_nic_type
    out = [GcpNic(index=0, subnet_role="compute", subnet_index=0, vpc="", nic_type=host)]
    fabric, count = it.network.fabric, it.network.gpu_nics
    if fabric in TCPX_FABRICS:
        out += [
            GcpNic(index=k + 1, subnet_role="gpu", subnet_index=k, vpc=f"gpu-{k}", nic_type="GVNIC")
            for k in range(count)
        ]
    elif fabric == RDMA_FABRIC:
        out.append(GcpNic(index=1, subnet_role="gvnic", subnet_index=0, vpc="gvnic-1", nic_type=host))
        shared = shared_rdma_subnet(it)
        ipv6 = "IPV6_ONLY" if layout.rdma_stack_type == "IPV6_ONLY" else None
        out += [
            GcpNic(
                index=k + 2,
                subnet_role="rdma",
                subnet_index=0 if shared else k,
                vpc="rdma",
                nic_type="MRDMA",
                stack_type=ipv6,
            )
            for k in range(count)
        ]
    return tuple(out)


def max_distance(pool: GcpPool, it: InstanceType, vms: int) -> int | None:
    """The tightest max distance a compact policy of `vms` VMs may use, or None where GCP allows none."""
    if it.network.fabric == RDMA_FABRIC or pool.reservation or pool.market == "reserved":
        return None
    a3 = it.name.startswith("a3-")
    return next(d for d, a3_max, other_max in MAX_DISTANCE_VMS if vms <= (a3_max if a3 else other_max))


def placement(pool: GcpPool, it: InstanceType) -> tuple[str, str]:
    """(compact | reservation | none, why)."""
    if not pool.compact_placement:
        return "none", "compact_placement: false in the stack"
    if not it.placement_group or it.accelerator is None:
        return "none", f"{it.name} takes no compact placement policy"
    if pool.market == "flex-start":
        return "none", "flex-start VMs take no placement policy (Dynamic Workload Scheduler places them)"
    if it.nvlink_domain is not None:
        return "compact", (
            f"one managed instance group per NVLink domain ({it.nvlink_domain.nodes} VMs) under a workload policy "
            f"with accelerator topology 1x{it.nvlink_domain.nodes * it.accelerator_count}, which GCP requires of "
            f"{it.family} groups: each is one sub-block, one NVL72 rack"
        )
    if it.network.fabric == RDMA_FABRIC and pool.reservation:
        return "reservation", (
            f"{it.name} reservations place their VMs densely themselves, and GCP refuses a compact policy with "
            "max distance on them; like Cluster Toolkit's A3 Ultra blueprint, the pool relies on the reservation's "
            "placement"
        )
    return "compact", (
        f"compact placement policy, at most {PLACEMENT_MAX_VMS} VMs each"
        + (
            "; no max distance: GCP refuses one for A3 Ultra/A4 and with reservations"
            if it.network.fabric == RDMA_FABRIC or pool.reservation or pool.market == "reserved"
            else "; the tightest max distance that holds each group"
        )
    )


def groups(
    pool: GcpPool, it: InstanceType, nodes: int, compact: bool, nvlink: PoolNvlink | None = None
) -> tuple[PlacementGroup, ...]:
    if nvlink is not None:  # one group, policy and MIG per NVLink domain (sub-block)
        return tuple(
            PlacementGroup(
                name=d.name,
                index=d.index,
                nodes=d.nodes,
                first_node=d.first_node,
                hostname_prefix=bounded(pool.name, f"-nvl{d.index}", BASE_INSTANCE_NAME_MAX),
                max_distance=None,
                gpu_topology=f"1x{nvlink.gpus_per_domain}" if compact else None,
            )
            for d in nvlink.domains
        )
    return tuple(
        PlacementGroup(
            name=f"{pool.name}-p{k}",
            index=k,
            nodes=size,
            first_node=first,
            hostname_prefix=bounded(pool.name, f"-p{k}", BASE_INSTANCE_NAME_MAX),
            max_distance=max_distance(pool, it, size) if compact else None,
        )
        for k, (first, size) in enumerate(fill(nodes, PLACEMENT_MAX_VMS))
    )


def details(
    pool: GcpPool, it: InstanceType, image: str, boot_disk: str, nvlink: PoolNvlink | None = None
) -> GcpPoolDetails:
    assert pool.nodes is not None
    kind, reason = placement(pool, it)
    if pool.reservation:
        affinity = "SPECIFIC_RESERVATION"
    elif pool.market in ("spot", "flex-start"):
        affinity = "NO_RESERVATION"
    else:
        affinity = "ANY_RESERVATION"  # GCP's default: matching reservations are consumed first
    model = {"spot": "SPOT", "flex-start": "FLEX_START"}.get(pool.market, "STANDARD")
    if it.markets == ("reserved",):
        model = "RESERVATION_BOUND"  # A4X, A4X Max: a MIG of them takes no other provisioning model (gcp-a4x-mig)
    return GcpPoolDetails(
        nics=nics(it),
        groups=groups(pool, it, pool.nodes, kind == "compact", nvlink),
        placement=kind,
        placement_reason=reason,
        max_vms_per_policy=PLACEMENT_MAX_VMS,
        reservation_affinity=affinity,
        reservation=pool.reservation,
        provisioning_model=model,
        max_run_duration_s=(pool.max_run_hours or 168) * 3600 if pool.market == "flex-start" else None,
        on_host_maintenance="TERMINATE",  # GPU VMs cannot live-migrate
        image=image,
        image_pinned=image_pinned(image),
        boot_disk_type=boot_disk,
        root_volume_gib=pool.root_volume_gib,
        shielded_vm=True,
        os_login=True,
    )


# ------------------------------------------------------------------------------------------------
# TPU slices
# ------------------------------------------------------------------------------------------------


def tpu_generation(tpu_types: dict[str, TpuType], accelerator_type: str) -> TpuType | None:
    prefix = accelerator_type.rsplit("-", 1)[0]
    return next((t for t in tpu_types.values() if t.type_prefix == prefix), None)


def slice_chips(tpu: TpuType, accelerator_type: str) -> tuple[int | None, str]:
    """Chips of one slice of `accelerator_type`, or None and why it is not a valid size."""
    size = int(accelerator_type.rsplit("-", 1)[1])
    if size % tpu.tensorcores_per_chip:
        return None, (
            f"{tpu.type_prefix} sizes count TensorCores, {tpu.tensorcores_per_chip} per chip: use a multiple of "
            f"{tpu.tensorcores_per_chip}"
        )
    chips = size // tpu.tensorcores_per_chip
    step = tpu.slice_step_chips
    if chips in tpu.slice_sizes or (step is not None and chips % step == 0 and chips <= tpu.max_chips):
        return chips, ""
    sizes = ", ".join(f"{tpu.type_prefix}-{c * tpu.tensorcores_per_chip}" for c in tpu.slice_sizes)
    more = (
        f", or any multiple of {step * tpu.tensorcores_per_chip} up to {tpu.max_chips * tpu.tensorcores_per_chip}"
        if step
        else ""
    )
    return None, f"not a {tpu.name} slice size; sizes: {sizes}{more}"


def hosts_per_slice(tpu: TpuType, chips: int) -> int:
    return 1 if chips <= tpu.single_host_max_chips else chips // tpu.chips_per_host


def tpu_details(pool: GcpPool, tpu: TpuType, chips: int) -> TpuDetails:
    assert pool.tpu is not None
    hosts = hosts_per_slice(tpu, chips)
    count = pool.slices or 1
    queued = pool.market == "on-demand"
    machine_type, topology = tpu.gke_shape(chips) or (None, None)
    return TpuDetails(
        generation=tpu.name,
        accelerator_type=pool.tpu,
        chips_per_slice=chips,
        hosts_per_slice=hosts,
        chips_per_host=chips // hosts,
        slices=tuple(
            TpuSlice(name=f"{pool.name}-s{k}", index=k, hosts=hosts, first_node=k * hosts) for k in range(count)
        ),
        runtime_version=pool.runtime_version or tpu.default_runtime_version,
        api="queued-resource" if queued else "tpu-vm",
        api_reason=(
            "queued resource: the request waits for capacity instead of failing"
            if queued
            else f"TPU VM: the provider's queued resource cannot ask for {pool.market} capacity"
        ),
        spot=pool.market == "spot",
        reserved=pool.market == "reserved",
        gke_machine_type=machine_type,
        topology=topology,
    )
