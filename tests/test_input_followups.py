"""Follow-ups from a new user's trial of the hardened inputs: YAML merge keys, bounded echoes, pattern
errors in words, waiver dates, policy-config bounds, SARIF URIs and stack names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aicluster.cli import main
from aicluster.spec import SpecError
from aicluster.stackfile import MAX_VALUES, Project, load_cluster, read_stack
from tests.conftest import ROOT, write_stack

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
