"""The policy pack through the CLI: preview's verdict and exit code, reports, diffs, waivers, config."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from aicluster.cli import main
from aicluster.report import FORMATS, render
from tests.conftest import ROOT, STACKS, run_cli, write_stack

OVER_BUDGET = (ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text().replace("monthly_usd: 250000", "monthly_usd: 1000")


def test_mandatory_violation_fails_preview_after_writing_the_json(project: Path) -> None:
    write_stack(project, "tight", OVER_BUDGET)
    out = project / "preview.json"
    proc = run_cli("-C", str(project), "preview", "tight", "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "aicluster-cluster-enforce-monthly-budget" in proc.stdout
    assert "monthly cost $171,296 exceeds the budget $1,000" in proc.stdout
    assert "1 mandatory and 0 advisory violation(s)" in proc.stdout
    doc = json.loads(out.read_text())
    assert [(v["policy"], v["enforcement"], v["resource"]) for v in doc["policy"]["violations"]] == [
        ("aicluster-cluster-enforce-monthly-budget", "mandatory", "llm-dev")
    ]


def test_policy_config_can_make_it_advisory(project: Path, tmp_path: Path) -> None:
    write_stack(project, "tight", OVER_BUDGET)
    cfg = tmp_path / "policy.json"
    cfg.write_text(json.dumps({"aicluster-cluster-enforce-monthly-budget": "advisory"}))
    proc = run_cli("-C", str(project), "preview", "tight", "--policy-config", str(cfg))
    assert proc.returncode == 0, proc.stderr
    assert "0 mandatory and 1 advisory violation(s)" in proc.stdout


def test_spec_waiver_is_honoured_and_reported(project: Path) -> None:
    waived = OVER_BUDGET.replace(
        "      allowed_regions: [us-east-1]",
        "      allowed_regions: [us-east-1]\n      waivers:\n"
        "        - {policy: aicluster-cluster-enforce-monthly-budget, resource: llm-dev,\n"
        "           reason: pilot funded from the 2027 budget, expires: '2099-12-31'}",
    )
    write_stack(project, "waived", waived)
    proc = run_cli("-C", str(project), "preview", "waived", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["policy"]["violations"] == []
    assert [(w["policy"], w["reason"]) for w in doc["policy"]["waived"]] == [
        ("aicluster-cluster-enforce-monthly-budget", "pilot funded from the 2027 budget")
    ]


def test_waiver_for_an_unknown_policy_is_bad_input(project: Path) -> None:
    typo = OVER_BUDGET.replace(
        "      allowed_regions: [us-east-1]",
        "      allowed_regions: [us-east-1]\n      waivers:\n"
        "        - {policy: aicluster-cluster-enforce-monthly-budgte, resource: llm-dev,\n"
        "           reason: pilot funded from the 2027 budget, expires: '2099-12-31'}",
    )
    write_stack(project, "typo", typo)
    proc = run_cli("-C", str(project), "preview", "typo")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert (
        'compliance.waivers[0].policy: got "aicluster-cluster-enforce-monthly-budgte"; no such policy in the pack; '
        '`aicluster policies` lists them (did you mean "aicluster-cluster-enforce-monthly-budget"?)'
    ) in " ".join(proc.stderr.split())


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("{not json", "not JSON (line 1, column 2", id="not-json"),
        pytest.param(
            '{"no-such-policy": "mandatory"}',
            "no-such-policy: no such policy in the pack (`aicluster policies` lists them",
            id="name",
        ),
        pytest.param("[1, 2]", "expected a JSON object of policy name -> settings", id="shape"),
    ],
)
def test_bad_policy_config_is_bad_input(tmp_path: Path, content: str, message: str) -> None:
    cfg = tmp_path / "policy.json"
    cfg.write_text(content)
    proc = run_cli("preview", "p5-small", "--policy-config", str(cfg))
    assert proc.returncode == 2
    assert message in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr


BUDGET = "aicluster-cluster-enforce-monthly-budget"


def _budget(raw: str) -> str:
    """A policy config setting the budget to `raw`, as written (JSON's Infinity, NaN, long numbers)."""
    return f'{{"{BUDGET}": {{"monthly_usd": {raw}}}}}'


@pytest.mark.parametrize("command", ["preview", "report"])
def test_policy_config_is_checked_against_the_pack_schemas_all_problems_at_once(tmp_path: Path, command: str) -> None:
    """Issue 13 #1: a budget of "lots" was a traceback; -5, unknown keys and bad levels passed silently."""
    cfg = tmp_path / "pc.json"
    cfg.write_text(
        json.dumps(
            {
                BUDGET: {"monthly_usd": "lots", "montly_usd": 5, "enforcementLevel": "blocking"},
                "aicluster-cluster-enforce-power-budget": {"power_kw": -5},
                "azure-compute-vmss-disallow-over-100-vms": {"max_vms": 2.5},
                "all": "strict",
                "aws-ec2-instance-enforce-imdsv2": {
                    "waivers": [{"resource": "x", "reason": "pilot", "expires": "2027-02-30"}]
                },
            }
        )
        + "\n"
    )
    out = tmp_path / "out.json"
    extra = ["--json", str(out)] if command == "preview" else ["--format", "md", "-o", str(out)]
    proc = run_cli(command, "p5-small", "--policy-config", str(cfg), *extra)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()
    lines = [" ".join(line.split()) for line in proc.stderr.strip().splitlines()]
    assert lines == [
        f'error: {cfg}: {BUDGET}.monthly_usd: got "lots"; must be a finite number greater than 0 and at most '
        "1000000000000",
        f"error: {cfg}: {BUDGET}.montly_usd: no such setting; allowed: monthly_usd, waivers, enforcementLevel "
        '(did you mean "monthly_usd"?)',
        f'error: {cfg}: {BUDGET}.enforcementLevel: got "blocking"; must be one of "advisory", "disabled", '
        '"mandatory", "remediate"',
        f"error: {cfg}: aicluster-cluster-enforce-power-budget.power_kw: got -5; must be a finite number greater "
        "than 0 and at most 10000000",
        f"error: {cfg}: azure-compute-vmss-disallow-over-100-vms.max_vms: got 2.5; must be a whole number at least 1 "
        "and at most 300",
        f'error: {cfg}: all: got "strict"; must be an enforcement level: advisory, disabled, mandatory, remediate',
        f'error: {cfg}: aws-ec2-instance-enforce-imdsv2.waivers[0].reason: got "pilot"; must be at least 10 characters',
        f'error: {cfg}: aws-ec2-instance-enforce-imdsv2.waivers[0].expires: got "2027-02-30"; not a day of the '
        "calendar (day is out of range for month); must be a date (YYYY-MM-DD, e.g. 2027-12-31)",
        "8 problems found; nothing was written.",
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(_budget("Infinity"), "got Infinity; numbers must be finite", id="inf"),
        pytest.param(_budget("NaN"), "got NaN; numbers must be finite", id="nan"),
        pytest.param(_budget("true"), "got true; must be a finite number", id="bool"),
        pytest.param(_budget("1" + "0" * 5000), "a number with 5001 digits", id="digits"),
        pytest.param("[" * 100_000 + "]" * 100_000, "nested more than 32 levels deep", id="deep"),
        pytest.param(json.dumps({BUDGET: 3}), "got 3; must be an enforcement level (advisory", id="entry"),
    ],
)
def test_policy_config_values_that_are_no_setting(tmp_path: Path, content: str, message: str) -> None:
    cfg = tmp_path / "pc.json"
    cfg.write_text(content)
    proc = run_cli("preview", "p5-small", "--policy-config", str(cfg))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert message in " ".join(proc.stderr.split())
    assert str(cfg) in proc.stderr


@pytest.mark.parametrize("fmt", ["md", "html", "sarif", "junit", "json"])
def test_report_for_an_example_stack(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"report.{fmt}"
    proc = run_cli("report", "mixed-spot", "--format", fmt, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    if fmt in ("sarif", "json"):
        json.loads(text)
    elif fmt == "junit":
        root = ET.fromstring(text)
        assert root.tag == "testsuites"
    assert "aicluster-filesystem-enforce-checkpoint-throughput" in text


def test_diff_of_two_previews(project: Path, tmp_path: Path) -> None:
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    assert run_cli("-C", str(project), "preview", "good", "--json", str(base)).returncode == 0
    write_stack(project, "good", (ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text().replace("nodes: 4", "nodes: 5"))
    assert run_cli("-C", str(project), "preview", "good", "--json", str(head)).returncode == 0
    proc = run_cli("diff", str(base), str(head))
    assert proc.returncode == 0, proc.stderr
    assert "1 resource changed" in proc.stdout
    assert "| h100 | $160,876.80 | $201,096.00 | +$40,219.20 (+25.0%) |" in proc.stdout


def test_diff_of_a_file_that_is_not_a_preview(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    proc = run_cli("diff", str(bad), str(bad))
    assert proc.returncode == 2
    assert "not a preview JSON" in proc.stderr


def test_policies_and_policy_config_commands(project: Path) -> None:
    proc = run_cli("policies")
    assert proc.returncode == 0
    assert "aws-ec2-instance-enforce-imdsv2" in proc.stdout
    proc = run_cli("-C", str(project), "policy-config", "good")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == {}


@pytest.mark.parametrize("stack", STACKS)
def test_every_example_stack_gets_every_report(stack: str, tmp_path: Path) -> None:
    """What CI publishes per stack: one preview, then each format rendered from it."""
    preview = tmp_path / "preview.json"
    assert main(["preview", stack, "--json", str(preview)]) == 0
    doc = json.loads(preview.read_text())
    sarif_schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    for fmt in FORMATS:
        text = render(doc, fmt)
        (tmp_path / f"{stack}.{fmt}").write_text(text)
        if fmt == "sarif":
            jsonschema.validators.validator_for(sarif_schema)(sarif_schema).validate(json.loads(text))
        if fmt == "junit":
            suite = ET.fromstring(text).find("testsuite")
            assert suite is not None
            assert int(suite.get("tests", "0")) == len(doc["policy"]["policies"])
            assert suite.get("failures") == "0"


RAISED = (
    (ROOT / "stacks" / "Pulumi.azure-nd-h100-250.yaml")
    .read_text()
    .replace("        market: on-demand\n", "        market: on-demand\n        ib_domain_max_vms: 300\n")
)
IB_SIZE = "azure-compute-vmss-disallow-over-100-vms"


def test_offline_preview_judges_with_what_the_stack_implies_like_the_cli_config(project: Path, tmp_path: Path) -> None:
    write_stack(project, "raised", RAISED)
    proc = run_cli("-C", str(project), "preview", "raised", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    vmss = [r for r in doc["resources"] if r["type"] == "azure-native:compute:VirtualMachineScaleSet"]
    assert [r["inputs"]["sku"]["capacity"] for r in vmss] == [250]
    assert IB_SIZE in doc["policy"]["passed"]
    # the same setting is what the Pulumi CLI gets from `aicluster policy-config`
    cfg = run_cli("-C", str(project), "policy-config", "raised")
    assert json.loads(cfg.stdout) == {IB_SIZE: {"max_vms": 300}}
    # a user's own policy config still wins, key by key
    own = tmp_path / "own.json"
    own.write_text(json.dumps({IB_SIZE: {"max_vms": 100}}))
    proc = run_cli("-C", str(project), "preview", "raised", "--policy-config", str(own), "--json", "-")
    assert proc.returncode == 1
    found = [v["message"] for v in json.loads(proc.stdout)["policy"]["violations"] if v["policy"] == IB_SIZE]
    assert found == [
        "scale set nd-large-h100-ib0 asks for 250 VMs; one InfiniBand placement group holds at most 100: split the "
        "pool into scale sets of up to 100 (or have Azure support raise the limit, up to 300, and set max_vms)"
    ]


def test_rules_that_never_applied_are_reported_not_applicable_in_every_format(tmp_path: Path) -> None:
    """Issue 13 #5: an AWS-only stack's reports listed the Azure and GCP rules as passed (issue 14 adds the 8 site and
    VPN rules, none of which applies to it)."""
    preview = tmp_path / "preview.json"
    proc = run_cli("preview", "p5-small", "--json", str(preview))
    assert proc.returncode == 0, proc.stderr
    azure, gcp = "azure-compute-vmss-enforce-infiniband-placement", "gcp-compute-instance-missing-gpu-nics"
    # 21 until issue 15 added the 9 Kubernetes rules, which a Slurm stack gives nothing to judge; 33 since issue 16's
    # 3 workload rules (p5-small declares no workloads); 36 since issue 27's NVLink, IMEX and rack-cooling rules
    # (8-GPU servers, no site)
    assert "not applicable (36): " in " ".join(proc.stdout.split())
    doc = json.loads(preview.read_text())
    na = {n["policy"]: n["reason"] for n in doc["policy"]["not_applicable"]}
    assert na[azure] == "no azure-native:compute:VirtualMachineScaleSet in the stack"
    assert {azure, gcp} <= set(na)
    assert not {azure, gcp} & set(doc["policy"]["passed"])
    md = render(doc, "md")
    passed_md, na_md = md.split("<summary>Passed policies")[1].split("<summary>Not applicable (36)</summary>")
    assert azure not in passed_md
    assert f"- {azure}: no azure-native:compute:VirtualMachineScaleSet in the stack" in na_md
    html = render(doc, "html")
    passed_html, na_html = html.split("<h3>Passed (")[1].split("<h3>Not applicable (36)</h3>")
    assert azure not in passed_html
    assert gcp in na_html.split("</ul>")[0]
    cases = {c.get("name"): c for c in ET.fromstring(render(doc, "junit")).iter("testcase")}
    skipped = cases[azure].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "not applicable: no azure-native:compute:VirtualMachineScaleSet in the stack"
    assert cases["aws-ec2-instance-enforce-imdsv2"].find("skipped") is None
    results = json.loads(render(doc, "sarif"))["runs"][0]["results"]
    assert {r["ruleId"] for r in results if r.get("kind") == "notApplicable"} == set(na)
    report = json.loads(render(doc, "json"))
    assert report["verdict"]["not_applicable"] == 36
    assert report["verdict"]["passed"] == len(doc["policy"]["passed"]) == 16
    assert report["verdict"]["text"] == "all 16 applicable policies passed, 36 not applicable"


@pytest.mark.parametrize("fmt", ["md", "sarif"])
def test_report_renders_a_preview_json_and_exits_as_preview_does(fmt: str, tmp_path: Path) -> None:
    """Issue 30 #4: CI previews once and renders every format from the JSON; a mandatory violation is exit 1 for
    `report` as for `preview` (the report is written either way)."""
    cfg = tmp_path / "pc.json"
    cfg.write_text(json.dumps({BUDGET: {"monthly_usd": 1, "enforcementLevel": "mandatory"}}))
    preview = tmp_path / "preview.json"
    proc = run_cli("preview", "p5-small", "--policy-config", str(cfg), "--json", str(preview))
    assert proc.returncode == 1, proc.stderr
    from_stack, from_json = tmp_path / f"stack.{fmt}", tmp_path / f"json.{fmt}"
    proc = run_cli("report", "p5-small", "--policy-config", str(cfg), "--format", fmt, "-o", str(from_stack))
    assert proc.returncode == 1, proc.stderr
    assert "1 mandatory" in proc.stdout
    proc = run_cli("report", str(preview), "--format", fmt, "-o", str(from_json))
    assert proc.returncode == 1, proc.stderr
    assert "1 mandatory and 0 advisory violation(s)" in proc.stdout
    assert from_json.read_text() == from_stack.read_text()
    # without the mandatory violation both exit 0
    proc = run_cli("preview", "p5-small", "--json", str(preview))
    assert proc.returncode == 0
    assert run_cli("report", str(preview), "--format", fmt, "-o", str(from_json)).returncode == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param('{"a": 1}', "preview JSON: missing key 'stack'", id="not-a-preview"),
        pytest.param("[" * 5000 + "]" * 5000, "nested more than", id="deep"),
        pytest.param("\xff", "", id="not-utf8"),
    ],
)
def test_report_of_a_file_that_is_no_preview_json_writes_nothing(tmp_path: Path, content: str, message: str) -> None:
    given = tmp_path / "p.json"
    given.write_bytes(content.encode("latin-1"))
    out = tmp_path / "r.html"
    proc = run_cli("report", str(given), "--format", "html", "-o", str(out))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert message in proc.stderr
    assert not out.exists()
    proc = run_cli("report", str(given), "--format", "html", "-o", str(out), "--policy-config", str(given))
    assert proc.returncode == 2
    assert "a preview JSON holds its findings already" in proc.stderr or "--policy-config" in proc.stderr
