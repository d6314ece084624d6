"""Small builders shared by tests."""

from __future__ import annotations

import contextlib
import copy
import io
from pathlib import Path
from typing import Any

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan, plan
from aicluster.spec import SpecError, parse_cluster

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


SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHqz8ZfGd2aB5c1Xv0m6f3T2x9Qz4Yk7sW1pL0nR8aJd ops@example.com"
AZURE_POOL: dict[str, Any] = {
    "name": "h100",
    "provider": "azure",
    "region": "eastus",
    "zone": "1",
    "instance_type": "Standard_ND96isr_H100_v5",
    "nodes": 16,
}


def azure_pool(**changes: Any) -> dict[str, Any]:
    data = {**copy.deepcopy(AZURE_POOL), **changes}
    return {k: v for k, v in data.items() if v is not None}


def azure_cluster(**changes: Any) -> dict[str, Any]:
    """An Azure ND H100 v5 cluster: one pool, Managed Lustre, an admin key."""
    data: dict[str, Any] = {
        "name": "nd-train",
        "tags": {"owner": "ml-platform", "cost-center": "4711"},
        "pools": [azure_pool()],
        "storage": [
            {
                "name": "scratch",
                "kind": "lustre",
                "capacity_tib": 16,
                "throughput_mb_s_per_tib": 500,
                "mount": "/lustre",
            }
        ],
        "scheduler": {"kind": "slurm"},
        "access": {"ssh_public_keys": [SSH_KEY]},
    }
    data.update(changes)
    return data


GCP_POOL: dict[str, Any] = {
    "name": "h100",
    "provider": "gcp",
    "region": "us-central1",
    "zone": "us-central1-a",
    "instance_type": "a3-megagpu-8g",
    "nodes": 16,
}


def gcp_pool(**changes: Any) -> dict[str, Any]:
    data = {**copy.deepcopy(GCP_POOL), **changes}
    return {k: v for k, v in data.items() if v is not None}


def a4x_max_pool(**changes: Any) -> dict[str, Any]:
    """One sub-block of bare-metal A4X Max (18 x a4x-maxgpu-4g-metal, GB300) from a reservation in us-east5-b."""
    return gcp_pool(
        **{
            "name": "gb300",
            "instance_type": "a4x-maxgpu-4g-metal",
            "region": "us-east5",
            "zone": "us-east5-b",
            "nodes": 18,
            "market": "reserved",
            **changes,
        }
    )


def tpu_pool(**changes: Any) -> dict[str, Any]:
    """Two v5p-256 slices in us-east5-a."""
    data = {"name": "v5p", "provider": "gcp", "region": "us-east5", "zone": "us-east5-a", "tpu": "v5p-256", "slices": 2}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def gcp_cluster(**changes: Any) -> dict[str, Any]:
    """A GCP A3 Mega cluster: one pool of 16 VMs, Managed Lustre, no storage price."""
    data: dict[str, Any] = {
        "name": "a3mega",
        "tags": {"owner": "ml-platform", "cost-center": "4711"},
        "pools": [gcp_pool()],
        "storage": [
            {
                "name": "scratch",
                "kind": "lustre",
                "capacity_tib": 18,
                "throughput_mb_s_per_tib": 1000,
                "mount": "/lustre",
            }
        ],
        "scheduler": {"kind": "slurm"},
    }
    data.update(changes)
    return data


def plan_of(catalog: Catalog, data: dict[str, Any]) -> ClusterPlan:
    return plan(parse_cluster(data, "t"), catalog)


def plan_problems(catalog: Catalog, data: dict[str, Any]) -> list[str]:
    """Every problem the planner reports for `data`, rendered as the user sees it (source "t")."""
    try:
        plan_of(catalog, data)
    except SpecError as err:
        return [p.render("t") for p in err.problems]
    raise AssertionError("the plan has no problems")


def files_under(root: Path) -> set[str]:
    """Every path below `root`, to show that a refused command wrote nothing."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def run_in_process(argv: list[str]) -> tuple[int, str]:
    """`aicluster ARGV` in this process: its exit code and what it wrote to stderr."""
    from aicluster.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


SITE: dict[str, Any] = {
    "name": "fra1",
    "network": {"cidrs": ["10.200.0.0/16"], "vpn_endpoint": "203.0.113.10", "bgp_asn": 65010},
    "power": {"pue": 1.25, "usd_per_kwh": 0.12, "rack_kw": 41, "max_kw": 2500},
    "carbon_g_per_kwh": 380,
    "hardware_cost": {"purchase_usd_per_node": 380000, "amortization_years": 4},
    "fabric": {"kind": "infiniband", "link_gbps": 400, "switch_radix": 64},
}
ONPREM_POOL: dict[str, Any] = {
    "name": "h100",
    "provider": "onprem",
    "site": "fra1",
    "instance_type": "dgx-h100",
    "nodes": 128,
}


def site(**changes: Any) -> dict[str, Any]:
    return {**SITE, **changes}


def onprem_pool(**changes: Any) -> dict[str, Any]:
    return {**ONPREM_POOL, **changes}


def onprem_cluster(**changes: Any) -> dict[str, Any]:
    """An owned site with 128 DGX H100 and slurmctld on a site host: the on-prem example stack's shape."""
    data: dict[str, Any] = {
        "name": "dgx-fra1",
        "tags": {"owner": "ml-platform", "cost-center": "4711"},
        "sites": [site()],
        "pools": [onprem_pool()],
        "scheduler": {"kind": "slurm", "controller": {"host": "slurm01", "address": "10.200.0.5"}},
    }
    data.update(changes)
    return data


def onprem_site_cluster() -> dict[str, Any]:
    """The example stack onprem-dgx-h100 (128 DGX H100 at site fra1, controller slurm01) as cluster data."""
    import yaml

    from tests.conftest import ROOT

    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.onprem-dgx-h100.yaml").read_text())
    return copy.deepcopy(doc["config"]["aicluster:cluster"])


def hybrid_site_cluster() -> dict[str, Any]:
    """The on-prem example site, its 128 DGX H100 listed as hosts (dgx-000 .. at 10.200.1.x / 10.200.2.x), bursting
    into 4 x p5.48xlarge spot on AWS (us-east-1a) and 8 x a3-megagpu-8g on GCP (us-east5-a)."""
    data = onprem_site_cluster()
    data["name"] = "hybrid-fra1"
    owned = data["pools"][0]
    owned["hosts"] = [
        {"name": f"dgx-{i:03d}", "address": f"10.200.{1 + i // 100}.{10 + i % 100}"} for i in range(owned["nodes"])
    ]
    data["pools"] += [
        pool(name="p5", nodes=4, market="spot"),
        gcp_pool(name="a3", region="us-east5", zone="us-east5-a", nodes=8),
    ]
    data["compliance"] = {**data["compliance"], "allowed_regions": ["us-east-1", "us-east5"]}
    return data


def data_stack(name: str) -> dict[str, Any]:
    """The cluster of a test stack, tests/data/stacks/Pulumi.<name>.yaml (stacks that are not examples)."""
    import yaml

    from tests.conftest import ROOT

    doc = yaml.safe_load((ROOT / "tests" / "data" / "stacks" / f"Pulumi.{name}.yaml").read_text())
    return copy.deepcopy(doc["config"]["aicluster:cluster"])
