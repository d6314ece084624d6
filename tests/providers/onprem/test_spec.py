"""Sites and on-prem pools in the stack file: every bad input gets its own message with field, value and fix."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.spec import OnpremPool, SpecError, parse_cluster
from tests.helpers import onprem_cluster, onprem_pool, pool, site

SRC = "stacks/Pulumi.t.yaml"


def errors(data: object) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_cluster(data, SRC)
    return str(info.value).splitlines()


def hosts(n: int, **changes: Any) -> list[dict[str, Any]]:
    return [{"name": f"dgx{i:03d}", "address": f"10.200.1.{i + 10}", **changes} for i in range(n)]


def test_the_example_shape_parses_with_the_pool_at_its_site() -> None:
    spec = parse_cluster(onprem_cluster(), SRC)
    p = spec.pools[0]
    assert isinstance(p, OnpremPool)
    assert (p.node_count, p.region, p.zone, p.market) == (128, "fra1", None, "owned")


def test_hosts_give_the_count_and_must_agree_with_nodes() -> None:
    spec = parse_cluster(onprem_cluster(pools=[onprem_pool(nodes=None, hosts=hosts(4))]), SRC)
    assert spec.pools[0].node_count == 4  # type: ignore[union-attr]
    assert errors(onprem_cluster(pools=[onprem_pool(nodes=3, hosts=hosts(4))])) == [
        f"{SRC}: pools[0].nodes: got 3; 4 hosts are listed: drop nodes, or list every host"
    ]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"pools": [onprem_pool(site="fra2")]},
            'pools[0].site: got "fra2"; no site of this name under sites; known: fra1 (did you mean "fra1"?)',
            id="unknown-site",
        ),
        pytest.param(
            {"pools": [onprem_pool(nodes=None, hosts=[*hosts(2), {"name": "dgx000", "address": "10.200.9.9"}])]},
            'pools[0].hosts[2].name: got "dgx000"; pools[0].hosts[0].name already has this name; host names must '
            "be unique",
            id="duplicate-host-name",
        ),
        pytest.param(
            {"pools": [onprem_pool(nodes=None, hosts=[*hosts(2), {"name": "dgx9", "address": "10.200.1.10"}])]},
            'pools[0].hosts[2].address: got "10.200.1.10"; pools[0].hosts[0].address already has this address; '
            "give each host its own",
            id="duplicate-host-address",
        ),
        pytest.param(
            {"pools": [onprem_pool(nodes=None, hosts=[{"name": "dgx0", "address": "10.201.0.4"}])]},
            'pools[0].hosts[0].address: got "10.201.0.4"; not inside site fra1\'s CIDRs (10.200.0.0/16); use an '
            "address of the site's network, or add its range to the site's network.cidrs",
            id="host-outside-site-cidr",
        ),
        pytest.param(
            {"network": {"cidrs": {"aws/us-east-1": "10.200.0.0/16"}}},
            'sites[0].network.cidrs[0]: got "10.200.0.0/16"; overlaps network.cidrs.aws/us-east-1 (10.200.0.0/16); '
            "every site and cloud network needs its own range, or the VPNs between them cannot route",
            id="site-cidr-overlaps-a-pinned-cloud-network",
        ),
        pytest.param(
            {
                "pools": [
                    onprem_pool(nodes=None, hosts=[{"name": "dgx0", "address": "10.200.1.4", "bmc_password": "x"}])
                ]
            },
            "pools[0].hosts[0].bmc_password: a BMC password in clear text is refused (stack files are read, copied "
            "and committed): store it as a Pulumi secret (pulumi config set --secret aicluster:bmcPassword) and give "
            "its key in bmc_secret",
            id="bmc-password-in-clear-text",
        ),
        pytest.param(
            {
                "pools": [
                    onprem_pool(
                        nodes=None,
                        hosts=[{"name": "dgx0", "address": "10.200.1.4", "bmc": "redfish://admin:pw@10.201.0.4"}],
                    )
                ]
            },
            'pools[0].hosts[0].bmc: got "redfish://***@10.201.0.4"; must be a BMC endpoint',
            id="credentials-in-the-bmc-url",
        ),
        pytest.param(
            {"sites": [site(network={"cidrs": ["10.200.0.0/16"], "vpn_endpoint": "10.0.0.1", "bgp_asn": 65010})]},
            'sites[0].network.vpn_endpoint: got "10.0.0.1"; must be the public IPv4 address the site\'s VPN device '
            "answers on",
            id="private-vpn-endpoint",
        ),
        pytest.param(
            {"sites": [site(hardware_cost={"purchase_usd_per_node": 1})]},
            "sites[0].hardware_cost.amortization_years: give purchase_usd_per_node with amortization_years, or "
            "usd_per_node_hour",
            id="purchase-without-years",
        ),
        pytest.param(
            {"scheduler": {"kind": "slurm", "controller": {"provider": "aws"}}},
            'scheduler.controller.provider: got "aws"; a stack with sites runs slurmctld on-prem',
            id="cloud-controller-with-a-site",
        ),
        pytest.param(
            {"storage": [{"name": "home", "kind": "nfs", "capacity_tib": 1, "mount": "/home"}]},
            'storage[0].provider: got "onprem"; aicluster builds managed file systems in a cloud',
            id="onprem-file-system",
        ),
    ],
)
def test_bad_site_input_names_the_field_the_value_and_the_fix(changes: dict[str, Any], expected: str) -> None:
    found = errors(onprem_cluster(**changes))
    assert any(line.startswith(f"{SRC}: {expected}") for line in found), found


def test_a_bmc_url_with_credentials_is_refused_without_echoing_them() -> None:
    bad = onprem_pool(nodes=None, hosts=[{"name": "dgx0", "address": "10.200.1.4", "bmc": "redfish://admin:s3cr3t@h"}])
    found = errors(onprem_cluster(pools=[bad]))
    assert found[0].startswith(f'{SRC}: pools[0].hosts[0].bmc: got "redfish://***@h"; must be a BMC endpoint'), found
    assert not any("s3cr3t" in line for line in found)


def test_every_problem_of_a_site_stack_is_reported_at_once() -> None:
    bad = onprem_cluster(
        sites=[site(), site()],
        pools=[onprem_pool(site="nowhere"), pool()],
        scheduler={"kind": "slurm", "controller": {}},
    )
    found = errors(bad)
    assert any("sites[1].name" in line for line in found), found
    assert any("pools[0].site" in line for line in found), found
    assert any("scheduler.controller.host" in line for line in found), found
    assert any("scheduler.controller.address" in line for line in found), found


def test_a_pool_and_its_site_without_a_fabric_is_refused() -> None:
    found = errors(onprem_cluster(sites=[site(fabric=None)]))
    assert found == [
        f"{SRC}: pools[0].fabric: neither the pool nor site fra1 describes the compute fabric: give fabric "
        "(kind, link_gbps, switch_radix) on the pool or the site"
    ]


# --- found by a new user's trial -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"pools": [onprem_pool(name="hybrid")]},
            'pools[0].name: got "hybrid"; a stack with sites has a default Slurm partition named hybrid',
            id="pool-named-like-the-default-partition",
        ),
        pytest.param(
            {"pools": [onprem_pool(name="fra1")]},
            'sites[0].name: got "fra1"; a pool has this name too',
            id="site-and-pool-share-a-name",
        ),
        pytest.param(
            {
                "pools": [
                    onprem_pool(name="a", nodes=None, hosts=[{"name": "b-000", "address": "10.200.1.4"}]),
                    onprem_pool(name="b", nodes=2),
                ]
            },
            'pools[0].hosts[0].name: got "b-000"; pool b names its nodes b-NNN, and this is one of them',
            id="host-named-like-another-pools-node",
        ),
        pytest.param(
            {"sites": [site(network={"cidrs": ["10.200.0.0/16"], "vpn_endpoint": "203.0.113.10", "bgp_asn": 23456})]},
            "sites[0].network.bgp_asn: got 23456; is AS_TRANS (RFC 6793)",
            id="as-trans",
        ),
        pytest.param(
            {"sites": [site(network={"cidrs": ["10.200.0.0/16"], "vpn_endpoint": "224.0.0.5", "bgp_asn": 65010})]},
            'sites[0].network.vpn_endpoint: got "224.0.0.5"; must be the public IPv4 address',
            id="multicast-vpn-endpoint",
        ),
        pytest.param(
            {
                "scheduler": {"kind": "slurm", "controller": {"host": "slurm01", "address": "10.200.0.5"}},
                "pools": [onprem_pool(nodes=None, hosts=[{"name": "slurm01", "address": "10.200.1.4"}])],
            },
            'scheduler.controller.host: got "slurm01"; pools[0].hosts[0].name already has this name',
            id="controller-host-named-like-a-node",
        ),
    ],
)
def test_names_slurm_needs_distinct_and_addresses_that_route(changes: dict[str, Any], expected: str) -> None:
    found = errors(onprem_cluster(**changes))
    assert any(line.startswith(f"{SRC}: {expected}") for line in found), found


def test_a_password_pasted_into_bmc_secret_is_not_echoed() -> None:
    bad = onprem_pool(
        nodes=None, hosts=[{"name": "d0", "address": "10.200.1.4", "bmc": "ipmi://h", "bmc_secret": "Hunter2!Super"}]
    )
    found = errors(onprem_cluster(pools=[bad]))
    assert found == [
        f"{SRC}: pools[0].hosts[0].bmc_secret: must be the config key of the Pulumi secret that holds the BMC "
        "password, aicluster: and a name (e.g. aicluster:bmcPassword, set with `pulumi config set --secret "
        "aicluster:bmcPassword`); what was given is not shown, in case it is the password itself"
    ]


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param(
            {"sites": [site(network={"cidrs": ["10.200.0.0/16"], "vpn_endpoint": "203.0.113.10", "bgp_asn": 0})]},
            id="bad-site-field",
        ),
        pytest.param(
            {
                "scheduler": {
                    "kind": "slurm",
                    "controller": {"host": "slurm01", "address": "10.200.0.5", "region": "Bad!"},
                }
            },
            id="bad-controller-field",
        ),
    ],
)
def test_one_mistake_gives_one_message_not_false_ones_about_what_was_left_out(changes: dict[str, Any]) -> None:
    found = errors(onprem_cluster(**changes))
    assert len(found) == 1, found
