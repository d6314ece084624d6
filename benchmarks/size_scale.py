"""`aicluster size` on a stack with 10 workloads: wall time and peak memory.

The stack is p5-large (384 x p5.48xlarge, 3,072 H100) with ten workloads generated into a temporary project:
Llama-3-shaped models from 8B to 405B, dense, at two sequence lengths, with and without a target, so the layout
search runs over the whole range of sizes. For the stack this prints:
- cold: a fresh `python -m aicluster.cli size STACK --json -` process (imports included), median of N runs;
- warm: planning and sizing alone (plan_stack + the JSON document) in an already-warm process, median of N runs;
- peak RSS of the cold processes (the largest child);
- per workload: the layouts searched and the chosen one (so a slow search can be told from a large one).

Usage: python benchmarks/size_scale.py [--runs 5] [--workloads 10]
Prints figures; asserts nothing (timings belong in notes, not tests).
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
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]

# Llama 3 shapes (arXiv:2407.21783 Table 3) and two smaller ones between them
SHAPES: list[dict[str, Any]] = [
    {"layers": 32, "hidden_size": 4096, "heads": 32, "kv_heads": 8, "ffn_size": 14336},  # 8B
    {"layers": 40, "hidden_size": 5120, "heads": 40, "kv_heads": 8, "ffn_size": 17920},  # ~13B
    {"layers": 60, "hidden_size": 6656, "heads": 52, "kv_heads": 4, "ffn_size": 23296},  # ~33B
    {"layers": 80, "hidden_size": 8192, "heads": 64, "kv_heads": 8, "ffn_size": 28672},  # 70B
    {"layers": 126, "hidden_size": 16384, "heads": 128, "kv_heads": 8, "ffn_size": 53248},  # 405B
]

CHILD = r"""
import json, resource, statistics, sys, time
from aicluster.stackfile import find_project, read_stack
from aicluster.preview import plan_stack
from aicluster.cli.commands.size import document
project = find_project()
stack = read_stack(project, sys.argv[1])
warm = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    plan = plan_stack(stack)
    json.dumps(document(stack.stack, plan.name, plan.workloads))
    warm.append(time.perf_counter() - t)
rows = [
    {"name": w.name, "searched": next((n for n in w.notes if n.startswith("searched")), ""),
     "layout": w.chosen.layout.model_dump() if w.chosen else None, "days": w.days}
    for w in plan.workloads
]
print(json.dumps({"warm": statistics.median(warm), "workloads": rows}))
"""


def _run(cmd: list[str], cwd: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def workloads(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        shape = SHAPES[i % len(SHAPES)]
        seq = 8192 if i < len(SHAPES) else 4096
        wl: dict[str, Any] = {
            "name": f"wl-{i:02d}",
            "pools": ["h100"],
            "model": {**shape, "vocabulary": 128256, "sequence_length": seq},
            "training": {"tokens": "2T", "global_batch_tokens": "16Mi"},
        }
        if i % 2:
            wl["targets"] = {"days": 30}
        out.append(wl)
    return out


def make_project(where: Path, count: int) -> str:
    shutil.copy(ROOT / "Pulumi.yaml", where / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", where / "__main__.py")
    (where / "stacks").mkdir()
    cfg = yaml.safe_load((ROOT / "stacks" / "Pulumi.p5-large.yaml").read_text())
    cfg["config"]["aicluster:cluster"]["workloads"] = workloads(count)
    name = f"bench-size-{count}"
    (where / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(cfg))
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workloads", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        stack = make_project(project, args.workloads)
        cold = []
        for _ in range(args.runs):
            t = time.perf_counter()
            _run([sys.executable, "-m", "aicluster.cli", "size", stack, "--json", "-"], project)
            cold.append(time.perf_counter() - t)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        warm = json.loads(
            subprocess.run(
                [sys.executable, "-c", CHILD, stack, str(args.runs)],
                cwd=project,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    print(f"aicluster size on p5-large (3,072 H100) with {args.workloads} workloads, {args.runs} runs (median)")
    print(f"cold (subprocess, imports included): {statistics.median(cold):.3f} s")
    print(f"warm (plan + size in a warm process): {warm['warm']:.3f} s")
    print(f"peak RSS of the cold processes: {rss:.1f} MB")
    for w in warm["workloads"]:
        lay = w["layout"]
        chosen = (
            f"TP{lay['tensor_parallel']} PP{lay['pipeline_parallel']} DP{lay['data_parallel']} ZeRO-{lay['zero_stage']}"
            if lay
            else "nothing fits"
        )
        days = f"{w['days']:.1f} days" if w["days"] is not None else "-"
        print(f"  {w['name']}: {chosen}, {days}; {w['searched'].split(';')[0]}")


if __name__ == "__main__":
    main()
