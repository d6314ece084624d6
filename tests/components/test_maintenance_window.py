"""A pool's `rollout.strategy: window` on Kubernetes: the service's own maintenance window where it has one (GKE's
recurring window, AKS's node OS planned maintenance), one per cluster; a plan warning on EKS, which has none."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.plan import plan
from aicluster.spec import SpecError, parse_cluster
from tests.components.conftest import Built
from tests.components.test_aks import stack_cluster

Build = Callable[[dict[str, Any]], Built]
GKE_CLUSTER = "gcp:container/cluster:Cluster"
AKS_WINDOW = "azure-native:containerservice:MaintenanceConfiguration"


def windowed(stack: str, *windows: dict[str, Any]) -> dict[str, Any]:
    """The example stack with its first pools' rollout set to each window in turn (more pools copied from the first
    where there are more windows than pools)."""
    cluster = stack_cluster(stack)
    pools = cluster["pools"]
    while len(pools) < len(windows):
        extra = {**pools[0], "name": f"{pools[0]['name']}{len(pools)}"}
        pools.append(extra)
    for pool, window in zip(pools, windows, strict=False):
        pool["rollout"] = {"strategy": "window", "window": window}
    return cluster


WEEKEND = {"days": ["sat", "sun"], "start": "22:00", "hours": 8}


def test_gke_takes_the_pools_window_as_its_recurring_window(build: Build) -> None:
    b = build(windowed("gke-a3mega", WEEKEND))
    policy = b.one(GKE_CLUSTER).inputs["maintenancePolicy"]
    assert "dailyMaintenanceWindow" not in policy
    assert policy["recurringWindow"] == {
        "startTime": "2019-01-01T22:00:00Z",
        "endTime": "2019-01-02T06:00:00Z",  # past midnight: the end only gives the length
        "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
    }
    # the exclusion that holds node upgrades back between jobs stays
    assert policy["maintenanceExclusions"][0]["exclusionOptions"]["scope"] == "NO_MINOR_OR_NODE_UPGRADES"
    k = b.plan.kubernetes
    assert k is not None
    assert k.maintenance_window is not None
    assert k.maintenance_window.pools == ("h100",)
    assert "change-gke-maintenance-window" in k.sources


def test_gke_without_a_window_pool_keeps_the_daily_window(build: Build) -> None:
    policy = build(stack_cluster("gke-a3mega")).one(GKE_CLUSTER).inputs["maintenancePolicy"]
    assert policy["dailyMaintenanceWindow"] == {"startTime": "03:00"}
    assert "recurringWindow" not in policy


@pytest.mark.parametrize(
    ("days", "schedule"),
    [
        pytest.param(["sun"], {"weekly": {"dayOfWeek": "Sunday", "intervalWeeks": 1}}, id="one-day"),
        pytest.param(["mon", "tue", "wed", "thu", "fri", "sat", "sun"], {"daily": {"intervalDays": 1}}, id="every-day"),
    ],
)
def test_aks_times_its_node_os_upgrades_with_the_pools_window(
    build: Build, days: list[str], schedule: dict[str, Any]
) -> None:
    b = build(windowed("aks-nd-h100", {"days": days, "start": "02:30", "hours": 6}))
    config = b.one(AKS_WINDOW).inputs
    assert config["configName"] == "aksManagedNodeOSUpgradeSchedule"
    assert config["maintenanceWindow"] == {
        "schedule": schedule,
        "startTime": "02:30",
        "durationHours": 6,
        "utcOffset": "+00:00",
    }


def test_aks_without_a_window_pool_has_no_maintenance_configuration(build: Build) -> None:
    assert build(stack_cluster("aks-nd-h100")).of_type(AKS_WINDOW) == []


def test_eks_warns_that_only_when_you_deploy_keeps_the_window(catalog: Catalog) -> None:
    p = plan(parse_cluster(windowed("eks-p5", WEEKEND), "test"), catalog)
    assert p.kubernetes is not None
    assert p.kubernetes.maintenance_window is None
    (warning,) = [w for w in p.warnings if "maintenance window" in w]
    assert "Amazon EKS has no maintenance window of its own" in warning
    assert "sat, sun 22:00 UTC for 8 h" in warning
    assert "only if you run `pulumi up`" in warning


def problems(catalog: Catalog, cluster: dict[str, Any]) -> str:
    with pytest.raises(SpecError) as err:
        plan(parse_cluster(cluster, "test"), catalog)
    return str(err.value)


def test_two_pools_asking_for_different_windows_in_one_cluster_are_refused(catalog: Catalog) -> None:
    other = {"days": ["wed"], "start": "01:00", "hours": 12}
    text = problems(catalog, windowed("gke-a3mega", WEEKEND, other))
    assert "pools[1].rollout.window" in text
    assert "one maintenance window per cluster (Cluster.maintenancePolicy.recurringWindow)" in text
    assert "give every pool with strategy window the same window" in text


def test_a_gke_window_under_48_hours_in_32_days_is_refused(catalog: Catalog) -> None:
    text = problems(catalog, windowed("gke-a3mega", {"days": ["sun"], "start": "03:30", "hours": 4}))
    assert "pools[0].rollout.window" in text
    assert "at least 48 hours of maintenance window in any 32 days" in text
    assert "leaves 16" in text  # 4 Sundays x 4 h
    assert "days x hours at least 12" in text


def test_an_aks_window_on_some_weekdays_is_refused_naming_the_days_and_the_fix(catalog: Catalog) -> None:
    """The days given are shown as the stack file writes them (never "got a list"), with the two settings AKS takes."""
    three = {"days": ["mon", "wed", "fri"], "start": "02:00", "hours": 4}
    text = problems(catalog, windowed("aks-nd-h100", three))
    assert "got a list" not in text
    assert (
        "pools[0].rollout.window.days: got 3 days, [mon, wed, fri]; Azure Kubernetes Service's maintenance schedule "
        "(MaintenanceConfiguration aksManagedNodeOSUpgradeSchedule) recurs weekly on one day or daily on every day: "
        "set days to one day (e.g. [fri]) or to all seven ([mon, tue, wed, thu, fri, sat, sun])"
    ) in text


def test_a_drain_first_pool_shares_the_clusters_window_with_a_warning(catalog: Catalog) -> None:
    cluster = windowed("gke-a3mega", WEEKEND)
    cluster["pools"].append({**cluster["pools"][0], "name": "spare", "rollout": {"strategy": "drain-first"}})
    p = plan(parse_cluster(cluster, "test"), catalog)
    assert p.kubernetes is not None
    assert p.kubernetes.maintenance_window is not None
    assert p.kubernetes.maintenance_window.pools == (cluster["pools"][0]["name"],)
    assert any("automatic upgrades of pool(s) spare and of the control plane also wait" in w for w in p.warnings)
