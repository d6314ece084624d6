"""Hostile stack files and JSON inputs: every one ends in exit 2 with the file, the line and the field,
quickly and in bounded memory; nothing is written; no traceback."""

from __future__ import annotations

import datetime
import json
import math
from pathlib import Path

import pytest

from aicluster.cli import main
from aicluster.spec import SpecError, parse_cluster
from aicluster.stackfile import Project, load_cluster, read_stack
from tests.conftest import ROOT, write_stack
from tests.helpers import cluster

GOOD = (ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text()


def stack_errors(project: Path, text: str) -> str:
    write_stack(project, "bad", text)
    proj = Project(project, "aicluster", project / "stacks")
    with pytest.raises(SpecError) as info:
        load_cluster(read_stack(proj, "bad"))
    return str(info.value)


def cli(project: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["-C", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            GOOD.replace("nodes: 4", "nodes: " + "9" * 5000),
            "stacks/Pulumi.bad.yaml:16: pools[0].nodes: a number with 5000 digits",
            id="huge-decimal-int",
        ),
        pytest.param(
            GOOD.replace("nodes: 4", "nodes: 0x" + "f" * 5000),
            "stacks/Pulumi.bad.yaml:16: pools[0].nodes: a number with 5000 digits",
            id="huge-hex-int",
        ),
        pytest.param(
            GOOD.replace("      - name: scratch", "      - name: scratch\n        deep: " + nested(400)),
            "stacks/Pulumi.bad.yaml:20: storage[0].deep: nested more than 32 levels deep",
            id="deep-nesting",
        ),
        pytest.param(
            GOOD.replace("  aws:region: us-east-1\n", "  aws:region: us-east-1\n  deep: " + nested(5000) + "\n"),
            "stacks/Pulumi.bad.yaml:5: deep: nested more than 32 levels deep",
            id="deep-nesting-outside-the-cluster",
        ),
        pytest.param(
            GOOD.replace("    pools:\n", "    pools: &a [*a]\n    x:\n"),
            "stacks/Pulumi.bad.yaml:10: pools[0]: the alias *a refers to the list or mapping that contains it",
            id="recursive-alias",
        ),
        pytest.param(
            GOOD.replace("  aws:region: us-east-1\n", "  aws:region: us-east-1\n  b: &b [.inf]\n"),
            "stacks/Pulumi.bad.yaml:5: b[0]: got .inf; numbers must be finite",
            id="inf-anywhere",
        ),
        pytest.param(
            GOOD.replace("rack_kw: 40", "rack_kw: .inf"),
            "stacks/Pulumi.bad.yaml:29: budgets.rack_kw: got .inf; numbers must be finite",
            id="inf-rack-kw",
        ),
        pytest.param(
            GOOD.replace("power_kw: 60", "power_kw: .nan"),
            "stacks/Pulumi.bad.yaml:28: budgets.power_kw: got .nan; numbers must be finite",
            id="nan-power",
        ),
        pytest.param(
            GOOD.replace("monthly_usd: 250000", "monthly_usd: 1.0e+308"),
            "stacks/Pulumi.bad.yaml:27: budgets.monthly_usd: got 1e+308; must be at most 1000000000000",
            id="huge-budget",
        ),
        pytest.param(
            GOOD.replace("owner: ml-platform", "owner: !!binary bWwtcGxhdGZvcm0="),
            "stacks/Pulumi.bad.yaml:8: tags.owner: the YAML tag !!binary is not allowed",
            id="binary-tag",
        ),
        pytest.param(
            GOOD.replace("owner: ml-platform", "owner: !custom ml"),
            "stacks/Pulumi.bad.yaml:8: tags.owner: the YAML tag !custom is not allowed",
            id="custom-tag",
        ),
        pytest.param(
            GOOD.replace("owner: ml-platform", "owner: ml\0platform"),
            "stacks/Pulumi.bad.yaml:8: (top level): control character U+0000 at column 16",
            id="nul",
        ),
        pytest.param(
            GOOD.replace("owner: ml-platform", "owner: ml\x1b[2Jplatform"),
            "stacks/Pulumi.bad.yaml:8: (top level): control character U+001B at column 16",
            id="escape",
        ),
        pytest.param(
            GOOD.replace("owner: ml-platform", "owner: ml\x1eplatform"),
            "stacks/Pulumi.bad.yaml:8: (top level): control character U+001E at column 16",
            id="record-separator-that-splitlines-takes-for-a-line-break",
        ),
        pytest.param(
            GOOD.replace("# The default", "# The \ufffe default"),
            "stacks/Pulumi.bad.yaml:2: (top level): control character U+FFFE at column 7",
            id="noncharacter-in-a-comment",
        ),
        pytest.param(
            GOOD.replace("owner: ml-platform", 'owner: "ml\\n"'),
            'stacks/Pulumi.bad.yaml:8: tags.owner: got "ml\\u000a"; may only use letters',
            id="tag-with-trailing-newline",
        ),
        pytest.param(
            GOOD.replace("owner: ml-platform", "owner: *nosuch"),
            'stacks/Pulumi.bad.yaml:8: (top level): not valid YAML: found undefined alias "nosuch"',
            id="undefined-alias-no-repr",
        ),
        pytest.param(
            GOOD.replace("owner: ml-platform", "owner: ml\n      owner: x"),
            'stacks/Pulumi.bad.yaml:9: (top level): not valid YAML: duplicate key "owner" (first at line 8); '
            "remove one",
            id="duplicate-key-no-repr",
        ),
    ],
)
def test_hostile_stack_file_is_located(project: Path, text: str, expected: str) -> None:
    assert expected in stack_errors(project, text)


def test_alias_bomb_is_refused_at_once(project: Path) -> None:
    lines = ["  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    text = GOOD.replace("config:\n", "config:\n" + "\n".join(lines) + "\n")
    assert "stacks/Pulumi.bad.yaml:8: a4: aliases expand to more than 100000 values" in stack_errors(project, text)


def test_yaml_dates_are_accepted_in_waivers(project: Path) -> None:
    text = GOOD + (
        "      waivers:\n"
        "        - policy: aws-ec2-instance-disallow-public-ip\n"
        "          resource: llm-dev-h100\n"
        "          reason: accepted for the demo account\n"
        "          expires: 2027-12-31\n"
    )
    write_stack(project, "ok", text)
    spec = load_cluster(read_stack(Project(project, "aicluster", project / "stacks"), "ok"))
    assert spec.compliance.waivers[0].expires == "2027-12-31"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param(datetime.date(2027, 12, 31), "got 2027-12-31;", id="date"),
        pytest.param(math.inf, "got .inf;", id="inf"),
        pytest.param(10**5000, "got a number of 16610 bits;", id="huge-int"),
        pytest.param(True, "got true;", id="bool"),
    ],
)
def test_values_are_shown_as_written_never_as_a_python_repr(value: object, shown: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_cluster(cluster(name=value), "stacks/Pulumi.t.yaml")
    assert f"stacks/Pulumi.t.yaml: name: {shown}" in str(info.value)


def test_python_dates_are_accepted_in_waivers() -> None:
    waiver = {"policy": "p-x", "resource": "r", "reason": "accepted for now", "expires": datetime.date(2027, 1, 2)}
    spec = parse_cluster(cluster(compliance={"waivers": [waiver]}), "stacks/Pulumi.t.yaml")
    assert spec.compliance.waivers[0].expires == "2027-01-02"


@pytest.mark.parametrize(
    ("argument", "fix"),
    [
        pytest.param("..", "a stack name", id="dotdot"),
        pytest.param(".", "a stack name", id="dot"),
        pytest.param("a b", "a stack name", id="space"),
        pytest.param("x\n", "a stack name", id="newline"),
    ],
)
def test_bad_stack_names_are_refused(
    project: Path, capsys: pytest.CaptureFixture[str], argument: str, fix: str
) -> None:
    code, _, err = cli(project, capsys, "validate", argument)
    assert code == 2
    assert fix in err
    assert len(err.strip().splitlines()) == 1


def test_stack_argument_may_be_a_path(project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = cli(project, capsys, "validate", str(project / "stacks" / "Pulumi.good.yaml"))
    assert code == 0, out
    assert "stacks/Pulumi.good.yaml" in out
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "Pulumi.mine.yaml").write_text(GOOD)
    code, out, _ = cli(project, capsys, "validate", str(elsewhere / "Pulumi.mine.yaml"))
    assert code == 0, out
    code, _, err = cli(project, capsys, "validate", str(elsewhere / "mine.yaml"))
    assert code == 2
    assert "Pulumi.<stack>.yaml" in err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(nested(100_000), "nested more than", id="deep"),
        pytest.param('{"a": ' + "9" * 5000 + "}", "a number with 5000 digits", id="huge-int"),
        pytest.param('{"a": Infinity}', "numbers must be finite", id="infinity"),
        pytest.param('{"a": 1e400}', "numbers must be finite", id="overflow"),
    ],
)
def test_hostile_json_inputs_of_diff(
    project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, expected: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"stack": "x"}))
    code, _, err = cli(project, capsys, "diff", str(bad), str(good))
    assert code == 2
    assert expected in err
    assert str(bad) in err
    assert "Traceback" not in err


GCP = (ROOT / "stacks" / "Pulumi.gcp-a3mega-slurm.yaml").read_text()


def test_validate_shows_every_problem_of_every_layer_at_once(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        GCP.replace("instance_type: a3-megagpu-8g", "instance_type: a3-megagpu-9g")  # catalog (planner)
        .replace("      owner: ml-platform", "      Owner: ml-platform\n      owner: x")  # cluster rule (tags)
        .replace("kind: slurm", "kind: slurm\n      controller:\n        instance_type: n2-standard-999")
        .replace("allowed_regions: [us-central1]", "allowed_regions: [us-east1]")  # policy, from the stack
    )
    write_stack(project, "g4", text)
    code, _, err = cli(project, capsys, "validate", "g4")
    assert code == 2
    lines = err.splitlines()
    assert lines[-1] == "4 problems found; nothing was written."
    found = "\n".join(lines)
    assert 'stacks/Pulumi.g4.yaml:12: tags.owner: got "owner"; on GCP this tag and "Owner" both become' in found
    assert 'stacks/Pulumi.g4.yaml:17: pools[0].region: got "us-central1"; outside compliance.allowed_regions' in found
    assert 'pools[0].instance_type: got "a3-megagpu-9g"; the catalog has no gcp instance type' in found
    assert 'stacks/Pulumi.g4.yaml:34: scheduler.controller.instance_type: got "n2-standard-999"' in found


@pytest.mark.parametrize("command", ["plan", "preview"])
def test_plan_and_preview_show_every_problem_at_once_too(
    project: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """The same check as validate, less the policy checks from the stack: preview leaves those to the pack."""
    text = (
        GCP.replace("instance_type: a3-megagpu-8g", "instance_type: a3-megagpu-9g")
        .replace("      owner: ml-platform", "      Owner: ml-platform\n      owner: x")
        .replace("kind: slurm", "kind: slurm\n      controller:\n        instance_type: n2-standard-999")
    )
    write_stack(project, "g3", text)
    code, _, err = cli(project, capsys, command, "g3")
    assert code == 2
    assert "3 problems found; nothing was written." in err
    assert "stacks/Pulumi.g3.yaml:12: tags.owner" in err
    assert "stacks/Pulumi.g3.yaml:19: pools[0].instance_type" in err
    assert "stacks/Pulumi.g3.yaml:34: scheduler.controller.instance_type" in err


def test_field_mistakes_do_not_hide_the_cluster_rules(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        GCP.replace("nodes: 32", "nodes: 0")
        .replace("capacity_tib: 140", "capacity_tib: -1")
        .replace("      owner: ml-platform", "      Owner: ml-platform\n      owner: x")
    )
    write_stack(project, "g3", text)
    code, _, err = cli(project, capsys, "validate", "g3")
    assert code == 2
    assert "stacks/Pulumi.g3.yaml:20: pools[0].nodes: got 0; must be at least 1" in err
    assert "stacks/Pulumi.g3.yaml:24: storage[0].capacity_tib: got -1; must be greater than 0" in err
    assert 'stacks/Pulumi.g3.yaml:12: tags.owner: got "owner"; on GCP this tag and "Owner"' in err
    assert "3 problems found" in err


def test_validate_finds_missing_required_tags_from_the_stack(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_stack(project, "notags", GOOD.replace('      cost-center: "4711"\n', ""))
    code, _, err = cli(project, capsys, "validate", "notags")
    assert code == 2
    assert (
        "stacks/Pulumi.notags.yaml:7: tags: missing the required tag(s) cost-center "
        "(policy aws-resource-missing-required-tags fails every aws resource in preview)"
    ) in err


def test_a_waiver_for_the_policy_turns_the_stack_check_off(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD.replace("allowed_regions: [us-east-1]", "allowed_regions: [eu-west-1]") + (
        "      waivers:\n"
        "        - policy: aicluster-resource-enforce-allowed-regions\n"
        "          resource: llm-dev\n"
        "          reason: data stays in the US under contract 12\n"
        "          expires: 2099-01-01\n"
    )
    write_stack(project, "waived", text)
    code, _, err = cli(project, capsys, "validate", "waived")
    assert code == 0, err


@pytest.mark.parametrize("command", ["inventory", "plan", "preview", "policy-config"])
def test_a_bad_stack_name_writes_nothing(project: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    before = sorted(str(p) for p in project.rglob("*"))
    code, _, err = cli(project, capsys, command, "..")
    assert code == 2
    assert '".." is not a stack name' in err
    assert sorted(str(p) for p in project.rglob("*")) == before


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            "monthly_usd: 250000",
            "monthly_usd: 1000",
            ":27: budgets.monthly_usd: got 1000; the plan costs $171,295.64/month, $170,295.64 over this budget "
            "(policy aicluster-cluster-enforce-monthly-budget fails in preview)",
            id="monthly-budget",
        ),
        pytest.param(
            "power_kw: 60",
            "power_kw: 5",
            ":28: budgets.power_kw: got 5; the plan draws ",
            id="power-budget",
        ),
        pytest.param(
            "rack_kw: 40",
            "rack_kw: 5",
            ":29: budgets.rack_kw: got 5",  # the planner refuses it (a node above the rack limit)
            id="rack-kw",
        ),
    ],
)
def test_validate_finds_what_the_budget_policies_fail_from_the_plan(
    project: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, expected: str
) -> None:
    """Issue 13 #12: validate passed stacks that preview then failed on from the stack alone (budgets)."""
    assert old in GOOD
    write_stack(project, "over", GOOD.replace(old, new))
    code, _, err = cli(project, capsys, "validate", "over")
    assert code == 2
    assert expected in " ".join(err.split())
    assert "1 problem found; nothing was written." in err


def test_validate_finds_a_spot_pool_with_nowhere_to_checkpoint(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = "    storage:\n      - name: scratch\n        kind: lustre\n        capacity_tib: 48\n"
    storage += "        throughput_mb_s_per_tib: 250\n        mount: /fsx\n"
    assert storage in GOOD
    write_stack(project, "spot", GOOD.replace(storage, "").replace("market: on-demand", "market: spot"))
    code, _, err = cli(project, capsys, "validate", "spot")
    assert code == 2
    assert (
        ':17: pools[0].market: got "spot"; a spot pool with no shared file system in the stack to checkpoint to '
        "(policy aicluster-spot-missing-checkpoint-storage fails in preview)"
    ) in " ".join(err.split())


def test_the_refused_characters_are_every_character_but_the_allowed_ones() -> None:
    """stackfile._CONTROL lists the refused ranges (quick to compile); it is the complement of the allowed set."""
    import re

    from aicluster.stackfile import _CONTROL

    negation = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
    every = "".join(map(chr, range(0x110000)))
    refused = [m.start() for m in _CONTROL.finditer(every)]
    assert refused == [m.start() for m in negation.finditer(every)]
    assert len(refused) == 2112  # C0 but tab/LF/CR, DEL and C1, surrogates, U+FFFE and U+FFFF
