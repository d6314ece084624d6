"""LazyPattern: the same check, error and JSON schema as `Field(pattern=...)`, compiled on first use."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field, ValidationError

from aicluster.spec import ClusterSpec
from aicluster.spec.base import LazyPattern, _ascii_pattern, _pattern_validator
from tests.helpers import azure_cluster, azure_pool

RESOURCE_GROUP = r"^[-\w.()]{0,89}[-\w()]$"
SSH_KEY = r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]{32,16384}={0,2}( [ -~]{0,256})?$"


def _models(regex: str, ascii_only: bool = False) -> tuple[type[BaseModel], type[BaseModel]]:
    class Eager(BaseModel):
        value: Annotated[str | None, Field(pattern=regex, description="d")] = None
        values: list[Annotated[str, Field(pattern=regex)]] = []

    class Lazy(BaseModel):
        value: Annotated[Annotated[str, LazyPattern(regex, ascii_only)] | None, Field(description="d")] = None
        values: list[Annotated[str, LazyPattern(regex, ascii_only)]] = []

    return Eager, Lazy


def _errors(model: type[BaseModel], data: dict[str, object]) -> list[dict[str, object]]:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return [{k: v for k, v in e.items() if k != "url"} for e in exc.errors()]
    return []


VALUES: list[object] = [
    "rg-ml-prod",
    "rg.",
    "",
    "a" * 90,
    "a" * 91,
    "rg\n",
    "\nrg",
    "rg (x)",
    "rg-é",
    "rg²",  # a digit to Python's str.isalnum, not a word character to the regex engine
    "rg‿x",  # a connector punctuation mark: a word character
    "rg\u0301",  # a combining mark
    "ssh-ed25519 " + "A" * 68 + " me@example.com",
    "ssh-ed25519 " + "A" * 31,
    "ssh-rsa " + "A" * 400 + "==",
    5,
    None,
    b"rg",
]
KEY = "A" * 68
SSH_VALUES: list[object] = [
    *(f"{kind} {KEY}" for kind in ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp521")),
    "ecdsa-sha2-nistp128 " + KEY,
    "ssh-dss " + KEY,
    *("ssh-rsa " + "A" * n for n in (31, 32, 16384, 16385)),
    *("ssh-rsa " + KEY + "=" * n for n in range(4)),
    "ssh-rsa " + KEY + "\n",
    "ssh-rsa " + KEY + " me\n",
    "ssh-rsa " + KEY + "\r",
    "\nssh-rsa " + KEY,
    "ssh-rsa  " + KEY,
    "ssh-rsa\t" + KEY,
    "ssh-rsa " + KEY + " " + "c" * 256,
    "ssh-rsa " + KEY + " " + "c" * 257,
    "ssh-rsa " + KEY + " ",
    "ssh-rsa " + KEY + " me@example.com extra words",
    "ssh-rsa " + KEY + " é",
    "ssh-rsa " + KEY + "\x7f",
    "ssh-rsa " + "A" * 40 + "=" + "A" * 40,
    "ssh-rsa " + "\uff21" * 40,  # fullwidth A: not in an ASCII class
    "SSH-RSA " + KEY,
]


@pytest.mark.parametrize(
    ("regex", "ascii_only"),
    [(RESOURCE_GROUP, False), (SSH_KEY, False), (SSH_KEY, True)],
    ids=["resource-group", "ssh-key", "ssh-key-ascii"],
)
def test_lazy_pattern_checks_and_reports_as_field_pattern_does(regex: str, ascii_only: bool) -> None:
    eager, lazy = _models(regex, ascii_only)
    for value in [*VALUES, *SSH_VALUES]:
        cases: list[dict[str, object]] = [{"value": value}, {"values": ["ok", value]}]
        for data in cases:
            assert _errors(lazy, data) == _errors(eager, data), (regex, data)
    assert lazy.model_json_schema() == {**eager.model_json_schema(), "title": "Lazy"}


def test_a_lazy_pattern_compiles_when_a_stack_first_uses_its_field() -> None:
    _pattern_validator.cache_clear()
    _ascii_pattern.cache_clear()
    ClusterSpec.model_validate(azure_cluster())  # an admin key, no resource group
    assert (_pattern_validator.cache_info().currsize, _ascii_pattern.cache_info().currsize) == (0, 1)
    ClusterSpec.model_validate(azure_cluster(pools=[azure_pool(resource_group="rg-ml-prod")]))
    assert _pattern_validator.cache_info().currsize == 1
    with pytest.raises(ValidationError, match="string_pattern_mismatch"):
        ClusterSpec.model_validate(azure_cluster(pools=[azure_pool(resource_group="rg.")]))
    assert (_pattern_validator.cache_info().currsize, _ascii_pattern.cache_info().currsize) == (1, 1)


@pytest.mark.parametrize("regex", [RESOURCE_GROUP, r"^\d+$", r"^(?i)ab$", "^é$"])
def test_only_an_ascii_pattern_is_checked_with_pythons_engine(regex: str) -> None:
    with pytest.raises(ValueError, match="not an ASCII-only pattern"):
        LazyPattern(regex, ascii_only=True)
