"""Rack-scale NVLink stacks at scale: cold plan and offline preview, wall time and peak memory.

- onprem: stacks/Pulumi.onprem-gb200-su.yaml grown from one DGX SuperPOD scalable unit to 64 DGX GB200 NVL72 racks
  (8 SUs: 1,152 compute trays, 4,608 GPUs; 64 NVLink domains, 64 liquid-cooled racks, a three-tier QM9700 fat tree
  of 4 rails), the site's power widened to hold them; once with `nodes: 1152`, once with every tray listed as a
  host (name, address, the rack it is in), which the spec and the rack checks read one by one;
- gcp: stacks/Pulumi.gcp-a4x.yaml grown from 2 to 16 A4X sub-blocks (288 VMs, 1,152 GPUs): a compact placement
  policy, instance template and managed instance group per NVLink domain.

Each is the real command run as a fresh process, `python -m aicluster -q --timings plan|preview STACK`, timed and
measured as benchmarks/preview_scale.py does it (its helpers: the benchmark's own warm cache, the cold wall time
from fork to exit, the peak RSS, the phases of the --timings line), median of N runs taken in rounds over the stacks
(peak RSS: the max).

Usage: python benchmarks/rack_scale.py [--runs 5]
Prints figures; asserts nothing (timings belong in notes, not tests).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from preview_scale import PHASES, ROOT, cold, median_row, warm_up

RACKS = 64
TRAYS_PER_RACK = 18
A4X_DOMAINS = 16


def _stack(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text(encoding="utf-8"))
    return data


def onprem(hosts: bool) -> dict[str, Any]:
    """64 GB200 NVL72 racks at the example's site; `hosts`: every tray listed with the rack it is in."""
    doc = _stack("onprem-gb200-su")
    cluster = doc["config"]["aicluster:cluster"]
    cluster.pop("budgets", None)
    site = cluster["sites"][0]
    site["power"]["max_kw"] = 12_000  # 64 racks x 120 kW x PUE 1.15 = 8,832 kW
    pool = cluster["pools"][0]
    trays = RACKS * TRAYS_PER_RACK
    if hosts:
        pool.pop("nodes")
        first = ipaddress.IPv4Address("10.210.8.1")
        pool["hosts"] = [
            {"name": f"gb{i:04d}", "address": str(first + i), "rack": f"r{i // TRAYS_PER_RACK + 1:02d}"}
            for i in range(trays)
        ]
    else:
        pool["nodes"] = trays
    return doc


def gcp() -> dict[str, Any]:
    """16 A4X sub-blocks (288 VMs) from the example's reservation."""
    doc = _stack("gcp-a4x")
    cluster = doc["config"]["aicluster:cluster"]
    cluster.pop("budgets", None)
    cluster["pools"][0]["nodes"] = A4X_DOMAINS * TRAYS_PER_RACK
    return doc


STACKS = {
    "bench-gb200-64r": lambda: onprem(hosts=False),
    "bench-gb200-64r-hosts": lambda: onprem(hosts=True),
    "bench-a4x-16d": gcp,
}


def make_project(where: Path) -> None:
    shutil.copy(ROOT / "Pulumi.yaml", where / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", where / "__main__.py")
    (where / "stacks").mkdir()
    for name, build in STACKS.items():
        (where / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(build(), sort_keys=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        make_project(project)
        warm_up(project, "bench-a4x-16d")  # the catalog and the GCP SDK modules cached, as on a developer's machine
        argvs = {
            (name, command): [command, name]
            + (["--json", str(project / f"{name}.json")] if command == "preview" else [])
            for name in STACKS
            for command in ("plan", "preview")
        }
        runs: dict[tuple[str, str], list[dict[str, float]]] = {key: [] for key in argvs}
        for _ in range(args.runs):
            for key, argv in argvs.items():
                runs[key].append(cold(project, argv))
        previews = {name: json.loads((project / f"{name}.json").read_text()) for name in STACKS}
    print(f"rack-scale stacks: cold process, median of {args.runs} runs (peak RSS: the max)")
    head = f"{'stack':<22} {'command':<8} {'nodes':>6} {'GPUs':>6} {'NVL':>4} {'res.':>5} {'cold s':>7} {'RSS MB':>7} |"
    print(head + "".join(f" {name:>8}" for name in PHASES))
    for (name, command), rows in runs.items():
        r = median_row(rows)
        p = previews[name]
        line = (
            f"{name:<22} {command:<8} {p['summary']['nodes']:>6} {p['summary']['gpus']:>6} "
            f"{len(p['nvlink_domains']):>4} {p['summary']['resources']:>5} {r['wall']:>7.3f} {r['rss_mb']:>7.1f} |"
        )
        print(line + "".join(f" {r[phase]:>8.3f}" for phase in PHASES))
    for name, p in previews.items():
        for s in p["sites"]:
            for f in s["fabrics"]:
                print(
                    f"{name}: fabric {f['name']}: {f['rails']} rails of {f['switch']}, {f['tiers']} tiers, "
                    f"{f['leaf_switches']} leaf / {f['spine_switches']} spine / {f['core_switches']} core, "
                    f"{len(s['racks'])} racks"
                )


if __name__ == "__main__":
    main()
