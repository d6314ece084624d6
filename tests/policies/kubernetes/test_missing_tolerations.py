"""Kueue flavors tolerate the taints of the node groups their nodeLabels select."""

from __future__ import annotations

from typing import Any

import pytest

from policies.facts import Res
from policies.facts.kubernetes import RESOURCE_FLAVORS
from tests.policies.conftest import res, stack_findings
from tests.policies.resources.kubernetes import GROUPS, LABELS, eks_group

FLAVOR = "aicluster-kueue-resourceflavor-missing-tolerations"


def _flavor(tolerations: list[dict[str, Any]], labels: dict[str, str] | None = None) -> Res:
    spec = {"nodeLabels": labels or dict(LABELS), "tolerations": tolerations}
    return res(RESOURCE_FLAVORS[1], "flavor-h100", {"metadata": {"name": "h100"}, "spec": spec})


TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}


@pytest.mark.parametrize("cloud", list(GROUPS))
@pytest.mark.parametrize(
    "toleration",
    [
        pytest.param(TOLERATION, id="equal"),
        pytest.param({"key": "nvidia.com/gpu", "operator": "Exists"}, id="exists-any-effect"),
    ],
)
def test_a_flavor_tolerating_its_node_groups_passes(cloud: str, toleration: dict[str, Any]) -> None:
    assert stack_findings(FLAVOR, [*GROUPS[cloud](), _flavor([toleration])]) == []


@pytest.mark.parametrize("cloud", list(GROUPS))
def test_a_flavor_missing_its_node_groups_taint_fails(cloud: str) -> None:
    (message,) = stack_findings(FLAVOR, [*GROUPS[cloud](), _flavor([])])
    assert message.startswith("Kueue ResourceFlavor h100 selects ")
    assert "does not tolerate its taint nvidia.com/gpu=present:NoSchedule" in message
    assert "add spec.tolerations [{key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}]" in (
        message
    )


def test_a_flavor_with_a_wrong_value_fails_and_one_selecting_other_nodes_is_not_judged() -> None:
    wrong = {**TOLERATION, "value": "true"}
    assert len(stack_findings(FLAVOR, [*eks_group(), _flavor([wrong])])) == 1
    other = _flavor([], {"aicluster.io/pool": "other"})
    assert stack_findings(FLAVOR, [*eks_group(), other]) == []


def test_a_flavor_on_the_instance_type_label_selects_the_group() -> None:
    by_type = _flavor([], {"node.kubernetes.io/instance-type": "p5.48xlarge"})
    assert len(stack_findings(FLAVOR, [*eks_group(), by_type])) == 1
