"""The policy pack prices the catalog's services (root disks, NAT gateways, public addresses) with the stack's
pricing.overrides as the plan does: a us-east-2 stack whose FSx and root volumes the catalog cannot price is
unpriced in both without overrides, priced to the same cent with them, and the budget is judged on that total."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aicluster.catalog import load_catalog
from aicluster.plan import ClusterPlan, plan
from aicluster.preview.engine import Capture, run_program
from aicluster.stackfile import find_project, load_cluster, read_stack
from tests.conftest import ROOT, write_stack
from tests.policies.conftest import judge, messages
from tests.policies.test_cost_model import pack_total

BUDGET = "aicluster-cluster-enforce-monthly-budget"
MISSING = "aicluster-cluster-missing-prices"

# p5-small (4 x p5.48xlarge with 500 GiB root volumes, 48 TiB of FSx PERSISTENT_2/250, a Slurm controller with a
# 100 GiB root volume, one zone) moved to us-east-2, where the catalog has no FSx and no EBS gp3 price.
OVERRIDES = """    pricing:
      overrides:
        - sku: ebs-gp3
          region: us-east-2
          usd_per_gib_month: 0.08
        - sku: fsx-lustre/PERSISTENT_2/250
          region: us-east-2
          usd_per_gib_month: 0.145
        - sku: nat-gateway
          region: us-east-2
          usd_per_hour: 0.05
"""


def east2(project: Path, name: str, overrides: bool) -> tuple[ClusterPlan, Capture]:
    text = (ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text().replace("us-east-1", "us-east-2")
    if overrides:
        text = text.replace("    scheduler:\n", OVERRIDES + "    scheduler:\n", 1)
    write_stack(project, name, text)
    st = read_stack(find_project(project), name)
    capture = run_program(st.project.root, st.project.name, st.stack, st.engine_config(), st.secret_keys)
    return plan(load_cluster(st), load_catalog()), capture


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[ClusterPlan, Capture]]:
    root = tmp_path_factory.mktemp("project")
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, root / name)
    (root / "stacks").mkdir()
    return {False: east2(root, "bare", False), True: east2(root, "priced", True)}


def test_without_overrides_plan_and_pack_name_the_same_items_unpriced(
    stacks: dict[bool, tuple[ClusterPlan, Capture]],
) -> None:
    planned, capture = stacks[False]
    pack = pack_total(capture)
    assert planned.totals.unpriced == (
        "pool h100: root volumes",
        "storage scratch (fsx-lustre)",
        "controller: root volume",
    )
    assert len(pack.unpriced) == 3
    assert pack.usd_per_month == planned.totals.cost_usd_per_month


def test_with_overrides_pack_and_plan_agree_to_the_cent_on_the_hand_computed_total(
    stacks: dict[bool, tuple[ClusterPlan, Capture]],
) -> None:
    bare, _ = stacks[False]
    planned, capture = stacks[True]
    pack = pack_total(capture)
    assert planned.totals.unpriced == ()
    assert pack.unpriced == ()
    # what the overrides add: root volumes 4 x 500 GiB x $0.08 = $160.00 and 100 GiB x $0.08 = $8.00; FSx 48,000
    # GiB x $0.145 = $6,960.00; the NAT gateway $0.05 x 730 h = $36.50 instead of the catalog's $0.045 x 730 = $32.85
    added = 160.00 + 8.00 + 6960.00 + 36.50 - 32.85
    assert planned.totals.cost_usd_per_month == round(bare.totals.cost_usd_per_month + added, 2)
    assert pack.usd_per_month == planned.totals.cost_usd_per_month
    assert messages(judge(capture, [MISSING])) == []
    assert messages(judge(stacks[False][1], [MISSING]))  # named while unpriced


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


def test_the_missing_prices_finding_names_the_override_lines_for_services(
    stacks: dict[bool, tuple[ClusterPlan, Capture]],
) -> None:
    (finding,) = messages(judge(stacks[False][1], [MISSING]))
    assert finding.endswith(
        "add your rates under pricing.overrides: (sku: ebs-gp3, region: us-east-2, usd_per_gib_month: ...)"
    )
