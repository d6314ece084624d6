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


# The tests that take longest (real apt installs in a chroot, ansible-lint, SSH hosts in network namespaces, a
# bursting Slurm site): together more than half of the suite's time on 2 cores. `make test` starts them first and
# hands tests to the workers one at a time (pytest-xdist's --maxschedchunk=1), so that the workers share them and
# the short tests fill the gaps, instead of one worker ending on a queue of them while the others are idle. xdist
# still gives each worker its first two tests at once: worker k gets entries 2k-1 and 2k, so the list pairs a long
# test with a shorter one (with -n 4, warm caches: 189 + 101 | 20 + 125 | 114 + 65 s, then two check-mode runs).
# Only the order changes: every test runs, whatever this list says.
LONGEST_FIRST = (
    "tests/playbooks/test_chroot_arm64.py::",  # a fresh machine builds the arm64 root under emulation (~14 min)
    "tests/integration/test_slurm_blocks.py::",  # and the Debian 13 root with Slurm 24.11
    "tests/playbooks/test_chroot_burst.py::",
    "tests/tune/test_tune_hosts.py::",
    "tests/playbooks/test_lint.py::test_ansible_lint_production_profile_passes",
    "tests/playbooks/test_chroot.py::test_roles_apply_to_a_debian_rootfs_and_a_second_run_changes_nothing",
    "tests/tune/test_slurm_hosts.py::",
    "tests/integration/test_burst.py::",
    "tests/playbooks/test_chroot.py::",
    "tests/integration/test_discover_aws.py::",
    "tests/tune/test_tune_local.py::",
    "tests/playbooks/test_lint.py::",
    "tests/playbooks/test_defaults.py::",
    "tests/test_inventory.py::",
)


def _start_rank(item: pytest.Item) -> int:
    for rank, prefix in enumerate(LONGEST_FIRST):
        if item.nodeid.startswith(prefix):
            return rank
    return len(LONGEST_FIRST) + (0 if item.get_closest_marker("slow") else 1)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest tests first (LONGEST_FIRST, then the other `slow` ones), the rest in their order (a stable sort)."""
    items.sort(key=_start_rank)
