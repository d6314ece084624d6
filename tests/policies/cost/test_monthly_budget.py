"""The monthly budget: judged on the total the plan shows (to the cent), with every cloud's fleets, disks, network
and owned sites in the bill, and policy config over the declared budget."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import load_catalog
from aicluster.plan import ClusterPlan
from aicluster.preview.engine import Capture
from policies.cost import bill
from policies.facts import Stack
from tests.policies.conftest import CLUSTER, judge, messages, mutated, set_at, stack_findings
from tests.policies.resources import azure, gcp
from tests.policies.resources.azure import ND_H100, nat_ip, vmss
from tests.policies.resources.gcp import A3_MEGA, controller, mig, template

BUDGET = "aicluster-cluster-enforce-monthly-budget"

CASES = [
    pytest.param(
        "aicluster-cluster-enforce-monthly-budget",
        {CLUSTER: set_at("budgets.monthly_usd", 100000.0)},
        "monthly cost $171,296 exceeds the budget $100,000 by $71,296 (71.3%); largest: llm-dev-h100-asg (4 x "
        "p5.48xlarge on-demand, 2000 GiB root volumes) $160,877; llm-dev-scratch-fs (48000 GiB fsx-lustre) $10,080; "
        "llm-dev-slurmctld-vm (1 x m7i.2xlarge on-demand, 100 GiB root volumes) $302. "
        "Shrink or remove a pool, move it to spot or reserved "
        "capacity, or raise "
        "budgets.monthly_usd",
        id="over-budget",
    )
]


@pytest.mark.parametrize(("name", "changes", "expected"), CASES)
def test_one_mutation_one_finding(p5_small: Capture, name: str, changes: dict[str, Any], expected: str) -> None:
    assert messages(judge(mutated(p5_small, changes), [name])) == [expected]


def test_budget_without_a_budget_is_not_applicable(p5_small: Capture) -> None:
    name = "aicluster-cluster-enforce-monthly-budget"
    result = judge(mutated(p5_small, {CLUSTER: set_at("budgets", {})}), [name])
    assert result.passed == []
    assert result.not_applicable == [
        {
            "policy": name,
            "reason": "no monthly budget: set budgets.monthly_usd in the stack or monthly_usd in policy config",
        }
    ]


def test_policy_config_beats_the_declared_budget(p5_small: Capture) -> None:
    name = "aicluster-cluster-enforce-monthly-budget"
    result = judge(p5_small, [name], {name: {"monthly_usd": 1000}})
    assert result.violations[0].message.startswith("monthly cost $171,296 exceeds the budget $1,000 by $170,296")
    assert result.violations[0].resource == CLUSTER
    assert result.violations[0].enforcement == "mandatory"


def test_budget_costs_scale_sets_os_disks_nat_and_public_ip() -> None:
    # catalog list prices, eastus: ND96isr H100 v5 $98.32/h, Premium SSD $0.143/GiB-month, NAT gateway and
    # Standard public IP $0.045/h and $0.005/h; 730-hour months
    gpus = 98.32 * 4 * 730  # 287,094.40
    disks = 4 * 512 * 0.143  # 292.86
    nat_gw = 0.045 * 730  # 32.85
    ip = 0.005 * 730  # 3.65
    total = gpus + disks + nat_gw + ip  # 287,423.76
    stack = [azure.cluster(budgets={"monthly_usd": 250_000.0}), vmss(), azure.nat(), nat_ip()]
    assert [(line.what, line.usd_per_month) for line in bill(Stack(stack))] == [
        (f"gpu: 4 x {ND_H100} on-demand", pytest.approx(gpus, abs=0.005)),
        ("gpu: 2048 GiB Premium_LRS OS disks", pytest.approx(disks, abs=0.005)),
        ("nat: NAT gateway", pytest.approx(nat_gw, abs=0.005)),
        ("nat-ip: public IPv4", pytest.approx(ip, abs=0.005)),
    ]
    over = total - 250_000
    expected = (
        f"monthly cost ${total:,.0f} exceeds the budget $250,000 by ${over:,.0f} ({over / 250_000:.1%}); largest: "
        f"gpu (4 x {ND_H100} on-demand, 2048 GiB Premium_LRS OS disks) ${gpus + disks:,.0f}; "
        f"nat (NAT gateway) ${nat_gw:,.0f}; nat-ip (public IPv4) ${ip:,.0f}. "
        "Shrink or remove a pool, move it to spot or "
        "reserved capacity, or raise "
        "budgets.monthly_usd"
    )
    assert stack_findings(BUDGET, stack) == [expected]
    assert expected.startswith(
        "monthly cost $287,424 exceeds the budget $250,000 by $37,424 (15.0%); largest: gpu (4 x "
        "Standard_ND96isr_H100_v5 on-demand, 2048 GiB Premium_LRS OS disks) $287,387; nat (NAT gateway) $33;"
    )
    assert stack_findings(BUDGET, stack, {"monthly_usd": 300_000}) == []


def test_budget_costs_migs_boot_disks_controller_and_cloud_nat() -> None:
    # catalog list prices, us-central1: a3-megagpu-8g $92.8718/h, n2-standard-8 $0.38847/h, pd-balanced
    # $0.10/GiB-month, Cloud NAT $0.044/h and its address $0.005/h; 730-hour months
    a3 = load_catalog().instance_type("gcp", A3_MEGA)
    assert a3 is not None
    offering = a3.offering("us-central1")
    assert offering is not None
    assert offering.on_demand_usd_per_hour is not None
    gpus = offering.on_demand_usd_per_hour * 4 * 730
    disks = 4 * 500 * 0.10
    ctl = 0.38847 * 730 + 100 * 0.10
    gateway, address = 0.044 * 730, 0.005 * 730
    tpl = template()
    stack = [gcp.cluster(budgets={"monthly_usd": 100_000.0}), tpl, mig(tpl), controller(), gcp.nat()]
    assert [(line.what, line.usd_per_month) for line in bill(Stack(stack))] == [
        (f"gpu: 4 x {A3_MEGA} on-demand", pytest.approx(gpus, abs=0.005)),
        ("gpu: 2000 GiB pd-balanced boot disks", pytest.approx(disks, abs=0.005)),
        ("ctl: 1 x n2-standard-8 on-demand", pytest.approx(0.38847 * 730, abs=0.005)),
        ("ctl: 100 GiB pd-balanced boot disks", pytest.approx(10.0, abs=0.005)),
        ("nat: Cloud NAT gateway", pytest.approx(gateway, abs=0.005)),
        ("nat: Cloud NAT public IPv4", pytest.approx(address, abs=0.005)),
    ]
    total = gpus + disks + ctl + gateway + address
    (message,) = stack_findings(BUDGET, stack)
    assert message.startswith(
        f"monthly cost ${total:,.0f} exceeds the budget $100,000 by ${total - 100_000:,.0f} "
        f"({(total - 100_000) / 100_000:.1%}); largest: gpu (4 x {A3_MEGA} on-demand, 2000 GiB pd-balanced boot disks) "
        f"${gpus + disks:,.0f}; "
    )
    assert stack_findings(BUDGET, stack, {"monthly_usd": total + 1}) == []


def test_the_budget_counts_the_sites_hardware_and_energy(dgx: Capture) -> None:
    budget = "aicluster-cluster-enforce-monthly-budget"
    assert messages(judge(dgx, [budget], {budget: {"monthly_usd": 1156296.53}})) == []
    assert messages(judge(dgx, [budget], {budget: {"monthly_usd": 1156296.52}})) == [
        "monthly cost $1,156,296.53 exceeds the budget $1,156,296.52 by $0.01 (0.0%); largest: dgx-fra1-fra1 "
        "(hardware of 128 x dgx-h100 at site fra1, energy of 128 x dgx-h100 at site fra1) $1,156,296.53. Shrink or "
        "remove a pool, move it to spot or reserved capacity, or raise budgets.monthly_usd"
    ]


@pytest.mark.parametrize(
    ("below", "fails"),
    [
        pytest.param(0.01, True, id="a-cent-under-the-total-fails"),
        pytest.param(0.0, False, id="exactly-the-total-passes"),
    ],
)
def test_the_budget_is_judged_on_the_displayed_total(
    mixed_spot: tuple[float, Capture], below: float, fails: bool
) -> None:
    planned, capture = mixed_spot
    result = judge(capture, [BUDGET], {BUDGET: {"monthly_usd": round(planned - below, 2)}})
    assert bool(messages(result)) == fails
    if fails:
        assert f"monthly cost ${planned:,.2f} exceeds" in messages(result)[0]


@pytest.mark.parametrize(("below", "fails"), [(0.01, True), (0.0, False)], ids=["a-cent-under-fails", "at-passes"])
def test_the_budget_is_judged_on_the_overridden_total(
    stacks: dict[bool, tuple[ClusterPlan, Capture]], below: float, fails: bool
) -> None:
    planned, capture = stacks[True]
    budget = round(planned.totals.cost_usd_per_month - below, 2)
    found = messages(judge(capture, [BUDGET], {BUDGET: {"monthly_usd": budget}}))
    assert bool(found) == fails
    if fails:
        assert found[0].startswith(f"monthly cost ${planned.totals.cost_usd_per_month:,.2f} exceeds")
        assert "not counted" not in found[0]
