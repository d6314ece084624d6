"""One rule for an item the catalog has no price for, whatever the item: the plan keeps it, warns once,
shows its cost as None (never 0), names it in totals.unpriced and leaves it out of the (lower-bound) totals.

The catalog is trimmed here rather than a region picked that happens to lack a price today, so these tests
do not depend on which regions the catalog prices."""

from __future__ import annotations

import dataclasses
from typing import Any

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan
from tests.helpers import cluster, plan_of


def without_service(catalog: Catalog, service: str) -> Catalog:
    return dataclasses.replace(catalog, services={k: v for k, v in catalog.services.items() if k[1] != service})


def without_offering(catalog: Catalog, instance_type: str) -> Catalog:
    types = dict(catalog.instance_types)
    it = types[("aws", instance_type)]
    types[("aws", instance_type)] = it.model_copy(update={"offerings": ()})
    return dataclasses.replace(catalog, instance_types=types)


def planned(catalog: Catalog, **changes: Any) -> ClusterPlan:
    return plan_of(catalog, cluster(**changes))


def test_an_unpriced_nat_gateway_is_unpriced_not_free(catalog: Catalog) -> None:
    full = planned(catalog)
    cp = planned(without_service(catalog, "nat-gateway"))
    net = cp.networks[0]
    assert net.nat_usd_per_month is None
    assert net.ipv4_usd_per_month == full.networks[0].ipv4_usd_per_month
    assert net.cost_usd_per_month == net.ipv4_usd_per_month  # the priced part, and it says what it leaves out
    assert net.unpriced == ("NAT gateways",)
    assert cp.totals.unpriced == ("network aws-us-east-1: 1 x NAT gateway",)
    assert full.networks[0].nat_usd_per_month is not None
    assert cp.totals.cost_usd_per_month == round(full.totals.cost_usd_per_month - full.networks[0].nat_usd_per_month, 2)
    assert [w for w in cp.warnings if "nat-gateway" in w] == [
        "the catalog has no aws nat-gateway price in us-east-1, so the cost leaves out the aws-us-east-1 network's "
        "NAT gateways (shown as unpriced; the totals are a lower bound)"
    ]


def test_unpriced_root_volumes_grammar(catalog: Catalog) -> None:
    cp = planned(without_service(catalog, "ebs-gp3"))
    assert cp.pools[0].volumes_usd_per_month is None
    assert cp.pools[0].unpriced == ("root volumes",)
    assert cp.controller is not None
    assert cp.controller.volume_usd_per_month is None
    assert any(
        w.endswith(
            "so the cost leaves out the controller's root volume (shown as unpriced; the totals are a lower bound)"
        )
        for w in cp.warnings
    )
    assert not any(" are not in the cost" in w for w in cp.warnings)


def test_an_unpriced_default_controller_is_a_warning_that_names_the_default(catalog: Catalog) -> None:
    """p5 in a region where the default controller type has no price used to fail on a field nobody wrote."""
    cp = planned(without_offering(catalog, "m7i.2xlarge"))
    c = cp.controller
    assert c is not None
    assert c.price is None
    assert c.instance_usd_per_month is None
    assert c.cost_usd_per_month == c.volume_usd_per_month
    assert "controller m7i.2xlarge" in cp.totals.unpriced
    (warning,) = [w for w in cp.warnings if "controller is left out" in w]
    assert warning.startswith(
        "scheduler.controller.instance_type is not set, and the catalog's default aws controller type, "
        "m7i.2xlarge, has no on-demand price in us-east-1"
    )
    assert "set scheduler.controller.instance_type to a type priced there (" in warning
    assert "pricing.overrides (sku: m7i.2xlarge, region: us-east-1, usd_per_hour: ...)" in warning


def test_an_unpriced_controller_the_stack_names_is_a_warning_too(catalog: Catalog) -> None:
    cp = planned(
        without_offering(catalog, "m7i.4xlarge"),
        scheduler={"kind": "slurm", "controller": {"instance_type": "m7i.4xlarge"}},
    )
    assert any(
        w.startswith("scheduler.controller.instance_type m7i.4xlarge has no on-demand price") for w in cp.warnings
    )


def unpriced_offerings(catalog: Catalog, instance_type: str) -> Catalog:
    """The type still offered where it was, with no rate for any market."""
    types = dict(catalog.instance_types)
    it = types[("aws", instance_type)]
    rates = dict.fromkeys(
        (
            "on_demand_usd_per_hour",
            "spot_usd_per_hour",
            "capacity_block_usd_per_hour",
            "reserved_usd_per_hour",
            "flex_start_usd_per_hour",
        )
    )
    types[("aws", instance_type)] = it.model_copy(
        update={"offerings": tuple(o.model_copy(update=rates) for o in it.offerings)}
    )
    return dataclasses.replace(catalog, instance_types=types)


def test_an_unpriced_pool_follows_the_same_rule(catalog: Catalog) -> None:
    """It used to be a hard error while unpriced storage was a warning."""
    cp = planned(unpriced_offerings(catalog, "p5.48xlarge"))
    p = cp.pools[0]
    assert p.price is None
    assert p.instances_usd_per_month is None
    assert p.cost_usd_per_month == p.volumes_usd_per_month  # the root volumes are still priced
    assert p.unpriced == ("instances",)
    assert "pool h100: 4 x p5.48xlarge on-demand" in cp.totals.unpriced
    assert any(
        w.startswith(
            "pools[0] (h100): the catalog has no on-demand price for p5.48xlarge in us-east-1, so the pool's "
            "instances are left out of the cost (shown as unpriced; the totals are a lower bound)"
        )
        for w in cp.warnings
    )


def test_p5_root_volumes_in_us_east_2_are_priced(catalog: Catalog) -> None:
    """Issue 30 #15: us-east-2 is a major p5 region, and AWS's price list gives its gp3 rate ($0.08 per GB-month)."""
    region = {"region": "us-east-2", "zone": "us-east-2a"}
    cp = planned(catalog, pools=[{**cluster()["pools"][0], **region}], storage=[])
    p = cp.pools[0]
    assert p.aws is not None
    assert p.volumes_usd_per_month == round(p.nodes * p.aws.root_volume_gib * 0.08, 2)
    assert "root volumes" not in p.unpriced
    assert not any("ebs-gp3" in w for w in cp.warnings)
