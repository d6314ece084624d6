"""The inventory marker (.aicluster-inventory.json) as hostile input (issue 31 #8).

`aicluster inventory --hosts FILE` records the addresses it was given in the marker, and a later `inventory` or
`tune` without --hosts reads them back into `ansible_host`, which reaches ssh's command line. An edited marker is
input like --hosts: every address gets the same check (`address_problem`), and a marker in a directory someone
else can change is not trusted at all (as ssh refuses a key file others can write). Refused: exit 2, one line
naming the file, the host, the value and the fix; nothing written, no traceback."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aicluster.inventory import MARKER, InventoryDirError, address_problem, previous_addresses, read_yaml
from aicluster.spec import SpecError
from tests.helpers import files_under, run_in_process

GOOD = {"h100-000": "10.0.0.10", "h100-001": "fd00::11", "h100-002": "node-2.cluster.example"}

# Addresses an edited marker may hold: each must be refused (what --hosts refuses), none may reach ssh.
HOSTILE_ADDRESSES: list[Any] = [
    "-oProxyCommand=touch /tmp/aicluster-pwned",
    "-oProxyCommand=id",
    "-F/dev/null",
    "-",
    "--",
    "-v",
    " 10.0.0.1",
    "10.0.0.1 ",
    "10.0.0.1 -oProxyCommand=id",
    "10.0.0.1\n-oProxyCommand=id",
    "10.0.0.1\n",
    "\n",
    "",
    "10.0.0.1\t",
    "10.0.0.1\r",
    "fe80::1%-oProxyCommand=id",
    "fe80::1%eth0 -x",
    "fe80::1%",
    "%",
    "%eth0",
    "10.0.0.1%eth0",
    "nöde-1.example",
    "\uff11\uff10.0.0.1",  # fullwidth digits
    "node\u200b1",
    "\uff58",  # fullwidth x
    "\u202enode",
    "a" * 64,
    "a." * 130,
    "9" * 5000,
    "n" * 100_000,
    "{{ lookup('pipe', 'id') }}",
    "$(id)",
    "`id`",
    "10.0.0.1;id",
    "10.0.0.1|id",
    "a&b",
    "'10.0.0.1'",
    "\x1b[2J",
    "\x00",
    "user@10.0.0.1",
    "10.0.0.1:22",
    "[::1]",
    "256.1.1.1",
    "10.0.0",
    "node_1",
    "-node",
    "node-",
    "a..b",
    ".node",
    5,
    1.5,
    True,
    None,
    ["10.0.0.1"],
    {"host": "10.0.0.1"},
]


def marker_doc(addresses: Any) -> dict[str, Any]:
    return {"written_by": "aicluster", "files": ["hosts.yml"], "addresses": addresses}


def write_marker(directory: Path, doc: Any, mode: int = 0o600) -> Path:
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory.chmod(0o700)
    path = directory / MARKER
    path.write_text(json.dumps(doc), encoding="utf-8")
    path.chmod(mode)
    return path


def _shown(value: str) -> str:
    return f'"{value}"'


# ------------------------------------------------------------------------------------------------
# The reader
# ------------------------------------------------------------------------------------------------


def test_a_marker_aicluster_wrote_is_read_back(tmp_path: Path) -> None:
    write_marker(tmp_path / "inv", marker_doc(GOOD))
    assert previous_addresses(tmp_path / "inv", shown="inv") == GOOD
    assert previous_addresses(tmp_path / "none", shown="none") == {}  # no inventory yet


@pytest.mark.parametrize("value", HOSTILE_ADDRESSES, ids=[f"hostile-{i}" for i in range(len(HOSTILE_ADDRESSES))])
def test_every_hostile_address_in_the_marker_is_refused(tmp_path: Path, value: Any) -> None:
    write_marker(tmp_path / "inv", marker_doc({**GOOD, "h100-003": value}))
    with pytest.raises(SpecError) as info:
        previous_addresses(tmp_path / "inv", shown="inv")
    lines = str(info.value).splitlines()
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(f"inv/{MARKER}: addresses.h100-003: got "), line
    assert "--hosts FILE" in line  # the fix
    assert line.isprintable(), line
    assert len(line) < 600, line  # a 100,000-character value is clipped, never echoed whole
    if isinstance(value, str) and value.isprintable() and len(value) < 50 and '"' not in value:
        assert _shown(value) in line


@pytest.mark.parametrize(
    "addresses",
    [
        pytest.param(["10.0.0.1"], id="a-list"),
        pytest.param("-oProxyCommand=id", id="a-string"),
        pytest.param(7, id="a-number"),
    ],
)
def test_addresses_of_another_shape_are_refused(tmp_path: Path, addresses: Any) -> None:
    write_marker(tmp_path / "inv", marker_doc(addresses))
    with pytest.raises(SpecError, match=f"inv/{MARKER}: addresses: .*--hosts FILE"):
        previous_addresses(tmp_path / "inv", shown="inv")


def test_every_bad_address_is_reported_at_once(tmp_path: Path) -> None:
    write_marker(tmp_path / "inv", marker_doc({"h100-000": "-oA", "h100-001": "10.0.0.1", "h100-002": "$(id)"}))
    with pytest.raises(SpecError) as info:
        previous_addresses(tmp_path / "inv", shown="inv")
    assert [p.path for p in info.value.problems] == [("addresses", "h100-000"), ("addresses", "h100-002")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(st.text(max_size=40), st.sampled_from([v for v in HOSTILE_ADDRESSES if isinstance(v, str)])))
def test_any_marker_address_is_one_that_passes_the_hosts_check_or_refused(tmp_path: Path, value: str) -> None:
    write_marker(tmp_path / "inv", marker_doc({"h100-000": value}))
    if address_problem(value) is None:
        assert previous_addresses(tmp_path / "inv", shown="inv") == {"h100-000": value}
        return
    with pytest.raises(SpecError) as info:
        previous_addresses(tmp_path / "inv", shown="inv")
    assert str(info.value).isprintable()


# ------------------------------------------------------------------------------------------------
# Who can change the marker: its directory and the file itself, as ssh judges a key file
# ------------------------------------------------------------------------------------------------

NOBODY = 65534


def _group_writable(directory: Path, marker: Path) -> str:
    directory.chmod(0o770)
    return "chmod go-w"


def _world_writable(directory: Path, marker: Path) -> str:
    directory.chmod(0o777)
    return "chmod go-w"


def _sticky_world_writable(directory: Path, marker: Path) -> str:
    directory.chmod(0o1777)
    return "chmod go-w"


def _group_writable_marker(directory: Path, marker: Path) -> str:
    marker.chmod(0o660)
    return "chmod go-w"


def _world_writable_marker(directory: Path, marker: Path) -> str:
    marker.chmod(0o666)
    return "chmod go-w"


def _foreign_directory(directory: Path, marker: Path) -> str:
    os.chown(directory, NOBODY, NOBODY)
    return "chown"


def _foreign_marker(directory: Path, marker: Path) -> str:
    os.chown(marker, NOBODY, NOBODY)
    return "chown"


UNSAFE = [
    _group_writable,
    _world_writable,
    _sticky_world_writable,
    _group_writable_marker,
    _world_writable_marker,
    _foreign_directory,
    _foreign_marker,
]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")


@needs_root
@pytest.mark.parametrize("make_unsafe", UNSAFE, ids=[f.__name__.lstrip("_") for f in UNSAFE])
def test_a_marker_others_can_change_is_not_trusted(tmp_path: Path, make_unsafe: Any) -> None:
    directory = tmp_path / "inv"
    marker = write_marker(directory, marker_doc(GOOD))
    fix = make_unsafe(directory, marker)
    with pytest.raises(InventoryDirError) as info:
        previous_addresses(directory, shown="inv")
    message = str(info.value)
    assert message.startswith("inv"), message
    assert fix in message, message
    assert "\n" not in message


def test_a_marker_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    elsewhere = write_marker(tmp_path / "elsewhere", marker_doc({"h100-000": "-oProxyCommand=id"}))
    directory = tmp_path / "inv"
    directory.mkdir(mode=0o700)
    (directory / MARKER).symlink_to(elsewhere)
    assert previous_addresses(directory, shown="inv") == {}  # not aicluster's marker: no address taken from it


# ------------------------------------------------------------------------------------------------
# Through the CLI: `inventory` (fast, in this process) and `tune` (tests/tune/test_tune_trust.py)
# ------------------------------------------------------------------------------------------------


def _cli_marker(project: Path) -> Path:
    hosts = project / "hosts.yml"
    hosts.write_text("h100-000: 10.0.0.10\nh100-001: 10.0.0.11\n", encoding="utf-8")
    code, err = run_in_process(["-q", "-C", str(project), "inventory", "good", "--hosts", str(hosts)])
    assert code == 0, err
    return project / ".work" / "good" / "inventory" / MARKER


CLI_HOSTILE = [
    "-oProxyCommand=touch /tmp/aicluster-pwned",
    "10.0.0.1\n-oProxyCommand=id",
    " 10.0.0.1",
    "fe80::1%-oProxyCommand=id",
    "nöde-1.example",
    "n" * 100_000,
    "$(id)",
    5,
]


@pytest.mark.parametrize("value", CLI_HOSTILE, ids=[f"hostile-{i}" for i in range(len(CLI_HOSTILE))])
def test_inventory_refuses_an_edited_marker_and_writes_nothing(project: Path, value: Any) -> None:
    marker = _cli_marker(project)
    doc = json.loads(marker.read_text(encoding="utf-8"))
    doc["addresses"]["h100-001"] = value
    marker.write_text(json.dumps(doc), encoding="utf-8")
    before = {p: p.read_bytes() for p in marker.parent.rglob("*") if p.is_file()}
    listing = files_under(project)
    code, err = run_in_process(["-C", str(project), "inventory", "good"])
    assert code == 2, err
    assert "Traceback" not in err
    first = err.splitlines()[0]
    assert str(marker) in first, err
    assert "addresses.h100-001: got " in first, err
    assert "--hosts FILE" in first, err
    assert err.splitlines()[-1].endswith("nothing was written."), err
    assert files_under(project) == listing
    assert {p: p.read_bytes() for p in marker.parent.rglob("*") if p.is_file()} == before


@needs_root
def test_inventory_refuses_a_marker_directory_others_can_write(project: Path) -> None:
    marker = _cli_marker(project)
    marker.parent.chmod(0o775)
    code, err = run_in_process(["-C", str(project), "inventory", "good"])
    assert code == 2, err
    assert str(marker.parent) in err
    assert "chmod go-w" in err
    assert "Traceback" not in err
    marker.parent.chmod(0o700)  # fixed as told: trusted again
    code, err = run_in_process(["-q", "-C", str(project), "inventory", "good"])
    assert code == 0, err
    doc = read_yaml((marker.parent / "hosts.yml").read_text(encoding="utf-8"))
    assert doc["all"]["children"]["pool_h100"]["hosts"]["h100-001"]["ansible_host"] == "10.0.0.11"


def test_hosts_file_replaces_an_edited_marker(project: Path) -> None:
    """The fix the message gives works: --hosts again rewrites the marker (its old addresses are not used)."""
    marker = _cli_marker(project)
    doc = json.loads(marker.read_text(encoding="utf-8"))
    doc["addresses"]["h100-001"] = "-oProxyCommand=id"
    marker.write_text(json.dumps(doc), encoding="utf-8")
    hosts = project / "hosts.yml"
    code, err = run_in_process(["-q", "-C", str(project), "inventory", "good", "--hosts", str(hosts)])
    assert code == 0, err
    assert json.loads(marker.read_text(encoding="utf-8"))["addresses"]["h100-001"] == "10.0.0.11"


def test_a_socket_or_a_file_where_the_directory_goes_is_not_read(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("{}", encoding="utf-8")
    assert previous_addresses(plain, shown="plain") == {}
    sock = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sock))
        assert stat.S_ISSOCK(sock.lstat().st_mode)
        assert previous_addresses(sock, shown="sock") == {}
    finally:
        server.close()
