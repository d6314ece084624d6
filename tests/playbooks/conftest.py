"""Fixtures for the playbook tests: the Ansible collections the tests need (unpacked from the `ansible`
wheel on PyPI), a Debian root filesystem made with debootstrap (cached as a tarball under .work/),
and a helper that runs ansible-playbook and reads its recap.

On a developer machine without debootstrap, root or network these tests skip and say what to
install; with CI=true they fail instead."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.targets import ansible_collections, debian_rootfs, overlay, unavailable, unpacked

PLAYBOOKS = ROOT / "playbooks"
SITE = PLAYBOOKS / "site.yml"


def tool(name: str) -> str:
    """A program of the venv (ansible-playbook, ansible-lint), else from PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        unavailable(f"{name} is not installed", "install the dev extras: pip install -e '.[dev]'")
    assert found is not None
    return found


@pytest.fixture(scope="session")
def collections_path() -> Path:
    """The Ansible collections the playbook tests use (tests/targets.py), unpacked once into .work/cache."""
    return ansible_collections()


def _root_tools() -> None:
    if os.geteuid() != 0:
        unavailable("the chroot connection needs root", "run these tests as root (CI does)")
    if shutil.which("debootstrap") is None:
        unavailable(
            "debootstrap is not installed",
            "install it with: apt-get install -y --no-install-recommends debootstrap",
        )


@pytest.fixture(scope="session")
def rootfs_tarball() -> Path:
    """The shared Debian root filesystem (tests/targets.py)."""
    _root_tools()
    return debian_rootfs()


@contextlib.contextmanager
def fresh_rootfs(tarball: Path, where: Path) -> Iterator[Path]:
    """A fresh root filesystem as the cached tarball has it, removed afterwards: an overlay whose lower layer is the
    tarball unpacked once (tests/targets.py), so each test's writes land in a layer of its own under `where`."""
    with overlay([unpacked(tarball)], where) as rootfs:
        yield rootfs


@pytest.fixture(scope="session")
def shared_rootfs(rootfs_tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One restored root filesystem per test process, for check-mode runs (which write nothing)."""
    with fresh_rootfs(rootfs_tarball, tmp_path_factory.mktemp("shared") / "rootfs") as rootfs:
        yield rootfs


RECAP = re.compile(
    r"^(?P<host>\S+)\s+:\s+ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)"
    r"\s+failed=(?P<failed>\d+)\s+skipped=(?P<skipped>\d+)",
    re.M,
)


@dataclass
class PlaybookRun:
    rc: int
    output: str
    seconds: float

    def recap(self, host: str) -> dict[str, int]:
        for m in RECAP.finditer(self.output):
            if m["host"] == host:
                return {k: int(v) for k, v in m.groupdict().items() if k != "host"}
        raise AssertionError(f"no PLAY RECAP line for {host}:\n{self.output[-3000:]}")


def ansible_env(collections: Path | None = None) -> dict[str, str]:
    env = {
        **os.environ,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_PIPELINING": "1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    }
    if collections is not None:
        env["ANSIBLE_COLLECTIONS_PATH"] = str(collections)
    return env


def run_playbook(inventory: Path, *args: str, collections: Path | None = None) -> PlaybookRun:
    import time

    start = time.monotonic()
    proc = subprocess.run(
        [tool("ansible-playbook"), "-i", str(inventory), str(SITE), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**ansible_env(collections), "ANSIBLE_DISPLAY_OK_HOSTS": "0", "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "0"},
        # a hang guard, not a timing check: a first run that installs a virtual environment from wheels took up to
        # 207 s alone and timed out at 300 s with four workers on two cores beside other chroot tests
        timeout=900,
    )
    return PlaybookRun(proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start)


def render_inventory(stack: str, out: Path, *flags: str) -> Path:
    """`aicluster inventory STACK --out OUT FLAGS...` (e.g. `--slurm-version 24.11` for a rack-scale stack)."""
    proc = subprocess.run(
        [sys.executable, "-m", "aicluster.cli", "inventory", stack, "--out", str(out), *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def munge_key() -> str:
    """A fresh key per run: the role never carries a placeholder secret."""
    return base64.b64encode(os.urandom(128)).decode()
