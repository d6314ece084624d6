"""`monitoring.prometheus` planned: the managed service of the cloud the controller or control plane runs in, how
metrics reach it, and a clear refusal where that cloud (or on-prem) offers no managed Prometheus."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import Catalog
from tests.helpers import azure_cluster, cluster, gcp_cluster, onprem_cluster, plan_of, plan_problems

MANAGED = {"prometheus": "managed"}
K8S = {"kind": "kubernetes"}


def test_self_hosted_is_the_default_and_names_no_service(catalog: Catalog) -> None:
    planned = plan_of(catalog, cluster()).monitoring
    assert planned.prometheus == "self-hosted"
    assert (planned.service, planned.collector, planned.provider) == (None, None, None)


@pytest.mark.parametrize(
    ("data", "service", "collector", "region"),
    [
        pytest.param(
            cluster(monitoring=MANAGED), "amazon-managed-prometheus", "remote-write", "us-east-1", id="aws-slurm"
        ),
        pytest.param(
            cluster(monitoring=MANAGED, scheduler=K8S, storage=[]), "amazon-managed-prometheus", "amp-scraper",
            "us-east-1", id="eks",
        ),
        pytest.param(
            gcp_cluster(monitoring=MANAGED, scheduler=K8S, storage=[]), "google-managed-prometheus",
            "gke-managed-collection", "us-central1", id="gke",
        ),
        pytest.param(
            azure_cluster(monitoring=MANAGED, scheduler=K8S, storage=[]), "azure-monitor-workspace",
            "aks-metrics-addon", "eastus", id="aks",
        ),
    ],
)  # fmt: skip
def test_managed_plans_the_service_of_the_control_planes_cloud(
    catalog: Catalog, data: dict[str, Any], service: str, collector: str, region: str
) -> None:
    planned = plan_of(catalog, data).monitoring
    assert planned.prometheus == "managed"
    assert (planned.service, planned.collector, planned.region) == (service, collector, region)
    assert planned.source in catalog.sources


@pytest.mark.parametrize(
    ("data", "said"),
    [
        pytest.param(
            onprem_cluster(monitoring=MANAGED), "the Slurm controller runs on onprem, which has no managed Prometheus",
            id="onprem",
        ),
        pytest.param(
            gcp_cluster(monitoring=MANAGED), "takes no remote_write from an upstream Prometheus", id="gcp-slurm"
        ),
        pytest.param(azure_cluster(monitoring=MANAGED), "Entra ID identity on the controller", id="azure-slurm"),
    ],
)  # fmt: skip
def test_managed_is_refused_where_the_cloud_offers_none_with_the_fix(
    catalog: Catalog, data: dict[str, Any], said: str
) -> None:
    problems = plan_problems(catalog, data)
    assert len(problems) == 1, problems
    assert problems[0].startswith('t: monitoring.prometheus: got "managed"'), problems[0]
    assert said in problems[0]
    assert "use self-hosted" in problems[0]


def test_an_unknown_setting_is_refused_at_load_with_the_allowed_values(catalog: Catalog) -> None:
    from aicluster.spec import SpecError, parse_cluster

    with pytest.raises(SpecError) as err:
        parse_cluster(cluster(monitoring={"prometheus": "hosted"}), "t")
    text = err.value.problems[0].render("t")
    assert "monitoring.prometheus" in text
    assert "self-hosted" in text
    assert "managed" in text
