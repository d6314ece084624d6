"""`aicluster size`: per-workload text, --json - (one JSON object only), --json FILE (atomic, checked first), a
stack without workloads, bad workload input (exit 2, file:line, field, fix), and every example stack."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import STACKS, run_cli, write_stack
from tests.helpers import files_under, run_in_process

GOOD_WORKLOAD = """    workloads:
      - name: llama3-8b
        pools: [h100]
        model: {parameters: 8B, sequence_length: 8192}
        training: {tokens: 100B, global_batch_tokens: 4Mi}
"""


def _with_workload(project: Path, name: str, block: str) -> None:
    text = (project / "stacks" / "Pulumi.good.yaml").read_text()
    write_stack(project, name, text.rstrip("\n") + "\n" + block)


def test_size_prints_each_workload_of_p5_large() -> None:
    proc = run_cli("size", "p5-large")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for wanted in (
        "llama3-70b: 70.6B parameters",
        "llama3-405b: 406B parameters",
        "layout: TP",
        "memory per GPU",
        "activations",
        "step time",
        "pipeline bubble",
        "GPU-hours",
        "checkpoint",
        "goodput",
        "write GB/s needed",
        "runners-up",
        "why it lost",
    ):
        assert wanted in out, wanted
    # the 405B misses its 120-day target on 3,072 GPUs: said on stderr and in the run table
    assert "workload llama3-405b:" in proc.stderr
    assert "over its target of 120 days" in proc.stderr


def test_size_json_stdout_is_one_object_only() -> None:
    proc = run_cli("size", "p5-large", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"stack", "cluster", "workloads"}
    assert doc["stack"] == "p5-large"
    assert doc["cluster"] == "llm-train"
    assert [w["name"] for w in doc["workloads"]] == ["llama3-70b", "llama3-405b"]
    w = doc["workloads"][0]
    assert w["chosen"]["layout"]["gpus"] <= 3072
    assert w["reliability"]["checkpoint_bytes"] == pytest.approx(70.6e9 * 14, rel=0.01)


def test_size_json_file_is_written(project: Path) -> None:
    _with_workload(project, "wl", GOOD_WORKLOAD)
    target = project / "out.json"
    proc = run_cli("-C", str(project), "size", "wl", "--json", str(target))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(target.read_text())["workloads"][0]["name"] == "llama3-8b"
    assert f"wrote {target}" in proc.stdout.replace("\n", "")


def test_size_json_target_is_checked_before_any_work(project: Path) -> None:
    _with_workload(project, "wl", GOOD_WORKLOAD)
    before = files_under(project)
    proc = run_cli("-C", str(project), "size", "wl", "--json", str(project / "stacks"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "is a directory; give a file name" in proc.stderr
    assert "llama3-8b" not in proc.stdout  # refused before planning
    assert files_under(project) == before


def test_a_stack_without_workloads_says_how_to_add_one(project: Path) -> None:
    proc = run_cli("-C", str(project), "size", "good")
    assert proc.returncode == 0, proc.stderr
    assert "no workloads" in proc.stdout
    assert "workloads:" in proc.stdout
    assert "pools: [h100]" in proc.stdout


@pytest.mark.parametrize("command", ["validate", "plan", "size", "preview"])
def test_bad_workload_pool_exits_2_with_file_line_field_and_fix(project: Path, command: str) -> None:
    """A pool the estimator cannot model is the planner's problem: located in the stack file like any other."""
    text = (project / "stacks" / "Pulumi.good.yaml").read_text()
    text = text.replace(
        "    storage:",
        "      - name: cpu\n        provider: aws\n        region: us-east-1\n"
        "        zone: us-east-1a\n        instance_type: m7i.8xlarge\n        image: ami-0123456789abcdef0\n"
        "        nodes: 1\n    storage:",
        1,
    )
    write_stack(project, "bad", text.rstrip("\n") + "\n" + GOOD_WORKLOAD.replace("[h100]", "[h100, cpu]"))
    code, err = run_in_process(["-C", str(project), command, "bad"])
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "workloads[0].pools[1]" in line]
    assert lines, err
    assert "stacks/Pulumi.bad.yaml:" in lines[0]
    assert 'got "cpu"' in lines[0]
    assert "NVIDIA GPUs" in lines[0]
    assert "name a GPU pool of this stack: h100" in lines[0]


def test_bad_workload_spec_value_exits_2_from_size(project: Path) -> None:
    _with_workload(project, "bad", GOOD_WORKLOAD.replace("tokens: 100B", "tokens: lots"))
    code, err = run_in_process(["-C", str(project), "size", "bad"])
    assert code == 2
    assert "Traceback" not in err
    assert "stacks/Pulumi.bad.yaml:" in err
    assert "workloads[0].training.tokens" in err


@pytest.mark.parametrize("stack", STACKS)
def test_size_works_on_every_example_stack(stack: str) -> None:
    code, err = run_in_process(["size", stack, "--json", "-"])
    assert code == 0, err


def test_size_text_has_no_trailing_spaces_and_shows_wall_clock_days() -> None:
    proc = run_cli("size", "p5-large")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line != line.rstrip()] == []
    days = [line for line in lines if line.strip().startswith("days")]
    assert days
    assert all("wall-clock (" in line and "failure-free at goodput" in line for line in days)
    # capacity with its unit: nvidia-smi's 81,559 MiB = 85.5 GB = 79.6 GiB per H100
    assert "of 85.5 GB (79.6 GiB)" in proc.stdout
    assert "slower per token (" in proc.stdout
    # counts in notes carry thousands separators
    target = next(line for line in lines if "note: GPUs for 120 days:" in line)
    count = target.split("GPUs for 120 days: ")[1].split()[0]
    assert "," in count
    assert int(count.replace(",", "")) > 3072


def test_step_block_shows_expert_parallel_for_moe() -> None:
    """Mixtral 8x7B (arXiv:2401.04088 shape) on 256 H100: the search spreads the experts (EP > 1), so the step has an
    all-to-all part and the step-time block prints it; a dense model's block has no such row."""
    from aicluster.catalog import load_catalog
    from aicluster.cli.views.size import step_rows
    from aicluster.sizing.workload import estimate_workload
    from tests.sizing.test_workload import LLAMA3_70B, MIXTRAL_8X7B, _pool, _wl

    mixtral = MIXTRAL_8X7B
    est = estimate_workload(_wl(mixtral), [_pool(32)], [], load_catalog())
    assert est.chosen is not None
    assert est.chosen.step is not None
    assert est.chosen.layout.expert_parallel > 1
    rows = dict(step_rows(est.chosen.step))
    assert rows["expert parallel"] == f"{est.chosen.step.expert_parallel_s:,.2f} s"
    assert est.chosen.step.expert_parallel_s > 0
    dense = estimate_workload(_wl(LLAMA3_70B), [_pool(128)], [], load_catalog())
    assert dense.chosen is not None
    assert dense.chosen.step is not None
    assert "expert parallel" not in dict(step_rows(dense.chosen.step))


def test_a_spot_pool_gets_a_note_that_reclaims_are_not_modelled(project: Path) -> None:
    """The planner hands the pool's market to the estimator (PoolFacts.market); a spot pool's estimate says its
    failures leave out spot reclaims."""
    text = (project / "stacks" / "Pulumi.good.yaml").read_text().replace("market: on-demand", "market: spot", 1)
    write_stack(project, "spot", text.rstrip("\n") + "\n" + GOOD_WORKLOAD)
    proc = run_cli("-C", str(project), "size", "spot", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    notes = json.loads(proc.stdout)["workloads"][0]["notes"]
    assert any(n.startswith("pool h100 is on the spot market: reclaims are not modelled") for n in notes)
    _with_workload(project, "od", GOOD_WORKLOAD)
    proc = run_cli("-C", str(project), "size", "od", "--json", "-")
    assert not any("spot market" in n for n in json.loads(proc.stdout)["workloads"][0]["notes"])


@pytest.mark.parametrize(
    ("stack", "wanted"),
    [
        pytest.param("a4x", ("NVLink domains: 2 of up to 72 GPUs (18 nodes x 4)", "layout: TP"), id="gcp-a4x"),
        pytest.param(
            "gb200su",
            ("layout: TP16 x PP", "a multi-node NVLink domain is held whole", "tensor parallel"),
            id="onprem-gb200-nvl72",
        ),
    ],
)
def test_size_works_on_a_rack_scale_stack(tmp_path: Path, root: Path, stack: str, wanted: tuple[str, ...]) -> None:
    """The issue-27 scratch stacks (tests/data/rack_scale) with a workload, in a project of their own: TP groups
    span the nodes of an NVL72, the notes say how the domains are used, the JSON has the layout."""
    shutil.copy(root / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(root / "__main__.py", tmp_path / "__main__.py")
    (tmp_path / "stacks").mkdir()
    shutil.copy(root / "tests" / "data" / "rack_scale" / f"Pulumi.{stack}.yaml", tmp_path / "stacks")
    proc = run_cli("size", stack, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for text in wanted:
        assert text in proc.stdout, text
    doc = json.loads(run_cli("size", stack, "--json", "-", cwd=tmp_path).stdout)
    (workload,) = doc["workloads"]
    assert workload["fits"]
    assert workload["chosen"]["layout"]["gpus"] <= 576
