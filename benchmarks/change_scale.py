"""The change classification (`aicluster diff --json`, `preview --base`) at scale: the time and memory to classify
two previews of a large stack, and of the whole `aicluster diff` command as a fresh process.

For each base (default: p5-small, azure-nd-h100, gcp-a3mega-slurm, three-cloud) the first pool is set to 3,072 nodes,
previewed once, then previewed again with the pool at 2,048 nodes and the first file system at half its size (the
shrink a reviewer must see), and the two previews are classified: in-process (median of N, the classification
alone) and as `python -m aicluster diff BASE HEAD --json F -o F` (cold wall time, median of N). Prints the resource
count, steps, replaced/rollout counts and figures; asserts nothing (timings belong in notes, not tests).

Usage: python benchmarks/change_scale.py [--runs 5] [--base p5-small ...]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _stack(base: str, nodes: int, shrink: bool) -> dict:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{base}.yaml").read_text())
    cluster = doc["config"]["aicluster:cluster"]
    first = cluster["pools"][0]
    first["nodes"] = nodes
    if first["provider"] == "gcp" and first.get("instance_type", "").startswith("a3-"):
        cluster.setdefault("network", {})["cidrs"] = {f"gcp/{first['region']}": "10.128.0.0/14"}
    cluster["budgets"] = {}
    if shrink and cluster.get("storage"):
        cluster["storage"][0]["capacity_tib"] = cluster["storage"][0]["capacity_tib"] / 2
    return doc


def _preview(project: Path, name: str, doc: dict) -> dict:
    from aicluster.preview import preview_stack
    from aicluster.stackfile import find_project, read_stack

    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc))
    return preview_stack(read_stack(find_project(project), name)).to_json()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--base", action="append")
    args = ap.parse_args()
    from aicluster.catalog import load_catalog
    from aicluster.changes import classify

    rules = load_catalog().change_rules
    print(f"{'base':<18} {'resources':>9} {'steps':>6} {'replace':>7} {'rollout':>7} {'classify ms':>11} "
          f"{'diff cold s':>11} {'diff RSS MB':>11}")  # fmt: skip
    for base in args.base or ["p5-small", "azure-nd-h100", "gcp-a3mega-slurm", "three-cloud"]:
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp)
            shutil.copy(ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
            shutil.copy(ROOT / "__main__.py", project / "__main__.py")
            (project / "stacks").mkdir()
            before = _preview(project, "bench", _stack(base, 3072, shrink=False))
            after = _preview(project, "bench", _stack(base, 2048, shrink=True))
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                changes = classify(before, after, rules)
                times.append(time.perf_counter() - t0)
            out = changes.to_json()
            files = [project / "base.json", project / "head.json"]
            for f, d in zip(files, (before, after), strict=True):
                f.write_text(json.dumps(d))
            walls, rss = [], []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                proc = subprocess.run(
                    [sys.executable, "-m", "aicluster.cli", "diff", *map(str, files), "--json",
                     str(project / "steps.json"), "-o", str(project / "c.md")],
                    cwd=ROOT, capture_output=True, text=True, check=True,
                )  # fmt: skip
                walls.append(time.perf_counter() - t0)
                rss.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
                assert proc.returncode == 0
            s = out["changeSummary"]
            print(
                f"{base:<18} {len(after['resources']):>9} {len(out['steps']):>6} {s['replace']:>7} "
                f"{out['rollouts']:>7} {statistics.median(times) * 1000:>11.1f} {statistics.median(walls):>11.2f} "
                f"{max(rss):>11.0f}"
            )


if __name__ == "__main__":
    main()
