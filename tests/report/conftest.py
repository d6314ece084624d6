"""The preview documents of tests/report/previews.py as fixtures, a fresh copy per test."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.report.previews import PASSING, failing, hostile


@pytest.fixture
def passing_doc() -> dict[str, Any]:
    return copy.deepcopy(PASSING)


@pytest.fixture
def failing_doc() -> dict[str, Any]:
    return failing()


@pytest.fixture
def hostile_doc() -> dict[str, Any]:
    return hostile()
