"""Waivers from the stack spec (declared on AiCluster) and from policy config; expiry; enforcement config."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.preview import PolicyConfigError
from aicluster.preview.engine import Capture
from aicluster.preview.policy import pack_config, resolve_config, with_stack_config

from .conftest import judge, messages, mutated

LT = "llm-dev-h100-lt"
IMDS = "aws-ec2-instance-enforce-imdsv2"
BUDGET = "aicluster-cluster-enforce-monthly-budget"


def _optional(i: dict[str, Any]) -> None:
    i["metadataOptions"]["httpTokens"] = "optional"


def _waive(policy: str, resource: str, expires: str) -> Any:
    def apply(i: dict[str, Any]) -> None:
        i["compliance"]["waivers"].append(
            {"policy": policy, "resource": resource, "reason": "vendor agent needs IMDSv1", "expires": expires}
        )

    return apply


def test_declared_waiver_moves_the_finding_to_waived(p5_small: Capture) -> None:
    # A stack policy sees the AiCluster's waivers directly.
    cap = mutated(
        p5_small,
        {"llm-dev": lambda i: (i["budgets"].update(monthly_usd=1000.0), _waive(BUDGET, "llm-dev", "2099-01-01")(i))},
    )
    result = judge(cap, [BUDGET])
    assert result.violations == []
    assert [(w.policy, w.resource, w.reason, w.expires) for w in result.waived] == [
        (BUDGET, "llm-dev", "vendor agent needs IMDSv1", "2099-01-01")
    ]
    assert result.waived[0].message.startswith("monthly cost $171,296 exceeds the budget $1,000")
    assert result.passed == [BUDGET]


def test_expired_waiver_is_a_violation_again(p5_small: Capture) -> None:
    cap = mutated(
        p5_small,
        {"llm-dev": lambda i: (i["budgets"].update(monthly_usd=1000.0), _waive(BUDGET, "llm-dev", "2020-01-31")(i))},
    )
    result = judge(cap, [BUDGET])
    assert result.waived == []
    assert messages(result)[0].endswith("(waiver expired 2020-01-31: vendor agent needs IMDSv1)")


def test_resource_policy_waiver_through_policy_config(p5_small: Capture) -> None:
    cap = mutated(p5_small, {LT: _optional})
    waiver = {"resource": LT, "reason": "vendor agent needs IMDSv1", "expires": "2099-01-01"}
    result = judge(cap, [IMDS], {IMDS: {"waivers": [waiver]}})
    assert result.violations == []
    assert [w.resource for w in result.waived] == [LT]
    # a waiver for another resource leaves the finding alone
    other = {**waiver, "resource": "llm-dev-slurmctld-lt"}
    assert len(judge(cap, [IMDS], {IMDS: {"waivers": [other]}}).violations) == 1


def test_pack_config_carries_spec_waivers_to_the_cli() -> None:
    class W:
        policy, resource, reason, expires = IMDS, LT, "vendor agent needs IMDSv1", "2099-01-01"

    assert pack_config([W()]) == {
        IMDS: {
            "waivers": [
                {"policy": IMDS, "resource": LT, "reason": "vendor agent needs IMDSv1", "expires": "2099-01-01"}
            ]
        }
    }
    # a raised InfiniBand-domain limit travels the same way (resource policies cannot read AiCluster there)
    assert pack_config([], ib_domain_max_vms=300) == {"azure-compute-vmss-disallow-over-100-vms": {"max_vms": 300}}
    assert pack_config([]) == {}


@pytest.mark.parametrize(
    ("config", "level"),
    [
        pytest.param({}, "mandatory", id="default"),
        pytest.param({"all": "advisory"}, "advisory", id="all"),
        pytest.param({"all": "advisory", IMDS: "mandatory"}, "mandatory", id="own-entry-beats-all"),
        pytest.param({IMDS: {"enforcementLevel": "advisory"}}, "advisory", id="object-form"),
    ],
)
def test_enforcement_level_from_config(p5_small: Capture, config: dict[str, Any], level: str) -> None:
    result = judge(mutated(p5_small, {LT: _optional}), [IMDS], config)
    assert [v.enforcement for v in result.violations] == [level]


def test_disabled_policy_does_not_run(p5_small: Capture) -> None:
    result = judge(mutated(p5_small, {LT: _optional}), [IMDS], {"all": "disabled"})
    assert result.violations == []
    assert result.passed == []


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            {"aws-ec2-instance-enforce-imdsv3": "mandatory"},
            "policy config: aws-ec2-instance-enforce-imdsv3: no such policy in the pack (`aicluster policies` "
            'lists them; `all` sets every policy\'s level) (did you mean "aws-ec2-instance-enforce-imdsv2"?)',
            id="typo",
        ),
        pytest.param(
            {IMDS: "blocking"},
            f'policy config: {IMDS}: got "blocking"; must be an enforcement level: advisory, disabled, mandatory, '
            "remediate",
            id="level",
        ),
    ],
)
def test_bad_policy_config(config: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyConfigError) as e:
        resolve_config(config)
    assert str(e.value) == message


def test_stack_config_merges_under_the_users() -> None:
    w1 = {"policy": IMDS, "resource": LT, "reason": "from the stack file", "expires": "2099-01-01"}
    w2 = {"policy": IMDS, "resource": "other", "reason": "from the user's file", "expires": "2099-01-01"}
    derived = {IMDS: {"waivers": [w1]}, "azure-compute-vmss-disallow-over-100-vms": {"max_vms": 300}}
    assert with_stack_config(derived, None) == derived
    merged = with_stack_config(derived, {IMDS: {"enforcementLevel": "advisory", "waivers": [w2]}, "all": "advisory"})
    assert merged[IMDS] == {"enforcementLevel": "advisory", "waivers": [w1, w2]}
    assert merged["all"] == "advisory"
    assert with_stack_config(derived, {IMDS: "disabled"})[IMDS] == {"waivers": [w1], "enforcementLevel": "disabled"}
    assert with_stack_config(derived, {"azure-compute-vmss-disallow-over-100-vms": {"max_vms": 100}})[
        "azure-compute-vmss-disallow-over-100-vms"
    ] == {"max_vms": 100}
