"""The distribution as a user gets it (issue 30): the wheel built from this checkout, installed in a fresh virtualenv
outside it, used from a project `aicluster init` wrote and on a stack file outside any project.

The fresh virtualenv reaches the dependencies (the Pulumi SDKs, pydantic, ...) of the environment running the tests
through a .pth file, so nothing is downloaded for them; aicluster, components, policies and the playbooks come from
the wheel only (asserted: the imports resolve inside the fresh virtualenv, and no PYTHONPATH reaches the commands).
Building the wheel needs setuptools and wheel: from this environment where it has them, else pip's isolated build
fetches them (as `pip install .` does)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

# What the wheel is built from: the distribution's sources (pyproject.toml's packages and data), copied without
# caches so that a stale build/ or __pycache__ of the checkout cannot leak into it.
SOURCES = ("pyproject.toml", "README.md", "aicluster", "components", "policies", "playbooks")


def _has_build_backend() -> bool:
    try:
        import setuptools
        import wheel  # noqa: F401  # bdist_wheel before setuptools 70.1
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 68


def _run(cmd: list[str | Path], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(ROOT / name, src / name)
    isolation = ["--no-build-isolation"] if _has_build_backend() else []
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "--disable-pip-version-check", "-q"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _ok(_run([*cmd, "-w", tmp, src], tmp, env))
    (built,) = tmp.glob("aicluster-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh virtualenv outside the checkout with the wheel installed; the environment the commands run in."""
    home = tmp_path_factory.mktemp("user")
    env_dir = home / "venv"
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", env_dir], home, dict(os.environ)))
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", python]
    _ok(_run([*pip, "install", "--no-deps", "--no-index", "-q", wheel], home, env))
    site = Path(
        _ok(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], home, env)).strip()
    )
    deps = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "_aicluster_test_deps.pth").write_text("".join(f"{d}\n" for d in deps), encoding="utf-8")
    return env_dir, env


def test_the_wheel_holds_the_package_data_the_program_the_policy_pack_and_the_playbooks(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    playbooks = {p.relative_to(ROOT).as_posix() for p in (ROOT / "playbooks" / "roles").rglob("*") if p.is_file()}
    expected = {
        "aicluster/program.py",
        "aicluster/templates/project/example-stack.yaml",
        "aicluster/catalog/data/accelerators.yaml",
        "components/__init__.py",
        "policies/PulumiPolicy.yaml",
        "policies/__main__.py",
        "playbooks/site.yml",
        "playbooks/requirements.yml",
        *{p for p in playbooks if "__pycache__" not in p},
    }
    assert expected - names == set()
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", "stacks/", "benchmarks/"))]


def test_a_project_made_by_init_works_with_the_installed_wheel(venv: tuple[Path, dict[str, str]]) -> None:
    env_dir, env = venv
    home = env_dir.parent
    aicluster = env_dir / "bin" / "aicluster"
    python = env_dir / "bin" / "python"
    where = _ok(
        _run(
            [
                python,
                "-c",
                "import aicluster, components, policies; from aicluster import scaffold; "
                "print(aicluster.__file__, components.__file__, policies.__file__, "
                "scaffold.playbooks(scaffold.Path('.')) / 'site.yml', scaffold.policy_pack() / 'PulumiPolicy.yaml', "
                "sep='\\n')",
            ],
            home,
            env,
        )
    ).split()
    for path in map(Path, where):
        assert path.is_file(), path
        assert env_dir in path.parents, f"{path} is not from the wheel installed in {env_dir}"

    # Named `aicluster` as this repository's project is: its preview must equal this repository's, byte for byte.
    init = _run([aicluster, "init", "aicluster"], home, env)
    assert "aicluster preview p5-small" in _ok(init)
    project = home / "aicluster"
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()) == [
        ".gitignore",
        "Pulumi.yaml",
        "__main__.py",
        "policy-pack/PulumiPolicy.yaml",
        "policy-pack/__main__.py",
        "requirements.txt",
        "stacks/Pulumi.p5-small.yaml",
    ]
    assert "from aicluster.program import main" in (project / "__main__.py").read_text(encoding="utf-8")
    assert (project / "stacks" / "Pulumi.p5-small.yaml").read_bytes() == (
        ROOT / "stacks" / "Pulumi.p5-small.yaml"
    ).read_bytes()

    assert "32 GPUs" in _ok(_run([aicluster, "validate", "p5-small"], project, env))
    assert _ok(_run([aicluster, "stacks"], project, env)).split() == ["p5-small"]
    _ok(_run([aicluster, "preview", "p5-small", "--json", "out/preview.json", "--parents"], project, env))
    golden = ROOT / "tests" / "golden" / "previews" / "p5-small.json"
    assert (project / "out" / "preview.json").read_bytes() == golden.read_bytes()
    _ok(_run([aicluster, "report", "p5-small", "--format", "md", "-o", "out/report.md"], project, env))
    assert (project / "out" / "report.md").read_text(encoding="utf-8").strip()
    _ok(_run([aicluster, "inventory", "p5-small", "--out", "out/inventory"], project, env))
    assert (project / "out" / "inventory").is_dir()

    # A second init there: refused, and nothing changed.
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    again = _run([aicluster, "init", "aicluster"], home, env)
    assert again.returncode == 2, again.stderr
    assert "Traceback" not in again.stderr
    assert "already holds Pulumi.yaml" in again.stderr
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_a_stack_file_outside_any_project_validates_plans_and_sizes(venv: tuple[Path, dict[str, str]]) -> None:
    env_dir, env = venv
    aicluster = env_dir / "bin" / "aicluster"
    elsewhere = env_dir.parent / "elsewhere"
    elsewhere.mkdir()
    stack = elsewhere / "Pulumi.x.yaml"
    shutil.copy(ROOT / "stacks" / "Pulumi.gcp-a3mega-slurm.yaml", stack)
    cwd = env_dir.parent / "somewhere"
    cwd.mkdir()
    assert "ok " in _ok(_run([aicluster, "validate", stack], cwd, env))
    assert _ok(_run([aicluster, "plan", stack], cwd, env)).strip()
    _ok(_run([aicluster, "size", stack, "--json", cwd / "size.json"], cwd, env))
    assert json.loads((cwd / "size.json").read_text(encoding="utf-8"))
    named = _run([aicluster, "validate", "x"], cwd, env)
    assert named.returncode == 2
    assert "aicluster init DIR" in named.stderr
    assert "Traceback" not in named.stderr
