"""GCP stacks as the engine hands them (hand-built props, camelCase, as pulumi-gcp 10.2 names them; links as the
engine's property dependencies): the facts the pack reads from them, the cost, power, compliance and fabric rules
extended to GCP, and the example GCP stacks costed exactly as the plan costs them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from aicluster.catalog import load_catalog
from aicluster.plan import plan
from aicluster.preview.engine import UNKNOWN, Capture, run_program
from aicluster.stackfile import find_project, load_cluster, read_stack
from policies.cost import bill, monthly_total
from policies.facts import Res, Stack, gcp_region
from policies.facts.aicluster import AICLUSTER_TYPE
from policies.facts.gcp import tpu_slice
from policies.rule import NotApplicable
from tests.conftest import ROOT, write_stack

from .conftest import capture_of, findings, res, stack_findings

MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
VM = "gcp:compute/instance:Instance"
RESIZE = "gcp:compute/resizeRequest:ResizeRequest"
NETWORK = "gcp:compute/network:Network"
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
NAT = "gcp:compute/routerNat:RouterNat"
QUEUED = "gcp:tpu/v2QueuedResource:V2QueuedResource"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
LUSTRE = "gcp:lustre/instance:Instance"
PARALLELSTORE = "gcp:parallelstore/instance:Instance"
FILESTORE = "gcp:filestore/instance:Instance"
AUDIT_CONFIG = "gcp:projects/iAMAuditConfig:IAMAuditConfig"
LOG_BUCKET = "gcp:logging/projectBucketConfig:ProjectBucketConfig"

A3_MEGA = "a3-megagpu-8g"
LABELS = {"owner": "ml-platform", "cost-center": "4711", "aicluster_cluster": "llm"}

GCP_STACKS = ["gcp-a3mega-slurm", "gcp-a3ultra-reservation", "gcp-tpu-v5p", "hybrid-aws-gcp", "three-cloud"]


def nics(machine: str = A3_MEGA) -> list[dict[str, Any]]:
    count = {"a3-highgpu-8g": 5, A3_MEGA: 9}.get(machine)
    if count is not None:
        return [{"nicType": "GVNIC", "network": UNKNOWN, "subnetwork": UNKNOWN} for _ in range(count)]
    return [{"nicType": "GVNIC", "network": UNKNOWN, "subnetwork": UNKNOWN} for _ in range(2)] + [
        {"nicType": "MRDMA", "network": UNKNOWN, "subnetwork": UNKNOWN} for _ in range(8)
    ]


def template(
    name: str = "gpu",
    *,
    machine: str = A3_MEGA,
    model: str = "STANDARD",
    affinity: dict[str, Any] | None = None,
    disk_gib: float = 500.0,
    disk_type: str = "pd-balanced",
    **changes: Any,
) -> Res:
    props: dict[str, Any] = {
        "machineType": machine,
        "region": "us-central1",
        "disks": [
            {"boot": True, "autoDelete": True, "diskSizeGb": disk_gib, "diskType": disk_type, "sourceImage": "img"}
        ],
        "networkInterfaces": nics(machine),
        "scheduling": {"onHostMaintenance": "TERMINATE", "provisioningModel": model, "preemptible": model == "SPOT"},
        "reservationAffinity": affinity or {"type": "ANY_RESERVATION"},
        "shieldedInstanceConfig": {"enableVtpm": True, "enableIntegrityMonitoring": True},
        "labels": LABELS | {"aicluster_pool": "gpu"},
    }
    return res(TEMPLATE, name, props | changes)


def mig(tpl: Res, *, nodes: int = 4, zone: str = "us-central1-a") -> Res:
    props = {"versions": [{"instanceTemplate": UNKNOWN}], "targetSize": float(nodes), "zone": zone}
    return res(MIG, tpl.name, props, versions=[tpl])


def controller(**changes: Any) -> Res:
    props: dict[str, Any] = {
        "machineType": "n2-standard-8",
        "zone": "us-central1-a",
        "bootDisk": {"initializeParams": {"size": 100.0, "type": "pd-balanced", "image": "img"}},
        "networkInterfaces": [{"network": UNKNOWN, "subnetwork": UNKNOWN}],
        "labels": LABELS,
    }
    return res(VM, "ctl", props | changes)


def queued(name: str = "s0", accelerator_type: str = "v5p-256", zone: str = "us-east5-a", **node: Any) -> Res:
    spec = {
        "acceleratorType": accelerator_type,
        "runtimeVersion": "v2-alpha-tpuv5",
        "networkConfig": {"network": UNKNOWN, "subnetwork": UNKNOWN, "enableExternalIps": False},
    } | node
    return res(QUEUED, name, {"zone": zone, "tpu": {"nodeSpecs": [{"parent": UNKNOWN, "nodeId": name, "node": spec}]}})


def tpu_vm(accelerator_type: str = "v5p-256", *, spot: bool = False, reserved: bool = False, **changes: Any) -> Res:
    props: dict[str, Any] = {
        "zone": "us-east5-a",
        "acceleratorType": accelerator_type,
        "runtimeVersion": "v2-alpha-tpuv5",
        "networkConfig": {"network": UNKNOWN, "subnetwork": UNKNOWN, "enableExternalIps": False},
        "schedulingConfig": {"spot": spot, "reserved": reserved},
        "labels": LABELS,
    }
    return res(TPU_VM, "slice", props | changes)


def lustre(capacity: str = "144000", per_tib: str = "500") -> Res:
    props = {"capacityGib": capacity, "perUnitStorageThroughput": per_tib, "location": "us-central1-a"}
    return res(LUSTRE, "scratch", props | {"network": UNKNOWN, "filesystem": "scratch", "labels": LABELS})


def parallelstore(capacity: str = "12288", **changes: Any) -> Res:
    props = {"capacityGib": capacity, "location": "us-central1-a", "network": UNKNOWN, "labels": LABELS}
    return res(PARALLELSTORE, "ps", props | changes)


def filestore(gib: float = 2560.0, tier: str = "ZONAL") -> Res:
    props = {
        "tier": tier,
        "location": "us-central1-a",
        "fileShares": {"capacityGb": gib, "name": "home"},
        "networks": [{"network": UNKNOWN, "modes": ["MODE_IPV4"]}],
        "labels": LABELS,
    }
    return res(FILESTORE, "home", props)


def nat(**changes: Any) -> Res:
    props = {"region": "us-central1", "router": UNKNOWN, "natIpAllocateOption": "AUTO_ONLY"}
    return res(NAT, "nat", props | changes)


def cluster(**declared: Any) -> Res:
    return res(AICLUSTER_TYPE, "llm", declared)


# --------------------------------------------------------------------------------------------------
# Facts


def test_zones_stand_for_their_region() -> None:
    assert [gcp_region(z) for z in ("us-central1-a", "europe-west4-b", "us-central1", "global", "US")] == [
        "us-central1",
        "europe-west4",
        "us-central1",
        "global",
        "US",
    ]
    assert res(LUSTRE, "l", {"location": "us-east5-a"}).region == "us-east5"
    assert res(MIG, "m", {"zone": "us-east5-b"}).region == "us-east5"
    assert res(TEMPLATE, "t", {"region": "europe-west4"}).region == "europe-west4"
    assert res(LOG_BUCKET, "b", {"location": "global"}).region == "global"


def test_migs_vms_and_tpu_slices_are_fleets() -> None:
    tpl = template()
    gpu, ctl, s0, s1 = Stack([tpl, mig(tpl), controller(), queued(), tpu_vm("v5litepod-16", spot=True)]).fleets
    assert (gpu.instance_type, gpu.nodes, gpu.market, gpu.region, gpu.provider) == (
        A3_MEGA,
        4,
        "on-demand",
        "us-central1",
        "gcp",
    )
    assert (gpu.root_volume_gib, gpu.root_disk_type, gpu.template, gpu.accelerators) == (500.0, "pd-balanced", tpl, 32)
    assert (ctl.instance_type, ctl.nodes, ctl.market, ctl.root_volume_gib, ctl.root_disk_type) == (
        "n2-standard-8",
        1,
        "on-demand",
        100.0,
        "pd-balanced",
    )
    assert s0.tpu is not None
    assert s1.tpu is not None
    assert (s0.instance_type, s0.tpu.name, s0.chips, s0.nodes, s0.market, s0.region, s0.billed) == (
        "v5p-256",
        "v5p",
        128,  # v5p names count TensorCores, 2 per chip
        32,
        "on-demand",
        "us-east5",
        128,
    )
    assert (s1.tpu.name, s1.chips, s1.nodes, s1.market, s1.accelerators) == ("v5e", 16, 4, "spot", 16)
    # the template alone launches nothing
    assert Stack([tpl]).fleets == []


def test_tpu_slice_shapes() -> None:
    cat = load_catalog()
    shapes = {
        t: (s[0].name, s[1], s[2])
        for t in ("v5p-8", "v5p-256", "v5litepod-8", "v5litepod-16", "v6e-8")
        if (s := tpu_slice(cat, t))
    }
    assert shapes == {
        "v5p-8": ("v5p", 4, 1),  # one host holds a 4-chip slice
        "v5p-256": ("v5p", 128, 32),
        "v5litepod-8": ("v5e", 8, 1),
        "v5litepod-16": ("v5e", 16, 4),
        "v6e-8": ("v6e", 8, 1),
    }
    assert tpu_slice(cat, "v4-32") is None  # not in the catalog
    multislice = queued()
    multislice.props["tpu"]["nodeSpecs"][0]["multisliceParams"] = {"nodeCount": 2.0}
    (fleet,) = Stack([multislice]).fleets
    assert (fleet.instance_type, fleet.chips, fleet.nodes) == ("2 x v5p-256", 256, 64)


@pytest.mark.parametrize(
    ("tpl", "market"),
    [
        pytest.param(template(), "on-demand", id="standard"),
        pytest.param(template(model="SPOT"), "spot", id="spot"),
        pytest.param(template(model="FLEX_START"), "flex-start", id="flex-start"),
        pytest.param(
            template(affinity={"type": "SPECIFIC_RESERVATION", "specificReservation": {"values": ["r"]}}),
            "reserved",
            id="specific-reservation",
        ),
        # may consume a matching reservation, but nothing says it will: costed on-demand (see facts.gcp_market)
        pytest.param(template(affinity={"type": "ANY_RESERVATION"}), "on-demand", id="any-reservation"),
    ],
)
def test_template_market(tpl: Res, market: str) -> None:
    assert Stack([tpl, mig(tpl)]).fleets[0].market == market


def test_tpu_vm_markets() -> None:
    assert Stack([tpu_vm(spot=True)]).fleets[0].market == "spot"
    assert Stack([tpu_vm(reserved=True)]).fleets[0].market == "reserved"
    assert Stack([tpu_vm()]).fleets[0].market == "on-demand"


def test_flex_start_mig_counts_its_resize_request() -> None:
    tpl = template(model="FLEX_START")
    group = mig(tpl, nodes=0)
    request = res(RESIZE, "req", {"zone": "us-central1-a", "instanceGroupManager": UNKNOWN, "resizeBy": 16.0})
    request.property_dependencies = {"instanceGroupManager": [group]}
    other = res(RESIZE, "other", {"instanceGroupManager": "another-mig", "resizeBy": 8.0})
    (fleet,) = Stack([tpl, group, request, other]).fleets
    assert (fleet.nodes, fleet.market) == (16, "flex-start")
    assert Stack([tpl, group]).fleets[0].nodes == 0


def test_managed_lustre_parallelstore_and_filestore_are_filesystems() -> None:
    scratch, ps, home, big = Stack([lustre(), parallelstore(), filestore(), filestore(20480.0)]).filesystems
    assert (scratch.service, scratch.provider, scratch.capacity_gib, scratch.throughput_mb_s, scratch.region) == (
        "gcp-managed-lustre",
        "gcp",
        144000.0,
        pytest.approx(144000 / 1024 * 500),
        "us-central1",
    )
    assert scratch.tier is not None
    assert scratch.tier.sku == "gcp-managed-lustre/numbered-tier/500"
    assert scratch.parallel
    assert (ps.service, ps.capacity_gib, ps.parallel) == ("parallelstore", 12288.0, True)
    assert ps.tier is not None
    assert ps.tier.deployment == "SCRATCH"
    assert ps.throughput_mb_s == pytest.approx(12 * 1234.8)
    assert Stack([parallelstore(deploymentType="PERSISTENT")]).filesystems[0].tier is None  # not catalogued
    assert (home.service, home.capacity_gib, home.parallel) == ("filestore", 2560.0, False)
    assert home.tier is not None
    assert big.tier is not None
    assert (home.tier.deployment, big.tier.deployment) == ("ZONAL", "ZONAL-10-100TiB")
    assert Stack([filestore(tier="BASIC_HDD")]).filesystems[0].tier is None


# --------------------------------------------------------------------------------------------------
# Cost

BUDGET = "aicluster-cluster-enforce-monthly-budget"
PRICES = "aicluster-cluster-missing-prices"


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
    stack = [cluster(budgets={"monthly_usd": 100_000.0}), tpl, mig(tpl), controller(), nat()]
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


def test_unpriced_gcp_filesystems_and_hyperdisk_are_named() -> None:
    tpl = template(machine="a3-ultragpu-8g", disk_type="hyperdisk-balanced")
    resources = [cluster(budgets={"monthly_usd": 1_000.0}), controller(), lustre(), filestore(), tpl]
    assert stack_findings(BUDGET, resources) == []  # $293.58 known
    assert stack_findings(PRICES, resources) == [
        "no catalog price for scratch: 144000 GiB gcp-managed-lustre, home: 2560 GiB filestore: the monthly cost "
        "$294 + unpriced items (and the budget check) leaves them out; add your rates under pricing.overrides"
    ]
    # a template nothing launches costs nothing; its group's hyperdisk boot disks have no list price
    ultra = [tpl, mig(tpl)]
    overrides = {"overrides": [{"sku": "a3-ultragpu-8g", "usd_per_hour": 61.0}]}
    lines = bill(Stack([cluster(pricing=overrides), *ultra]))
    assert [(line.what, line.usd_per_month) for line in lines] == [
        ("gpu: 4 x a3-ultragpu-8g on-demand", pytest.approx(61.0 * 4 * 730, abs=0.005)),
        ("gpu: 2000 GiB hyperdisk-balanced boot disks", None),
    ]


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


# --------------------------------------------------------------------------------------------------
# Power and storage

POWER = "aicluster-cluster-enforce-power-budget"
POWER_FIGURES = "aicluster-cluster-missing-power-figures"


def test_tpu_power_is_named_not_counted_as_zero() -> None:
    # n2-standard-8 draws 0.08 kW; us-east5's PUE brings the controller's facility draw to about 0.1 kW
    resources = [controller(zone="us-east5-a"), queued()]
    assert stack_findings(POWER_FIGURES, resources) == [
        "no published power figure for s0 (32 x v5p-256 hosts): the facility power 0.1 kW (and the power budget and "
        "carbon figures) leaves them out; meter the hosts, or budget their power outside this check"
    ]
    assert stack_findings(POWER_FIGURES, [controller()]) == []
    (over,) = stack_findings(POWER, resources, {"power_kw": 0.01})
    assert over.endswith("(not counted, no published power figure: s0 (32 x v5p-256 hosts))")
    assert stack_findings(POWER, resources, {"power_kw": 10}) == []


def test_gcp_fleets_draw_power() -> None:
    tpl = template()
    (message,) = stack_findings(POWER, [tpl, mig(tpl, nodes=32)], {"power_kw": 100})
    assert message.startswith("facility power 359.0 kW (IT kW x PUE) exceeds the budget 100.0 kW by 259.0 kW")


def test_tpu_spot_slice_needs_a_shared_filesystem() -> None:
    assert stack_findings("aicluster-spot-missing-checkpoint-storage", [tpu_vm(spot=True)]) == [
        "slice runs v5p-256 TPU (128 chips) on spot with no shared file system in the stack: an interruption loses "
        "all progress since the job started; add storage (kind: lustre) to checkpoint to"
    ]
    assert stack_findings("aicluster-spot-missing-checkpoint-storage", [tpu_vm(spot=True), lustre()]) == []


def test_managed_lustre_takes_tpu_checkpoints() -> None:
    name = "aicluster-filesystem-enforce-checkpoint-throughput"
    # 128 v5p chips x 95 GB HBM / 2 = 6,080 GB at 144,000 GiB x 500 MB/s per TiB = 70.3 GB/s: 86 s
    near = lustre()
    near.props["location"] = "us-east5-a"  # the slice's region: one job can mount it
    assert stack_findings(name, [queued(), near]) == []
    assert stack_findings(name, [queued(), near], {"checkpoint_seconds": 60}) == [
        "s0 (128 TPU chips in us-east5): a 6,080 GB checkpoint takes 86 s at 70.3 GB/s on scratch, over the 60 s "
        "target; raise the file system's capacity or throughput_mb_s_per_tib"
    ]
    assert stack_findings(name, [queued(), lustre()]) == [  # in us-central1: another region's file system
        "s0 (128 TPU chips in us-east5): no parallel file system on their network: a 6,080 GB checkpoint has "
        "nowhere fast to go (scratch is on another network, cloud or region); add storage (kind: lustre) in the "
        "pool's cloud and region"
    ]
    assert stack_findings(name, [queued(), filestore()]) == [
        "s0 (128 TPU chips in us-east5): no parallel file system on their network: a 6,080 GB checkpoint has "
        "nowhere fast to go; add storage (kind: lustre) in the pool's cloud and region"
    ]


# --------------------------------------------------------------------------------------------------
# Public IPs

PUBLIC = "gcp-compute-instance-disallow-public-ip"


def test_aicluster_gcp_compute_has_no_public_ip() -> None:
    for r in (template(), controller(), tpu_vm(), queued()):
        assert findings(PUBLIC, r.type, r.props) == [], r.type


def test_template_and_vm_with_an_external_ip() -> None:
    with_ip = nics()
    with_ip[0] = with_ip[0] | {"accessConfigs": [{"networkTier": "PREMIUM"}]}
    assert findings(PUBLIC, TEMPLATE, template(networkInterfaces=with_ip).props) == [
        "instance template x gives networkInterfaces[0] an external IP (accessConfigs); remove accessConfigs: nodes "
        "egress through Cloud NAT, reach them through IAP TCP forwarding"
    ]
    ipv6 = [{"network": UNKNOWN, "ipv6AccessConfigs": [{"networkTier": "PREMIUM"}]}]
    assert findings(PUBLIC, VM, controller(networkInterfaces=ipv6).props) == [
        "instance x gives networkInterfaces[0] an external IP (ipv6AccessConfigs); remove ipv6AccessConfigs: nodes "
        "egress through Cloud NAT, reach them through IAP TCP forwarding"
    ]
    empty = [{"network": UNKNOWN, "accessConfigs": []}]
    assert findings(PUBLIC, VM, controller(networkInterfaces=empty).props) == []


def test_tpu_with_external_ips() -> None:
    open_vm = tpu_vm(networkConfig={"network": UNKNOWN, "enableExternalIps": True})
    assert findings(PUBLIC, TPU_VM, open_vm.props) == [
        "v2 vm x gives its TPU VMs external IPs (networkConfig.enableExternalIps = true); set it false: TPU VMs "
        "egress through Cloud NAT, reach them through IAP"
    ]
    open_qr = queued(networkConfig={"network": UNKNOWN, "enableExternalIps": True})
    assert findings(PUBLIC, QUEUED, open_qr.props) == [
        "v2 queued resource x gives its TPU VMs external IPs (tpu.nodeSpecs[0].node.networkConfig.enableExternalIps "
        "= true); set it false: TPU VMs egress through Cloud NAT, reach them through IAP"
    ]


# --------------------------------------------------------------------------------------------------
# SSH / RDP from the internet

ADMIN = "gcp-compute-firewall-disallow-admin-from-internet"


def firewall(**changes: Any) -> dict[str, Any]:
    """aicluster's SSH rule: IAP's range only."""
    props: dict[str, Any] = {
        "direction": "INGRESS",
        "network": UNKNOWN,
        "sourceRanges": ["35.235.240.0/20"],
        "allows": [{"protocol": "tcp", "ports": ["22"]}],
    }
    return props | changes


@pytest.mark.parametrize(
    "props",
    [
        pytest.param(firewall(), id="iap-only"),
        pytest.param(firewall(sourceRanges=["10.0.0.0/16"], allows=[{"protocol": "tcp"}]), id="internal-all-ports"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "tcp", "ports": ["443"]}]), id="https"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "udp"}]), id="udp"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], direction="EGRESS"), id="egress"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], disabled=True), id="disabled"),
        pytest.param(
            firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "tcp", "ports": ["23-3388"]}]), id="range-between"
        ),
        pytest.param(firewall(sourceRanges=UNKNOWN), id="unknown-sources"),
    ],
)
def test_firewalls_that_do_not_open_admin_ports(props: dict[str, Any]) -> None:
    assert findings(ADMIN, FIREWALL, props) == []


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        pytest.param(
            firewall(sourceRanges=["0.0.0.0/0"]),
            "firewall x allows[0] lets 0.0.0.0/0 reach SSH (protocol tcp, ports 22); remove it and reach nodes "
            "through IAP TCP forwarding (source 35.235.240.0/20)",
            id="ssh",
        ),
        pytest.param(
            firewall(
                direction=None, sourceRanges=["10.0.0.0/8", "::/0"], allows=[{"protocol": "tcp", "ports": ["3389"]}]
            ),
            "firewall x allows[0] lets ::/0 reach RDP (protocol tcp, ports 3389); remove it and reach nodes through "
            "IAP TCP forwarding (source 35.235.240.0/20)",
            id="rdp-ipv6-direction-unset",
        ),
        pytest.param(
            firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "udp"}, {"protocol": "tcp", "ports": ["20-30"]}]),
            "firewall x allows[1] lets 0.0.0.0/0 reach SSH (protocol tcp, ports 20-30); remove it and reach nodes "
            "through IAP TCP forwarding (source 35.235.240.0/20)",
            id="port-range",
        ),
        pytest.param(
            firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "all"}]),
            "firewall x allows[0] lets 0.0.0.0/0 reach SSH/RDP (protocol all, ports all); remove it and reach nodes "
            "through IAP TCP forwarding (source 35.235.240.0/20)",
            id="all-protocols-all-ports",
        ),
    ],
)
def test_firewalls_that_open_admin_ports(props: dict[str, Any], expected: str) -> None:
    assert findings(ADMIN, FIREWALL, props) == [expected]


# --------------------------------------------------------------------------------------------------
# Required labels

GCP_LABELS = "gcp-resource-missing-required-labels"


def test_labelled_gcp_resources_pass() -> None:
    for r in (template(), controller(), tpu_vm(), lustre(), parallelstore(), filestore()):
        assert findings(GCP_LABELS, r.type, r.props) == [], r.type


def test_gcp_resources_without_labels_are_judged_by_their_sdk_class() -> None:
    # pulumi_gcp.compute.Network and Firewall take no labels; a MIG neither (its template carries them)
    assert findings(GCP_LABELS, NETWORK, {"autoCreateSubnetworks": False}) == []
    assert findings(GCP_LABELS, FIREWALL, firewall()) == []
    assert findings(GCP_LABELS, MIG, {"zone": "us-central1-a", "targetSize": 4.0}) == []
    # ... a global address does, though the program gave it none
    assert findings(GCP_LABELS, "gcp:compute/globalAddress:GlobalAddress", {"purpose": "VPC_PEERING"}) == [
        "global address x lacks required labels owner, cost-center; add the tags to the cluster's tags in the stack "
        "file (aicluster:cluster.tags); GCP labels are the tag keys lowercased, other characters than a-z 0-9 _ - "
        "replaced by _"
    ]


def test_required_tags_are_checked_as_gcp_labels() -> None:
    config = {"required_tags": ["owner", "aicluster:cluster", "Team.Name"]}
    assert findings(GCP_LABELS, TEMPLATE, template().props, config) == [
        "instance template x lacks required labels team_name (tag Team.Name); add the tags to the cluster's tags in "
        "the stack file (aicluster:cluster.tags); GCP labels are the tag keys lowercased, other characters than a-z "
        "0-9 _ - replaced by _"
    ]
    assert findings(GCP_LABELS, TEMPLATE, template(labels={"owner": "me"}).props, {"required_tags": ["owner"]}) == []
    assert findings(GCP_LABELS, TEMPLATE, template(labels=UNKNOWN).props) == []


def test_each_label_policy_judges_its_own_provider() -> None:
    assert findings("aws-resource-missing-required-tags", TEMPLATE, template(labels={}).props) == []
    assert findings(GCP_LABELS, "aws:ec2/eip:Eip", {"domain": "vpc"}) == []


# --------------------------------------------------------------------------------------------------
# Data residency

REGIONS = "aicluster-resource-enforce-allowed-regions"


def test_gcp_zones_are_judged_as_their_region_and_global_is_not_a_region() -> None:
    bucket = res(LOG_BUCKET, "audit", {"bucketId": "_Default", "location": "global", "retentionDays": 365.0})
    tpl = template()
    resources = [tpl, mig(tpl), lustre(), filestore(), controller(), nat(), bucket]
    assert stack_findings(REGIONS, resources, {"allowed_regions": ["us-central1"]}) == []
    assert stack_findings(REGIONS, [queued(), bucket], {"allowed_regions": ["us-central1"]}) == [
        "v2 queued resource s0 is in us-east5, outside compliance.allowed_regions [us-central1]; move it to an "
        "allowed region or add us-east5 to allowed_regions"
    ]


# --------------------------------------------------------------------------------------------------
# Audit logging

AUDIT = "aicluster-cluster-missing-audit-logging"
SOC2 = {"frameworks": ["soc2"]}


def audit_config(**changes: Any) -> Res:
    props: dict[str, Any] = {
        "service": "allServices",
        "project": UNKNOWN,
        "auditLogConfigs": [{"logType": t} for t in ("ADMIN_READ", "DATA_READ", "DATA_WRITE")],
    }
    return res(AUDIT_CONFIG, "llm-audit-data-access", props | changes)


def test_data_access_audit_config_satisfies_the_audit_rule() -> None:
    assert stack_findings(AUDIT, [controller(), audit_config()], SOC2) == []
    with pytest.raises(NotApplicable, match="no framework that requires audit logs"):  # held to none
        stack_findings(AUDIT, [controller()])


def test_gcp_stack_without_an_audit_config() -> None:
    assert stack_findings(AUDIT, [controller()], SOC2) == [
        "the stack is held to soc2 but no GCP audit config turns on Data Access logs: add an IAM audit config for "
        "allServices with log types ADMIN_READ, DATA_READ, DATA_WRITE (Admin Activity logs are always on; aicluster "
        "adds the config when compliance.frameworks names soc2, hipaa, pci-dss or iso27001)"
    ]


@pytest.mark.parametrize(
    ("changes", "gaps"),
    [
        pytest.param(
            {"service": "storage.googleapis.com"},
            "service is 'storage.googleapis.com', not allServices",
            id="one-service",
        ),
        pytest.param(
            {"auditLogConfigs": [{"logType": "ADMIN_READ"}]},
            "log types DATA_READ, DATA_WRITE are not enabled",
            id="no-data",
        ),
    ],
)
def test_audit_config_that_misses_data_access(changes: dict[str, Any], gaps: str) -> None:
    assert stack_findings(AUDIT, [controller(), audit_config(**changes)], SOC2) == [
        f"the stack is held to soc2 but IAM audit config llm-audit-data-access does not record Data Access for every "
        f"service: {gaps}; set service allServices and log types ADMIN_READ, DATA_READ, DATA_WRITE"
    ]
    assert stack_findings(AUDIT, [controller(), audit_config(**changes), audit_config()], SOC2) == []


# --------------------------------------------------------------------------------------------------
# Fabric: the NIC layout of A3/A4

NICS = "gcp-compute-instance-missing-gpu-nics"


def layout(machine: str, nic_list: list[dict[str, Any]], **links: list[Res]) -> list[Res]:
    return [res(TEMPLATE, "x", {"machineType": machine, "networkInterfaces": nic_list}, **links)]


def known(*networks: str, types: Sequence[str] = (), subnets: Sequence[str] = ()) -> list[dict[str, Any]]:
    out = []
    for i, n in enumerate(networks):
        nic: dict[str, Any] = {"network": n, "nicType": types[i] if types else "GVNIC"}
        if subnets:
            nic["subnetwork"] = subnets[i]
        out.append(nic)
    return out


RDMA_TYPES = ["GVNIC", "GVNIC"] + ["MRDMA"] * 8


@pytest.mark.parametrize(
    ("machine", "nic_list", "expected"),
    [
        pytest.param("a3-highgpu-8g", known(*(f"net-{i}" for i in range(5))), None, id="a3-high-ok"),
        pytest.param(A3_MEGA, known(*(f"net-{i}" for i in range(9))), None, id="a3-mega-ok"),
        pytest.param(A3_MEGA, nics(), None, id="a3-mega-unknown-networks"),
        pytest.param(
            "a3-ultragpu-8g",
            known("host", "gvnic", *["roce"] * 8, types=RDMA_TYPES, subnets=[f"s{i}" for i in range(10)]),
            None,
            id="a3-ultra-ok",
        ),
        pytest.param("a4-highgpu-8g", nics("a4-highgpu-8g"), None, id="a4-unknown-networks"),
        pytest.param(
            A3_MEGA,
            known("net-0"),
            "a3-megagpu-8g instance template x declares 1 network interfaces; it needs 9 (1 for the host, 8 for GPU "
            "traffic, each in its own VPC): without them NCCL falls back to the host NIC at a fraction of the "
            "bandwidth",
            id="a3-mega-tcp-fallback",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            known(*(f"n{i}" for i in range(9))),
            "a3-ultragpu-8g instance template x declares 9 network interfaces; it needs 10 (2 for the host, 8 for GPU "
            "traffic, the MRDMA NICs in one RoCE VPC, a subnet each): without them NCCL falls back to the host NIC at "
            "a fraction of the bandwidth",
            id="a3-ultra-one-short",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            known("host", "gvnic", *["roce"] * 8, subnets=[f"s{i}" for i in range(10)]),
            "a3-ultragpu-8g instance template x needs nicType GVNIC on nic0-nic1 and MRDMA on nic2-nic9; got nic2 "
            "GVNIC, nic3 GVNIC, nic4 GVNIC, nic5 GVNIC, nic6 GVNIC, nic7 GVNIC, nic8 GVNIC, nic9 GVNIC: GPUDirect RDMA "
            "runs only over MRDMA NICs",
            id="a3-ultra-gvnic-instead-of-mrdma",
        ),
        pytest.param(
            "a3-highgpu-8g",
            known("n0", "n1", "n2", "n3", "n4", types=["GVNIC", "VIRTIO_NET", "GVNIC", "GVNIC", "GVNIC"]),
            "a3-highgpu-8g instance template x needs gVNIC on every NIC (nicType GVNIC); got nic1 VIRTIO_NET: "
            "GPUDirect-TCPX runs only over gVNIC",
            id="a3-high-virtio",
        ),
        pytest.param(
            A3_MEGA,
            known("host", *["gpu"] * 8),
            "a3-megagpu-8g instance template x does not put every NIC in a VPC of its own: NICs that share a VPC share "
            "its bandwidth and routes",
            id="a3-mega-one-gpu-vpc",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            known("host", "host", *["roce"] * 8, types=RDMA_TYPES, subnets=[f"s{i}" for i in range(10)]),
            "a3-ultragpu-8g instance template x does not put the two gVNICs in two VPCs of their own and every MRDMA "
            "NIC in one RoCE VPC: NICs that share a VPC share its bandwidth and routes",
            id="a3-ultra-gvnics-share-a-vpc",
        ),
        pytest.param(
            "a3-ultragpu-8g",
            known("host", "gvnic", *["roce"] * 8, types=RDMA_TYPES, subnets=["a", "b", *["s"] * 8]),
            "a3-ultragpu-8g instance template x puts two MRDMA NICs in one subnet; each MRDMA NIC needs a subnet of "
            "its own in the RoCE VPC",
            id="a3-ultra-mrdma-share-a-subnet",
        ),
    ],
)
def test_gpu_nic_layout(machine: str, nic_list: list[dict[str, Any]], expected: str | None) -> None:
    assert stack_findings(NICS, layout(machine, nic_list)) == ([expected] if expected else [])


def test_a_machine_without_gpu_nics_is_not_applicable() -> None:
    """A2 has no GPU NICs: nothing for the rule to judge, so not applicable (not passed)."""
    with pytest.raises(NotApplicable, match=r"no VM or instance template of a machine type with GPU NICs"):
        stack_findings(NICS, layout("a2-ultragpu-8g", known("net-0")))


def test_gpu_nic_vpcs_through_property_dependencies() -> None:
    """Networks are unknown during preview: the VPCs and subnets the NICs reference are counted instead."""
    nets = [res(NETWORK, f"net-{i}", {}) for i in range(9)]
    assert stack_findings(NICS, layout(A3_MEGA, nics(), networkInterfaces=nets)) == []
    assert stack_findings(NICS, layout(A3_MEGA, nics(), networkInterfaces=nets[:2])) == [
        "a3-megagpu-8g instance template x reaches 2 VPCs through its network interfaces; it needs 9 (a VPC of its "
        "own for every NIC)"
    ]
    ultra = "a3-ultragpu-8g"
    subnets = [res(SUBNETWORK, f"sub-{i}", {}) for i in range(10)]
    assert stack_findings(NICS, layout(ultra, nics(ultra), networkInterfaces=nets[:3] + subnets)) == []
    assert stack_findings(NICS, layout(ultra, nics(ultra), networkInterfaces=nets[:3] + subnets[:3])) == [
        "a3-ultragpu-8g instance template x reaches 3 subnets through its network interfaces; it needs 10 (one per "
        "gVNIC and one per MRDMA NIC)"
    ]


def test_gpu_vm_is_judged_too() -> None:
    vm = controller(machineType=A3_MEGA)
    assert stack_findings(NICS, [vm]) == [
        "a3-megagpu-8g VM ctl declares 1 network interfaces; it needs 9 (1 for the host, 8 for GPU traffic, each in "
        "its own VPC): without them NCCL falls back to the host NIC at a fraction of the bandwidth"
    ]


@pytest.mark.parametrize("name", GCP_STACKS)
def test_example_gcp_stacks_have_no_mandatory_findings(name: str) -> None:
    from aicluster.preview.policy import evaluate

    result = evaluate(capture_of(name))
    assert [(v.policy, v.resource, v.message) for v in result.mandatory] == []


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
