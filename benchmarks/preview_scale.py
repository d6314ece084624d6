"""Offline preview at 8, 64, 512 and 3,072 nodes: cold wall time, peak memory, and where the time went.

AWS fleets are groups (one launch template + Auto Scaling group per pool), so the resource count and
the preview time should not grow with the node count; Azure pools are one scale set per 100 VMs
(one InfiniBand domain each), so they grow by one resource per 100 nodes; GCP pools are one placement
policy, instance template and MIG per 1,500 VMs (the GCP base pins a /14 network so that 3,072 A3 Mega
nodes fit its GPU NIC subnets). A Kubernetes base (eks-p5, gke-a3mega, aks-nd-h100) grows node groups the same way
(EKS: one per 450 nodes, the managed node group limit), plus the control plane, the add-ons' Helm releases and
the Kueue objects.

For each size this runs the real command, `python -m aicluster -q --timings preview STACK --json FILE`, as
a fresh process (median of N runs, taken in rounds over all the sizes so that a drift of the machine's speed
moves them alike; the cold ratio of the largest to the smallest size is the median of the rounds' ratios), and
prints:
- cold: its wall time, from the fork to the exit, as a user waits for it;
- the breakdown from its `--timings` line: startup (interpreter and imports), catalog, plan, program (the
  Pulumi program under the mocks, the provider SDKs' imports included), policies, output (the JSON and the
  tables), other (the rest of main: arguments, reading the stack, imports made on the way), and exit (from
  main's end to the process's: the interpreter's teardown, unless the command skips it);
- warm: the program alone, run again inside a process that has run it once and then frozen its objects out of
  the cyclic collector's way (gc.freeze), as a long-running process would; median of N runs;
- peak RSS of the cold process;
- no cache: the same cold run with AICLUSTER_NO_CACHE=1 (catalog parsed, SDK modules loaded as usual), which is
  what a fresh CI runner without a kept cache sees. The other cold figures use the benchmark's own cache,
  filled first as a few previews on a developer's machine fill it.
At the largest size it also times cold `aicluster validate` and `aicluster plan`.

Usage: python benchmarks/preview_scale.py [--runs 5] [--base p5-small | azure-nd-h100 | gcp-a3mega-slurm | eks-p5 | ...]
Prints figures; asserts nothing (timings belong in notes, not tests).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SIZES = (8, 64, 512, 3072)
PHASES = ("startup", "catalog", "plan", "program", "policies", "output", "other", "exit")

# The program alone, warm: run once (imports, first registrations), then time N more runs in the same process.
WARM = r"""
import gc, json, statistics, sys, time
from aicluster.preview.engine import run_program
from aicluster.stackfile import find_project, read_stack
stack = read_stack(find_project(), sys.argv[1])
args = (stack.project.root, stack.project.name, stack.stack, stack.engine_config(), stack.secret_keys)
capture = run_program(*args)
# What a long-running process does once its imports are done: move them out of the collector's way (the CLI runs
# with the collector off). Unfrozen, a collection that walks the SDKs' classes lands in some runs (+0.1 s median).
gc.collect()
gc.freeze()
runs = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    run_program(*args)
    runs.append(time.perf_counter() - t)
print(json.dumps({"warm": statistics.median(runs), "resources": len(capture.resources)}))
"""

TIMING = re.compile(r"([a-z][a-z ]*?) (\d+\.\d+) s")


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


def _env(project: Path) -> dict[str, str]:
    """This checkout's code, whichever venv runs it; bytecode cached as Python does by default (an installed
    aicluster has its .pyc files: PYTHONDONTWRITEBYTECODE would time the compiler, not the tool); the
    benchmark's own aicluster cache (catalog, SDK modules), filled by warm_up()."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "AICLUSTER_NO_CACHE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    env["AICLUSTER_CACHE_DIR"] = str(project / ".cache")
    return env


# A developer's machine after a few previews: the catalog and the SDK modules the stack uses are cached.
WARM_UP = r"""
import sys
from aicluster.preview import preview_stack, sdkload
from aicluster.stackfile import find_project, read_stack
preview_stack(read_stack(find_project(), sys.argv[1]))
sdkload.fill(budget_s=3600)
"""


def warm_up(project: Path, stack: str) -> None:
    subprocess.run([sys.executable, "-c", WARM_UP, stack], cwd=project, check=True, env=_env(project))


def cold(project: Path, argv: list[str], *, cache: bool = True) -> dict[str, float]:
    """One fresh `aicluster` process: wall, peak RSS (MB) and the phases of its --timings line. `cache=False`:
    as on a machine whose cache is empty and stays so (AICLUSTER_NO_CACHE=1), e.g. a fresh CI runner."""
    env = _env(project)
    if not cache:
        env["AICLUSTER_NO_CACHE"] = "1"
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "aicluster", "-q", "--timings", *argv],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stderr is not None
    with proc.stderr:
        stderr = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = proc.returncode = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # 1: a mandatory policy failed, still a whole preview
        raise SystemExit(f"aicluster {' '.join(argv)} exited {code}:\n{stderr}")
    line = next(x for x in stderr.splitlines() if x.startswith("timings: "))
    found = {name: float(value) for name, value in TIMING.findall(line.removeprefix("timings: "))}
    row = {"wall": wall, "rss_mb": usage.ru_maxrss / 1024}
    row["startup"] = found.pop("startup and imports", 0.0)
    main = found.pop("main")
    for name in PHASES[1:-2]:
        row[name] = found.pop(name, 0.0)
    row["other"] = max(0.0, main - sum(row[n] for n in PHASES[1:-2]))
    row["exit"] = max(0.0, wall - row["startup"] - main)
    return row


def warm(project: Path, stack: str, runs: int) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", WARM, stack, str(runs)],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
        env=_env(project),
    )
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def median_row(rows: list[dict[str, float]]) -> dict[str, float]:
    out = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    out["rss_mb"] = max(r["rss_mb"] for r in rows)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", default="p5-small", help="example stack whose first pool is resized")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        make_project(project, args.base)
        warm_up(project, f"bench-{SIZES[0]}")
        # Round by round, every size in turn (8, 64, 512, 3072, 8, ...): a machine whose speed drifts during the
        # benchmark moves every size alike, and the ratio is taken round by round (paired), then its median.
        argvs = {n: ["preview", f"bench-{n}", "--json", str(project / f"preview-{n}.json")] for n in SIZES}
        runs: dict[int, list[dict[str, float]]] = {n: [] for n in SIZES}
        no_cache: dict[int, list[float]] = {n: [] for n in SIZES}
        for _ in range(args.runs):
            for nodes in SIZES:
                runs[nodes].append(cold(project, argvs[nodes]))
            for nodes in SIZES:
                no_cache[nodes].append(cold(project, argvs[nodes], cache=False)["wall"])
        for nodes in SIZES:
            row = median_row(runs[nodes])
            row["no_cache"] = statistics.median(no_cache[nodes])
            row.update(warm(project, f"bench-{nodes}", args.runs))
            preview = json.loads((project / f"preview-{nodes}.json").read_text())
            row["nodes"], row["gpus"] = nodes, preview["summary"]["gpus"]
            rows.append(row)
        paired = statistics.median(b["wall"] / a["wall"] for a, b in zip(runs[SIZES[0]], runs[SIZES[-1]], strict=True))
        largest = f"bench-{SIZES[-1]}"
        others = {
            command: median_row([cold(project, [command, largest]) for _ in range(args.runs)])
            for command in ("validate", "plan")
        }
    print(f"offline preview of {args.base} resized: cold process, median of {args.runs} runs (peak RSS: the max)")
    print(
        "(bytecode cached as by default; the aicluster cache warm, as after a few previews; 'no cache s': the same"
        " cold run with AICLUSTER_NO_CACHE=1, as on a fresh CI runner)"
    )
    head = f"{'nodes':>6} {'GPUs':>6} {'res.':>5} {'cold s':>7} {'RSS MB':>7} |"
    head += "".join(f" {name:>8}" for name in PHASES) + f" | {'no cache s':>10} {'warm program s':>14}"
    print(head)
    for r in rows:
        line = f"{r['nodes']:>6} {r['gpus']:>6} {r['resources']:>5.0f} {r['wall']:>7.3f} {r['rss_mb']:>7.1f} |"
        line += "".join(f" {r[name]:>8.3f}" for name in PHASES) + f" | {r['no_cache']:>10.3f} {r['warm']:>14.3f}"
        print(line)
    first, last = rows[0], rows[-1]
    print(
        f"ratio {last['nodes']}/{first['nodes']} nodes: cold {paired:.2f}x (the median of the rounds' ratios), "
        f"warm program {last['warm'] / first['warm']:.2f}x"
    )
    for command, r in others.items():
        print(
            f"aicluster {command} at {SIZES[-1]} nodes: cold {r['wall']:.3f} s, {r['rss_mb']:.1f} MB "
            f"(startup {r['startup']:.3f}, catalog {r['catalog']:.3f}, plan {r['plan']:.3f}, other {r['other']:.3f}, "
            f"exit {r['exit']:.3f})"
        )


if __name__ == "__main__":
    main()
