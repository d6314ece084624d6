"""What a managed Prometheus costs (issue 29): samples = series per node (catalog) x nodes x scrapes a month, priced
at the service's ingestion tiers (catalog), in the plan's totals and in the budget the pack judges, for each cloud's
example stack; an unverified price is named as unpriced, never counted as 0."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aicluster.catalog import Catalog, load_catalog
from aicluster.catalog.monitoring import Ingestion, IngestionTier, rdma_ports
from aicluster.monitoring.scrape import COUNTERS
from aicluster.plan import ClusterPlan, plan
from aicluster.preview import plan_stack
from aicluster.preview.engine import Capture, run_program
from aicluster.schedulers.kubernetes.collector import amp_scraper_configuration, scrape_interval_s
from aicluster.stackfile import find_project, load_cluster, read_stack
from policies.cost._bill import MONITORING_FIX
from tests.conftest import ROOT, write_stack
from tests.policies.conftest import capture_of, judge, messages
from tests.policies.cost.conftest import pack_total

BUDGET = "aicluster-cluster-enforce-monthly-budget"
SECONDS = 730 * 3600  # a 730-hour month


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def example(name: str) -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), name))


def node_series(catalog: Catalog, provider: str, instance_type: str) -> int:
    """One node's series, worked out from the catalog's figures: node_exporter (CPUs, RDMA ports) and, on a GPU
    node, dcgm-exporter with our counters file; each exporter a target with Prometheus's own series."""
    s = catalog.monitoring.series if catalog.monitoring else None
    assert s is not None
    it = catalog.instance_type(provider, instance_type)
    assert it is not None
    series = s.per_target_synthetic + s.node_exporter_base + s.node_exporter_per_vcpu * it.vcpus
    series += s.infiniband_per_port * rdma_ports(it)
    if it.accelerator_count:
        series += s.per_target_synthetic + s.dcgm_per_gpu * it.accelerator_count
    return series


def test_the_catalog_counts_the_fields_of_our_dcgm_counters_file(catalog: Catalog) -> None:
    assert catalog.monitoring is not None
    assert catalog.monitoring.series.dcgm_per_gpu == len(COUNTERS) == 38


def test_rdma_ports_are_the_efa_devices_or_the_infiniband_hcas(catalog: Catalog) -> None:
    def ports(provider: str, name: str) -> int:
        it = catalog.instance_type(provider, name)
        assert it is not None
        return rdma_ports(it)

    assert ports("aws", "p5.48xlarge") == 32  # 32 EFA devices
    assert ports("azure", "Standard_ND96isr_H100_v5") == 8  # 8 ConnectX-7 InfiniBand HCAs
    assert ports("gcp", "a3-megagpu-8g") == 0  # GPUDirect-TCPXO: no RDMA device
    assert ports("aws", "m7i.8xlarge") == 0


def test_tiers_price_each_sample_at_its_own_tier() -> None:
    amp = Ingestion(
        source="s",
        per_samples=10_000_000,
        tiers=(IngestionTier(up_to=2_000_000_000, usd=0.90), IngestionTier(up_to=None, usd=0.35)),
    )
    assert amp.month(1_000_000_000) == pytest.approx(90.0)
    assert amp.month(2_000_000_000) == pytest.approx(180.0)
    assert amp.month(3_000_000_000) == pytest.approx(180.0 + 35.0)
    with pytest.raises(ValueError, match="ascending up_to"):
        Ingestion(source="s", per_samples=1, tiers=(IngestionTier(up_to=5, usd=1.0),))


def test_p5_large_ingestion_on_amp_by_hand(catalog: Catalog) -> None:
    """384 p5.48xlarge (192 vCPUs, 8 H100, 32 EFA) and an m7i.8xlarge controller, remote_write every 15 s."""
    m = example("p5-large").monitoring
    p5, ctl = node_series(catalog, "aws", "p5.48xlarge"), node_series(catalog, "aws", "m7i.8xlarge")
    assert (p5, ctl) == (4155, 902)  # 5 + 481 + 13 x 192 + 27 x 32 + 5 + 38 x 8; 5 + 481 + 13 x 32
    assert (m.collector, m.ingest_interval_s, m.series) == ("remote-write", 15, 384 * p5 + ctl)
    samples = (384 * p5 + ctl) * SECONDS // 15
    assert m.samples_per_month == samples == 279_693_134_400
    # first 2 billion at $0.90 per 10M, next 250 billion at $0.35, the rest at $0.16 (us-east-1)
    by_hand = 2e9 / 1e7 * 0.90 + 250e9 / 1e7 * 0.35 + (samples - 252e9) / 1e7 * 0.16
    assert m.ingestion_usd_per_month == round(by_hand, 2) == 9373.09
    assert m.ingestion_source == "moncost-amp-pricing"


def test_eks_amp_scraper_scrapes_no_faster_than_30_s(catalog: Catalog) -> None:
    m = example("eks-p5").monitoring
    series = 16 * node_series(catalog, "aws", "p5.48xlarge") + 2 * node_series(catalog, "aws", "m7i.2xlarge")
    assert (m.collector, m.ingest_interval_s, m.series) == ("amp-scraper", 30, series)
    assert m.samples_per_month == series * SECONDS // 30
    assert m.ingestion_usd_per_month == round(2e9 / 1e7 * 0.90 + (m.samples_per_month - 2e9) / 1e7 * 0.35, 2)


def test_the_bill_counts_scrapes_at_the_interval_the_amp_scraper_is_configured_with() -> None:
    plan = example("eks-p5")
    assert plan.monitoring.ingest_interval_s == scrape_interval_s(plan) == 30
    assert "scrape_interval: 30s" in amp_scraper_configuration(plan)


def test_gke_managed_collection_at_googles_first_tier(catalog: Catalog) -> None:
    p = example("gke-a3mega")
    m = p.monitoring
    series = 32 * node_series(catalog, "gcp", "a3-megagpu-8g") + 2 * node_series(catalog, "gcp", "n2-standard-8")
    assert (m.collector, m.ingest_interval_s, m.series) == ("gke-managed-collection", 15, series)
    assert m.samples_per_month is not None
    assert m.samples_per_month < 50e9
    assert m.ingestion_usd_per_month == round(m.samples_per_month / 1e6 * 0.06, 2)
    assert any(line.startswith("Google Cloud Managed Service for Prometheus") for line in _lines(p))


def test_azure_managed_prometheus_is_named_unpriced_not_counted_as_zero() -> None:
    p = example("aks-nd-h100")
    m = p.monitoring
    assert m.samples_per_month is not None
    assert m.samples_per_month > 0
    assert m.ingestion_usd_per_month is None
    assert [u for u in p.totals.unpriced if u.startswith("Azure Monitor managed service for Prometheus")]


def _lines(p: ClusterPlan) -> list[str]:
    from aicluster.plan import cost_lines

    return [x.what for x in cost_lines((), (), None, (), (), None, p.monitoring)]


@pytest.fixture(scope="module")
def switched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[ClusterPlan, Capture]]:
    """p5-small (self-hosted) as it is, and switched to managed: AMP, remote_write from the controller."""
    root = tmp_path_factory.mktemp("project")
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, root / name)
    (root / "stacks").mkdir()
    text = (ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text()
    assert "monitoring:" not in text
    managed = text.replace("    scheduler:\n", "    monitoring:\n      prometheus: managed\n    scheduler:\n", 1)
    out = {}
    for name, body in (("self", text), ("managed", managed)):
        write_stack(root, name, body)
        out[name] = _planned_and_captured(root, name)
    return out


def _planned_and_captured(root: Path, name: str) -> tuple[ClusterPlan, Capture]:
    st = read_stack(find_project(root), name)
    capture = run_program(st.project.root, st.project.name, st.stack, st.engine_config(), st.secret_keys)
    return plan(load_cluster(st), load_catalog()), capture


def test_switching_p5_small_to_managed_adds_its_ingestion_to_plan_and_pack(
    catalog: Catalog, switched: dict[str, tuple[ClusterPlan, Capture]]
) -> None:
    (self_plan, self_capture), (managed_plan, managed_capture) = switched["self"], switched["managed"]
    assert self_plan.monitoring.ingestion_usd_per_month is None
    assert self_plan.monitoring.samples_per_month is None
    m = managed_plan.monitoring
    series = 4 * node_series(catalog, "aws", "p5.48xlarge") + node_series(catalog, "aws", "m7i.2xlarge")
    assert m.series == series
    samples = series * SECONDS // 15  # 2.92 billion: past AMP's first tier
    assert m.ingestion_usd_per_month == round(180 + (samples - 2e9) / 1e7 * 0.35, 2)
    added = round(managed_plan.totals.cost_usd_per_month - self_plan.totals.cost_usd_per_month, 2)
    assert added == m.ingestion_usd_per_month
    # the pack reads the AMP workspace from the resources and bills the same figure, to the cent
    assert pack_total(self_capture).usd_per_month == self_plan.totals.cost_usd_per_month
    assert pack_total(managed_capture).usd_per_month == managed_plan.totals.cost_usd_per_month


def test_a_budget_that_passes_without_managed_monitoring_fails_with_it(
    switched: dict[str, tuple[ClusterPlan, Capture]],
) -> None:
    (self_plan, self_capture), (managed_plan, managed_capture) = switched["self"], switched["managed"]
    ingestion = managed_plan.monitoring.ingestion_usd_per_month
    assert ingestion is not None
    budget = self_plan.totals.cost_usd_per_month + ingestion / 2  # above the bill without it, below the one with
    config = {BUDGET: {"monthly_usd": budget}}
    assert messages(judge(self_capture, [BUDGET], config)) == []
    found = messages(judge(managed_capture, [BUDGET], config))
    assert len(found) == 1
    assert found[0].startswith(f"monthly cost ${managed_plan.totals.cost_usd_per_month:,.0f} exceeds the budget")


def test_p5_large_budget_counts_amp() -> None:
    """The example's own figure: the pack's total of p5-large includes AMP's $9,373.09 as the plan does."""
    planned = example("p5-large")
    assert pack_total(capture_of("p5-large")).usd_per_month == planned.totals.cost_usd_per_month == 11_046_932.53


def test_the_unpriced_azure_service_is_named_with_catalog_advice_not_an_overrides_line() -> None:
    found = messages(judge(capture_of("aks-nd-h100"), ["aicluster-cluster-missing-prices"]))
    assert len(found) == 1
    assert found[0].startswith(
        "no catalog price for aks-nd-prometheus-workspace: Azure Monitor managed service for Prometheus, "
    )
    assert found[0].endswith(MONITORING_FIX)
    assert "pricing.overrides" not in found[0]
