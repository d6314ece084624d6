from __future__ import annotations

import os
from pathlib import Path

import pytest

from aicluster.catalog import Catalog, load_catalog

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
IN_CI = os.environ.get("CI") == "true"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture
def root() -> Path:
    return ROOT
