"""BMC endpoints and credentials of on-prem hosts (issue 31 #11): a password never passes as a secret's name, is
never echoed, a BMC never points at a metadata, loopback or foreign address, a password left in clear text in
the stack's config is refused, and messages name the stack file the user gave."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.spec import SpecError, parse_cluster
from tests.helpers import onprem_cluster, onprem_pool

SRC = "stacks/Pulumi.t.yaml"
PASSWORD = "Zq9SECRETmark"


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
