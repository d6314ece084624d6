"""What a pool's plan decided, one line each (NICs, placement, scale sets, TPU slices, unpinned images).

The one CLI file that branches on a provider, until each provider's folder describes its own pools
(architecture.md 1.4: `providers/<p>/describe.py`); tests/cli/test_structure.py keeps it the only one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .format import basis

if TYPE_CHECKING:
    from aicluster.plan import PlannedPool


def pool_notes(p: PlannedPool, *, stack_images: bool = True) -> list[str]:
    """A pool's notes, plain text, in the order the plan prints them. `stack_images`: the scheduler's pools boot the
    stack's image (SchedulerPlanner.pool_images); where they boot the service's node image (Kubernetes), the
    unpinned-image notes do not apply (the Kubernetes notes say so)."""
    return [*_aws_notes(p, stack_images), *_azure_notes(p, stack_images), *_gcp_notes(p, stack_images)]


def _aws_notes(p: PlannedPool, stack_images: bool) -> list[str]:
    if p.aws is None:
        return []
    notes = [
        f"{p.name}: {p.aws.efa_devices} EFA + 1 ENA interfaces per node; placement group: "
        f"{p.aws.placement_group} ({p.aws.placement_group_reason}); price {basis(p)}"
    ]
    if not p.aws.image_pinned and stack_images:
        notes.append(
            f"{p.name}: image {p.aws.image} is not pinned: nodes launched later may boot a newer AMI "
            "(driver, EFA and NCCL versions drift); pin it with image: ami-... or resolve:ssm:...:<version>"
        )
    return notes


def _azure_notes(p: PlannedPool, stack_images: bool) -> list[str]:
    if p.azure is None:
        return []
    fabric = "InfiniBand domain" if p.azure.infiniband else "scale set"
    domains = ", ".join(
        f"{s.name} ({s.nodes} VMs: nodes {s.first_node}-{s.first_node + s.nodes - 1})" for s in p.azure.scale_sets
    )
    if p.nvlink is not None:
        across = "; InfiniBand spans the scale sets" if p.azure.infiniband_across_scale_sets else ""
        notes = [
            f"{p.name}: one scale set per NVLink rack ({p.nvlink.nodes_per_domain} VMs): {domains}{across}; "
            f"price {basis(p)}"
        ]
    else:
        notes = [
            f"{p.name}: one {fabric} per scale set, at most {p.azure.max_vms_per_scale_set} VMs each: {domains}; "
            f"price {basis(p)}"
        ]
    if not p.azure.image_pinned and stack_images:
        notes.append(
            f"{p.name}: image {p.azure.image} is not pinned: VMs added later may boot a newer image (driver, "
            "OFED and NCCL versions drift); pin a version, e.g. image: publisher:offer:sku:<version>"
        )
    return notes


def _gcp_notes(p: PlannedPool, stack_images: bool) -> list[str]:
    """A GCP pool's NICs, placement groups, TPU slice shape; its image family where its VMs boot the stack's image."""
    notes = []
    if p.gcp is not None:
        d = p.gcp
        kinds: list[str] = [n.nic_type for n in d.nics]
        groups = ", ".join(
            f"{g.name} ({g.nodes} VMs: nodes {g.first_node}-{g.first_node + g.nodes - 1}"
            + (f", max distance {g.max_distance}" if g.max_distance else "")
            + ")"
            for g in d.groups
        )
        host = "IDPF" if "IDPF" in kinds else "gVNIC"  # IDPF: a bare-metal instance's host NICs (A4X Max)
        notes.append(
            f"{p.name}: {len(d.nics)} NICs per VM ({kinds.count(host.upper())} {host}"
            + (f" + {kinds.count('MRDMA')} MRDMA" if "MRDMA" in kinds else "")
            + (" IPv6-only" if any(n.stack_type == "IPV6_ONLY" for n in d.nics) else "")
            + f", {p.fabric}); placement: {d.placement} ({d.placement_reason}); groups: {groups}; "
            f"{d.provisioning_model.lower().replace('_', '-')} capacity, reservation affinity {d.reservation_affinity}"
            + (f" {d.reservation}" if d.reservation else "")
            + f"; price {basis(p)}"
        )
        if not d.image_pinned and stack_images:
            notes.append(
                f"{p.name}: image {d.image} is an image family: VMs created later may boot a newer image (driver "
                "and NCCL versions drift); pin one with image: projects/<project>/global/images/<name>"
            )
    if p.tpu is not None:
        t = p.tpu
        notes.append(
            f"{p.name}: {len(t.slices)} x {t.accelerator_type} = {t.chips_per_slice} chips on {t.hosts_per_slice} "
            f"TPU VM(s) per slice ({t.chips_per_host} chips each); {t.api_reason}; runtime {t.runtime_version}; "
            f"price {basis(p)} per chip-hour"
        )
    return notes
