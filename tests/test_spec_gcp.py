"""GCP pools in the spec: GPU or TPU shape, market rules, reservation forms, and tags as GCP labels."""

from __future__ import annotations

import pytest

from aicluster.spec import GcpPool, SpecError, gcp_label, gcp_labels, parse_cluster
from tests.helpers import gcp_cluster, gcp_pool, tpu_pool

SRC = "stacks/Pulumi.t.yaml"


def errors(data: object) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_cluster(data, SRC)
    return str(info.value).splitlines()


def test_gpu_and_tpu_pools_parse() -> None:
    spec = parse_cluster(gcp_cluster(pools=[gcp_pool(), tpu_pool()]), SRC)
    gpu, tpu = spec.pools
    assert isinstance(gpu, GcpPool)
    assert isinstance(tpu, GcpPool)
    assert (gpu.units, gpu.market, gpu.compact_placement, gpu.root_volume_gib) == (16, "on-demand", True, 500)
    assert (tpu.tpu, tpu.units, tpu.runtime_version) == ("v5p-256", 2, None)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"tpu": "v5p-256"},
            "pools[0].instance_type: a GCP pool is either GPU VMs (instance_type + nodes) or TPU slices",
            id="both-shapes",
        ),
        pytest.param(
            {"instance_type": None, "nodes": None},
            "pools[0].instance_type: a GCP pool is either GPU VMs",
            id="no-shape",
        ),
        pytest.param({"nodes": None}, "pools[0].nodes: required field is missing", id="gpu-without-nodes"),
        pytest.param(
            {"slices": 2}, "pools[0].slices: got 2; slices is for TPU pools (tpu: ...); drop it", id="slices-on-gpu"
        ),
        pytest.param(
            {"market": "spot", "reservation": "r1"},
            'pools[0].reservation: got "r1"; spot VMs cannot consume a reservation',
            id="spot-reservation",
        ),
        pytest.param(
            {"zone": None, "reservation": "r1"},
            "pools[0].zone: reservations are zonal: set the zone the reservation is in",
            id="reservation-without-zone",
        ),
        pytest.param(
            {"max_run_hours": 24},
            "pools[0].max_run_hours: got 24; only flex-start VMs have a run limit (market is on-demand)",
            id="run-limit-on-demand",
        ),
        pytest.param(
            {"max_run_hours": 200, "market": "flex-start"},
            "pools[0].max_run_hours: got 200; must be at most 168",
            id="run-limit-over-7-days",
        ),
        pytest.param(
            {"zone": "us-east5-a"},
            'pools[0].zone: got "us-east5-a"; not a zone of region us-central1 (did you mean "us-central1-a"?)',
            id="zone-outside-region",
        ),
        pytest.param(
            {"region": "us-central"},
            'pools[0].region: got "us-central"; must be a GCP region name (e.g. us-central1)',
            id="bad-region",
        ),
        pytest.param(
            {"reservation": "My_Reservation", "zone": "us-central1-a"},
            'pools[0].reservation: got "My_Reservation"; must be a reservation name, or '
            "projects/<project>/reservations/<name>",
            id="bad-reservation",
        ),
        pytest.param(
            {"market": "capacity-block"},
            'pools[0].market: got "capacity-block"; allowed: on-demand, spot, reserved, flex-start',
            id="aws-market-on-gcp",
        ),
    ],
)
def test_gpu_pool_rules(changes: dict[str, object], expected: str) -> None:
    found = errors(gcp_cluster(pools=[gcp_pool(**changes)]))
    assert any(line == f"{SRC}: {expected}" or line.startswith(f"{SRC}: {expected}") for line in found), found


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({"nodes": 4}, "pools[0].nodes: got 4; a TPU pool counts slices, not nodes", id="tpu-nodes"),
        pytest.param(
            {"reservation": "r1"},
            'pools[0].reservation: got "r1"; TPU slices consume the project\'s TPU reservation with market reserved',
            id="tpu-reservation",
        ),
        pytest.param(
            {"market": "flex-start"}, 'pools[0].market: got "flex-start"; flex-start is for GPU pools', id="tpu-flex"
        ),
        pytest.param(
            {"tpu": "v4-8"},
            'pools[0].tpu: got "v4-8"; must be a Cloud TPU accelerator type: v5p-<cores>, v5litepod-<chips> or '
            "v6e-<chips>",
            id="tpu-generation",
        ),
    ],
)
def test_tpu_pool_rules(changes: dict[str, object], expected: str) -> None:
    found = errors(gcp_cluster(pools=[tpu_pool(**changes)]))
    assert any(line.startswith(f"{SRC}: {expected}") for line in found), found


@pytest.mark.parametrize(
    "reservation",
    ["h100-res", "h100-res/reservationBlocks/block-0001", "projects/ml-cap/reservations/h100-res"],
)
def test_reservation_forms(reservation: str) -> None:
    spec = parse_cluster(gcp_cluster(pools=[gcp_pool(market="reserved", reservation=reservation)]), SRC)
    assert spec.pools[0].reservation == reservation  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "key", "label"),
    [
        ("aicluster:cluster", True, "aicluster_cluster"),
        ("Cost-Center", True, "cost-center"),
        ("4711", True, "t4711"),
        ("4711", False, "4711"),
        ("ML Platform", False, "ml_platform"),
        ("x" * 80, False, "x" * 63),
    ],
)
def test_tags_become_gcp_labels(text: str, key: bool, label: str) -> None:
    assert gcp_label(text, key=key) == label


def test_gcp_labels_of_a_tag_set() -> None:
    assert gcp_labels({"Owner": "ML-Platform", "aicluster:pool": "h100"}) == {
        "owner": "ml-platform",
        "aicluster_pool": "h100",
    }


def test_tags_that_collide_or_are_cut_as_gcp_labels_are_refused() -> None:
    found = errors(gcp_cluster(tags={"Owner": "a", "owner": "b", "note": "x" * 70}))
    assert (
        f'{SRC}: tags.owner: got "owner"; on GCP this tag and "Owner" both become the label "owner" (labels are '
        "lowercase, with `_` for other characters); rename one"
    ) in found
    assert any(line.startswith(f"{SRC}: tags.note: got") and "this one has 70" in line for line in found), found


def test_tag_rules_for_gcp_apply_only_with_gcp_pools() -> None:
    from tests.helpers import cluster

    parse_cluster(cluster(tags={"Owner": "a", "owner": "b"}), SRC)  # AWS tags are case-sensitive: fine
