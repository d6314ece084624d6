"""pricing.overrides prices every item the plan costs, the catalog's services included (root disks, NAT
gateways, public addresses): a user who knows the rate of an item the catalog cannot cite gets a complete total.

The figures are computed by hand from the stack below and the catalog's p5.48xlarge/m7i.2xlarge rates in
us-east-2 (read from the plan, which the catalog tests check), never from the code under test."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from tests.helpers import SSH_KEY, azure_pool, cluster, plan_of, plan_problems, pool

HOURS = 730  # hours in the month the whole project bills by
REGION = "us-east-2"
FSX = "fsx-lustre/PERSISTENT_2/250"


def east2(**changes: Any) -> dict[str, Any]:
    """4 x p5.48xlarge (500 GiB root volumes each) in us-east-2, 48 TiB of FSx (48,000 GiB), a Slurm controller
    (100 GiB root volume), one zone: one NAT gateway and its public address."""
    return cluster(pools=[pool(region=REGION, zone=f"{REGION}a")], **changes)


OVERRIDES = [
    {"sku": "ebs-gp3", "region": REGION, "usd_per_gib_month": 0.08},
    {"sku": FSX, "region": REGION, "usd_per_gib_month": 0.145},
    {"sku": "nat-gateway", "region": REGION, "usd_per_hour": 0.05},
]


def test_a_us_east_2_stack_leaves_fsx_unpriced_without_overrides(catalog: Catalog) -> None:
    cp = plan_of(catalog, east2())
    # the catalog prices us-east-2's gp3 root volumes ($0.08 per GB-month) but has no FSx rate there
    assert cp.totals.unpriced == ("storage scratch (fsx-lustre)",)
    assert cp.pools[0].volumes_usd_per_month == 160.00
    assert cp.filesystems[0].cost_usd_per_month is None
    # the warning names the exact override line that would price the item
    assert any(f"(sku: {FSX}, region: us-east-2, usd_per_gib_month: ...)" in w for w in cp.warnings)


def test_overrides_price_root_volumes_fsx_and_nat_exactly(catalog: Catalog) -> None:
    before = plan_of(catalog, east2())
    cp = plan_of(catalog, east2(pricing={"overrides": OVERRIDES}))
    assert cp.totals.unpriced == ()
    assert not any("pricing.overrides" in w for w in cp.warnings)
    p5 = before.pools[0].instances_usd_per_month
    controller = before.controller.instance_usd_per_month if before.controller else None
    assert p5 is not None
    assert controller is not None
    # root volumes: 4 x 500 GiB x $0.08 = $160.00; controller 100 GiB x $0.08 = $8.00
    assert cp.pools[0].volumes_usd_per_month == 160.00
    assert cp.controller is not None
    assert cp.controller.volume_usd_per_month == 8.00
    # FSx: 48,000 GiB x $0.145 = $6,960.00
    assert cp.filesystems[0].capacity_gib == 48_000
    assert cp.filesystems[0].cost_usd_per_month == 6960.00
    # NAT: $0.05 x 730 h = $36.50 (the catalog's us-east-2 $0.045 replaced); its address stays at the list
    # $0.005 x 730 = $3.65
    (net,) = cp.networks
    assert net.nat_usd_per_month == 36.50
    assert net.ipv4_usd_per_month == 3.65
    assert cp.totals.cost_usd_per_month == round(p5 + controller + 160.00 + 8.00 + 6960.00 + 36.50 + 3.65, 2)


def test_the_most_specific_service_override_wins(catalog: Catalog) -> None:
    cp = plan_of(
        catalog,
        east2(
            pricing={
                "overrides": [
                    {"sku": "ebs-gp3", "usd_per_gib_month": 0.10},  # every region
                    {"sku": "ebs-gp3", "region": REGION, "usd_per_gib_month": 0.08},
                ]
            }
        ),
    )
    assert cp.pools[0].volumes_usd_per_month == 160.00
    assert any(w.startswith("pricing.overrides[0] matches no pool") for w in cp.warnings)


def test_a_service_override_replaces_the_catalog_price_where_it_has_one(catalog: Catalog) -> None:
    # us-east-1 lists ebs-gp3 at $0.08; a negotiated $0.06: 4 x 500 GiB x $0.06 = $120.00
    cp = plan_of(catalog, cluster(pricing={"overrides": [{"sku": "ebs-gp3", "usd_per_gib_month": 0.06}]}))
    assert cp.pools[0].volumes_usd_per_month == 120.00


def test_a_service_override_that_matches_nothing_is_warned(catalog: Catalog) -> None:
    cp = plan_of(catalog, east2(pricing={"overrides": [{"sku": "pd-balanced", "usd_per_gib_month": 0.1}]}))
    assert (
        "pricing.overrides[0] matches no pool, file system, controller, disk or network charge of this cluster"
        in cp.warnings
    )


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        pytest.param(
            {"sku": "ebs-gp3", "usd_per_hour": 0.01},
            "pricing.overrides[0].usd_per_hour: got 0.01; ebs-gp3 is billed per GiB-month: give usd_per_gib_month",
            id="hourly-rate-for-a-disk",
        ),
        pytest.param(
            {"sku": "nat-gateway", "region": REGION, "usd_per_gib_month": 0.05},
            "pricing.overrides[0].usd_per_gib_month: got 0.05; nat-gateway is billed per hour: give usd_per_hour",
            id="gib-month-rate-for-a-gateway",
        ),
        pytest.param(
            {"sku": "public-ipv4", "market": "spot", "usd_per_hour": 0.005},
            'pricing.overrides[0].market: got "spot"; public-ipv4 is a service and has no market; drop it',
            id="market-for-a-service",
        ),
        pytest.param(
            {"sku": "ebs-gp3", "region": "us-east1", "usd_per_gib_month": 0.08},
            'pricing.overrides[0].region: got "us-east1"; the catalog has no aws region of that name '
            '(did you mean "us-east-1"?)',
            id="region-of-another-cloud",
        ),
        pytest.param(
            {"sku": "ebs-gp2", "usd_per_gib_month": 0.1},
            'pricing.overrides[0].sku: got "ebs-gp2"; not an instance type, storage tier or service (disk, NAT '
            'gateway, public address) in the catalog (did you mean "ebs-gp3"?)',
            id="unknown-service",
        ),
    ],
)
def test_service_overrides_that_could_never_apply_are_located_errors(
    catalog: Catalog, override: dict[str, Any], expected: str
) -> None:
    assert plan_problems(catalog, east2(pricing={"overrides": [override]})) == [f"t: {expected}"]


def hybrid(**changes: Any) -> dict[str, Any]:
    """AWS and Azure pools: both have a NAT gateway, whose catalog service name is the same (nat-gateway)."""
    return cluster(
        pools=[pool(region=REGION, zone=f"{REGION}a"), azure_pool(name="nd")],
        access={"ssh_public_keys": [SSH_KEY]},
        **changes,
    )


def test_a_service_name_two_clouds_of_the_stack_share_needs_a_region(catalog: Catalog) -> None:
    data = hybrid(pricing={"overrides": [{"sku": "nat-gateway", "usd_per_hour": 0.05}]})
    assert plan_problems(catalog, data) == [
        "t: pricing.overrides[0].region: nat-gateway is a service of aws and azure, which this cluster both uses: "
        "give the region it prices (one override per region)"
    ]


def test_a_regional_service_override_prices_only_its_cloud(catalog: Catalog) -> None:
    data = hybrid(pricing={"overrides": [{"sku": "nat-gateway", "region": REGION, "usd_per_hour": 0.05}]})
    cp: ClusterPlan = plan_of(catalog, data)
    nets = {n.provider: n for n in cp.networks}
    assert nets["aws"].nat_usd_per_month == 36.50  # $0.05 x 730
    assert nets["azure"].nat_usd_per_month == 32.85  # the catalog's eastus $0.045 x 730, untouched
