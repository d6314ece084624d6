"""The planner's workloads: pools the estimator can model, one instance type and region per job, the facts it
hands the estimator, and the plan's warnings."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import Catalog
from tests.helpers import cluster, gcp_cluster, gcp_pool, plan_of, plan_problems, pool, tpu_pool

LLAMA3_8B: dict[str, Any] = {
    "layers": 32,
    "hidden_size": 4096,
    "heads": 32,
    "kv_heads": 8,
    "ffn_size": 14336,
    "vocabulary": 128256,
    "sequence_length": 8192,
}


def workload(pools: list[str], **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "llama3-8b",
        "pools": pools,
        "model": dict(LLAMA3_8B),
        "training": {"tokens": "100B", "global_batch_tokens": "4Mi"},
    }
    data.update(changes)
    return data


def test_a_workload_is_sized_on_its_pool(catalog: Catalog) -> None:
    data = cluster(
        pools=[pool(name="h100", nodes=4)],
        storage=[
            {"name": "fsx", "kind": "lustre", "capacity_tib": 48, "throughput_mb_s_per_tib": 250, "mount": "/fsx"}
        ],
        workloads=[workload(["h100"])],
    )
    plan = plan_of(catalog, data)
    (est,) = plan.workloads
    assert est.name == "llama3-8b"
    assert est.pools == ("h100",)
    assert est.instance_type == "p5.48xlarge"
    assert est.gpus_available == 32
    assert est.fits
    # the plan's price per node-hour and power reach the estimate
    p = plan.pools[0]
    assert p.cost_usd_per_hour is not None
    assert est.gpu_hours is not None
    assert est.days is not None
    assert est.cost_usd is not None
    assert est.chosen is not None
    nodes_used = est.chosen.layout.gpus // 8
    assert est.cost_usd == pytest.approx(p.cost_usd_per_hour / p.nodes * nodes_used * est.days * 24)
    # the Lustre on the pool's network is where checkpoints go, at the plan's throughput (capacity as rounded)
    assert est.reliability is not None
    assert est.reliability.filesystems == ("fsx",)
    assert est.reliability.write_gb_s == pytest.approx(plan.filesystems[0].throughput_mb_s / 1000)


def test_a_tpu_pool_is_refused_with_the_field_and_the_fix(catalog: Catalog) -> None:
    data = gcp_cluster(pools=[gcp_pool(name="h100"), tpu_pool()], workloads=[workload(["v5p"])])
    problems = plan_problems(catalog, data)
    assert any(
        p.startswith('t: workloads[0].pools[0]: got "v5p"; pool v5p is TPU (v5p-256)')
        and "the workload estimator models NVIDIA GPUs" in p
        and "name a GPU pool of this stack: h100" in p
        for p in problems
    ), problems


def test_a_cpu_pool_is_refused(catalog: Catalog) -> None:
    data = cluster(
        pools=[pool(name="cpu", instance_type="m7i.8xlarge", nodes=2, image="ami-0123456789abcdef0")],
        workloads=[workload(["cpu"])],
    )
    problems = plan_problems(catalog, data)
    assert any("pool cpu (m7i.8xlarge) has no accelerators" in p and "add a GPU pool" in p for p in problems), problems


def test_one_job_runs_on_one_instance_type(catalog: Catalog) -> None:
    data = cluster(
        pools=[pool(name="h100", nodes=2), pool(name="a100", instance_type="p4d.24xlarge", nodes=2)],
        workloads=[workload(["h100", "a100"])],
    )
    problems = plan_problems(catalog, data)
    assert any(
        p.startswith('t: workloads[0].pools[1]: got "a100"; pool a100 is p4d.24xlarge but pool h100 is p5.48xlarge')
        and "split the workload into one per type" in p
        for p in problems
    ), problems


def test_one_job_runs_in_one_region(catalog: Catalog) -> None:
    data = cluster(
        pools=[pool(name="east", nodes=2), pool(name="west", region="us-west-2", zone="us-west-2a", nodes=2)],
        workloads=[workload(["east", "west"])],
    )
    problems = plan_problems(catalog, data)
    assert any(
        'workloads[0].pools[1]: got "west"; pool west is in aws/us-west-2 but pool east is in aws/us-east-1' in p
        for p in problems
    ), problems


def test_a_workload_over_its_target_is_a_plan_warning(catalog: Catalog) -> None:
    data = cluster(pools=[pool(name="h100", nodes=1)], workloads=[workload(["h100"], targets={"days": 1})])
    plan = plan_of(catalog, data)
    (est,) = plan.workloads
    assert est.days is not None
    assert est.days > 1
    assert any(w.startswith("workload llama3-8b: ") and "over its target of 1 days" in w for w in plan.warnings)


def test_no_workloads_no_estimates(catalog: Catalog) -> None:
    assert plan_of(catalog, cluster()).workloads == ()


def test_a_workload_that_fits_nothing_is_a_plan_warning_not_an_error(catalog: Catalog) -> None:
    """Llama 3 405B on one p5.48xlarge: 8 x 80 GB cannot hold 405e9 x 16 bytes of model states."""
    big = {
        "layers": 126,
        "hidden_size": 16384,
        "heads": 128,
        "kv_heads": 8,
        "ffn_size": 53248,
        "vocabulary": 128256,
        "sequence_length": 8192,
    }
    data = cluster(pools=[pool(name="h100", nodes=1)], workloads=[workload(["h100"], name="llama3-405b", model=big)])
    plan = plan_of(catalog, data)
    (est,) = plan.workloads
    assert not est.fits
    assert est.chosen is None
    assert est.days is None
    expected = "workload llama3-405b: no layout fits 8 h100-sxm-80gb GPUs (p5.48xlarge)"
    assert any(w.startswith(expected) for w in plan.warnings)


def test_a_pipeline_deeper_than_a_derived_shape_is_refused(catalog: Catalog) -> None:
    """A new user gave pipeline_parallel: 999 with only `parameters`: the spec cannot know the derived layers
    (70.6B -> 72 layers), so the planner refuses it instead of searching stages of less than a layer."""
    wl = workload(["h100"], model={"parameters": "70.6B", "sequence_length": 8192})
    wl["training"] = {"tokens": "1T", "global_batch_tokens": "4Mi", "pipeline_parallel": 999}
    problems = plan_problems(catalog, cluster(pools=[pool(name="h100", nodes=4)], workloads=[wl]))
    assert problems == [
        "t: workloads[0].training.pipeline_parallel: got 999; must be at most 72, the layers of the model (the shape "
        "derived from parameters: 72 layers): each stage holds at least one layer (give model.layers (with "
        "hidden_size and heads), or set pipeline_parallel: auto)"
    ]


def test_a_pipeline_wider_than_the_gpus_is_refused(catalog: Catalog) -> None:
    wl = workload(["h100"])
    wl["training"] = {"tokens": "1T", "global_batch_tokens": "4Mi", "pipeline_parallel": 16, "tensor_parallel": 4}
    problems = plan_problems(catalog, cluster(pools=[pool(name="h100", nodes=4)], workloads=[wl]))
    assert problems == [
        "t: workloads[0].training.pipeline_parallel: got 16; needs at least 64 GPUs (pipeline_parallel x "
        "tensor_parallel 4); the workload has 32 (lower it, or set pipeline_parallel: auto)"
    ]
