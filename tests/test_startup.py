"""What `validate` and `plan` load: the spec, the catalog and the planner, never the Pulumi SDK or the policy
engine (they were a third of those commands' time). The checks they share with the pack use its names only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

HEAVY = ("pulumi", "pulumi_policy", "grpc")
ESTIMATOR = "aicluster.sizing.workload"


def _loaded_after(*argv: str, watch: tuple[str, ...] = HEAVY) -> tuple[int, list[str]]:
    """Run the CLI's main in a fresh interpreter; its exit code and which of the `watch` modules (HEAVY: top-level
    packages) it imported."""
    script = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from aicluster.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main({list(argv)!r})
        loaded = set(sys.modules) | {{m.split(".")[0] for m in sys.modules}}
        print(json.dumps([code, sorted(loaded & {set(watch)!r})]))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    code, heavy = json.loads(proc.stdout.splitlines()[-1])
    return code, heavy


@pytest.mark.parametrize("command", ["validate", "plan"])
@pytest.mark.parametrize("stack", ["three-cloud", "hybrid-burst", "eks-p5"])
def test_validate_and_plan_load_neither_the_pulumi_sdk_nor_the_policy_engine(command: str, stack: str) -> None:
    code, heavy = _loaded_after("-C", str(ROOT), "-q", command, stack)
    assert code == 0
    assert heavy == []


def test_a_preview_still_loads_the_engine_and_the_pack() -> None:
    code, heavy = _loaded_after("-C", str(ROOT), "-q", "preview", "p5-small")
    assert code == 0
    assert heavy == sorted(HEAVY)


def test_the_workload_estimators_load_only_for_a_stack_with_workloads() -> None:
    assert _loaded_after("-C", str(ROOT), "-q", "plan", "p5-small", watch=(ESTIMATOR,)) == (0, [])
    assert _loaded_after("-C", str(ROOT), "-q", "plan", "p5-large", watch=(ESTIMATOR,)) == (0, [ESTIMATOR])
