"""The provider registry: the spec's pool union, the planners and the component builders name the same places."""

from __future__ import annotations

import typing

from aicluster.plan.registry import PLANNERS
from aicluster.spec import Pool
from components import BUILDERS


def pool_tags() -> set[str]:
    union = typing.get_args(Pool)[0]
    return {typing.get_args(m.model_fields["provider"].annotation)[0] for m in typing.get_args(union)}


def test_every_pool_model_has_a_planner_and_every_planner_a_pool_model() -> None:
    assert pool_tags() == set(PLANNERS) == {"aws", "azure", "gcp", "onprem"}


def test_planners_are_keyed_by_their_own_name() -> None:
    assert all(name == planner.name for name, planner in PLANNERS.items())


def test_every_component_builder_has_a_planner() -> None:
    assert set(BUILDERS) <= set(PLANNERS)
