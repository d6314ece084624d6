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


def _loaded_after(*argv: str) -> tuple[int, list[str]]:
    """Run the CLI's main in a fresh interpreter; its exit code and which of HEAVY's packages it imported."""
    script = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from aicluster.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main({list(argv)!r})
        heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {set(HEAVY)!r})
        print(json.dumps([code, heavy]))
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
