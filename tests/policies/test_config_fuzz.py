"""Hypothesis fuzz of `--policy-config`: any JSON either runs the pack or is refused as bad input, every
problem on its own line naming the file; the pack's own schema check agrees with jsonschema's."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aicluster.cli import main
from aicluster.preview import PolicyConfigError
from aicluster.preview.policy import (
    SCHEMA_KEYWORDS,
    config_problems,
    entry_schema,
    evaluate,
    resolve_config,
    schema_problems,
)
from aicluster.spec import Waiver, model_problems
from aicluster.stackfile import find_project
from policies import POLICIES
from tests.conftest import ROOT

LEVELS = ["advisory", "disabled", "mandatory", "remediate"]
NAMES = [p.name for p in POLICIES]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.integers().map(lambda n: n * 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from([*LEVELS, "us-east-1", "2099-12-31", "2027-02-30", "2027-12-31\n", "soc2", ""]),
)
junk = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=8,
)


def fitting(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values a schema of the pack allows (mostly) - so that the fuzz also reaches the policies."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -(10**9)))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 10**9))
        if kind == "integer":
            return st.integers(min_value=math.ceil(low), max_value=math.floor(high))
        return st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False)
    if kind == "string":
        return st.sampled_from(["2099-12-31", "2020-01-01"]) if "pattern" in schema else st.text(max_size=10)
    if kind == "array":
        return st.lists(fitting(schema.get("items", {})), max_size=3)
    if kind == "object":
        props = schema.get("properties", {})
        return st.fixed_dictionaries(
            {k: fitting(props[k]) for k in schema.get("required", [])},
            optional={k: fitting(v) for k, v in props.items() if k not in schema.get("required", [])},
        )
    return junk


def entry(name: str) -> st.SearchStrategy[Any]:
    schema = entry_schema(next(p for p in POLICIES if p.name == name))
    return st.one_of(
        st.sampled_from(LEVELS),
        fitting(schema),
        junk,
        st.dictionaries(st.sampled_from(["x", *schema["properties"]]), junk, max_size=3),
    )


configs = st.one_of(
    st.dictionaries(st.sampled_from(NAMES[:6]), st.just(None), max_size=0),
    st.sampled_from(NAMES).flatmap(lambda n: st.dictionaries(st.just(n), entry(n), min_size=1)),
    st.lists(st.sampled_from(NAMES), max_size=4).flatmap(
        lambda names: st.fixed_dictionaries({n: entry(n) for n in names})
    ),
    st.dictionaries(
        st.sampled_from([*NAMES, "all", "no-such-policy", "aicluster-cluster-enforce-monthly-budgte"]), junk, max_size=3
    ),
    junk,
)


def whole_schema() -> dict[str, Any]:
    """The policy config as one JSON Schema: what the engine checks per policy, plus names and levels."""
    level = {"type": "string", "enum": LEVELS}
    every = {"type": "object", "properties": {"enforcementLevel": level}, "additionalProperties": False}
    return {
        "type": "object",
        "properties": {
            "all": {"anyOf": [level, every]},
            **{p.name: {"anyOf": [level, entry_schema(p)]} for p in POLICIES},
        },
        "additionalProperties": False,
    }


VALIDATOR = jsonschema.Draft202012Validator(whole_schema(), format_checker=jsonschema.FormatChecker())


def finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list):
        return all(finite(v) for v in value)
    return True


def foreign_waiver(config: Any) -> bool:
    """A waiver naming another policy than the one it sits under: refused beyond the schema."""
    return isinstance(config, dict) and any(
        isinstance(w, dict) and w.get("policy", name) != name
        for name, e in config.items()
        if isinstance(e, dict) and isinstance(e.get("waivers"), list)
        for w in e["waivers"]
    )


def loose_waiver(config: Any) -> bool:
    """A waiver the schema allows but a stack's waiver rules (aicluster.spec.Waiver) refuse: a short reason,
    template syntax, a day not on the calendar; refused beyond the schema, as in a stack."""
    return isinstance(config, dict) and any(
        isinstance(w, dict) and bool(model_problems(Waiver, {"policy": name, **w}))
        for name, e in config.items()
        if isinstance(e, dict) and isinstance(e.get("waivers"), list)
        for w in e["waivers"]
    )


def test_the_pack_declares_only_schema_keywords_the_check_understands() -> None:
    def keywords(schema: dict[str, Any]) -> set[str]:
        found = set(schema)
        for sub in [*schema.get("properties", {}).values(), *([schema["items"]] if "items" in schema else [])]:
            found |= keywords(sub)
        return found

    for p in POLICIES:
        assert keywords(entry_schema(p)) <= SCHEMA_KEYWORDS, p.name


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs)
def test_the_config_check_agrees_with_jsonschema(config: Any) -> None:
    problems = config_problems(config)
    if not isinstance(config, dict):
        assert problems
        return
    expected_valid = (
        VALIDATOR.is_valid(config) and finite(config) and not foreign_waiver(config) and not loose_waiver(config)
    )
    assert (not problems) == expected_valid, [p.render("pc.json") for p in problems]
    for p in problems:
        line = p.render("pc.json")
        assert line.startswith("pc.json: ")
        assert "\n" not in line
        assert "datetime." not in line


@pytest.fixture(scope="module")
def capture() -> Any:
    from aicluster.preview import preview_stack
    from aicluster.stackfile import read_stack

    return preview_stack(read_stack(find_project(ROOT), "p5-small")).capture


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(configs)
def test_a_config_the_check_accepts_runs_the_pack(capture: Any, config: Any) -> None:
    """What passes the check never crashes a policy; what fails it never reaches one."""
    if not isinstance(config, dict):
        return
    if config_problems(config):
        with pytest.raises(PolicyConfigError):
            resolve_config(config)
        return
    result = evaluate(capture, config)
    assert {v.policy for v in result.violations} <= set(NAMES)


def test_extreme_settings_the_check_accepts_never_crash_a_policy(capture: Any) -> None:
    """The smallest and largest numbers each schema allows (found: max_overhead 1e-300 divided by zero)."""
    for p in POLICIES:
        for key, schema in entry_schema(p)["properties"].items():
            if schema.get("type") not in ("number", "integer"):
                continue
            for value in (5e-324, 1e-300, 1e-10, 0.001, 1, 1e300, 1.7e308, 10**300):
                config = {p.name: {key: value}}
                if not config_problems(config):
                    evaluate(capture, config)
    assert config_problems({CHECKPOINT: {"max_overhead": 1e-300}})
    assert config_problems({CHECKPOINT: {"gpu_hours_per_interruption": 5e-324}})


CHECKPOINT = "aicluster-filesystem-enforce-checkpoint-throughput"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(configs)
def test_the_cli_refuses_a_bad_config_with_exit_2_and_writes_nothing(
    tmp_path_factory: pytest.TempPathFactory, config: Any
) -> None:
    if isinstance(config, dict) and not config_problems(config):
        return  # a good config runs the whole preview: test_a_config_the_check_accepts_runs_the_pack
    d = tmp_path_factory.mktemp("cfg")
    cfg, out = d / "pc.json", d / "out.json"
    cfg.write_text(json.dumps(config))
    assert main(["preview", "p5-small", "--policy-config", str(cfg), "--json", str(out)]) == 2
    assert not out.exists()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"all": ' * 50_000 + "1" + "}" * 50_000, id="deep"),
        pytest.param('{"aicluster-cluster-enforce-monthly-budget": {"monthly_usd": 0x10}}', id="hex"),
        pytest.param('{"aicluster-cluster-enforce-monthly-budget": {"monthly_usd": %s}}' % ("9" * 10_000), id="digits"),
        pytest.param('{"aicluster-cluster-enforce-monthly-budget": {"monthly_usd": 1e999}}', id="overflow"),
        pytest.param('{"aicluster-cluster-enforce-monthly-budget": {"monthly_usd": -Infinity}}', id="-inf"),
        pytest.param('{"all": "advisory\\u0000"}', id="nul"),
        pytest.param("\ufeff{}", id="bom"),
    ],
)
def test_hostile_policy_configs_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    cfg = tmp_path / "pc.json"
    cfg.write_text(text)
    assert main(["preview", "p5-small", "--policy-config", str(cfg), "--json", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert str(cfg) in " ".join(err.split()).replace(" ", "") or str(cfg) in err
    assert "Traceback" not in err
    assert not (tmp_path / "o.json").exists()


def test_schema_problems_reports_each_place() -> None:
    schema = entry_schema(next(p for p in POLICIES if p.name == "aicluster-cluster-enforce-monthly-budget"))
    found = schema_problems(schema, {"monthly_usd": 0, "waivers": [{"resource": "a", "reason": "b", "expires": 1}]})
    assert [p.render("pc.json") for p in found] == [
        "pc.json: monthly_usd: got 0; must be a finite number greater than 0 and at most 1000000000000",
        "pc.json: waivers[0].expires: got 1; must be a date (YYYY-MM-DD)",
    ]


def test_schema_problems_name_json_types() -> None:
    """The user wrote JSON: an array or an object is called that, never a Python list or dict."""
    schema = entry_schema(next(p for p in POLICIES if p.name == "aicluster-cluster-enforce-monthly-budget"))
    found = schema_problems(schema, {"monthly_usd": [1], "waivers": {"resource": "a"}})
    assert [p.render("pc.json") for p in found] == [
        "pc.json: monthly_usd: got an array; must be a finite number greater than 0 and at most 1000000000000",
        "pc.json: waivers: got an object; must be an array",
    ]
