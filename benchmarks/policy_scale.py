"""The policy pack over 10,000 resources: wall time and peak memory.

Builds a stack of N resources by replicating the p5-small example's captured resources (each copy
renamed, its URNs, parents and property dependencies remapped, so stack policies see N/38 whole
clusters: that many launch templates, groups, security groups and file systems), then runs the
whole pack in-process exactly as `aicluster preview` does. Prints the median of several runs, then where the
time goes (from separate runs with `evaluate(..., timings=...)`): setup (config, props wiring), resource
policies, stack resources, stack policies, findings, and the slowest policies, so a regression shows its place.

Usage: python benchmarks/policy_scale.py [--resources 10000] [--runs 5]
Prints figures; asserts nothing (timings belong in notes, not tests).
"""

from __future__ import annotations

import argparse
import copy
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aicluster.preview.engine import Capture, Resource, run_program  # noqa: E402
from aicluster.preview.policy import Timings, evaluate  # noqa: E402
from aicluster.stackfile import find_project, read_stack  # noqa: E402
from policies import POLICIES  # noqa: E402


def base_capture() -> Capture:
    st = read_stack(find_project(ROOT), "p5-small")
    return run_program(st.project.root, st.project.name, st.stack, st.engine_config(), st.secret_keys)


def replicate(capture: Capture, target: int) -> Capture:
    providers = [r for r in capture.resources if r.type.startswith("pulumi:providers:")]
    rest = [r for r in capture.resources if not r.type.startswith("pulumi:providers:")]
    out: list[Resource] = list(providers)
    copies = max(1, (target - len(providers)) // len(rest))
    for i in range(copies):
        rename = {r.urn: f"{r.urn}-{i}" for r in rest}
        for r in rest:
            c = copy.deepcopy(r)
            c.urn = rename[r.urn]
            c.name = f"{r.name}-{i}"
            c.parent = rename.get(r.parent or "", r.parent)
            c.dependencies = [rename.get(d, d) for d in r.dependencies]
            c.property_dependencies = {k: [rename.get(u, u) for u in v] for k, v in r.property_dependencies.items()}
            out.append(c)
    return Capture(capture.project, capture.stack, out, capture.outputs, capture.seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    base = base_capture()
    big = replicate(base, args.resources)
    times = []
    result = None
    for _ in range(args.runs):
        t0 = time.perf_counter()
        result = evaluate(big)
        times.append(time.perf_counter() - t0)
    assert result is not None
    small = [0.0] * args.runs
    for i in range(args.runs):
        t0 = time.perf_counter()
        evaluate(base)
        small[i] = time.perf_counter() - t0
    # Where the time goes, from separate runs (the timing itself costs a little): phases in run order, then the
    # policies that take longest. A stack policy's figure includes the stack facts it is the first to ask for.
    laps = [Timings() for _ in range(args.runs)]
    for t in laps:
        evaluate(big, timings=t)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n = len(big.resources)
    print(f"policies: {len(POLICIES)}  resources: {n:,} ({n // len(base.resources)} copies of p5-small)")
    print(f"evaluate {len(base.resources)} resources: median {statistics.median(small) * 1000:,.1f} ms")
    runs = ", ".join(f"{t:.2f}" for t in times)
    print(f"evaluate {n:,} resources: median {statistics.median(times):.2f} s (runs: {runs})")
    print(f"per resource: {statistics.median(times) / n * 1e6:,.0f} us")
    print(f"violations: {len(result.violations)}  passed: {len(result.passed)}  peak RSS: {rss_mb:,.0f} MB")
    phases = ", ".join(f"{k} {_median_ms(laps, 'phases', k):,.1f}" for k in laps[0].phases)
    print(f"breakdown of {n:,} resources (ms, median of {args.runs}): {phases}")
    slowest = sorted(laps[0].policies, key=lambda k: -_median_ms(laps, "policies", k))[:8]
    print("slowest policies (ms): " + ", ".join(f"{k} {_median_ms(laps, 'policies', k):,.1f}" for k in slowest))


def _median_ms(laps: list[Timings], table: str, key: str) -> float:
    return statistics.median(getattr(t, table).get(key, 0.0) for t in laps) * 1000


if __name__ == "__main__":
    main()
