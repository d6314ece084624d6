"""The `workloads:` section of the stack file: counts, defaults, cross-field rules, one message per problem."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aicluster.spec import SpecError, parse_cluster
from tests.helpers import cluster

SRC = "stacks/Pulumi.t.yaml"
WORKLOAD: dict[str, Any] = {
    "name": "llama3-70b",
    "pools": ["h100"],
    "model": {
        "parameters": "70.6B",
        "layers": 80,
        "hidden_size": 8192,
        "heads": 64,
        "kv_heads": 8,
        "ffn_size": 28672,
        "vocabulary": 128256,
        "sequence_length": 8192,
    },
    "training": {"tokens": "15T", "global_batch_tokens": "16Mi"},
    "targets": {"days": 30, "gpus": 1024},
}


def workload(**parts: Any) -> dict[str, Any]:
    data = copy.deepcopy(WORKLOAD)
    for key, value in parts.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    return data


def errors(*workloads: Any) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_cluster(cluster(workloads=list(workloads)), SRC)
    return str(info.value).splitlines()


def test_a_workload_parses_with_suffixed_counts() -> None:
    spec = parse_cluster(cluster(workloads=[WORKLOAD]), SRC)
    wl = spec.workloads[0]
    assert wl.model.parameters == 70_600_000_000
    assert wl.training.tokens == 15 * 10**12
    assert wl.training.global_batch_tokens == 16 * 2**20
    assert wl.training.zero_stage == "auto"
    assert wl.training.precision == "bf16"


@pytest.mark.parametrize(
    ("given", "count"),
    [
        pytest.param(7_000_000_000, 7_000_000_000, id="int"),
        pytest.param("7e9", 7_000_000_000, id="exponent-string"),
        pytest.param(7.0e9, 7_000_000_000, id="yaml-float"),
        pytest.param("1.5K", 1500, id="K"),
        pytest.param("8B", 8 * 10**9, id="B"),
        pytest.param("2Gi", 2 * 2**30, id="Gi"),
    ],
)
def test_counts_accept_the_documented_forms(given: object, count: int) -> None:
    spec = parse_cluster(cluster(workloads=[workload(model={"parameters": given})]), SRC)
    assert spec.workloads[0].model.parameters == count


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(True, "got true; must be a whole number, or a number with K/M/B/T", id="bool"),
        pytest.param(-5, "got -5; must be at least 1", id="negative"),
        pytest.param(float("nan"), "got .nan; must be a finite number", id="nan"),
        pytest.param(float("inf"), "got .inf; must be a finite number", id="inf"),
        pytest.param("1e30", 'got "1e30"; must be at most 1e+15', id="huge"),
        pytest.param(10**400, "must be at most 1e+15", id="enormous-int"),
        pytest.param("70.6 billion", "must be a whole number, or a number with K/M/B/T", id="words"),
        pytest.param("70B\n", "must be a whole number, or a number with K/M/B/T", id="newline"),
        pytest.param(["70B"], "must be a whole number, or a number with K/M/B/T", id="list"),
        pytest.param({"a": {"b": {"c": 1}}}, "must be a whole number, or a number with K/M/B/T", id="nested"),
        pytest.param("9" * 5000, "must be a whole number, or a number with K/M/B/T", id="long-string"),
    ],
)
def test_bad_parameter_counts_get_one_message(value: object, expected: str) -> None:
    lines = errors(workload(model={"parameters": value}))
    assert len(lines) == 1, lines
    assert "workloads[0].model.parameters" in lines[0]
    assert expected in lines[0]
    assert "e.g. 70.6B" in lines[0]


@pytest.mark.parametrize(
    ("change", "where", "expected"),
    [
        pytest.param({"pools": ["a100"]}, "workloads[0].pools[0]", "no pool of this stack has this name", id="pool"),
        pytest.param({"pools": ["h100", "h100"]}, "workloads[0].pools[1]", "list each pool once", id="pool-twice"),
        pytest.param({"pools": []}, "workloads[0].pools", "needs at least 1 item", id="no-pools"),
        pytest.param({"name": "Llama_3"}, "workloads[0].name", "lowercase DNS label", id="name"),
        pytest.param({"name": "a\u0000b"}, "workloads[0].name", "lowercase DNS label", id="control-char"),
        pytest.param(
            {"model": {"kind": "moe", "experts_per_token": 2}},
            "workloads[0].model.experts",
            "required for kind moe",
            id="moe",
        ),
        pytest.param({"model": {"experts": 8}}, "workloads[0].model.experts", "only for kind moe", id="dense-experts"),
        pytest.param({"model": {"heads": 48}}, "workloads[0].model.heads", "must divide hidden_size", id="heads"),
        pytest.param({"model": {"kv_heads": 6}}, "workloads[0].model.kv_heads", "must divide heads", id="kv"),
        pytest.param({"training": {"zero_stage": 4}}, "workloads[0].training.zero_stage", "allowed:", id="zero"),
        pytest.param(
            {"training": {"tensor_parallel": 3}}, "workloads[0].training.tensor_parallel", "allowed:", id="tp-3"
        ),
        pytest.param(
            {"training": {"tensor_parallel": True}},
            "workloads[0].training.tensor_parallel",
            "not true/false",
            id="tp-bool",
        ),
        pytest.param({"training": {"recompute": "some"}}, "workloads[0].training.recompute", "allowed:", id="rc"),
        pytest.param({"targets": {"days": -1}}, "workloads[0].targets.days", "greater than 0", id="days"),
        pytest.param({"targets": {"gpus": 1.5}}, "workloads[0].targets.gpus", "whole number", id="gpus"),
        pytest.param({"model": {"sequence_length": True}}, "workloads[0].model.sequence_length", "", id="seq-bool"),
        pytest.param({"training": {"optimizer": "lion"}}, "workloads[0].training.optimizer", "allowed:", id="opt"),
        pytest.param(
            {"training": {"tensor_parallel": 128}},
            "workloads[0].training.tensor_parallel",
            "must divide model.heads (64)",
            id="tp-heads",
        ),
        pytest.param(
            {"training": {"pipeline_parallel": 81}},
            "workloads[0].training.pipeline_parallel",
            "must be at most model.layers (80)",
            id="pp-layers",
        ),
    ],
)
def test_bad_workloads_get_one_message_naming_the_field(change: dict[str, Any], where: str, expected: str) -> None:
    lines = errors(workload(**change))
    assert len(lines) == 1, lines
    assert f": {where}: " in lines[0]
    assert expected in lines[0]


def test_moe_needs_experts_per_token_at_most_experts() -> None:
    lines = errors(workload(model={"kind": "moe", "experts": 8, "experts_per_token": 9}))
    assert lines == [
        f"{SRC}: workloads[0].model.experts_per_token: got 9; must be at most experts (8): a token cannot use more "
        "experts than exist"
    ]


def test_parameters_may_be_left_out_when_the_shape_is_given() -> None:
    model = {k: v for k, v in WORKLOAD["model"].items() if k != "parameters"}
    spec = parse_cluster(cluster(workloads=[workload(model=None) | {"model": model}]), SRC)
    assert spec.workloads[0].model.parameters is None


def test_without_parameters_every_shape_field_is_named() -> None:
    lines = errors(workload(model=None) | {"model": {"sequence_length": 4096}})
    assert len(lines) == 4
    assert all("required when parameters is not given" in line for line in lines)
    assert {line.split(": ")[1] for line in lines} == {
        f"workloads[0].model.{k}" for k in ("layers", "hidden_size", "heads", "vocabulary")
    }


def test_duplicate_workload_names_and_every_problem_at_once() -> None:
    lines = errors(WORKLOAD, WORKLOAD, workload(name="other", pools=["nope"]))
    assert any("workloads[1].name" in line and "duplicate of workloads[0].name" in line for line in lines)
    assert any("workloads[2].pools[0]" in line for line in lines)
    assert len(lines) == 2
