"""The provider registry: the spec's pool union, the planners and the component builders name the same places."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import pytest

from aicluster.plan.registry import PLANNERS
from aicluster.spec import Pool
from components import BUILDERS, builder
from tests.conftest import ROOT


def pool_tags() -> set[str]:
    union = typing.get_args(Pool)[0]
    return {typing.get_args(m.model_fields["provider"].annotation)[0] for m in typing.get_args(union)}


def test_every_pool_model_has_a_planner_and_every_planner_a_pool_model() -> None:
    assert pool_tags() == set(PLANNERS) == {"aws", "azure", "gcp", "onprem"}


def test_planners_are_keyed_by_their_own_name() -> None:
    assert all(name == planner.name for name, planner in PLANNERS.items())


def test_every_component_builder_has_a_planner() -> None:
    assert set(BUILDERS) <= set(PLANNERS)


def test_every_component_builder_module_has_a_build_function() -> None:
    for provider in BUILDERS:
        assert callable(builder(provider)), provider


# the SDK each provider's components import; a stack loads only its own providers'
SDKS = {"aws": "pulumi_aws", "azure": "pulumi_azure_native", "gcp": "pulumi_gcp"}
PREVIEW_MODULES = """
import sys
from aicluster.cli import main
code = main(["-C", sys.argv[1], "-q", "preview", sys.argv[2], "--json", sys.argv[3]])
print(" ".join(sorted(m for m in sys.modules if m.startswith(("pulumi_", "components.")))))
sys.exit(code)
"""


@pytest.mark.parametrize(("stack", "providers"), [("p5-small", {"aws"}), ("gcp-a3mega-slurm", {"gcp"})])
def test_a_preview_imports_only_the_components_and_sdks_of_its_providers(
    stack: str, providers: set[str], tmp_path: Path
) -> None:
    """In a fresh interpreter (this one has imported every provider already): pulumi_gcp alone takes over a second
    to import, so a stack without GCP must not load it, nor any other provider it does not use."""
    proc = subprocess.run(
        [sys.executable, "-c", PREVIEW_MODULES, str(ROOT), stack, str(tmp_path / "p.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.split())
    for provider, sdk in SDKS.items():
        assert (sdk in loaded) == (provider in providers), f"{stack}: {sdk} loaded={sdk in loaded}"
        assert (f"components.{provider}" in loaded) == (provider in providers), provider
