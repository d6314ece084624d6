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
    assert "change safety: 1 step waived" in out  # the summary counts the waived step, not just the pack's


def test_preview_base_reports_waivers_that_waive_nothing(tmp_path: Path) -> None:
    _, head_dir, base = _base_and_head(tmp_path)
    expired = {"policy": CHANGE_SAFETY, "resource": "llm-dev-scratch-fs", "reason": "scratch is rebuilt anyway",
               "expires": "2020-01-01"}  # fmt: skip
    stray = {**expired, "resource": "llm-dev-no-such-thing", "expires": "2099-01-01"}
    code, out, err = _preview(_project(head_dir, 24, [expired, stray]), tmp_path / "h.json", "--base", str(base))
    assert code == 1, out + err
    assert "waiver for llm-dev-scratch-fs (aicluster-change-disallow-stateful-replace) expired on 2020-01-01" in err
    assert "waiver for llm-dev-no-such-thing" in err
    assert "matches no resource of this preview" in err
    assert "blocked llm-dev-scratch-fs" in out
    assert "the waiver for llm-dev-scratch-fs expired on 2020-01-01: renew it or keep its size" in " ".join(out.split())
    # validate says so too, without a preview
    proc = run_cli("-C", str(head_dir), "validate", "p5-small")
    assert proc.returncode == 0, proc.stderr
    assert "expired on 2020-01-01: renew it" in proc.stderr
    assert "waiver for llm-dev-no-such-thing" not in proc.stderr  # a name of the cluster's: only a preview can tell


def test_preview_base_of_a_pool_zone_move_shows_every_row_and_names_the_stack_field(tmp_path: Path) -> None:
    """The controller VM that may be replaced is a row (with the Slurm state it would lose), an EIP and a NAT
    gateway of one name are two rows told apart by their type, and the fix names the stack field, not the
    provider input (`subnetIds`) it sets."""
    _, head_dir, base = _base_and_head(tmp_path)
    project = _project(head_dir, 48)
    path = project / "stacks" / "Pulumi.p5-small.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"]["aicluster:cluster"]["pools"][0]["zone"] = "us-east-1b"
    path.write_text(yaml.safe_dump(doc))
    code, out, err = _preview(project, tmp_path / "head.json", "--base", str(base))
    assert code == 1, out + err
    rows = [line for line in out.splitlines() if line.startswith("│ llm-dev-")]
    vm = next(r for r in rows if "llm-dev-slurmctld-vm" in r)
    assert "Instance" in vm
    assert "update (may replace)" in vm
    assert "data loss if replaced" in vm
    nat = [r.split("│")[2].strip() for r in rows if r.startswith("│ llm-dev-us-east-1-nat-us-east-1a ")]
    assert sorted(nat) == ["Eip", "NatGateway"]
    text = " ".join(out.split())
    fix = "blocked llm-dev-scratch-fs (aws:fsx/lustreFileSystem:LustreFileSystem, replace): keep storage[scratch].zone"
    assert f'{fix} at "us-east-1a"' in text
    assert "keep subnetIds" not in text


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


def test_validate_base_exits_1_on_a_change_the_platform_refuses(tmp_path: Path) -> None:
    """As `preview --base` fails on it: an AKS pool's zones cannot change in place (`pulumi up` would fail)."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.aks-nd-h100.yaml").read_text())
    doc["config"]["aicluster:cluster"]["pools"][0]["zone"] = "3"
    head = tmp_path / "Pulumi.aks-nd-h100.yaml"
    head.write_text(yaml.safe_dump(doc))
    proc = run_cli("validate", str(head), "--base", "stacks/Pulumi.aks-nd-h100.yaml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "refused pools[h100].zone: the cloud's API refuses updating" in " ".join(proc.stderr.split())


def test_validate_base_that_is_not_a_stack_file_is_exit_2(tmp_path: Path) -> None:
    proc = run_cli("validate", "p5-small", "--base", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: --base {tmp_path / 'nope.yaml'}: not a stack file")
