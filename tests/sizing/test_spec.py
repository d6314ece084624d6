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
        pytest.param({"pools": []}, "workloads[0].pools", "name at least one pool of this stack", id="no-pools"),
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
        pytest.param({"targets": {"days": -1}}, "workloads[0].targets.days", "at least 0.0417", id="days"),
        # issue 30 #14: a fuzzer's 5e-324 passed `> 0` and overflowed the sizing (OverflowError, a traceback)
        pytest.param({"targets": {"days": 5e-324}}, "workloads[0].targets.days", "at least 0.0417", id="days-tiny"),
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


# A new user's trial (issue 16): each mistake gets one line that names the field, shows the value and says the fix.


def derived(**training: Any) -> dict[str, Any]:
    """WORKLOAD with only parameters for the shape (the estimator derives layers, hidden and heads)."""
    data = workload(training=training)
    data["model"] = {"parameters": "70.6B", "sequence_length": 8192}
    return data


@pytest.mark.parametrize(
    ("training", "line"),
    [
        pytest.param(
            {"tensor_parallel": 3},
            "training.tensor_parallel: got 3; allowed: auto, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512",
            id="tp-3",
        ),
        pytest.param(
            {"tensor_parallel": 2.0},
            "training.tensor_parallel: got 2.0; allowed: auto, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512",
            id="tp-float",
        ),
        pytest.param({"zero_stage": 5}, "training.zero_stage: got 5; allowed: auto, 0, 1, 2, 3", id="zero-5"),
        pytest.param({"zero_stage": 9}, "training.zero_stage: got 9; allowed: auto, 0, 1, 2, 3", id="zero-9"),
        pytest.param({"zero_stage": 1.0}, "training.zero_stage: got 1.0; allowed: auto, 0, 1, 2, 3", id="zero-float"),
        pytest.param(
            {"zero_stage": "3"},
            'training.zero_stage: got "3"; allowed: auto, 0, 1, 2, 3 (write 3 without quotes)',
            id="zero-quoted",
        ),
        pytest.param(
            {"zero_stage": "autp"},
            'training.zero_stage: got "autp"; allowed: auto, 0, 1, 2, 3 (did you mean "auto"?)',
            id="zero-typo",
        ),
        pytest.param(
            {"pipeline_parallel": 0},
            "training.pipeline_parallel: got 0; must be auto or a whole number from 1 to 1024",
            id="pp-0",
        ),
        pytest.param(
            {"pipeline_parallel": 2000},
            "training.pipeline_parallel: got 2000; must be auto or a whole number from 1 to 1024",
            id="pp-2000",
        ),
        pytest.param(
            {"pipeline_parallel": 1.5},
            "training.pipeline_parallel: got 1.5; must be auto or a whole number from 1 to 1024",
            id="pp-fraction",
        ),
        pytest.param(
            {"pipeline_parallel": "4"},
            'training.pipeline_parallel: got "4"; must be auto or a whole number from 1 to 1024 '
            "(write 4 without quotes)",
            id="pp-quoted",
        ),
        pytest.param(
            {"pipeline_parallel": "2000"},
            'training.pipeline_parallel: got "2000"; must be auto or a whole number from 1 to 1024',
            id="pp-quoted-too-big",
        ),
        pytest.param(
            {"pipeline_parallel": "Auto"},
            'training.pipeline_parallel: got "Auto"; must be auto or a whole number from 1 to 1024 '
            '(did you mean "auto"?)',
            id="pp-typo",
        ),
    ],
)
def test_auto_or_number_fields_say_what_they_take_in_one_line(training: dict[str, Any], line: str) -> None:
    assert errors(workload(training=training)) == [f"{SRC}: workloads[0].{line}"]


def test_pipeline_parallel_beyond_the_given_layers_is_refused() -> None:
    assert errors(workload(training={"pipeline_parallel": 999})) == [
        f"{SRC}: workloads[0].training.pipeline_parallel: got 999; must be at most model.layers (80): each stage "
        "holds at least one layer"
    ]


def test_a_derived_shape_leaves_the_pipeline_depth_to_the_planner() -> None:
    # The derived layer count is the estimator's (aicluster/sizing/shape.py), which the spec may not import: the
    # spec takes the value and the planner refuses a depth the derived shape cannot have.
    spec = parse_cluster(cluster(workloads=[derived(pipeline_parallel=999)]), SRC)
    assert spec.workloads[0].training.pipeline_parallel == 999


@pytest.mark.parametrize(
    ("change", "line"),
    [
        pytest.param(
            {"training": {"tokens": [1]}},
            "training.tokens: got a list; must be a whole number, or a number with K/M/B/T (x1000s) or Ki/Mi/Gi/Ti "
            "(x1024s) (e.g. 15T)",
            id="tokens-list",
        ),
        pytest.param(
            {"training": {"global_batch_tokens": {"a": 1}}},
            "training.global_batch_tokens: got a mapping; must be a whole number, or a number with K/M/B/T (x1000s) "
            "or Ki/Mi/Gi/Ti (x1024s) (e.g. 16Mi)",
            id="batch-mapping",
        ),
        pytest.param({"pools": []}, "pools: name at least one pool of this stack (e.g. [h100])", id="no-pools"),
        pytest.param(
            {"name": "Llama_3"},
            "name: got \"Llama_3\"; must be a lowercase DNS label: a-z, 0-9 and '-', starting with a letter, not "
            "ending with '-' (e.g. llama3-70b)",
            id="name",
        ),
    ],
)
def test_lists_and_names_say_what_was_given_and_what_to_write(change: dict[str, Any], line: str) -> None:
    assert errors(workload(**change)) == [f"{SRC}: workloads[0].{line}"]


def test_a_pool_name_keeps_a_pool_as_its_example() -> None:
    lines = errors(workload(pools=["H100"]))
    assert lines == [
        f"{SRC}: workloads[0].pools[0]: got \"H100\"; must be a lowercase DNS label: a-z, 0-9 and '-', starting "
        "with a letter, not ending with '-' (e.g. h100)"
    ]


def test_a_batch_smaller_than_one_sequence_is_refused() -> None:
    assert errors(workload(training={"global_batch_tokens": 1})) == [
        f"{SRC}: workloads[0].training.global_batch_tokens: got 1; must be at least one sequence "
        "(model.sequence_length: 8,192 tokens): give at least 8192, usually many sequences "
        "(e.g. 16Mi = 2,048 sequences of 8,192)"
    ]


def test_a_run_shorter_than_one_batch_is_refused() -> None:
    assert errors(workload(training={"tokens": 1})) == [
        f"{SRC}: workloads[0].training.tokens: got 1; must be at least one global batch "
        "(training.global_batch_tokens: 16,777,216 tokens): give at least 16777216, usually thousands of batches "
        "(e.g. 15T)"
    ]


def test_one_sequence_per_batch_and_one_batch_per_run_are_accepted() -> None:
    spec = parse_cluster(cluster(workloads=[workload(training={"tokens": "16Mi", "global_batch_tokens": 8192})]), SRC)
    assert spec.workloads[0].training.global_batch_tokens == spec.workloads[0].model.sequence_length
    assert spec.workloads[0].training.tokens == 16 * 2**20


@pytest.mark.parametrize(
    ("value", "line"),
    [
        pytest.param("8k", 'got "8k"; must be a whole number, without a suffix: write 8192 (8 x 1024)', id="8k"),
        pytest.param("8K", 'got "8K"; must be a whole number, without a suffix: write 8192 (8 x 1024)', id="8K"),
        pytest.param("32Ki", 'got "32Ki"; must be a whole number, without a suffix: write 32768 (32 x 1024)', id="Ki"),
        pytest.param("8192", 'got "8192"; must be a whole number (write 8192 without quotes)', id="quoted"),
    ],
)
def test_sequence_length_is_a_plain_number_and_the_message_gives_it(value: str, line: str) -> None:
    assert errors(workload(model={"sequence_length": value})) == [f"{SRC}: workloads[0].model.sequence_length: {line}"]
