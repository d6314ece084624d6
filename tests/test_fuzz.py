"""Hypothesis fuzz of the loader: any input gives a spec, a plan, or located problems; never a traceback."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aicluster.catalog import load_catalog
from aicluster.plan import plan
from aicluster.spec import ClusterSpec, SpecError, parse_cluster
from aicluster.stackfile import Project, find_project, load_cluster, read_stack
from tests.conftest import ROOT
from tests.helpers import BASE_CLUSTER, azure_cluster, files_under, gcp_cluster, run_in_process, tpu_pool

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "aws",
            "azure",
            "gcp",
            "spot",
            "eastus",
            "Standard_ND96isr_H100_v5",
            "us-east-1",
            "us-east-1a",
            "p5.48xlarge",
            "lustre",
            "/fsx",
            "cr-0123abcd",
            "us-central1",
            "us-central1-a",
            "a3-megagpu-8g",
            "a3-ultragpu-8g",
            "v5p-256",
            "v5litepod-16",
            "flex-start",
            "reserved",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)

KEYS = ["name", "tags", "pools", "storage", "scheduler", "budgets", "compliance", "pricing", "network", "access"]
POOL_KEYS = ["name", "provider", "region", "zone", "instance_type", "nodes", "market", "reservation", "image"]


def located(err: SpecError) -> bool:
    """Every problem rendered on one line that names the file."""
    lines = str(err).splitlines()
    return bool(err.problems) and len(lines) == len(err.problems) and all(x.startswith("fuzz.yaml") for x in lines)


def check(data: Any) -> None:
    spec: ClusterSpec | SpecError
    try:
        spec = parse_cluster(data, "fuzz.yaml")
    except SpecError as err:
        spec = err
    if isinstance(spec, SpecError):
        assert located(spec)
        return
    result: object
    try:
        result = plan(spec, load_catalog())
    except SpecError as err:
        result = SpecError("fuzz.yaml", err.problems)
    assert not isinstance(result, SpecError) or located(result)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(KEYS), value=values)
def test_any_top_level_value(key: str, value: Any) -> None:
    data = copy.deepcopy(BASE_CLUSTER)
    data[key] = value
    check(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.one_of(st.sampled_from(POOL_KEYS), st.text(max_size=10)), value=values)
def test_any_pool_field(key: str, value: Any) -> None:
    data = copy.deepcopy(BASE_CLUSTER)
    data["pools"][0][key] = value
    check(data)


AZURE_POOL_KEYS = [
    "name",
    "provider",
    "region",
    "zone",
    "instance_type",
    "nodes",
    "market",
    "spot_eviction",
    "resource_group",
    "image",
    "root_volume_gib",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.one_of(st.sampled_from(AZURE_POOL_KEYS), st.text(max_size=10)), value=values)
def test_any_azure_pool_field(key: str, value: Any) -> None:
    data = azure_cluster(storage=[])
    data["pools"][0][key] = value
    check(data)


GCP_POOL_KEYS = [
    "name",
    "provider",
    "region",
    "zone",
    "instance_type",
    "nodes",
    "tpu",
    "slices",
    "runtime_version",
    "market",
    "reservation",
    "max_run_hours",
    "compact_placement",
    "image",
    "root_volume_gib",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tpu=st.booleans(),
    key=st.one_of(st.sampled_from(GCP_POOL_KEYS), st.text(max_size=10)),
    value=values,
)
def test_any_gcp_pool_field(tpu: bool, key: str, value: Any) -> None:
    data = gcp_cluster(pools=[tpu_pool()]) if tpu else gcp_cluster()
    data["pools"][0][key] = value
    check(data)


@settings(max_examples=200, deadline=None)
@given(value=values)
def test_any_document(value: Any) -> None:
    check(value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.one_of(st.text(max_size=200), values.map(lambda v: yaml.safe_dump({"config": {"aicluster:cluster": v}})))
)
def test_any_stack_file_text(tmp_path: Path, text: str) -> None:
    (tmp_path / "stacks").mkdir(exist_ok=True)
    (tmp_path / "stacks" / "Pulumi.f.yaml").write_text(text)
    project = Project(tmp_path, "aicluster", tmp_path / "stacks")
    result: object
    try:
        result = load_cluster(read_stack(project, "f"))
    except SpecError as err:
        result = err
    assert isinstance(result, ClusterSpec) or (isinstance(result, SpecError) and result.problems)


# ------------------------------------------------------------------------------------------------
# Mutation fuzzing beyond the schema: hostile YAML in the example stack files, hostile JSON for `diff`
# and `--policy-config`. Every case ends in exit 0 or 2, with a message naming the file, no traceback,
# nothing written.
# ------------------------------------------------------------------------------------------------

EXAMPLES = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
HOSTILE_SCALARS = [
    "9" * 5000,
    "-" + "9" * 4400,
    "0x" + "f" * 5000,
    "0o" + "7" * 5000,
    ".inf",
    "-.inf",
    ".nan",
    "1.0e+308",
    "!!binary bWwtcGxhdGZvcm0=",
    "!!python/object:os.system 'id'",
    "!!set {a, b}",
    "!custom x",
    "!!timestamp 2027-12-31",
    "2027-12-31",
    '"ml\\n"',
    '"\\x1b[2J"',
    "\"{{ lookup('pipe','id') }}\"",
    '"$(id)"',
    "[" * 300 + "]" * 300,
    "{a: " * 200 + "1" + "}" * 200,
    "*nosuchalias",
    "&x [*x]",
    "[]",
    "{}",
    "null",
    "true",
    "~",
    "''",
    "-1",
    "0",
    "1e3",
    "'" + "x" * 5000 + "'",
]


def _mutate(text: str, line_no: int, token: str, how: int) -> str:
    """Replace the value on one line, insert a line, or add a control character."""
    lines = text.splitlines()
    i = line_no % len(lines)
    line = lines[i]
    if how == 0 and ":" in line:
        key = line.split(":", 1)[0]
        lines[i] = f"{key}: {token}"
    elif how == 1 and line.lstrip().startswith("- "):
        lines[i] = line[: len(line) - len(line.lstrip())] + "- " + token
    elif how == 2:
        indent = line[: len(line) - len(line.lstrip())]
        lines.insert(i, f"{indent}fuzz_{i}: {token}")
    elif how == 3:
        pos = len(line) // 2
        lines[i] = line[:pos] + chr(token.__len__() % 32 or 0x7F) + line[pos:]
    else:
        lines[i] = line + " " + token
    return "\n".join(lines) + "\n"


ALIAS_BOMB = "\n".join(
    ["  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    + [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzzproject")
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "stacks").mkdir()
    return root


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    example=st.sampled_from(EXAMPLES),
    line_no=st.integers(min_value=0, max_value=200),
    token=st.one_of(st.sampled_from(HOSTILE_SCALARS), st.text(max_size=20)),
    how=st.integers(min_value=0, max_value=4),
    bomb=st.booleans(),
)
def test_mutated_example_stacks_fail_cleanly(
    scratch: Path, example: Path, line_no: int, token: str, how: int, bomb: bool
) -> None:
    text = _mutate(example.read_text(), line_no, token, how)
    if bomb and line_no % 5 == 0:
        text = text.replace("config:\n", "config:\n" + ALIAS_BOMB + "\n", 1)
    (scratch / "stacks" / "Pulumi.fz.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    before = files_under(scratch)
    code, err = run_in_process(["-C", str(scratch), "validate", "fz"])
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert "stacks/Pulumi.fz.yaml" in err.splitlines()[0], err
        assert all(x.isprintable() for x in err.replace("\n", "")), err
    assert files_under(scratch) == before


@pytest.fixture(scope="module")
def preview_json(tmp_path_factory: pytest.TempPathFactory) -> str:
    from aicluster.preview import preview_stack

    project = find_project(ROOT)
    return json.dumps(preview_stack(read_stack(project, "p5-small")).to_json())


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=10,
)
HOSTILE_JSON = [
    "[" * 50_000 + "]" * 50_000,
    '{"a":' * 40 + "1" + "}" * 40,
    "9" * 5000,
    "-" + "9" * 5000,
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    '"\\ud800"',
    "\x00",
    "",
    "{",
]


def _json_mutation(doc: str, where: int, token: str) -> str:
    """Replace the JSON value after the `where`-th colon with `token`."""
    colons = [i for i, c in enumerate(doc) if c == ":"]
    start = colons[where % len(colons)] + 1
    end = start
    while end < len(doc) and doc[end] not in ",}]":
        end += 1
    return doc[:start] + token + doc[end:]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    where=st.integers(min_value=0, max_value=10_000),
    token=st.one_of(st.sampled_from(HOSTILE_JSON), json_values.map(json.dumps)),
    whole=st.booleans(),
    side=st.sampled_from(["base", "head", "policy-config"]),
)
def test_hostile_json_inputs_fail_cleanly(
    scratch: Path, preview_json: str, where: int, token: str, whole: bool, side: str
) -> None:
    bad = token if whole else _json_mutation(preview_json, where, token)
    (scratch / "bad.json").write_text(bad, encoding="utf-8", errors="surrogatepass")
    (scratch / "good.json").write_text(preview_json)
    shutil.copy(ROOT / "stacks" / "Pulumi.p5-small.yaml", scratch / "stacks" / "Pulumi.good.yaml")
    before = files_under(scratch)
    bad_path, good_path = str(scratch / "bad.json"), str(scratch / "good.json")
    if side == "policy-config":
        argv = ["-C", str(scratch), "policies", "--policy-config", bad_path]
    else:
        argv = ["diff", bad_path, good_path] if side == "base" else ["diff", good_path, bad_path]
    code, err = run_in_process(argv)
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:  # reading names the file; the content checks (preview shape, policy config) say what is wrong
        assert "bad.json" in err or "not a preview JSON" in err or "policy config" in err, err
    assert files_under(scratch) == before
