"""`aicluster init [DIR]`: a new project as `pulumi new` writes one, that the other commands then work in; a directory
that already holds a project, or any file init would write, is refused (exit 2) and nothing is written. And a stack
file outside any project: validated, planned and previewed with the installed program. (tests/test_wheel.py does the
same from the installed wheel.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import files_under, run_in_process

WRITTEN = [
    ".gitignore",
    "Pulumi.yaml",
    "__main__.py",
    "policy-pack/PulumiPolicy.yaml",
    "policy-pack/__main__.py",
    "requirements.txt",
    "stacks/Pulumi.p5-small.yaml",
]


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_init_writes_a_project_the_commands_work_in(tmp_path: Path) -> None:
    project = tmp_path / "my cluster"
    code, err = run_in_process(["init", str(project)])
    assert code == 0, err
    assert _files(project) == WRITTEN
    pulumi_yaml = (project / "Pulumi.yaml").read_text(encoding="utf-8")
    assert "name: my-cluster\n" in pulumi_yaml
    assert "runtime:\n  name: python\n" in pulumi_yaml
    assert "stackConfigDir: stacks\n" in pulumi_yaml
    assert (project / "requirements.txt").read_text(encoding="utf-8") == "aicluster==0.1.0\n"
    assert "virtualenv: ../.venv" in (project / "policy-pack" / "PulumiPolicy.yaml").read_text(encoding="utf-8")
    assert (project / "stacks" / "Pulumi.p5-small.yaml").read_bytes() == (
        ROOT / "stacks" / "Pulumi.p5-small.yaml"
    ).read_bytes()
    code, err = run_in_process(["-C", str(project), "validate", "p5-small"])
    assert code == 0, err


def test_init_writes_into_an_existing_directory_that_holds_none_of_its_files(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("mine\n", encoding="utf-8")
    code, err = run_in_process(["init", str(tmp_path)])
    assert code == 0, err
    assert _files(tmp_path) == sorted([*WRITTEN, "README.md"])
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param("Pulumi.yaml", id="a-project"),
        pytest.param("stacks/Pulumi.p5-small.yaml", id="the-example-stack"),
        pytest.param(".gitignore", id="a-gitignore"),
        pytest.param("policy-pack/__main__.py", id="a-policy-pack"),
    ],
)
def test_init_refuses_a_directory_holding_a_file_it_would_write(tmp_path: Path, existing: str) -> None:
    (tmp_path / existing).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / existing).write_text("mine\n", encoding="utf-8")
    before = files_under(tmp_path)
    code, err = run_in_process(["init", str(tmp_path)])
    assert code == 2
    assert f"already holds {existing}" in err
    assert "overwrites nothing" in err
    assert "Traceback" not in err
    assert files_under(tmp_path) == before
    assert (tmp_path / existing).read_text(encoding="utf-8") == "mine\n"


def test_init_refuses_a_file_as_its_directory(tmp_path: Path) -> None:
    (tmp_path / "proj").write_text("", encoding="utf-8")
    code, err = run_in_process(["init", str(tmp_path / "proj")])
    assert code == 2
    assert "not a directory" in err
    assert files_under(tmp_path) == {"proj"}


def test_a_stack_file_outside_any_project_validates_and_previews(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    stack = elsewhere / "Pulumi.p5-small.yaml"
    shutil.copy(ROOT / "stacks" / "Pulumi.p5-small.yaml", stack)
    monkeypatch.chdir(tmp_path)
    code, err = run_in_process(["validate", str(stack)])
    assert code == 0, err
    code, err = run_in_process(["preview", str(stack), "--json", str(tmp_path / "preview.json")])
    assert code == 0, err
    assert files_under(elsewhere) == {"Pulumi.p5-small.yaml"}
    got = json.loads((tmp_path / "preview.json").read_text(encoding="utf-8"))
    golden = json.loads((ROOT / "tests" / "golden" / "previews" / "p5-small.json").read_text(encoding="utf-8"))
    assert got["resources"] == golden["resources"]  # the installed program, under the same project name


def test_a_stack_name_outside_any_project_says_how_to_make_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = run_in_process(["validate", "p5-small"])
    assert code == 2
    assert "aicluster init DIR" in err
    assert "Traceback" not in err
