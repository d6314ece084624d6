"""The XID catalog and node health thresholds (data/health.yaml) and the checker configuration rendered from them."""

from __future__ import annotations

import pytest

from aicluster.catalog import Catalog
from aicluster.health.config import HealthConfig
from aicluster.plan import ClusterPlan
from aicluster.preview import plan_stack
from aicluster.render.health import gpu_model, health_config
from aicluster.stackfile import find_project, read_stack
from tests.conftest import ROOT


def stack_plan(stack: str) -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), stack))


def test_every_xid_and_threshold_is_cited(catalog: Catalog) -> None:
    assert catalog.health is not None
    for rec in (*catalog.health.xids, *catalog.health.thresholds, catalog.health.rules):
        assert {rec.source, *rec.field_sources.values()} <= set(catalog.sources)


@pytest.mark.parametrize(
    ("xid", "action", "drains"),
    [
        pytest.param(79, "RESTART_BM", True, id="79-off-the-bus-power-cycle"),
        pytest.param(48, "WORKFLOW_XID_48", True, id="48-dbe"),
        pytest.param(74, "WORKFLOW_NVLINK_ERR", True, id="74-nvlink"),
        pytest.param(95, "RESET_GPU", True, id="95-uncontained-ecc"),
        pytest.param(119, "RESET_GPU", True, id="119-gsp-timeout"),
        pytest.param(13, "RESTART_APP", False, id="13-application"),
        pytest.param(31, "RESTART_APP", False, id="31-mmu-fault"),
        pytest.param(43, "IGNORE", False, id="43-ignore"),
        pytest.param(63, "IGNORE", False, id="63-remap-event-caught-by-the-pending-flag"),
        pytest.param(94, "RESTART_APP", False, id="94-contained-ecc"),
        pytest.param(154, "FOLLOW_LINKED", False, id="154-follow-linked"),
        pytest.param(56, None, True, id="56-aznhc-lists-it"),
        pytest.param(123, None, True, id="123-gke-critical"),
    ],
)
def test_xid_actions_and_drains(catalog: Catalog, xid: int, action: str | None, drains: bool) -> None:
    assert catalog.health is not None
    rec = next(x for x in catalog.health.xids if x.xid == xid)
    assert (rec.action, rec.drains) == (action, drains)


def test_every_xid_a_health_tool_calls_fatal_drains(catalog: Catalog) -> None:
    """AzNHC's check_gpu_xid list and DCGM's FAIL XIDs: the node is drained unless NVIDIA's bucket says the fault is
    the application's (68 RESTART_APP, 92 IGNORE on AzNHC's list; 63 IGNORE, caught by the row-remap check)."""
    assert catalog.health is not None
    drains = {x.xid for x in catalog.health.xids if x.drains}
    aznhc = {48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120}
    dcgm_fail = {48, 74, 79, 95, 119, 120, 140}
    assert (aznhc | dcgm_fail) - drains == {63, 68, 92}


@pytest.mark.parametrize(
    ("instance_type", "rate"),
    [
        ("Standard_ND96isr_H100_v5", 400),
        ("Standard_ND96isr_H200_v5", 400),
        ("Standard_ND96amsr_A100_v4", 200),
        ("Standard_ND96asr_v4", 200),
    ],
)
def test_aznhc_ib_rates_per_sku(catalog: Catalog, instance_type: str, rate: int) -> None:
    assert catalog.health is not None
    t = catalog.health.thresholds_for("azure", instance_type)
    assert t is not None
    assert (t.gpus, t.ib_device_prefix, t.ib_ports, t.ib_rate_gbps) == (8, "mlx5_ib", 8, rate)


@pytest.mark.parametrize(
    ("name", "token"),
    [
        ("NVIDIA H100 SXM5 80GB", "H100"),
        ("NVIDIA H200 SXM 141GB", "H200"),
        ("NVIDIA A100 SXM4 40GB", "A100"),
        ("NVIDIA B200 (HGX/DGX B200, 180GB)", "B200"),
        ("NVIDIA GB200 (Blackwell GPU of a GB200 superchip)", "GB200"),
        (None, None),
    ],
)
def test_the_gpu_model_token_is_what_nvidia_smi_names(name: str | None, token: str | None) -> None:
    assert gpu_model(name) == token


def test_the_rendered_config_carries_the_plan_and_the_catalog(catalog: Catalog) -> None:
    cfg = health_config(stack_plan("azure-nd-h100"), catalog)
    assert HealthConfig.model_validate_json(cfg.model_dump_json()) == cfg  # what the node reads back
    (pool,) = cfg.pools.values()
    assert (pool.gpus, pool.gpu_model, pool.nvlink, pool.fabric) == (8, "H100", True, "infiniband")
    assert (pool.ib_device_prefix, pool.ib_ports, pool.ib_rate_gbps) == ("mlx5_ib", 8, 400)
    assert cfg.xids["79"].drain
    assert not cfg.xids["13"].drain
    assert cfg.row_remap_pending_max == 0
