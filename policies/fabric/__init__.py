"""Fabric correctness: the settings without which GPU-to-GPU traffic silently falls back to TCP or
splits into islands (EFA on AWS, GPUDirect NICs on GCP, InfiniBand scale sets on Azure), and multi-node NVLink
(GB200/GB300 NVL72): whole NVLink domains, and IMEX on them.

One rule a module: each is one cloud's by nature."""

from __future__ import annotations

from ..rule import Rule
from . import (
    disallow_capacity_block,
    disallow_over_100_vms,
    efa_self_reference,
    efa_single_az,
    infiniband_placement,
    missing_efa_cards,
    missing_gpu_nics,
    missing_imex,
    split_nvlink_domain,
)

POLICIES: list[Rule] = [
    missing_efa_cards.POLICY,
    efa_self_reference.POLICY,
    efa_single_az.POLICY,
    disallow_capacity_block.POLICY,
    missing_gpu_nics.POLICY,
    infiniband_placement.POLICY,
    disallow_over_100_vms.POLICY,
    split_nvlink_domain.POLICY,
    missing_imex.POLICY,
]
