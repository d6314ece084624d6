"""`aicluster tune` over 4 SSH hosts (network namespaces running sshd over a Debian root filesystem, the harness
of tests/tune/hosts.py): wall time of the first run (everything applied) and of a second run (nothing to change),
for the roles that apply without GPUs or vendor repositories (validate, base, nccl) on the p5-small stack.

Needs root, debootstrap, iproute2 and openssh-client; the root filesystem is built once (about a minute) and cached
under .work/cache. Usage: python benchmarks/tune_hosts.py [--runs 1]
Prints figures; asserts nothing (timings belong in notes, not tests).
"""

from __future__ import annotations

import argparse
import os
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

from tests.tune.hosts import ansible_env, missing_tools, rootfs_tar, ssh_hosts  # noqa: E402

NODES = ["h100-000", "h100-001", "h100-002", "h100-003"]


def project(where: Path) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", where / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", where / "__main__.py")
    (where / "stacks").mkdir()
    shutil.copy(ROOT / "stacks" / "Pulumi.p5-small.yaml", where / "stacks" / "Pulumi.bench.yaml")
    return where


def tune(where: Path, hosts: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "aicluster.cli",
            "tune",
            "bench",
            "--playbook",
            str(ROOT / "playbooks" / "site.yml"),
            "--hosts",
            str(hosts),
            "--limit",
            "slurm_compute",
            "--tags",
            "base,nccl",
            "-e",
            "base_apply_sysctl=false",
        ],
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "200", **env},
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"tune failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1, help="fresh host sets to measure (median reported)")
    args = parser.parse_args()
    missing = missing_tools()
    if missing:
        raise SystemExit(f"needs {', '.join(missing)}")
    t = time.perf_counter()
    rootfs_tar()
    print(f"root filesystem ready in {time.perf_counter() - t:.1f} s (cached after the first build)")
    firsts, seconds, ups = [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "project").mkdir()
            where = project(work / "project")
            t = time.perf_counter()
            with ssh_hosts(NODES, work / "nodes", purpose="benchmark") as (nodes, key):
                ups.append(time.perf_counter() - t)
                hosts = work / "hosts.yml"
                hosts.write_text(yaml.safe_dump({n.name: n.address for n in nodes}))
                env = ansible_env(key)
                firsts.append(tune(where, hosts, env))
                seconds.append(tune(where, hosts, env))
    print(f"4 SSH hosts, tags base,nccl, {args.runs} run(s) (median)")
    print(f"hosts up:                  {statistics.median(ups):6.2f} s")
    print(f"first run (applies):       {statistics.median(firsts):6.2f} s  (inventory + ansible-runner)")
    print(f"second run (changed=0):    {statistics.median(seconds):6.2f} s")


if __name__ == "__main__":
    main()
