"""Setting up on a fresh machine: the README's two commands, the system packages they need, and the quiet set-up
of .venv by the Makefile (run here with a stand-in Python, so no network and no two-minute install)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
SETUP = README.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]


def ci_packages() -> list[str]:
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if "apt-get install" in ln]
    words = line.split("apt-get install", 1)[1].split(">", 1)[0].split()
    return [w for w in words if not w.startswith("-")]


def test_readme_setup_names_every_system_package_ci_installs() -> None:
    packages = ci_packages()
    assert {"make", "python3-venv", "chromium", "slurmctld", "debootstrap", "openssh-client"} <= set(packages)
    named = set(re.findall(r"[a-z0-9][a-z0-9.+-]*", SETUP))
    assert [p for p in packages if p not in named] == []


def test_readme_setup_gives_exactly_two_commands() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", SETUP, re.DOTALL)
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]
    assert commands == ["make preview", "make test"]


# A stand-in for python3: `-m venv DIR` makes DIR/bin/python (itself) and DIR/bin/aicluster; `-m pip ...` prints
# the deprecation noise a real install prints, and fails when FAKE_PIP_FAIL is set.
FAKE_PYTHON = """#!/bin/sh
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
  printf '#!/bin/sh\\necho "aicluster $*"\\n' > "$3/bin/aicluster" && chmod +x "$3/bin/aicluster"
  exit 0
fi
i=0
while [ $i -lt 150 ]; do
  echo "SetuptoolsDeprecationWarning: License classifiers are deprecated ($i)" >&2; i=$((i+1))
done
if [ -n "$FAKE_PIP_FAIL" ]; then echo "ERROR: No matching distribution found for pulumi>=3" >&2; exit 1; fi
echo "Successfully installed aicluster"
"""


def make_preview(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    make = shutil.which("make")
    if make is None:
        if os.environ.get("CI"):
            pytest.fail("make not found: .ci/run installs it")
        pytest.skip("make not installed")
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    variables = [f"PYTHON={python}", f"VENV={tmp_path / 'venv'}", f"SETUP_LOG={tmp_path / 'setup.log'}"]
    return subprocess.run(
        [make, "--no-print-directory", "preview", *variables],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
        timeout=120,
    )


def test_first_make_preview_says_what_it_does_and_keeps_pip_noise_in_a_log(tmp_path: Path) -> None:
    proc = make_preview(tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout + proc.stderr
    assert f"setting up {tmp_path / 'venv'} (first run" in proc.stdout
    assert "Deprecation" not in shown
    assert "aicluster preview p5-small" in proc.stdout  # then the preview itself runs
    log = (tmp_path / "setup.log").read_text()
    assert log.count("SetuptoolsDeprecationWarning") == 300  # pip upgrade + install, all kept in the log
    again = make_preview(tmp_path)  # set up once: the second run only previews
    assert again.returncode == 0, again.stderr
    assert "setting up" not in again.stdout
    assert "aicluster preview p5-small" in again.stdout


def test_a_failed_set_up_shows_the_real_error(tmp_path: Path) -> None:
    proc = make_preview(tmp_path, FAKE_PIP_FAIL="1")
    assert proc.returncode != 0
    assert "ERROR: No matching distribution found for pulumi>=3" in proc.stderr
    assert f"setting up {tmp_path / 'venv'} failed" in proc.stderr
    assert not list((tmp_path / "venv").glob(".installed-*"))  # the next run tries again
