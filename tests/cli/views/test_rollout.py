"""The plan shows each pool's rollout (strategy, nodes at once, window) and a cluster's maintenance window."""

from __future__ import annotations

import pytest

from aicluster.catalog import Catalog
from aicluster.cli.console import out as cli_out
from aicluster.cli.views.kubernetes import kubernetes_notes
from aicluster.cli.views.plan import print_plan_details, rollout_note
from tests.components.test_maintenance_window import WEEKEND, windowed
from tests.helpers import cluster, plan_of


def test_a_default_pool_shows_drain_first_one_node_at_a_time(catalog: Catalog) -> None:
    (pool,) = plan_of(catalog, cluster()).pools
    assert rollout_note(pool) == f"{pool.name}: rollout drain-first, at most 1 node at a time, each drained first"


def test_a_window_pool_shows_its_window_and_nodes_at_once(catalog: Catalog) -> None:
    data = windowed("gke-a3mega", WEEKEND)
    data["pools"][0]["rollout"]["max_unavailable"] = 2
    plan = plan_of(catalog, data)
    pool = plan.pools[0]
    assert rollout_note(pool) == (
        f"{pool.name}: rollout in the window sat, sun 22:00 UTC for 8 h, at most 2 nodes at a time, each drained first"
    )
    assert plan.kubernetes is not None
    assert (
        "maintenance window: Google Kubernetes Engine's automatic upgrades (node images, patch versions) run only in "
        f"sat, sun 22:00 UTC for 8 h, the window of pool(s) {pool.name}; a change `pulumi up` makes reaches the nodes "
        "when you run it"
    ) in kubernetes_notes(plan)


def test_plan_details_print_the_rollout_under_the_pools(
    catalog: Catalog, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_out, "width", 250)
    plan = plan_of(catalog, windowed("gke-a3mega", WEEKEND))
    print_plan_details(plan)
    text = capsys.readouterr().out
    assert rollout_note(plan.pools[0]) in text
    assert "maintenance window: Google Kubernetes Engine's automatic upgrades" in text
