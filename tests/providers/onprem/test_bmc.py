"""BMC endpoints and credentials of on-prem hosts (issue 31 #11): a password never passes as a secret's name, is
never echoed, a BMC never points at a metadata, loopback or foreign address, a password left in clear text in
the stack's config is refused, and messages name the stack file the user gave."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicluster.cli import main
from aicluster.preview.engine import ProgramError, run_program
from aicluster.spec import SpecError, parse_cluster
from tests.conftest import ROOT, run_cli
from tests.helpers import onprem_cluster, onprem_pool

SRC = "stacks/Pulumi.t.yaml"
PASSWORD = "Zq9SECRETmark"
ONPREM = (ROOT / "stacks" / "Pulumi.onprem-dgx-h100.yaml").read_text()


def host(**changes: Any) -> dict[str, Any]:
    return {"name": "dgx0", "address": "10.200.1.4", "bmc": "ipmi://10.200.9.4", **changes}


def errors(**changes: Any) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_cluster(onprem_cluster(pools=[onprem_pool(nodes=None, hosts=[host(**changes)])]), SRC)
    return str(info.value).splitlines()


def parses(**changes: Any) -> None:
    parse_cluster(onprem_cluster(pools=[onprem_pool(nodes=None, hosts=[host(**changes)])]), SRC)


# ---- a: bmc_secret names a config key, never holds a password ------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(PASSWORD, id="password-shaped-like-a-name"),
        pytest.param("bmcPassword", id="a-bare-name-without-its-namespace"),
        pytest.param("aws:bmcPassword", id="another-namespace"),
        pytest.param("aicluster:", id="no-key"),
        pytest.param("aicluster:cluster", id="the-cluster-key-itself"),
        pytest.param("aicluster:bmc:Password", id="two-colons"),
        pytest.param("Hunter2!Super", id="password-with-punctuation"),
    ],
)
def test_bmc_secret_must_be_a_config_key_of_the_stack_and_is_never_echoed(value: str) -> None:
    found = errors(bmc_secret=value)
    assert len(found) == 1, found
    assert found[0].startswith(f"{SRC}: pools[0].hosts[0].bmc_secret: "), found
    assert "aicluster:bmcPassword" in found[0]
    assert "pulumi config set --secret" in found[0]
    assert "got" not in found[0]
    if value.rsplit(":", maxsplit=1)[-1] and value != "aicluster:cluster":
        assert value.rsplit(":", maxsplit=1)[-1] not in found[0].replace("aicluster:bmcPassword", "")


def test_bmc_secret_as_a_config_key_is_accepted() -> None:
    parses(bmc_secret="aicluster:bmcPassword")
    parses(bmc_secret="aicluster:bmc-dgx0.pw_1")


# ---- b: a password in a BMC URL or user name is masked ----------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "secret", "shown"),
    [
        pytest.param(
            "bmc", "redfish://10.200.9.4/?password=Hunter2pw", "Hunter2pw", '"redfish://10.200.9.4/?***"', id="query"
        ),
        pytest.param(
            "bmc", "redfish://admin:Hunter2pw@10.200.9.4", "Hunter2pw", '"redfish://***@10.200.9.4"', id="userinfo"
        ),
        pytest.param(
            "bmc", "redfish://:Hunter2pw@10.200.9.4/x", "Hunter2pw", '"redfish://***@10.200.9.4/x"', id="empty-user"
        ),
        pytest.param("bmc", "ipmi://10.200.9.4#Hunter2pw", "Hunter2pw", '"ipmi://10.200.9.4#***"', id="fragment"),
        pytest.param("bmc", "ipmi://10.200.9.4/;pw=Hunter2pw", "Hunter2pw", '"ipmi://10.200.9.4/;***"', id="params"),
        pytest.param(
            "bmc", "ipmi://10.200.9.4:Hunter2pw", "Hunter2pw", '"ipmi://10.200.9.4:***"', id="port-not-a-number"
        ),
        pytest.param("bmc_username", "admin:Hunter2pw", "Hunter2pw", '"admin:***"', id="user-with-password"),
        pytest.param("bmc_username", "admin Hunter2pw", "Hunter2pw", '"admin ***"', id="user-and-password"),
    ],
)
def test_a_password_in_a_bmc_url_or_user_name_is_masked(field: str, value: str, secret: str, shown: str) -> None:
    found = errors(**{field: value})
    assert len(found) == 1, found
    assert found[0].startswith(f"{SRC}: pools[0].hosts[0].{field}: got {shown}; "), found
    assert "masked" in found[0]
    assert secret not in found[0]


def test_a_bmc_url_without_credentials_is_still_echoed_for_a_typo() -> None:
    (found,) = errors(bmc="http://10.200.9.4")
    assert found.startswith(f'{SRC}: pools[0].hosts[0].bmc: got "http://10.200.9.4"; must be a BMC endpoint')


# ---- c: no metadata, loopback, multicast or foreign BMC addresses ----------------------------------------------


@pytest.mark.parametrize(
    ("bmc", "expected"),
    [
        pytest.param("ipmi://169.254.169.254", "169.254.169.254 is a link-local address", id="cloud-metadata"),
        pytest.param("redfish://169.254.0.1:443/redfish/v1", "169.254.0.1 is a link-local address", id="link-local"),
        pytest.param("ipmi://127.0.0.1", "127.0.0.1 is a loopback address", id="loopback"),
        pytest.param("ipmi://localhost", "localhost is the loopback host", id="localhost"),
        pytest.param("ipmi://bmc.localhost.", "bmc.localhost. is the loopback host", id="localhost-domain"),
        pytest.param("ipmi://224.0.0.1", "224.0.0.1 is a multicast address", id="multicast"),
        pytest.param("ipmi://0.0.0.0", "0.0.0.0 is the unspecified address", id="unspecified"),
        pytest.param("ipmi://255.255.255.255", "255.255.255.255 is a reserved address", id="broadcast"),
        pytest.param("ipmi://2130706433", "2130706433 is an address written as a number", id="integer-address"),
        pytest.param("ipmi://127.1", "127.1 is an address written as a number", id="short-address"),
        pytest.param("ipmi://0177.0.0.1", "0177.0.0.1 is an address written as a number", id="octal-address"),
        pytest.param("ipmi://0x7f.0.0.1", "0x7f.0.0.1 is an address written as a number", id="hex-address"),
        pytest.param("ipmi://169.254.169.254.", "169.254.169.254. is an address written as a number", id="dot"),
        pytest.param("ipmi://10.200.9.4:0", "port 0 is not a port", id="port-0"),
        pytest.param("ipmi://10.200.9.4:70000", "port 70000 is not a port", id="port-too-large"),
    ],
)
def test_a_bmc_must_not_point_at_metadata_loopback_or_special_addresses(bmc: str, expected: str) -> None:
    found = errors(bmc=bmc)
    assert len(found) == 1, found
    assert found[0].startswith(f"{SRC}: pools[0].hosts[0].bmc: "), found
    assert expected in found[0]


def test_a_bmc_address_must_be_inside_the_sites_cidrs() -> None:
    (found,) = errors(bmc="redfish://10.99.0.1/redfish/v1/Systems/1")
    assert found == (
        f'{SRC}: pools[0].hosts[0].bmc: got "redfish://10.99.0.1/redfish/v1/Systems/1"; the BMC address 10.99.0.1 '
        "is not inside site fra1's CIDRs (10.200.0.0/16): use the BMC's address on the site's network, or add "
        "its range to the site's network.cidrs"
    )


@pytest.mark.parametrize(
    "bmc", ["ipmi://10.200.9.4:623", "redfish://10.200.255.1/redfish/v1/Systems/1", "redfish://bmc-dgx0.mgmt.example"]
)
def test_bmc_addresses_of_the_site_and_host_names_are_accepted(bmc: str) -> None:
    parses(bmc=bmc)


# ---- d and e: through the CLI and the program ------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", root / "__main__.py")
    return root


def hosts_stack(secret: str = "aicluster:bmcPassword", config: str = "") -> str:
    block = (
        "        hosts:\n"
        "          - name: dgx001\n"
        "            address: 10.200.1.11\n"
        "            bmc: redfish://10.200.9.11/redfish/v1/Systems/1\n"
        "            bmc_username: admin\n"
        f"            bmc_secret: {secret}\n"
    )
    return ONPREM.replace("        nodes: 128\n", block) + config


def cli(project: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["-C", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_password_in_bmc_secret_is_refused_by_preview_and_stored_nowhere(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "stacks" / "Pulumi.t.yaml").write_text(hosts_stack(secret=PASSWORD))
    for command in (["validate", "t"], ["plan", "t", "--json", "plan.json"], ["preview", "t", "--json", "p.json"]):
        code, output = cli(project, capsys, *command)
        assert code == 2, output
        assert PASSWORD not in output
        assert "Traceback" not in output
    assert not (project / "plan.json").exists()
    assert not (project / "p.json").exists()


def test_a_bmc_password_in_clear_text_in_the_config_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = hosts_stack(config="  aicluster:bmcPassword: Hunter2pw\n")
    (project / "stacks" / "Pulumi.t.yaml").write_text(text)
    line = text.splitlines().index("  aicluster:bmcPassword: Hunter2pw") + 1
    for command in (["validate", "t"], ["preview", "t", "--json", "p.json"]):
        code, output = cli(project, capsys, *command)
        assert code == 2, output
        assert (
            f"stacks/Pulumi.t.yaml:{line}: aicluster:bmcPassword: holds the BMC password of host dgx001 in clear "
            in (output)
        )
        assert "pulumi config set --secret aicluster:bmcPassword" in output
        assert "Hunter2pw" not in output
    assert not (project / "p.json").exists()


def test_a_secure_bmc_password_passes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = hosts_stack(config="  aicluster:bmcPassword:\n    secure: v1:c2VjcmV0:Y2lwaGVy\n")
    (project / "stacks" / "Pulumi.t.yaml").write_text(text)
    code, output = cli(project, capsys, "validate", "t")
    assert code == 0, output


def _cluster_with_hosts() -> dict[str, Any]:
    doc = yaml.safe_load(hosts_stack())
    return doc["config"]["aicluster:cluster"]  # type: ignore[no-any-return]


def test_up_refuses_a_bmc_password_in_clear_text_in_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pulumi up` reads the config itself: the program refuses a clear-text password too, without showing it."""
    config = {"aicluster:cluster": json.dumps(_cluster_with_hosts()), "aicluster:bmcPassword": "Hunter2pw"}
    with pytest.raises(ProgramError) as err:
        run_program(ROOT, "aicluster", "t", config, frozenset())
    message = str(err.value)
    assert "aicluster:bmcPassword holds the BMC password of host dgx001 in clear text" in message
    assert "pulumi config set --secret aicluster:bmcPassword" in message
    assert "Hunter2pw" not in message


def test_the_program_reads_the_secret_by_its_config_key() -> None:
    config = {"aicluster:cluster": json.dumps(_cluster_with_hosts()), "aicluster:bmcPassword": "Hunter2pw"}
    capture = run_program(ROOT, "aicluster", "t", config, frozenset({"aicluster:bmcPassword"}))
    site = next(r for r in capture.resources if r.type == "aicluster:onprem:Site")
    assert site.inputs["bmc_credential_hosts"] == ["dgx001"]


def test_the_missing_secret_warning_names_the_stack_file_given(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = elsewhere / "Pulumi.mine.yaml"
    path.write_text(hosts_stack())
    done = run_cli("-C", str(project), "preview", str(path), "--json", str(tmp_path / "p.json"), cwd=project)
    assert done.returncode == 0, done.stderr
    assert f"{path}: BMC secrets not set: aicluster:bmcPassword (host dgx001)" in done.stderr
    assert "stacks/Pulumi.mine.yaml" not in done.stdout + done.stderr
