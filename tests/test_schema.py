"""The published JSON schema and the generated reference are current, and accept the examples."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from aicluster.docs import reference
from aicluster.spec import json_schema
from tests.conftest import ROOT, STACKS


def test_published_schema_is_current() -> None:
    published = json.loads((ROOT / "schema" / "cluster.schema.json").read_text())
    assert published == json_schema(), "run `make schema` and commit the result"


def test_spec_reference_is_current() -> None:
    assert (ROOT / "docs" / "spec-reference.md").read_text() == reference(), "run `make schema`"


@pytest.mark.parametrize("stack", STACKS)
def test_example_stacks_validate_against_the_published_schema(stack: str) -> None:
    schema = json.loads((ROOT / "schema" / "cluster.schema.json").read_text())
    data = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    jsonschema.validate(data["config"]["aicluster:cluster"], schema, cls=jsonschema.Draft202012Validator)


def test_schema_rejects_unknown_keys() -> None:
    schema = json_schema()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "x", "pools": [], "nme": 1}, schema, cls=jsonschema.Draft202012Validator)
