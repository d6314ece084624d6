"""Kubernetes node groups as the engine hands them -> facts: EKS, GKE and AKS node groups (and an AKS cluster's own
agent pools) are fleets, billed and drawn like the others."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from aicluster.catalog import load_catalog
from aicluster.catalog.pricing import compute_price, hourly_month
from policies.cost import bill
from policies.facts import Res, Stack
from policies.facts.kubernetes import AKS_CLUSTER
from policies.power import draws
from tests.policies.conftest import res
from tests.policies.resources.kubernetes import AKS, aks_pool, eks_group, gke_pool


def _month(provider: str, type_: str, region: str, market: str, nodes: int) -> float | None:
    """The catalog's monthly figure for the market; None where the market has no catalog rate (a capacity block):
    unpriced, never costed at another market's rate."""
    catalog = load_catalog()
    spec = catalog.instance_type(provider, type_)
    assert spec is not None
    price = compute_price(spec, region, market, []).price
    return hourly_month(price.usd, nodes, catalog.hours_per_month) if price is not None else None


@pytest.mark.parametrize(
    ("resources", "fleet", "region", "market", "nodes"),
    [
        pytest.param(eks_group, ("aws", "p5.48xlarge"), "us-east-1", "capacity-block", 16, id="eks"),
        pytest.param(gke_pool, ("gcp", "a3-megagpu-8g"), "us-central1", "on-demand", 32, id="gke"),
        pytest.param(aks_pool, ("azure", "Standard_ND96isr_H100_v5"), "eastus", "on-demand", 16, id="aks"),
    ],
)
def test_node_groups_are_billed_and_drawn_like_fleets(
    resources: Callable[[], list[Res]], fleet: tuple[str, str], region: str, market: str, nodes: int
) -> None:
    stack = Stack(resources())
    group = next(f for f in stack.fleets if f.instance_type == fleet[1])
    assert (group.nodes, group.market, group.region) == (nodes, market, region)
    lines = {x.what: x.usd_per_month for x in bill(stack)}
    assert lines[f"h100: {nodes} x {fleet[1]} {market}"] == _month(*fleet, region, market, nodes)
    assert any(what.startswith("h100: ") and "GiB" in what for what in lines)  # its root disks
    (draw,) = [d for d in draws(stack) if d.fleet is group]
    spec = load_catalog().instance_type(*fleet)
    assert spec is not None
    assert draw.it_kw == spec.node_power_kw * nodes


def test_an_aks_clusters_own_agent_pools_are_counted() -> None:
    stack = Stack([res(AKS_CLUSTER, "aks", AKS)])
    (fleet,) = stack.fleets
    assert (fleet.instance_type, fleet.nodes, fleet.region) == ("Standard_D8s_v5", 2, "eastus")
    assert stack.node_groups[0].name == "AKS cluster aks agentPoolProfiles[0] (system)"
