"""`--hosts FILE` (inventory, tune) as hostile input: the stack file's hardened loader reads it, and every
problem is one line naming the file, the line, the host and the fix; exit 2, nothing written, no traceback.
Hypothesis fuzzes the reader directly (fast) and the CLI end to end (exit code, nothing written)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aicluster.inventory import MAX_HOST_PROBLEMS, address_problem, read_hosts
from aicluster.spec import SpecError
from tests.conftest import ROOT
from tests.helpers import files_under, run_in_process

NODES = {"h100-000", "h100-001", "h100-002", "h100-003", "llm-dev-slurmctld"}  # the p5-small stack's
ALIAS_BOMB = "\n".join(
    ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
)


def hosts_errors(tmp_path: Path, text: str) -> list[str]:
    """The problem lines reading `text` as a hosts file gives (the file is hosts.yml)."""
    path = tmp_path / "hosts.yml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    with pytest.raises(SpecError) as info:
        read_hosts(path, NODES)
    return str(info.value).splitlines()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "h100-000: 10.0.0.1\nh100-0009: 10.0.0.2\n",
            "hosts.yml:2: h100-0009: not a node of this stack; nodes: h100-000, h100-001, h100-002, h100-003, "
            'llm-dev-slurmctld (did you mean "h100-000"?)',
            id="unknown-node",
        ),
        pytest.param(
            "h100-000: 10.0.0.1\n12: 10.0.0.2\n",
            "hosts.yml:2: 12: not a node of this stack (a node name is text, e.g. h100-000)",
            id="key-not-text",
        ),
        pytest.param(
            "h100-000: 10.0.0.1\nh100-001: 10.0.0.1\n",
            'hosts.yml:2: h100-001: got "10.0.0.1"; the same address as h100-000 (line 1); each node needs its own',
            id="duplicate-address",
        ),
        pytest.param(
            "h100-000: 10.0.0.1\nh100-001: 10.000.0.01\n",
            'hosts.yml:2: h100-001: got "10.000.0.01"; not an IPv4 address (four numbers 0-255',
            id="ip-with-leading-zeros",
        ),
        pytest.param(
            "h100-000: fe80::1\nh100-001: FE80:0::1\n",
            'hosts.yml:2: h100-001: got "FE80:0::1"; the same address as h100-000 (line 1)',
            id="duplicate-ipv6-written-differently",
        ),
        pytest.param(
            'h100-000: \'{{ lookup("pipe", "id") }}\'\n',
            'hosts.yml:1: h100-000: got "{{ lookup(\\"pipe\\", \\"id\\") }}"; not an address: give an IPv4 or '
            "IPv6 address or a DNS host name",
            id="template",
        ),
        pytest.param(
            "h100-000: 10.0.0.1; rm -rf ~\n",
            'hosts.yml:1: h100-000: got "10.0.0.1; rm -rf ~"; not an address',
            id="shell",
        ),
        pytest.param(
            "h100-000: '10.0.0.1 -oProxyCommand=x'\n",
            'hosts.yml:1: h100-000: got "10.0.0.1 -oProxyCommand=x"; not an address',
            id="whitespace-and-ssh-option",
        ),
        pytest.param(
            "h100-000: -oProxyCommand=x\n",
            'hosts.yml:1: h100-000: got "-oProxyCommand=x"; not an address',
            id="leading-dash",
        ),
        pytest.param(
            'h100-000: "10.0.0.1\\n"\n',
            'hosts.yml:1: h100-000: got "10.0.0.1\\u000a"; not an address',
            id="escaped-newline",
        ),
        pytest.param(
            "h100-000: fe80::1%eth0;id\n",
            'hosts.yml:1: h100-000: got "fe80::1%eth0;id"; an IPv6 zone (after %) is letters, digits',
            id="ipv6-zone-with-shell",
        ),
        pytest.param(
            "h100-000: " + "9" * 5000 + "\n",
            "hosts.yml:1: h100-000: a number with 5000 digits; no field takes a number that large",
            id="huge-number",
        ),
        pytest.param(
            "h100-000: 1.0e+999\n",
            "hosts.yml:1: h100-000: got 1.0e+999; numbers must be finite",
            id="infinite-number",
        ),
        pytest.param(
            "h100-000: 10\n",
            "hosts.yml:1: h100-000: got 10; must be the node's address, e.g. h100-000: 10.0.0.5",
            id="number-not-address",
        ),
        pytest.param(
            "h100-000: 2027-12-31 10:00:00\n",
            'hosts.yml:1: h100-000: got "2027-12-31 10:00:00"; not an address',
            id="date-never-a-repr",
        ),
        pytest.param(
            "h100-000: [10.0.0.1]\n",
            "hosts.yml:1: h100-000: got a list; must be the node's address",
            id="list-value",
        ),
        pytest.param(
            "h100-000: !!binary MTAuMC4wLjE=\n",
            "hosts.yml:1: h100-000: the YAML tag !!binary is not allowed",
            id="binary-tag",
        ),
        pytest.param(
            "h100-000: !!python/object/apply:os.system [id]\n",
            "hosts.yml:1: h100-000: the YAML tag !!python/object/apply:os.system is not allowed",
            id="python-tag",
        ),
        pytest.param(
            "h100-000: 10.0.0.1\x1b[2J\n",
            "hosts.yml:1: (top level): control character U+001B at column 19; remove it (a hosts file is plain text",
            id="control-character",
        ),
        pytest.param(
            "h100-000: " + "[" * 40 + "]" * 40 + "\n",
            "hosts.yml:1: h100-000: nested more than 32 levels deep; a hosts file needs a handful",
            id="deep-nesting",
        ),
        pytest.param(
            ALIAS_BOMB + "\n",
            "hosts.yml:5: a4: aliases expand to more than 100015 values; a hosts file holds far fewer",
            id="alias-bomb",
        ),
        pytest.param(
            "h100-000: &a [*a]\n",
            "hosts.yml:1: h100-000[0]: the alias *a refers to the list or mapping that contains it",
            id="self-alias",
        ),
        pytest.param(
            "h100-000: 10.0.0.1\nh100-000: 10.0.0.2\n",
            'hosts.yml:2: (top level): not valid YAML: duplicate key "h100-000" (first at line 1); remove one',
            id="duplicate-key",
        ),
        pytest.param(
            "\ud7fc: 10.0.0.1\n\ud7fc: 10.0.0.2\n",
            'hosts.yml:2: (top level): not valid YAML: duplicate key "\\ud7fc" (first at line 1); remove one',
            id="duplicate-unprintable-key-escaped",
        ),
        pytest.param(
            "h100-000: *nosuch\n",
            'hosts.yml:1: (top level): not valid YAML: found undefined alias "nosuch"',
            id="undefined-alias-no-repr",
        ),
        pytest.param(
            "- h100-000\n",
            "hosts.yml: (top level): got a list; expected a mapping of node name -> address, one a line "
            "(e.g. h100-000: 10.0.0.5)",
            id="not-a-mapping",
        ),
        pytest.param(
            "",
            "hosts.yml: (top level): an empty file; expected a mapping of node name -> address",
            id="empty",
        ),
        pytest.param(
            "h100-000: 10.0.0.1\n\udcff\n",
            "hosts.yml: (top level): not UTF-8 text (byte 19); save the file as UTF-8",
            id="not-utf8",
        ),
    ],
)
def test_hostile_hosts_file_is_located(tmp_path: Path, text: str, expected: str) -> None:
    errors = hosts_errors(tmp_path, text)
    assert any(line.startswith(str(tmp_path / expected)) for line in errors), errors


def test_every_problem_is_one_line_and_many_are_counted(tmp_path: Path) -> None:
    """30,000 wrong lines are one mistake made many times: the first ones and a count."""
    text = "".join(f"node-{i}: 10.0.{i // 256 % 256}.{i % 256}\n" for i in range(30_000))
    errors = hosts_errors(tmp_path, text)
    assert len(errors) == MAX_HOST_PROBLEMS + 1
    more = 30_000 - MAX_HOST_PROBLEMS
    assert (
        errors[-1] == f"{tmp_path / 'hosts.yml'}: (top level): {more} more line(s) like these; fix the ones above first"
    )
    assert errors[0].startswith(f"{tmp_path / 'hosts.yml'}:1: node-0: not a node of this stack")


def test_a_large_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    errors = hosts_errors(tmp_path, "# " + "x" * (2 << 20) + "\n")
    assert errors == [f"{tmp_path / 'hosts.yml'}: (top level): larger than 1025 KiB; a hosts file is a few KiB of YAML"]


def test_good_hosts_are_read(tmp_path: Path) -> None:
    assert address_problem("fe80::1%eth0") is None
    assert address_problem("256.1.1.1") is not None
    assert address_problem("a..b") is not None
    assert address_problem("x" * 64) is not None
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(
        "h100-000: 10.0.0.5\nh100-001: fd00::5\nh100-002: node-2.cluster.example\nllm-dev-slurmctld: ctl\n"
    )
    assert read_hosts(hosts, NODES) == {
        "h100-000": "10.0.0.5",
        "h100-001": "fd00::5",
        "h100-002": "node-2.cluster.example",
        "llm-dev-slurmctld": "ctl",
    }


# ------------------------------------------------------------------------------------------------
# Fuzz
# ------------------------------------------------------------------------------------------------

HOSTILE = [
    "9" * 5000,
    "-" + "9" * 4400,
    "0x" + "f" * 5000,
    ".inf",
    ".nan",
    "1.0e+308",
    "!!binary MTAuMC4wLjE=",
    "!!python/object/apply:os.system [id]",
    "!!python/name:os.system",
    "!custom x",
    "!!set {a, b}",
    "!!timestamp 2027-12-31",
    "*nosuch",
    "&a [*a]",
    "[" * 40 + "]" * 40,
    "{a: " * 40 + "1" + "}" * 40,
    '\'{{ lookup("pipe", "id") }}\'',
    "$(id)",
    "`id`",
    "10.0.0.1; id",
    "'10.0.0.1 -oProxyCommand=id'",
    "-oProxyCommand=id",
    '"10.0.0.1\\n"',
    '"\\x1b[2J"',
    "\x1b[2J",
    "\x00",
    "\ufffe",
    "10.0.0.1",
    "10.0.0.1",
    "fd00::1",
    "FD00:0::1",
    "node-1.example",
    "~",
    "[]",
    "{}",
    "2027-12-31",
    "yes",
]
KEYS = [*sorted(NODES), "h100-0009", "12", "~", "? [a]", "<<", "!!binary aDEwMA==", "'h100-000 '", '"h100-000\\n"']

lines = st.tuples(
    st.one_of(st.sampled_from(KEYS), st.text(max_size=12)),
    st.one_of(st.sampled_from(HOSTILE), st.text(max_size=20)),
)
# for the CLI: keys as written above and values from the list, so that a hostile value is never commented out
listed_lines = st.tuples(st.sampled_from(KEYS), st.sampled_from(HOSTILE))


def _text(entries: list[tuple[str, str]], bomb: bool) -> str:
    text = "".join(f"{k}: {v}\n" for k, v in entries)
    return (ALIAS_BOMB + "\n" + text) if bomb else text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(lines, max_size=8), bomb=st.booleans(), raw=st.one_of(st.none(), st.text(max_size=200)))
def test_any_hosts_file_gives_addresses_or_located_problems(
    tmp_path: Path, entries: list[tuple[str, str]], bomb: bool, raw: str | None
) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text(raw if raw is not None else _text(entries, bomb), encoding="utf-8", errors="surrogatepass")
    result: dict[str, str] | SpecError
    try:
        result = read_hosts(path, NODES)
    except SpecError as err:
        result = err
    if isinstance(result, SpecError):
        shown = str(result).splitlines()
        assert len(shown) == len(result.problems) <= MAX_HOST_PROBLEMS + 1
        assert all(line.startswith(f"{path}:") for line in shown), shown
        assert all(line.isprintable() for line in shown), shown
        assert not any(word in str(result) for word in ("datetime", "b'", "Decimal(", "Traceback")), shown
        return
    found = result
    assert set(found) <= NODES
    assert all(address_problem(a) is None for a in found.values())
    assert len({a.lower() for a in found.values()}) == len(found)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostsproject")
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", root / "__main__.py")
    (root / "stacks").mkdir()
    shutil.copy(ROOT / "stacks" / "Pulumi.p5-small.yaml", root / "stacks" / "Pulumi.good.yaml")
    return root


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    entries=st.lists(listed_lines, min_size=1, max_size=6).filter(lambda e: any(v in HOSTILE[:27] for _, v in e)),
    bomb=st.booleans(),
    command=st.sampled_from(["inventory", "tune"]),
)
def test_hostile_hosts_files_fail_cleanly_through_the_cli(
    scratch: Path, entries: list[tuple[str, str]], bomb: bool, command: str
) -> None:
    """Every entry set holds a hostile value: exit 2, the file named on the first line, nothing written."""
    hosts = scratch.parent / f"{scratch.name}-hosts.yml"
    hosts.write_text(_text(entries, bomb), encoding="utf-8", errors="surrogatepass")
    before = files_under(scratch)
    extra = ["--playbook", str(ROOT / "playbooks" / "site.yml")] if command == "tune" else []
    code, err = run_in_process(["-C", str(scratch), command, "good", "--hosts", str(hosts), *extra])
    assert code == 2, err
    assert "Traceback" not in err
    assert str(hosts) in err.splitlines()[0], err
    assert err.splitlines()[-1].endswith("nothing was written."), err
    assert all(x.isprintable() for x in err.replace("\n", "")), err
    assert files_under(scratch) == before
