"""Stack files are read as the Pulumi CLI reads them: YAML 1.2, not PyYAML's YAML 1.1.

`nodes: 1:30` is 90 in YAML 1.1 (base 60) and the text "1:30" in YAML 1.2; `country: no` is false in YAML 1.1
and the text "no" in YAML 1.2. A plain value that the two read differently is refused with the file, line, field,
both readings and the fix, by every command; what both read alike, and quoted text, passes as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicluster.cli import main
from aicluster.spec import SpecError
from aicluster.stackfile import Project, read_stack, read_yaml_file
from tests.conftest import ROOT, write_stack

GOOD = (ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text()
BAD = "stacks/Pulumi.bad.yaml"


def stack_error(project: Path, text: str) -> str:
    write_stack(project, "bad", text)
    with pytest.raises(SpecError) as info:
        read_stack(Project(project, "aicluster", project / "stacks"), "bad")
    return str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            "nodes: 4",
            "nodes: 1:30",
            f"{BAD}:16: pools[0].nodes: got 1:30; YAML 1.1 reads it as the number 90 (base 60) and YAML 1.2, as the "
            'Pulumi CLI reads stack files, as the text "1:30": write 90 for the number, or "1:30" (quoted) for the '
            "text",
            id="sexagesimal-int",
        ),
        pytest.param(
            "capacity_tib: 48",
            "capacity_tib: 1:20:30.5",
            f"{BAD}:21: storage[0].capacity_tib: got 1:20:30.5; YAML 1.1 reads it as the number 4830.5 (base 60)",
            id="sexagesimal-float",
        ),
        pytest.param(
            "owner: ml-platform",
            "owner: no",
            f"{BAD}:8: tags.owner: got no; YAML 1.1 reads it as false and YAML 1.2, as the Pulumi CLI reads stack "
            'files, as the text "no": write false for the boolean, or "no" (quoted) for the text',
            id="yaml11-bool-no",
        ),
        pytest.param(
            "owner: ml-platform", "owner: On", f"{BAD}:8: tags.owner: got On; YAML 1.1 reads it as true", id="on"
        ),
        pytest.param(
            "owner: ml-platform", "owner: YES", f"{BAD}:8: tags.owner: got YES; YAML 1.1 reads it as true", id="yes"
        ),
        pytest.param(
            "owner: ml-platform", "owner: off", f"{BAD}:8: tags.owner: got off; YAML 1.1 reads it as false", id="off"
        ),
        pytest.param(
            "nodes: 4",
            "nodes: 0777",
            f"{BAD}:16: pools[0].nodes: got 0777; YAML 1.1 reads it as the number 511 (octal) and YAML 1.2 as the "
            "number 777: write the number without a leading zero",
            id="leading-zero-octal",
        ),
        pytest.param(
            "nodes: 4",
            "nodes: 0o17",
            f'{BAD}:16: pools[0].nodes: got 0o17; YAML 1.1 reads it as the text "0o17" and YAML 1.2 as the number 15',
            id="yaml12-octal",
        ),
        pytest.param(
            "nodes: 4",
            "nodes: 0b100",
            f'{BAD}:16: pools[0].nodes: got 0b100; YAML 1.1 reads it as the number 4 and YAML 1.2 as the text "0b100": '
            'write 4 for the number, or "0b100" (quoted) for the text',
            id="binary",
        ),
        pytest.param(
            "monthly_usd: 250000",
            "monthly_usd: 250_000",
            f"{BAD}:27: budgets.monthly_usd: got 250_000; YAML 1.1 reads it as the number 250000 and YAML 1.2",
            id="underscores",
        ),
        pytest.param(
            "nodes: 4",
            "nodes: -0x4",
            f"{BAD}:16: pools[0].nodes: got -0x4; YAML 1.1 reads it as the number -4",
            id="signed-hex",
        ),
        pytest.param(
            "nodes: 4",
            "nodes: 0X4",
            f'{BAD}:16: pools[0].nodes: got 0X4; YAML 1.1 and 1.2 read it as the text "0X4" and Go\'s YAML reader (the '
            'Pulumi CLI\'s) as the number 4: write 4 for the number, or "0X4" (quoted) for the text',
            id="uppercase-hex-prefix",
        ),
        pytest.param(
            "  aws:region: us-east-1\n",
            "  aws:region: us-east-1\n  aicluster:window: 1:45\n",
            f"{BAD}:5: aicluster:window: got 1:45; YAML 1.1 reads it as the number 105 (base 60)",
            id="outside-the-cluster",
        ),
        pytest.param(
            "    tags:\n      owner: ml-platform\n",
            "    tags:\n      owner: ml-platform\n      on: push\n",
            f"{BAD}:9: tags: the key on: YAML 1.1 reads it as true and YAML 1.2, as the Pulumi CLI reads stack files, "
            'as the text "on": write "on" (quoted) for the text',
            id="yaml11-bool-key",
        ),
        pytest.param(
            "nodes: 4",
            "nodes: !!int 0777",
            f"{BAD}:16: pools[0].nodes: got !!int 0777; YAML 1.1 reads it as the number 511 (octal) and YAML 1.2 as "
            "the number 777",
            id="tagged-octal",
        ),
        pytest.param(
            "owner: ml-platform",
            "owner: !!bool yes",
            f"{BAD}:8: tags.owner: got !!bool yes; not a YAML 1.2 boolean: write true or false",
            id="tagged-yaml11-bool",
        ),
    ],
)
def test_a_value_yaml_11_and_12_read_differently_is_refused(project: Path, old: str, new: str, expected: str) -> None:
    assert old in GOOD
    message = stack_error(project, GOOD.replace(old, new, 1))
    assert expected in message
    assert len(message.splitlines()) == 1


@pytest.mark.parametrize(
    ("old", "new", "path", "value"),
    [
        pytest.param("owner: ml-platform", 'owner: "no"', ("tags", "owner"), "no", id="quoted-no"),
        pytest.param("owner: ml-platform", "owner: '1:30'", ("tags", "owner"), "1:30", id="quoted-sexagesimal"),
        pytest.param("owner: ml-platform", "owner: =", ("tags", "owner"), "=", id="equals-is-text"),
        pytest.param("nodes: 4", "nodes: 0x4", ("pools", 0, "nodes"), 4, id="hex"),
        pytest.param("monthly_usd: 250000", "monthly_usd: 2.5e5", ("budgets", "monthly_usd"), 250000.0, id="exp"),
        pytest.param("monthly_usd: 250000", "monthly_usd: 2.5e+5", ("budgets", "monthly_usd"), 250000.0, id="exp+"),
        pytest.param("power_kw: 60", "power_kw: 6e1", ("budgets", "power_kw"), 60.0, id="exp-without-a-dot"),
        pytest.param("nodes: 4", "nodes: 0", ("pools", 0, "nodes"), 0, id="zero"),
        pytest.param("owner: ml-platform", "owner: true", ("tags", "owner"), True, id="true"),
        pytest.param("owner: ml-platform", "owner: ~", ("tags", "owner"), None, id="null"),
    ],
)
def test_what_yaml_11_and_12_read_alike_reads_as_yaml_12(
    project: Path, old: str, new: str, path: tuple[str | int, ...], value: object
) -> None:
    write_stack(project, "ok", GOOD.replace(old, new, 1))
    stack = read_stack(Project(project, "aicluster", project / "stacks"), "ok")
    got: object = stack.config["aicluster:cluster"]
    for part in path:
        got = got[part]  # type: ignore[index]
    assert got == value
    assert type(got) is type(value)


def test_a_merge_key_still_merges(project: Path) -> None:
    text = GOOD.replace("    tags:\n      owner: ml-platform\n", "    tags:\n      <<: {owner: ml-platform}\n")
    write_stack(project, "ok", text)
    stack = read_stack(Project(project, "aicluster", project / "stacks"), "ok")
    assert stack.config["aicluster:cluster"]["tags"]["owner"] == "ml-platform"


@pytest.mark.parametrize(
    "command",
    [
        ["validate"],
        ["plan"],
        ["preview"],
        ["size"],
        ["report", "--format", "md", "-o", "report.md"],
        ["policy-config"],
        ["inventory"],
    ],
    ids=lambda c: c[0],
)
def test_every_command_refuses_a_base_60_node_count(
    project: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    write_stack(project, "bad", GOOD.replace("nodes: 4", "nodes: 1:30"))
    before = sorted(str(p) for p in project.rglob("*"))
    code = main(["-C", str(project), command[0], "bad", *command[1:]])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{BAD}:16: pools[0].nodes: got 1:30; YAML 1.1 reads it as the number 90 (base 60)" in err
    assert "Traceback" not in err
    assert sorted(str(p) for p in project.rglob("*")) == before


def test_a_hosts_file_is_read_the_same_way(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("h100-000: 10.0.0.5\nh100-001: yes\n")
    with pytest.raises(SpecError) as info:
        read_yaml_file(hosts, str(hosts), "a hosts file")
    assert f"{hosts}:2: h100-001: got yes; YAML 1.1 reads it as true" in str(info.value)
