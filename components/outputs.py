"""What every provider's builder says about a pool or file system in the stack outputs (the tuning step
reads them); each provider adds its own handles (ASG name, scale sets, DNS name, mount address)."""

from __future__ import annotations

from typing import Any

from aicluster.plan import ClusterPlan, PlannedFilesystem, PlannedPool


def pool_outputs(pool: PlannedPool, **handles: Any) -> dict[str, Any]:
    return {
        "provider": pool.provider,
        "region": pool.region,
        "zone": pool.zone,
        "instance_type": pool.instance_type,
        "nodes": pool.nodes,
        "accelerators_per_node": pool.accelerators_per_node,
        "fabric": pool.fabric,
        **handles,
    }


def filesystem_outputs(fs: PlannedFilesystem, **handles: Any) -> dict[str, Any]:
    return {"kind": fs.kind, "service": fs.service, "mount": fs.mount, **handles}


def learned(plan: ClusterPlan, network_key: str) -> list[str]:
    """The CIDRs a cloud network reaches over the plan's VPN links (what its firewall must let in)."""
    return sorted({c for v in plan.vpns for side in (v.a, v.b) if side.key == network_key for c in side.learns})
