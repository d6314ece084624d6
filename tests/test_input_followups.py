"""Follow-ups from a new user's trial of the hardened inputs: YAML merge keys, bounded echoes, pattern
errors in words, waiver dates, policy-config bounds, SARIF URIs and stack names."""

from __future__ import annotations

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
