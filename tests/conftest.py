from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from aicluster.catalog import Catalog, load_catalog

ROOT = Path(__file__).resolve().parents[1]
# The catalog cache of this test session (its subprocesses inherit it): never the user's own cache dir.
os.environ["AICLUSTER_CACHE_DIR"] = tempfile.mkdtemp(prefix="aicluster-test-cache-")
atexit.register(shutil.rmtree, os.environ["AICLUSTER_CACHE_DIR"], ignore_errors=True)
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
IN_CI = os.environ.get("CI") == "true"


def _scheduler_kind(stack: str) -> str:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text(encoding="utf-8"))
    return str(doc["config"]["aicluster:cluster"].get("scheduler", {}).get("kind", "slurm"))


# Example stacks by scheduler: Slurm files, slurmctld and tuning apply to the first; the second get control planes
SLURM_STACKS = [s for s in STACKS if _scheduler_kind(s) == "slurm"]
KUBERNETES_STACKS = [s for s in STACKS if _scheduler_kind(s) == "kubernetes"]


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A scratch copy of the project with the p5-small stack as `good`."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", tmp_path / "__main__.py")
    (tmp_path / "stacks").mkdir()
    shutil.copy(ROOT / "stacks" / "Pulumi.p5-small.yaml", tmp_path / "stacks" / "Pulumi.good.yaml")
    return tmp_path


def write_stack(project: Path, name: str, text: str) -> None:
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(text)


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "aicluster.cli", *args], cwd=cwd, capture_output=True, text=True, check=False, env=env
    )
