"""`aicluster diff --json` (the steps, a fixed interface) and `aicluster preview --base` (the change-safety rule:
exit 1 on a stateful resource replaced without a waiver) as CI runs them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from aicluster.changes import CHANGE_SAFETY
from tests.conftest import ROOT, run_cli

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"


def _project(tmp: Path, capacity_tib: float, waivers: list[dict[str, str]] | None = None) -> Path:
    import shutil

    for f in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / f, tmp / f)
    (tmp / "stacks").mkdir(exist_ok=True)
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text())
    cluster = doc["config"]["aicluster:cluster"]
    cluster["storage"][0]["capacity_tib"] = capacity_tib
    if waivers:
        cluster.setdefault("compliance", {})["waivers"] = waivers
    (tmp / "stacks" / "Pulumi.p5-small.yaml").write_text(yaml.safe_dump(doc))
    return tmp


def _base_and_head(tmp: Path) -> tuple[Path, Path, Path]:
    """Two scratch projects and the base preview's path, written from the example (48 TiB of scratch)."""
    base_dir, head_dir = tmp / "base", tmp / "head"
    base_dir.mkdir()
    head_dir.mkdir()
    base = tmp / "base.json"
    assert _preview(_project(base_dir, 48), base)[0] == 0
    return base_dir, head_dir, base


def _preview(project: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    proc = run_cli("-C", str(project), "preview", "p5-small", "--json", str(out), *extra)
    return proc.returncode, proc.stdout, proc.stderr


def test_diff_json_lists_the_steps_with_their_risks(tmp_path: Path) -> None:
    _, head_dir, base = _base_and_head(tmp_path)
    head = tmp_path / "head.json"
    assert _preview(_project(head_dir, 24), head)[0] == 0
    steps_file, comment = tmp_path / "steps.json", tmp_path / "comment.md"
    proc = run_cli("diff", str(base), str(head), "--json", str(steps_file), "-o", str(comment))
    assert proc.returncode == 0, proc.stderr
    steps = json.loads(steps_file.read_text())["steps"]
    (fsx,) = [s for s in steps if s["type"] == FSX]
    assert {k: fsx[k] for k in ("op", "replaceReasons", "risks")} == {
        "op": "replace",
        "replaceReasons": ["storageCapacity"],
        "risks": ["data-loss"],
    }
    assert fsx["urn"].endswith("::llm-dev-scratch-fs")
    assert "diffReasons" in fsx
    text = comment.read_text()
    first = text.split("\n## ")[1]
    assert first.startswith("Replaced, deleted and rolled out")
    assert "llm-dev-scratch-fs" in first
    assert "data loss" in first
    assert CHANGE_SAFETY in first
    # stdout: the steps alone
    proc = run_cli("diff", str(base), str(head), "--json", "-")
    assert json.loads(proc.stdout)["changeSummary"]["replace"] == 1


def test_preview_base_fails_on_a_replaced_file_system_unless_waived(tmp_path: Path) -> None:
    _, head_dir, base = _base_and_head(tmp_path)
    head = tmp_path / "head.json"
    code, out, err = _preview(_project(head_dir, 24), head, "--base", str(base))
    assert code == 1, out + err
    assert "blocked llm-dev-scratch-fs" in out
    assert "keep its size or grow it" in out
    doc = json.loads(head.read_text())
    assert [b["name"] for b in doc["changes"]["blocked"]] == ["llm-dev-scratch-fs"]
    assert "Traceback" not in err

    waiver = {
        "policy": CHANGE_SAFETY,
        "resource": "llm-dev-scratch-fs",
        "reason": "scratch data is rebuilt from the bucket",
        "expires": "2099-01-01",
    }
    code, out, err = _preview(_project(head_dir, 24, [waiver]), head, "--base", str(base))
    assert code == 0, out + err
    assert "waived llm-dev-scratch-fs" in out
    assert json.loads(head.read_text())["changes"]["waived"][0]["name"] == "llm-dev-scratch-fs"


def test_preview_base_growing_passes(tmp_path: Path) -> None:
    _, head_dir, base = _base_and_head(tmp_path)
    code, out, err = _preview(_project(head_dir, 96), tmp_path / "head.json", "--base", str(base))
    assert code == 0, out + err
    assert "1 to update" in out


def test_a_base_that_is_not_a_preview_is_exit_2_before_anything_runs(tmp_path: Path) -> None:
    bad = tmp_path / "base.json"
    bad.write_text("{}")
    out = tmp_path / "head.json"
    proc = run_cli("preview", "p5-small", "--base", str(bad), "--json", str(out))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: --base {bad}: not a preview JSON (missing key 'stack')")
    assert not out.exists()


def test_validate_base_names_what_each_changed_field_does(tmp_path: Path) -> None:
    """The update policies (catalog) for the fields a change touches: pools and file systems matched by name."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text())
    cluster = doc["config"]["aicluster:cluster"]
    cluster["pools"][0]["nodes"] = 2
    cluster["storage"][0]["capacity_tib"] = 24
    cluster["tags"]["owner"] = "ml-infra"
    head = tmp_path / "Pulumi.p5-small.yaml"
    head.write_text(yaml.safe_dump(doc))
    proc = run_cli("validate", str(head), "--base", "stacks/Pulumi.p5-small.yaml")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "pools[h100].nodes │ 4 → 2 │ aws-slurm │ removes nodes" in text
    assert "storage[scratch].capacity_tib │ 48 → 24 │ aws-slurm │ replaces: data lost" in text
    assert "tags.owner │ ml-platform → ml-infra │ aws-slurm │ not recorded" in text


def test_validate_base_that_is_not_a_stack_file_is_exit_2(tmp_path: Path) -> None:
    proc = run_cli("validate", "p5-small", "--base", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: --base {tmp_path / 'nope.yaml'}: not a stack file")
