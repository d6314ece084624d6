"""Workload: one record per sized workload, under the cluster, with the estimate's figures as camelCase inputs."""

from __future__ import annotations

import json

import pulumi
import pytest

from aicluster.plan import ClusterPlan
from aicluster.preview import plan_stack
from aicluster.preview.engine import SECRET_VALUE, Capture, Resource, run
from aicluster.stackfile import find_project, read_stack
from components import AiCluster
from components.workload import WORKLOAD_TYPE
from tests.conftest import ROOT
from tests.workload_estimates import LLAMA3_8B_CHECKPOINT, P5_SMALL_WRITE_GB_S, estimate


@pytest.fixture(scope="module")
def p5_small() -> ClusterPlan:
    return plan_stack(read_stack(find_project(ROOT), "p5-small"))


def _capture(cluster_plan: ClusterPlan) -> Capture:
    return run(lambda: AiCluster(cluster_plan.name, {"plan": cluster_plan}), "aicluster", "test")


def _records(capture: Capture) -> list[Resource]:
    return [r for r in capture.resources if r.type == WORKLOAD_TYPE]


def test_one_record_per_workload_in_stack_order_under_the_cluster(p5_small: ClusterPlan) -> None:
    two = p5_small.model_copy(update={"workloads": (estimate("llama-8b"), estimate("llama-8b-long", days=30.0))})
    capture = _capture(two)
    cluster = next(r for r in capture.resources if r.type == "aicluster:index:AiCluster")
    records = _records(capture)
    assert [r.name for r in records] == ["llm-dev-workload-llama-8b", "llm-dev-workload-llama-8b-long"]
    assert all(r.parent == cluster.urn and not r.custom for r in records)
    # an estimate provisions nothing: no child resources
    assert not [r for r in capture.resources if r.parent in {w.urn for w in records}]
    # and the cluster's other resources are the same as without workloads
    plain = _capture(p5_small)
    assert sorted((r.type, r.name) for r in capture.resources if r.type != WORKLOAD_TYPE) == sorted(
        (r.type, r.name) for r in plain.resources
    )
    assert _records(plain) == []


def test_the_record_carries_what_the_pack_and_a_reader_need(p5_small: ClusterPlan) -> None:
    w = estimate()
    record = _records(_capture(p5_small.model_copy(update={"workloads": (w,)})))[0]
    i = record.inputs
    assert (i["name"], i["cluster"], i["pools"], i["poolTag"]) == ("llama-8b", "llm-dev", ["h100"], "aicluster:pool")
    assert (i["provider"], i["region"], i["instanceType"], i["accelerator"]) == (
        "aws",
        "us-east-1",
        "p5.48xlarge",
        "h100-sxm-80gb",
    )
    assert i["gpusAvailable"] == 32
    assert i["fits"] is True
    assert i["layout"] == {
        "tp": 1,
        "pp": 1,
        "dp": 32,
        "ep": 1,
        "zero": 1,
        "recompute": "selective",
        "microBatch": 1,
        "microBatches": 16,
        "gpus": 32,
    }
    assert i["memory"]["totalBytes"] == 70e9
    assert i["memory"]["capacityBytes"] == 80e9
    assert i["memory"]["parametersBytes"] + i["memory"]["gradientsBytes"] + i["memory"]["optimizerBytes"] + i["memory"][
        "activationsBytes"
    ] + i["memory"]["overheadBytes"] == pytest.approx(i["memory"]["totalBytes"])
    assert i["memoryOf"] == "chosen"
    assert i["stepSeconds"] == 5.15
    assert (i["days"], i["tokens"]) == (4.4, 1e11)
    assert i["checkpointBytes"] == LLAMA3_8B_CHECKPOINT
    assert i["writeGbS"] == P5_SMALL_WRITE_GB_S
    assert w.reliability is not None
    assert i["checkpointIntervalSeconds"] == w.reliability.interval_s
    assert i["mtbfHours"] == pytest.approx(50_700 / 32)
    assert i["goodput"] == w.reliability.goodput
    assert i["requiredWriteGbS"] == w.reliability.required_write_gb_s
    assert i["filesystems"] == ["scratch"]
    assert (i["costUsd"], i["gpuHours"], i["energyMwh"]) == (w.cost_usd, w.gpu_hours, w.energy_mwh)


def test_a_workload_that_fits_nothing_records_its_closest_layout_and_why(p5_small: ClusterPlan) -> None:
    w = estimate("llama-405b", fits=False)
    i = _records(_capture(p5_small.model_copy(update={"workloads": (w,)})))[0].inputs
    assert i["fits"] is False
    assert i.get("layout") is None
    assert i["memoryOf"] == "closest"
    assert (i["memory"]["totalBytes"], i["memory"]["capacityBytes"], i["memory"]["fits"]) == (93.1e9, 80e9, False)
    assert i["reason"] == w.reason
    assert i.get("days") is None
    assert i.get("checkpointBytes") is None


def test_the_record_is_plain_json_with_no_secret(p5_small: ClusterPlan) -> None:
    records = _records(_capture(p5_small.model_copy(update={"workloads": (estimate(),)})))
    text = json.dumps(records[0].inputs)  # plain values only: raises on anything else
    assert SECRET_VALUE not in json.loads(text).values()
    assert "secret" not in text.lower()


def test_the_cluster_outputs_each_workloads_summary_only_when_there_are_workloads(p5_small: ClusterPlan) -> None:
    def program(cluster_plan: ClusterPlan) -> None:
        cluster = AiCluster(cluster_plan.name, {"plan": cluster_plan})
        for key, value in cluster.outputs.items():  # as __main__.py exports them
            pulumi.export(key, value)

    w = estimate()
    with_one = run(lambda: program(p5_small.model_copy(update={"workloads": (w,)})), "aicluster", "test")
    assert w.reliability is not None
    assert with_one.outputs["workloads"] == {
        "llama-8b": {
            "name": "llama-8b",
            "fits": True,
            "days": 4.4,
            "gpus": 32,
            "goodput": w.reliability.goodput,
            "checkpointIntervalSeconds": w.reliability.interval_s,
        }
    }
    assert "workloads" not in run(lambda: program(p5_small), "aicluster", "test").outputs
