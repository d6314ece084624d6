"""Small builders shared by tests."""

from __future__ import annotations

import copy
from typing import Any

BASE_CLUSTER: dict[str, Any] = {
    "name": "llm-train",
    "tags": {"owner": "ml-platform", "cost-center": "4711"},
    "pools": [
        {
            "name": "h100",
            "provider": "aws",
            "region": "us-east-1",
            "zone": "us-east-1a",
            "instance_type": "p5.48xlarge",
            "nodes": 4,
        }
    ],
    "storage": [
        {
            "name": "scratch",
            "kind": "lustre",
            "capacity_tib": 48,
            "throughput_mb_s_per_tib": 250,
            "mount": "/fsx",
        }
    ],
    "scheduler": {"kind": "slurm"},
}


def cluster(**changes: Any) -> dict[str, Any]:
    """BASE_CLUSTER with top-level keys replaced."""
    data = copy.deepcopy(BASE_CLUSTER)
    data.update(changes)
    return data


def pool(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE_CLUSTER["pools"][0])
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}
