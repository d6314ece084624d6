"""One cost model: the bill the cost rules read (policies/cost/_bill.py) costs every example stack as the plan
does, to the cent, line by line for every cloud's fleets, disks, network, TPU chips and control planes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicluster.catalog import load_catalog
from aicluster.catalog.pricing import hourly_month
from aicluster.plan import ClusterPlan, plan
from aicluster.preview import plan_stack
from aicluster.preview.engine import UNKNOWN, Capture, run_program
from aicluster.stackfile import find_project, load_cluster, read_stack
from policies.cost import bill, monthly_total
from policies.facts import Res, Stack
from policies.facts.kubernetes import AKS_CLUSTER, EKS_CLUSTER, GKE_CLUSTER
from tests.conftest import ROOT, write_stack
from tests.policies.conftest import capture_of, judge, messages, res
from tests.policies.cost.conftest import pack_total
from tests.policies.resources.azure import amlfs, vmss
from tests.policies.resources.gcp import A3_MEGA, GCP_STACKS, cluster, mig, nat, queued, template, tpu_vm
from tests.policies.resources.kubernetes import AKS, EKS, GKE, changed

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))

MISSING = "aicluster-cluster-missing-prices"


def stack_of(capture: Capture) -> Stack:
    """The facts of a captured stack, linked as the engine links them (property dependencies by URN)."""
    made = {r.urn: Res(r.type, r.name, r.urn, r.inputs) for r in capture.resources}
    for r in capture.resources:
        one = made[r.urn]
        provider = made.get(r.provider or "")
        one.provider_props = provider.props if provider else None
        one.parent = made.get(r.parent or "")
        one.property_dependencies = {k: [made[u] for u in v if u in made] for k, v in r.property_dependencies.items()}
    return Stack(list(made.values()))


def pack_and_plan(root: Path, name: str) -> tuple[float, float]:
    """The monthly cost of a stack as the pack reads it from the captured resources, and as the plan says."""
    stack_file = read_stack(find_project(root), name)
    planned = plan(load_cluster(stack_file), load_catalog())
    capture = run_program(
        stack_file.project.root,
        stack_file.project.name,
        stack_file.stack,
        stack_file.engine_config(),
        stack_file.secret_keys,
    )
    return monthly_total(stack_of(capture)).usd_per_month, planned.totals.cost_usd_per_month


@pytest.mark.parametrize("name", STACKS)
def test_the_pack_costs_every_example_stack_as_the_plan_does(name: str) -> None:
    planned = plan_stack(read_stack(find_project(ROOT), name)).totals
    pack = pack_total(capture_of(name))
    assert pack.usd_per_month == planned.cost_usd_per_month  # to the cent, not approximately
    assert bool(pack.unpriced) == bool(planned.unpriced)


def test_efs_is_in_the_budget_at_the_size_it_was_planned_for(mixed_spot: tuple[float, Capture]) -> None:
    planned, capture = mixed_spot
    efs = next(f for f in plan_stack(read_stack(find_project(ROOT), "mixed-spot")).filesystems if f.service == "efs")
    assert efs.cost_usd_per_month  # 2 TiB of EFS Standard
    assert pack_total(capture).usd_per_month == planned


def test_without_overrides_plan_and_pack_name_the_same_items_unpriced(
    stacks: dict[bool, tuple[ClusterPlan, Capture]],
) -> None:
    planned, capture = stacks[False]
    pack = pack_total(capture)
    assert planned.totals.unpriced == (
        "pool h100: root volumes",
        "storage scratch (fsx-lustre)",
        "controller: root volume",
        "network aws-us-west-2: 1 x NAT gateway",
    )
    assert len(pack.unpriced) == 4
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
    # GiB x $0.145 = $6,960.00; the NAT gateway $0.05 x 730 h = $36.50 (the catalog has no us-west-2 NAT rate)
    added = 160.00 + 8.00 + 6960.00 + 36.50
    assert planned.totals.cost_usd_per_month == round(bare.totals.cost_usd_per_month + added, 2)
    assert pack.usd_per_month == planned.totals.cost_usd_per_month
    assert messages(judge(capture, [MISSING])) == []
    assert messages(judge(stacks[False][1], [MISSING]))  # named while unpriced


def test_large_sizes_are_written_in_full() -> None:
    assert bill(Stack([amlfs(tib=1536.0)]))[0].what == "lustre: 1572864 GiB azure-managed-lustre"


def test_os_disks_the_catalog_does_not_price_are_named() -> None:
    lines = bill(Stack([vmss(disk_type="StandardSSD_LRS")]))
    assert [(line.what, line.usd_per_month) for line in lines][1] == ("gpu: 2048 GiB StandardSSD_LRS OS disks", None)


def test_cloud_nat_with_named_addresses() -> None:
    lines = bill(Stack([nat(natIpAllocateOption="MANUAL_ONLY", natIps=[UNKNOWN, UNKNOWN])]))
    assert [(line.what, line.usd_per_month) for line in lines] == [
        ("nat: Cloud NAT gateway", pytest.approx(0.044 * 730, abs=0.005)),
        ("nat: 2 x Cloud NAT public IPv4", pytest.approx(2 * 0.005 * 730, abs=0.005)),
    ]


def test_spot_and_reserved_templates_take_their_rates() -> None:
    # a3-highgpu-8g in us-central1: $35.3957/h spot, $61.3837/h with a 1-year commitment
    high = "a3-highgpu-8g"
    spot = template(machine=high, model="SPOT")
    specific = {"type": "SPECIFIC_RESERVATION", "specificReservation": {"values": ["r"]}}
    reserved = template(machine=high, affinity=specific)
    assert bill(Stack([spot, mig(spot)]))[0].usd_per_month == pytest.approx(35.3957 * 4 * 730, abs=0.005)
    assert bill(Stack([reserved, mig(reserved)]))[0].usd_per_month == pytest.approx(61.3837 * 4 * 730, abs=0.005)
    # a negotiated rate for the reservation, as the a3ultra example declares it
    mega = template(affinity=specific)
    declared = cluster(pricing={"overrides": [{"sku": A3_MEGA, "market": "reserved", "usd_per_hour": 50.0}]})
    assert bill(Stack([declared, mega, mig(mega)]))[0].usd_per_month == pytest.approx(50.0 * 4 * 730, abs=0.005)


def test_tpu_slices_are_priced_per_chip_hour() -> None:
    # v5p in us-east5: $4.20 per chip-hour on demand, $1.68 spot
    assert [(line.what, line.usd_per_month) for line in bill(Stack([queued(), tpu_vm(spot=True)]))] == [
        ("s0: v5p-256 TPU (128 chips on 32 hosts) on-demand", pytest.approx(4.2 * 128 * 730, abs=0.005)),
        ("slice: v5p-256 TPU (128 chips on 32 hosts) spot", pytest.approx(1.68 * 128 * 730, abs=0.005)),
    ]
    # overrides name the TPU generation's accelerator
    declared = cluster(pricing={"overrides": [{"sku": "tpu-v5p", "usd_per_hour": 3.0}]})
    assert bill(Stack([declared, queued()]))[0].usd_per_month == pytest.approx(3.0 * 128 * 730, abs=0.005)


@pytest.mark.parametrize("name", GCP_STACKS)
def test_example_stacks_cost_what_the_plan_says(name: str) -> None:
    pack, planned = pack_and_plan(ROOT, name)
    assert pack == planned  # one cost model: the same figure to the cent


@pytest.mark.parametrize(
    ("base", "old", "new"),
    [
        pytest.param(
            "gcp-a3mega-slurm",
            "instance_type: a3-megagpu-8g\n        nodes: 32\n",
            "instance_type: a3-highgpu-8g\n        nodes: 32\n        market: flex-start\n",
            id="flex-start-resize-request",
        ),
        pytest.param(
            "gcp-a3mega-slurm",
            "instance_type: a3-megagpu-8g\n        nodes: 32\n",
            "instance_type: a3-highgpu-8g\n        nodes: 32\n        market: spot\n",
            id="spot",
        ),
        pytest.param("gcp-tpu-v5p", "slices: 2\n", "slices: 2\n        market: spot\n", id="tpu-vm-spot"),
    ],
)
def test_other_markets_cost_what_the_plan_says(project: Path, base: str, old: str, new: str) -> None:
    text = (ROOT / "stacks" / f"Pulumi.{base}.yaml").read_text()
    assert old in text
    write_stack(project, "variant", text.replace(old, new))
    pack, planned = pack_and_plan(project, "variant")
    assert pack == planned  # one cost model: the same figure to the cent


def test_gke_tpu_node_pool_is_billed_per_chip() -> None:
    # a v5p-256 slice on GKE: 32 ct5p-hightpu-4t nodes of 4 chips at the catalog's us-east5 $4.20 per chip-hour
    pool = res(
        "gcp:container/nodePool:NodePool",
        "v5p-s0",
        {
            "name": "v5p-s0",
            "location": "us-east5",
            "nodeLocations": ["us-east5-a"],
            "nodeCount": 32,
            "nodeConfig": {"machineType": "ct5p-hightpu-4t"},
            "placementPolicy": {"type": "COMPACT", "tpuTopology": "4x4x8"},
        },
    )
    (line,) = [x for x in bill(Stack([pool])) if x.what.startswith("v5p-s0: ")]
    assert line.what == "v5p-s0: ct5p-hightpu-4t TPU (128 chips on 32 hosts) on-demand"
    assert line.usd_per_month == pytest.approx(128 * 4.2 * 730, abs=0.005)


@pytest.mark.parametrize(
    ("type_", "props", "service"),
    [
        pytest.param(EKS_CLUSTER, EKS, "Amazon EKS", id="eks"),
        pytest.param(GKE_CLUSTER, GKE, "Google Kubernetes Engine", id="gke"),
        pytest.param(AKS_CLUSTER, {**AKS, "agentPoolProfiles": []}, "Azure Kubernetes Service", id="aks"),
    ],
)
def test_each_control_plane_is_billed_per_cluster_hour(type_: str, props: dict[str, Any], service: str) -> None:
    catalog = load_catalog()
    rate = catalog.kubernetes[Res(type_, "c", "", {}).catalog_provider].usd_per_hour
    cost = monthly_total(Stack([res(type_, "c", props)]))
    assert cost.usd_per_month == hourly_month(rate, 1, catalog.hours_per_month)
    assert [x.what for x in bill(Stack([res(type_, "c", props)]))] == [f"c: {service} control plane (standard support)"]


def test_an_extended_support_version_is_billed_at_the_extended_rate() -> None:
    catalog = load_catalog()
    eks = catalog.kubernetes["aws"]
    old = changed(EKS, lambda p: p.update(version=eks.extended_versions[0]))
    (line,) = bill(Stack([res(EKS_CLUSTER, "c", old)]))
    assert line.what == "c: Amazon EKS control plane (extended support)"
    assert eks.extended_usd_per_hour is not None
    assert line.usd_per_month == hourly_month(eks.extended_usd_per_hour, 1, catalog.hours_per_month)
    gke = catalog.kubernetes["gcp"]
    if gke.extended_usd_per_hour is None:  # the catalog has no GKE extended rate: named unpriced, as the plan does
        old_gke = changed(GKE, lambda p: p.update(minMasterVersion=f"{gke.extended_versions[0]}.4-gke.1"))
        cost = monthly_total(Stack([res(GKE_CLUSTER, "g", old_gke)]))
        assert cost.unpriced
