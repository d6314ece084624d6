"""Planning an owned site, and previewing a hybrid stack: wall time and peak memory.

- plan: `plan(spec, catalog)` of the on-prem example (stacks/Pulumi.onprem-dgx-h100.yaml) grown to 128, 1,024
  and 4,096 DGX H100 (two tiers of QM9700 up to 256 nodes, three above), median of N runs in a warm process,
  plus the same with every host listed (name, address, BMC, rack), which the spec checks one by one;
- preview: a cold `python` process running the whole offline preview of the hybrid example
  (stacks/Pulumi.hybrid-burst.yaml: a site, an AWS and a GCP pool, the VPNs between them), median of N runs,
  with its peak RSS.

Usage: python benchmarks/onprem_scale.py [--runs 5]
Prints figures; asserts nothing (timings belong in notes, not tests).
"""

from __future__ import annotations

import argparse
import copy
import ipaddress
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aicluster.catalog import load_catalog  # noqa: E402
from aicluster.plan import plan  # noqa: E402
from aicluster.spec import parse_cluster  # noqa: E402

SIZES = (128, 1024, 4096)

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from aicluster.stackfile import find_project, read_stack
from aicluster.preview import preview_stack
result = preview_stack(read_stack(find_project(), "hybrid-burst"))
print(json.dumps({"cold": time.perf_counter() - t0, "resources": len(result.capture.resources),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def base() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "stacks" / "Pulumi.onprem-dgx-h100.yaml").read_text(encoding="utf-8"))
    return dict(data["config"]["aicluster:cluster"])


def sized(nodes: int, hosts: bool) -> dict[str, Any]:
    data = copy.deepcopy(base())
    data["sites"][0]["network"]["cidrs"] = ["10.192.0.0/12"]
    data["sites"][0]["power"]["max_kw"] = 100_000
    pool = data["pools"][0]
    if hosts:
        first = ipaddress.IPv4Address("10.193.0.1")
        pool.pop("nodes")
        pool["hosts"] = [
            {
                "name": f"dgx{i:05d}",
                "address": str(first + i),
                "bmc": f"redfish://10.194.{i // 250}.{i % 250 + 1}/redfish/v1/Systems/1",
                "bmc_secret": "bmcPassword",
                "rack": f"r{i // 4:04d}",
            }
            for i in range(nodes)
        ]
    else:
        pool["nodes"] = nodes
    return data


def time_plan(nodes: int, hosts: bool, runs: int) -> tuple[float, float, str]:
    catalog = load_catalog()
    data = sized(nodes, hosts)
    parse, whole = [], []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        spec = parse_cluster(data, "bench")
        t1 = time.perf_counter()
        result = plan(spec, catalog)
        whole.append(time.perf_counter() - t0)
        parse.append(t1 - t0)
    assert result is not None
    f = result.sites[0].fabrics[0]
    shape = f"{f.tiers} tiers: {f.leaf_switches} leaf / {f.spine_switches} spine / {f.core_switches} core"
    return statistics.median(parse), statistics.median(whole), shape


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print("plan of an owned site (warm process, median of", args.runs, "runs)")
    print(f"{'nodes':>6} {'hosts listed':>12} {'parse':>9} {'parse+plan':>11}  fabric")
    for n in SIZES:
        for hosts in (False, True):
            parse, whole, shape = time_plan(n, hosts, args.runs)
            print(f"{n:>6,} {'yes' if hosts else 'no':>12} {parse * 1000:>7.1f}ms {whole * 1000:>9.1f}ms  {shape}")
    cold = []
    last: dict[str, Any] = {}
    for _ in range(args.runs):
        done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, check=True)
        last = json.loads(done.stdout.strip().splitlines()[-1])
        cold.append(last["cold"])
    print(
        f"hybrid-burst preview (cold process, median of {args.runs}): {statistics.median(cold):.2f} s, "
        f"{last['resources']} resources, peak RSS {last['rss_mb']:.0f} MB"
    )


if __name__ == "__main__":
    main()
