"""Rendered text: golden files. Regenerate with `UPDATE_GOLDEN=1 pytest tests/test_render.py`."""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.plan import plan
from aicluster.render import controller_cloud_init, node_cloud_init, render
from aicluster.spec import parse_cluster
from tests.helpers import cluster, pool

GOLDEN = Path(__file__).parent / "golden"


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; review and regenerate with UPDATE_GOLDEN=1"


@pytest.mark.parametrize(
    ("name", "instance_type"),
    [
        pytest.param("cloud-init-p5.yaml", "p5.48xlarge", id="p5"),
        pytest.param("cloud-init-p4d.yaml", "p4d.24xlarge", id="p4d"),
    ],
)
def test_node_cloud_init(catalog: Catalog, name: str, instance_type: str) -> None:
    cp = plan(parse_cluster(cluster(pools=[pool(instance_type=instance_type)]), "t"), catalog)
    text = node_cloud_init(cp, cp.pools[0])
    assert yaml.safe_load(text)["write_files"][0]["path"] == "/etc/aicluster/node.json"
    golden(name, text)


def test_controller_cloud_init(catalog: Catalog) -> None:
    cp = plan(parse_cluster(cluster(), "t"), catalog)
    golden("cloud-init-controller.yaml", controller_cloud_init(cp))


def test_templates_fail_on_missing_values() -> None:
    with pytest.raises(jinja2.UndefinedError):
        render("cloud-init/node.yaml.j2", plan=None, facts={})
