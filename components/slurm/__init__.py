"""Slurm's components: in each cloud, the pools as VMs that boot the stack's image with the node cloud-init, and
slurmctld's VM where the controller is in that cloud (`PARTS`). A controller on a site host is an existing machine:
the on-prem builder records it with its site."""

from __future__ import annotations

from typing import Any

import pulumi

from aicluster.plan import ClusterPlan

# cloud -> the module whose `build` is Slurm's part there (components.Part)
PARTS: dict[str, str] = {
    "aws": "components.slurm.aws",
    "azure": "components.slurm.azure",
    "gcp": "components.slurm.gcp",
}


def finish(
    plan: ClusterPlan, parent: pulumi.ComponentResource, outputs: dict[str, Any], handles: dict[str, Any]
) -> None:
    """Nothing spans the clouds: the tuning step configures Slurm itself over the inventory."""
