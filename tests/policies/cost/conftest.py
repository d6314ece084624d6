"""What the cost tests share: the pack's monthly total of a capture (as the budget rule counts it), mixed-spot
(spot and on-demand pools, FSx and EFS) and p5-small moved to us-west-2 with and without pricing.overrides."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicluster.catalog import load_catalog
from aicluster.catalog.pricing import CostTotal
from aicluster.plan import ClusterPlan, plan
from aicluster.preview import plan_stack
from aicluster.preview.engine import Capture, run_program
from aicluster.preview.policy import evaluate
from aicluster.stackfile import find_project, load_cluster, read_stack
from policies.cost import monthly_budget, monthly_total
from policies.facts import Res, Stack
from policies.rule import StackRule
from tests.conftest import ROOT, write_stack
from tests.policies.conftest import capture_of


def pack_total(capture: Capture) -> CostTotal:
    """The monthly cost as the policy pack's budget rule counts it from the captured resources."""
    seen: list[CostTotal] = []

    def probe(stack: Stack, ctx: Any) -> Iterator[tuple[Res | None, str]]:
        seen.append(monthly_total(stack))
        return iter(())

    evaluate(capture, None, [StackRule(dataclasses.replace(monthly_budget.POLICY.meta, name="cost-probe"), probe)])
    return seen[0]


@pytest.fixture(scope="session")
def mixed_spot() -> tuple[float, Capture]:
    """mixed-spot has spot and on-demand pools, FSx and EFS (billed per GiB stored) and a controller."""
    return plan_stack(read_stack(find_project(ROOT), "mixed-spot")).totals.cost_usd_per_month, capture_of("mixed-spot")


# p5-small (4 x p5.48xlarge with 500 GiB root volumes, 48 TiB of FSx PERSISTENT_2/250, a Slurm controller with a
# 100 GiB root volume, one zone) moved to us-west-2, where the catalog has no FSx, EBS gp3 or NAT gateway price.
OVERRIDES = """    pricing:
      overrides:
        - sku: ebs-gp3
          region: us-west-2
          usd_per_gib_month: 0.08
        - sku: fsx-lustre/PERSISTENT_2/250
          region: us-west-2
          usd_per_gib_month: 0.145
        - sku: nat-gateway
          region: us-west-2
          usd_per_hour: 0.05
"""


def west2(project: Path, name: str, overrides: bool) -> tuple[ClusterPlan, Capture]:
    text = (ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text().replace("us-east-1", "us-west-2")
    if overrides:
        text = text.replace("    scheduler:\n", OVERRIDES + "    scheduler:\n", 1)
    write_stack(project, name, text)
    st = read_stack(find_project(project), name)
    capture = run_program(st.project.root, st.project.name, st.stack, st.engine_config(), st.secret_keys)
    return plan(load_cluster(st), load_catalog()), capture


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[ClusterPlan, Capture]]:
    root = tmp_path_factory.mktemp("project")
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, root / name)
    (root / "stacks").mkdir()
    return {False: west2(root, "bare", False), True: west2(root, "priced", True)}
