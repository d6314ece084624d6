"""One shared harness for component tests: plan a spec, run AiCluster under the capturing mocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aicluster.catalog import Catalog
from aicluster.monitoring import in_cluster, managed_alertmanager, managed_rules
from aicluster.plan import ClusterPlan, plan
from aicluster.preview.engine import Capture, Resource, run
from aicluster.spec import parse_cluster
from components import AiCluster, AiClusterArgs


class Built:
    """What a program registered, with lookups by type and name."""

    def __init__(self, cluster_plan: ClusterPlan, capture: Capture) -> None:
        self.plan = cluster_plan
        self.capture = capture

    def of_type(self, type_: str) -> list[Resource]:
        return [r for r in self.capture.resources if r.type == type_]

    def one(self, type_: str, name_suffix: str = "") -> Resource:
        found = [r for r in self.of_type(type_) if r.name.endswith(name_suffix)]
        assert len(found) == 1, f"{type_} *{name_suffix}: {[r.name for r in found]}"
        return found[0]

    def by_urn(self, urn: str) -> Resource:
        return next(r for r in self.capture.resources if r.urn == urn)


@pytest.fixture
def build(catalog: Catalog) -> Callable[[dict[str, Any]], Built]:
    def _build(cluster: dict[str, Any]) -> Built:
        cluster_plan = plan(parse_cluster(cluster, "test"), catalog)
        # as the Pulumi program does (aicluster.program): a managed Prometheus is given the stack's alert rules, and
        # the alert manager definition that routes them (monitoring.alerts)
        args: AiClusterArgs = {
            "plan": cluster_plan,
            "alert_rules": managed_rules(cluster_plan, catalog),
            "alert_manager": managed_alertmanager(cluster_plan, catalog),
            "in_cluster_monitoring": in_cluster(cluster_plan, catalog),
        }
        capture = run(lambda: AiCluster(cluster_plan.name, args), "aicluster", "test")
        return Built(cluster_plan, capture)

    return _build
