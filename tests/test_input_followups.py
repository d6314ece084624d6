"""Follow-ups from a new user's trial of the hardened inputs: YAML merge keys, bounded echoes, pattern
errors in words, waiver dates, policy-config bounds, SARIF URIs and stack names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aicluster.cli import main
from aicluster.preview.policy import config_problems, entry_schema, schema_problems
from aicluster.report import render
from aicluster.spec import Budgets, ClusterSpec, SpecError, Waiver, _problem_from_error, model_problems
from aicluster.stackfile import MAX_VALUES, Project, load_cluster, read_stack
from policies import POLICIES
from tests.conftest import ROOT, write_stack
from tests.report.previews import failing

GOOD = (ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text()


def load(project: Path, text: str):  # type: ignore[no-untyped-def]
    write_stack(project, "t", text)
    return load_cluster(read_stack(Project(project, "aicluster", project / "stacks"), "t"))


def errors(project: Path, text: str) -> str:
    with pytest.raises(SpecError) as info:
        load(project, text)
    return str(info.value)


def cli(project: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["-C", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# 1. YAML merge keys, as the Pulumi CLI reads them ------------------------------------------------------------


def test_merge_key_is_read_as_the_pulumi_cli_reads_it(project: Path) -> None:
    text = GOOD.replace(
        "    pools:\n      - name: h100\n        provider: aws\n        region: us-east-1\n",
        "    pools:\n      - &first\n        name: h100\n        provider: aws\n        region: us-east-1\n",
    ).replace("    storage:\n", "      - <<: *first\n        name: h100b\n        nodes: 2\n    storage:\n")
    spec = load(project, text)
    second = spec.pools[1]
    assert (second.name, second.nodes, second.instance_type, second.region) == ("h100b", 2, "p5.48xlarge", "us-east-1")
    assert (spec.pools[0].name, spec.pools[0].nodes) == ("h100", 4)


def test_merge_key_list_of_aliases(project: Path) -> None:
    text = GOOD.replace(
        "    budgets:\n      monthly_usd: 250000\n      power_kw: 60\n      rack_kw: 40\n",
        "    budgets:\n      <<: [{monthly_usd: 1000}, {power_kw: 60, rack_kw: 40}]\n      monthly_usd: 250000\n",
    )
    spec = load(project, text)
    assert (spec.budgets.monthly_usd, spec.budgets.power_kw, spec.budgets.rack_kw) == (250000, 60, 40)


def test_explicit_duplicate_beside_merge_key_is_still_refused(project: Path) -> None:
    text = GOOD.replace(
        "      monthly_usd: 250000\n", "      <<: {rack_kw: 30}\n      monthly_usd: 250000\n      monthly_usd: 1\n"
    )
    assert 'duplicate key "monthly_usd"' in errors(project, text)


def test_merge_key_bomb_is_bounded(project: Path) -> None:
    lines = ["a0: &a0 {k: v}"]
    for i in range(1, 12):
        keys = ", ".join(f"m{j}: *a{i - 1}" for j in range(10))
        lines.append(f"a{i}: &a{i} {{<<: *a{i - 1}, {keys}}}")
    text = "config:\n  bomb:\n" + "".join(f"    {line}\n" for line in lines)
    message = errors(project, text)
    assert f"more than {MAX_VALUES} values" in message


# 2. Every echoed value is bounded ------------------------------------------------------------------------------

LONG = 5000


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param("monthly_usd: 250000", "monthly_usd: " + "9" * LONG + ".5", id="huge-float"),
        pytest.param("monthly_usd: 250000", "monthly_usd: '" + "9" * LONG + "'", id="huge-number-text"),
        pytest.param("name: llm-dev", "name: " + "x" * LONG, id="long-name"),
        pytest.param("instance_type: p5.48xlarge", "instance_type: p5.48xlarge" + "!" * LONG, id="long-pattern"),
        pytest.param("rack_kw: 40", "rack_kw: 40\n      " + "k" * 900 + ": 1", id="long-unknown-key"),
        pytest.param("power_kw: 60", f"power_kw: 60\n      {'d' * 900}: 1\n      {'d' * 900}: 2", id="duplicate"),
    ],
)
def test_echoed_values_are_bounded(project: Path, capsys: pytest.CaptureFixture[str], old: str, new: str) -> None:
    write_stack(project, "t", GOOD.replace(old, new))
    code, _, err = cli(project, capsys, "validate", "t")
    assert code == 2
    assert err.strip()
    for line in err.splitlines():
        assert len(line) < 400, line[:500]
    assert "..." in err
    assert not re.search(r"(.)\1{60}", err), "a value echoed beyond 60 characters"


# 3. Pattern errors in words ------------------------------------------------------------------------------------


def _patterns(node: object) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                found.add(value)
            else:
                found |= _patterns(value)
    elif isinstance(node, list):
        for value in node:
            found |= _patterns(value)
    return found


SCHEMA_PATTERNS = sorted(_patterns(ClusterSpec.model_json_schema()))
_REGEX_SIGNS = ("^", "$", "\\d", "\\w", "[a-", "[0-", "{0,", "{8,", "[A-", "]*", "]+")


def test_the_schema_has_patterns() -> None:
    assert len(SCHEMA_PATTERNS) >= 20


@pytest.mark.parametrize("pattern", SCHEMA_PATTERNS)
def test_every_pattern_error_is_in_words(pattern: str) -> None:
    error = {"type": "string_pattern_mismatch", "loc": ("name",), "input": "Bad Value!", "ctx": {"pattern": pattern}}
    problem = _problem_from_error(error, {"name": "Bad Value!"})
    text = problem.render("stacks/Pulumi.t.yaml")
    assert not any(sign in text for sign in _REGEX_SIGNS), text
    assert "e.g." in text or "<" in text or "OpenSSH" in text, text


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("reservation: x", "reservation: cr-12", "Capacity Reservation id: cr- and 8 to 17 lowercase hex digits"),
        ("region: us-east-1", "region: US-East-1", "must be an AWS region name"),
    ],
)
def test_pattern_error_through_validate(
    project: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, expected: str
) -> None:
    text = GOOD.replace("        market: on-demand\n", "        market: reserved\n        reservation: x\n")
    write_stack(project, "t", text.replace("        " + old, "        " + new))
    code, _, err = cli(project, capsys, "validate", "t")
    assert code == 2
    assert expected in err
    assert "^" not in err


# 4. Waiver expiry is a real calendar date, checked by validate -------------------------------------------------

WAIVED = GOOD + (
    "      waivers:\n"
    "        - policy: aws-ec2-instance-disallow-public-ip\n"
    "          resource: h100\n"
    "          reason: bastion-free lab cluster, reviewed by security\n"
    "          expires: {expires}\n"
)


@pytest.mark.parametrize(
    ("expires", "expected"),
    [
        ("2027-13-45", 'got "2027-13-45"; not a day of the calendar (month must be in 1..12); must be a date'),
        ("2027-02-30", "not a day of the calendar"),
        ("20271231", "got 20271231; must be a date (YYYY-MM-DD, e.g. 2027-12-31)"),
        ("soon", "must be a date (YYYY-MM-DD, e.g. 2027-12-31)"),
    ],
)
def test_waiver_expiry_is_a_calendar_date(
    project: Path, capsys: pytest.CaptureFixture[str], expires: str, expected: str
) -> None:
    write_stack(project, "t", WAIVED.format(expires=expires))
    code, out, err = cli(project, capsys, "validate", "t")
    assert code == 2, out
    assert "stacks/Pulumi.t.yaml:" in err
    assert "compliance.waivers[0].expires" in err
    assert expected in err
    assert "quote" not in err


def test_waiver_with_a_real_date_validates(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_stack(project, "t", WAIVED.format(expires="2027-12-31"))
    code, _, err = cli(project, capsys, "validate", "t")
    assert code == 0, err


# 7. Stack argument: help and "did you mean" --------------------------------------------------------------------


def test_help_says_name_or_path(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "stack name (p5-small reads stacks/Pulumi.p5-small.yaml) or the path of a stack file" in out


def test_unknown_stack_suggests_the_near_one(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_stack(project, "p5-small", GOOD)
    code, _, err = cli(project, capsys, "validate", "p5-smal")
    assert code == 2
    text = " ".join(err.split())
    assert 'stack "p5-smal" not found: no Pulumi.p5-smal.yaml in the stack directory stacks/' in text
    assert 'did you mean "p5-small"?' in text


# 6. SARIF: a stack file outside the project is a file:// URI, never an absolute path against %SRCROOT% ---------


def _artifacts(doc: dict[str, object]) -> list[dict[str, object]]:
    log = json.loads(render(doc, "sarif"))
    return [
        loc["physicalLocation"]["artifactLocation"]
        for result in log["runs"][0]["results"]
        for loc in result["locations"]
    ]


def test_sarif_uri_outside_the_project_is_a_file_uri() -> None:
    doc = failing()
    doc["stack_file"] = "/home/ana/other stacks/Pulumi.lab.yaml"
    artifacts = _artifacts(doc)
    assert artifacts
    for artifact in artifacts:
        assert artifact == {"uri": "file:///home/ana/other%20stacks/Pulumi.lab.yaml"}


def test_sarif_uri_inside_the_project_is_relative_to_srcroot() -> None:
    doc = failing()
    doc["stack_file"] = "stacks/Pulumi.lab.yaml"
    for artifact in _artifacts(doc):
        assert artifact == {"uri": "stacks/Pulumi.lab.yaml", "uriBaseId": "%SRCROOT%"}


def test_stack_file_outside_the_project_is_named_by_its_absolute_path(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "Pulumi.lab.yaml").write_text(GOOD)
    proj = Project(project, "aicluster", project / "stacks")
    stack = read_stack(proj, "lab", elsewhere / ".." / elsewhere.name / "Pulumi.lab.yaml")
    assert stack.source == str(elsewhere / "Pulumi.lab.yaml")
    inside = read_stack(proj, "good", project / "stacks" / ".." / "stacks" / "Pulumi.good.yaml")
    assert inside.source == "stacks/Pulumi.good.yaml"


# 5. --policy-config: duplicate keys, bounded budgets, waivers as strict as the stack's ---------------------------

BUDGET = "aicluster-cluster-enforce-monthly-budget"
PUBLIC_IP = "aws-ec2-instance-disallow-public-ip"


def _policy_config(project: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, str]:
    config = project / "policy.json"
    config.write_text(text)
    code, _, err = cli(project, capsys, "preview", "good", "--policy-config", str(config))
    return code, " ".join(err.split())


def test_policy_config_duplicate_key_is_refused(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = '{"BUDGET": {"monthly_usd": 1000, "monthly_usd": 2000000}}'.replace("BUDGET", BUDGET)
    code, err = _policy_config(project, capsys, text)
    assert code == 2
    assert 'duplicate key "monthly_usd" in an object; a key may appear once' in err
    assert "policy.json" in err
    assert not (project / ".work").exists()


def test_policy_config_budget_is_bounded_as_the_stacks(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _policy_config(project, capsys, '{"BUDGET": {"monthly_usd": 1e300}}'.replace("BUDGET", BUDGET))
    assert code == 2
    assert f"{BUDGET}.monthly_usd: got 1e+300; must be a finite number greater than 0 and at most 1000000000000" in err


def test_policy_config_budget_bounds_come_from_the_spec() -> None:
    (budget,) = [p for p in POLICIES if p.name == BUDGET]
    bounds = Budgets.model_json_schema()["properties"]["monthly_usd"]["anyOf"][0]
    assert entry_schema(budget)["properties"]["monthly_usd"]["maximum"] == bounds["maximum"]
    assert config_problems({BUDGET: {"monthly_usd": 10**12}}) == []


@pytest.mark.parametrize(
    ("waiver", "expected"),
    [
        ({"reason": "ok", "expires": "2027-12-31"}, 'reason: got "ok"; must be at least 10 characters'),
        ({"reason": "bastion {{ lookup('pipe', 'id') }} ok", "expires": "2027-12-31"}, "must not contain {{"),
        ({"reason": "line one\nline two is long", "expires": "2027-12-31"}, "one line of printable text"),
        ({"reason": "reviewed by the security team", "expires": "2027-13-45"}, "not a day of the calendar"),
        ({"reason": "reviewed by the security team", "expires": "2027-12-31", "by": "x"}, "unknown key"),
    ],
)
def test_policy_config_waivers_follow_the_stack_waiver_rules(waiver: dict[str, str], expected: str) -> None:
    entry = {"resource": "h100", **waiver}
    problems = [p.render("policy.json") for p in config_problems({PUBLIC_IP: {"waivers": [entry]}})]
    assert problems, waiver
    assert all(f"policy.json: {PUBLIC_IP}.waivers[0]." in p for p in problems), problems
    assert any(expected in p for p in problems), problems
    # the same waiver in a stack is refused for the same reason
    stack_problems = [p.render("s") for p in model_problems(Waiver, {"policy": PUBLIC_IP, **entry})]
    assert any(expected in p for p in stack_problems), stack_problems


def test_policy_config_good_waiver_passes() -> None:
    entry = {"resource": "h100", "reason": "reviewed by the security team", "expires": "2027-12-31"}
    assert config_problems({PUBLIC_IP: {"waivers": [entry]}}) == []
    assert config_problems({PUBLIC_IP: {"waivers": [{**entry, "policy": PUBLIC_IP}]}}) == []


def test_policy_config_pattern_error_shows_no_regex() -> None:
    schema = {"type": "string", "pattern": "^[a-z]{2}-[0-9]$", "description": "a zone code (e.g. ab-1)"}
    (problem,) = schema_problems(schema, "ZZ", ("x",))
    text = problem.render("pc.json")
    assert "[a-z]" not in text
    assert "a zone code (e.g. ab-1)" in text


# Issue 30 #10: input messages that lacked a fix ------------------------------------------------------------------

AZURE = (ROOT / "stacks" / "Pulumi.azure-nd-h100.yaml").read_text()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            GOOD.replace("monthly_usd: 250000", "monthly_usd: 4M"),
            'budgets.monthly_usd: got "4M"; must be a number (write 4000000: monthly_usd is a plain number of US '
            "dollars)",
            id="money-with-a-suffix",
        ),
        pytest.param(
            GOOD.replace("capacity_tib: 48", "capacity_tib: 500TiB"),
            'storage[0].capacity_tib: got "500TiB"; must be a number (write 500: capacity_tib is a plain number of '
            "TiB)",
            id="size-with-its-unit",
        ),
        pytest.param(
            GOOD.replace("capacity_tib: 48", "capacity_tib: 512000"),
            "storage[0].capacity_tib: got 512000; must be at most 100000 (capacity_tib is in TiB: 512000 GiB is 500 "
            "TiB)",
            id="size-in-gib",
        ),
        pytest.param(
            GOOD.replace("aicluster:cluster:", "aicluster:clutser:"),
            ":5: (top level): config has no `aicluster:cluster` key but a `aicluster:clutser` key; rename it",
            id="misspelt-cluster-key",
        ),
        pytest.param(AZURE.replace("tokens: 1T", "tokens: 366G"), 'did you mean "366B" or "366Gi"?', id="giga"),
        pytest.param(AZURE.replace("tokens: 1T", "tokens: 15t"), 'did you mean "15T"?', id="lower-t"),
        pytest.param(AZURE.replace("tokens: 1T", "tokens: 70b"), 'did you mean "70B"?', id="lower-b"),
    ],
)
def test_a_number_written_another_way_says_how_to_write_it(project: Path, text: str, expected: str) -> None:
    assert expected in errors(project, text)


def test_validate_says_every_problem_of_a_bad_pool_and_a_second_region(project: Path) -> None:
    """Issue 30 #11: with max_run_hours: 200 on the first GCP pool, a second GCP pool in another region was not
    reported (the plan, which checks regions, did not run), and the workload naming the bad pool was told it names
    no pool."""
    text = (ROOT / "stacks" / "Pulumi.gcp-a3mega-slurm.yaml").read_text()
    text = text.replace(
        "        nodes: 32\n    storage:",
        "        nodes: 32\n        max_run_hours: 200\n      - name: h100b\n        provider: gcp\n"
        "        region: europe-west4\n        zone: europe-west4-b\n        instance_type: a3-megagpu-8g\n"
        "        nodes: 2\n    storage:",
    ).replace("allowed_regions: [us-central1]", "allowed_regions: [us-central1, europe-west4]")
    text = errors(project, text)
    assert "pools[0].max_run_hours: got 200; must be at most 168" in text
    assert 'pools[1].region: got "europe-west4"; the cluster already has its gcp network in us-central1' in text
    assert "no pool of this stack has this name" not in text
