"""Hypothesis fuzz of the loader: any input gives a spec, a plan, or located problems; never a traceback."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aicluster.catalog import load_catalog
from aicluster.plan import plan
from aicluster.spec import ClusterSpec, SpecError, parse_cluster
from aicluster.stackfile import Project, load_cluster, read_stack
from tests.helpers import BASE_CLUSTER, azure_cluster, gcp_cluster, tpu_pool

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
