"""Every cost is priced: what has no catalog price or declared rate is named (with the override that prices it),
never counted as 0."""

from __future__ import annotations

import pytest

from aicluster.plan import ClusterPlan
from aicluster.preview.engine import Capture
from policies.cost import bill
from policies.facts import Stack
from tests.policies.conftest import judge, messages, mutated, stack_findings
from tests.policies.cost.conftest import pack_total
from tests.policies.resources import azure, gcp
from tests.policies.resources.azure import ND_H100, amlfs, anf_pool, vmss
from tests.policies.resources.gcp import filestore, lustre, mig, template
from tests.policies.resources.onprem import site

BUDGET = "aicluster-cluster-enforce-monthly-budget"

PRICES = "aicluster-cluster-missing-prices"

MISSING = "aicluster-cluster-missing-prices"


def test_unpriced_managed_lustre_is_named_until_an_override_prices_it() -> None:
    gpus_etc = 98.32 * 4 * 730 + 4 * 512 * 0.143  # 287,387.26
    resources = [vmss(), amlfs()]
    # within budget as far as it is known: the budget passes, the advisory price rule names the gap
    assert stack_findings(BUDGET, [azure.cluster(budgets={"monthly_usd": 300_000.0}), *resources]) == []
    assert stack_findings(PRICES, [azure.cluster(budgets={"monthly_usd": 300_000.0}), *resources]) == [
        "no catalog price for lustre: 16384 GiB azure-managed-lustre: the monthly cost $287,387 + unpriced items "
        "(and the budget "
        "check) leaves them out; add your rates under pricing.overrides: "
        "(sku: azure-managed-lustre/AMLFS-Durable-Premium-250/250, region: eastus, usd_per_gib_month: ...)"
    ]
    assert stack_findings(BUDGET, [azure.cluster(budgets={"monthly_usd": 200_000.0}), *resources]) == [
        "monthly cost $287,387 + unpriced items exceeds the budget $200,000 by $87,387 (43.7%); largest: gpu (4 x "
        f"{ND_H100} on-demand, 2048 GiB Premium_LRS OS disks) $287,387. Shrink or remove a pool, move it "
        "to spot or reserved capacity, or raise budgets.monthly_usd (not counted, no price: lustre: 16384 GiB "
        "azure-managed-lustre)"
    ]
    assert f"${gpus_etc:,.0f}" == "$287,387"
    override = {"sku": "azure-managed-lustre/AMLFS-Durable-Premium-250/250", "usd_per_gib_month": 0.25}
    priced = azure.cluster(budgets={"monthly_usd": 290_000.0}, pricing={"overrides": [override]})
    lustre = 16384 * 0.25  # 4,096.00
    total = gpus_etc + lustre  # 291,483.26
    assert stack_findings(BUDGET, [priced, *resources]) == [
        f"monthly cost ${total:,.0f} exceeds the budget $290,000 by ${total - 290_000:,.0f} "
        f"({(total - 290_000) / 290_000:.1%}); largest: gpu (4 x {ND_H100} on-demand, 2048 GiB "
        "Premium_LRS OS disks) $287,387; lustre (16384 GiB azure-managed-lustre) $4,096. Shrink or remove a "
        "pool, move it to spot or reserved capacity, or raise budgets.monthly_usd"
    ]
    assert stack_findings(BUDGET, [priced, *resources], {"monthly_usd": 300_000}) == []


def test_unpriced_netapp_pool_is_named() -> None:
    # only the controller is priced: D8s v5 $0.384/h x 730 + 64 GiB Premium SSD x $0.143 = $289.47
    assert stack_findings(BUDGET, [azure.controller(), anf_pool()], {"monthly_usd": 10_000}) == []
    assert stack_findings(PRICES, [azure.controller(), anf_pool()]) == [
        "no catalog price for home: 4096 GiB azure-netapp-files: the monthly cost $289 + unpriced items (and the "
        "budget check) leaves them out; add your rates under pricing.overrides: "
        "(sku: azure-netapp-files/Premium/67.1, region: eastus, usd_per_gib_month: ...)"
    ]


def test_unpriced_gcp_filesystems_and_hyperdisk_are_named() -> None:
    tpl = template(machine="a3-ultragpu-8g", disk_type="hyperdisk-balanced")
    resources = [gcp.cluster(budgets={"monthly_usd": 1_000.0}), gcp.controller(), lustre(), filestore(), tpl]
    assert stack_findings(BUDGET, resources) == []  # $293.58 known
    assert stack_findings(PRICES, resources) == [
        "no catalog price for scratch: 144000 GiB gcp-managed-lustre, home: 2560 GiB filestore: the monthly cost "
        "$294 + unpriced items (and the budget check) leaves them out; add your rates under pricing.overrides: "
        "(sku: gcp-managed-lustre/numbered-tier/500, region: us-central1, usd_per_gib_month: ...), "
        "(sku: filestore/ZONAL/272.6, region: us-central1, usd_per_gib_month: ...)"
    ]
    # a template nothing launches costs nothing; its group's hyperdisk boot disks have no list price
    ultra = [tpl, mig(tpl)]
    overrides = {"overrides": [{"sku": "a3-ultragpu-8g", "usd_per_hour": 61.0}]}
    lines = bill(Stack([gcp.cluster(pricing=overrides), *ultra]))
    assert [(line.what, line.usd_per_month) for line in lines] == [
        ("gpu: 4 x a3-ultragpu-8g on-demand", pytest.approx(61.0 * 4 * 730, abs=0.005)),
        ("gpu: 2000 GiB hyperdisk-balanced boot disks", None),
    ]


def test_a_site_without_hardware_cost_is_named_unpriced(dgx: Capture) -> None:
    stripped = mutated(dgx, site(lambda i: i["pools"][0].update(hardware_usd_per_month=None)))
    (finding,) = messages(judge(stripped, ["aicluster-cluster-missing-prices"]))
    assert finding == (
        "no catalog price for dgx-fra1-fra1: hardware of 128 x dgx-h100 at site fra1: the monthly cost $142,963 + "
        "unpriced items (and the budget check) leaves them out; give the site a hardware_cost "
        "(purchase_usd_per_node and amortization_years, or usd_per_node_hour)"
    )


def test_efs_of_undeclared_size_is_named_unpriced_not_left_out(mixed_spot: tuple[float, Capture]) -> None:
    """A program that does not declare what its EFS was planned for: the pack cannot size it, so it says so."""
    planned, capture = mixed_spot
    cluster = next(r for r in capture.resources if r.type == "aicluster:index:AiCluster")
    stripped = mutated(capture, {cluster.name: lambda inputs: inputs.pop("filesystems")})
    cost = pack_total(stripped)
    assert any("efs" in what and "size not declared" in what for what in cost.unpriced)
    assert cost.usd_per_month < planned
    (finding,) = messages(judge(stripped, ["aicluster-cluster-missing-prices"]))
    assert "(size not declared) efs" in finding
    assert " + unpriced items (and the budget check) leaves them out" in finding


def test_the_missing_prices_finding_names_the_override_lines_for_services(
    stacks: dict[bool, tuple[ClusterPlan, Capture]],
) -> None:
    (finding,) = messages(judge(stacks[False][1], [MISSING]))
    assert finding.endswith(
        "add your rates under pricing.overrides: (sku: ebs-gp3, region: us-west-2, usd_per_gib_month: ...), "
        "(sku: fsx-lustre/PERSISTENT_2/250, region: us-west-2, usd_per_gib_month: ...), "
        "(sku: nat-gateway, region: us-west-2, usd_per_hour: ...)"
    )


def test_every_unpriced_item_gets_its_override_line() -> None:
    """Issue 30 #6: only the first kind of unpriced item (a service) got its override line; instances and file systems
    without a price were named but not how to price them. Each unpriced item's line is there once."""
    from aicluster.preview import preview_stack
    from aicluster.stackfile import find_project, read_stack

    result = preview_stack(read_stack(find_project(), "gcp-a4x"))
    (finding,) = [v.message for v in result.policy.violations if v.policy == MISSING]
    fixes = finding.split("add your rates under pricing.overrides: ", 1)[1]
    assert fixes.split("), ") == [
        "(sku: a4x-highgpu-4g, region: us-east4, market: reserved, usd_per_hour: ...",
        "(sku: hyperdisk-balanced, region: us-east4, usd_per_gib_month: ...",
        "(sku: gcp-managed-lustre/numbered-tier/1000, region: us-east4, usd_per_gib_month: ...)",
    ]
