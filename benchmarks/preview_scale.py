"""Offline preview at 8, 64, 512 and 3,072 nodes: wall time and peak memory.

AWS fleets are groups (one launch template + Auto Scaling group per pool), so the resource count and
the preview time should not grow with the node count; Azure pools are one scale set per 100 VMs
(one InfiniBand domain each), so they grow by one resource per 100 nodes; GCP pools are one placement
policy, instance template and MIG per 1,500 VMs (the GCP base pins a /14 network so that 3,072 A3 Mega
nodes fit its GPU NIC subnets). A Kubernetes base (eks-p5, gke-a3mega, aks-nd-h100) grows node groups the same way
(EKS: one per 450 nodes, the managed node group limit), plus the control plane, the add-ons' Helm releases and
the Kueue objects. For each size this prints:
- cold: a fresh `python` process running the whole preview (imports included), median of N runs;
- warm: the preview alone inside an already-warm process, median of N runs;
- peak RSS of the cold process.

Usage: python benchmarks/preview_scale.py [--runs 5] [--base p5-small | azure-nd-h100 | gcp-a3mega-slurm | eks-p5 | ...]
Prints figures; asserts nothing (timings belong in notes, not tests).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SIZES = (8, 64, 512, 3072)

CHILD = r"""
import json, resource, statistics, sys, time
t0 = time.perf_counter()
from aicluster.stackfile import find_project, read_stack
from aicluster.preview import preview_stack
project = find_project()
stack = read_stack(project, sys.argv[1])
result = preview_stack(stack)
cold = time.perf_counter() - t0
warm = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    preview_stack(stack)
    warm.append(time.perf_counter() - t)
print(json.dumps({
    "cold": cold,
    "warm": statistics.median(warm),
    "resources": len(result.capture.resources),
    "gpus": result.plan.totals.gpus,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def make_project(where: Path, base_stack: str) -> None:
    shutil.copy(ROOT / "Pulumi.yaml", where / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", where / "__main__.py")
    (where / "stacks").mkdir()
    base = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{base_stack}.yaml").read_text())
    for nodes in SIZES:
        cfg = json.loads(json.dumps(base))
        cluster = cfg["config"]["aicluster:cluster"]
        first = cluster["pools"][0]
        first["nodes"] = nodes
        if first["provider"] == "gcp" and first.get("instance_type", "").startswith("a3-"):
            cluster.setdefault("network", {})["cidrs"] = {f"gcp/{first['region']}": "10.128.0.0/14"}
        cfg["config"]["aicluster:cluster"]["budgets"] = {}
        (where / "stacks" / f"Pulumi.bench-{nodes}.yaml").write_text(yaml.safe_dump(cfg))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", default="p5-small", help="example stack whose first pool is resized")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        make_project(project, args.base)
        for nodes in SIZES:
            runs = []
            for _ in range(args.runs):
                proc = subprocess.run(
                    [sys.executable, "-c", CHILD, f"bench-{nodes}", str(args.runs)],
                    cwd=project,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs.append(json.loads(proc.stdout))
            rows.append(
                {
                    "nodes": nodes,
                    "gpus": runs[0]["gpus"],
                    "resources": runs[0]["resources"],
                    "cold_s": statistics.median(r["cold"] for r in runs),
                    "warm_s": statistics.median(r["warm"] for r in runs),
                    "rss_mb": max(r["rss_mb"] for r in runs),
                }
            )
    print(f"offline preview of {args.base} resized, {args.runs} runs each (median; peak RSS is the max)")
    print(f"{'nodes':>6} {'GPUs':>6} {'resources':>9} {'cold s':>8} {'warm s':>8} {'peak RSS MB':>12}")
    for r in rows:
        counts = f"{r['nodes']:>6} {r['gpus']:>6} {r['resources']:>9}"
        print(f"{counts} {r['cold_s']:>8.3f} {r['warm_s']:>8.3f} {r['rss_mb']:>12.1f}")
    first, last = rows[0], rows[-1]
    print(
        f"ratio {last['nodes']}/{first['nodes']} nodes: cold {last['cold_s'] / first['cold_s']:.2f}x, "
        f"warm {last['warm_s'] / first['warm_s']:.2f}x"
    )


if __name__ == "__main__":
    main()
