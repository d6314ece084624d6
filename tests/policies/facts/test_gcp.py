"""GCP resources as the engine hands them -> facts: zones as regions, MIGs, VMs and TPU slices as fleets (markets,
flex-start resize requests, slice shapes), Managed Lustre, Parallelstore and Filestore as file systems; firewall
allows as ingress (no ports: all), external IPs, labels spelled from tags, and what an IAM audit config lacks."""

from __future__ import annotations

from typing import Any

import pytest

from aicluster.catalog import load_catalog
from aicluster.preview.engine import UNKNOWN
from policies.facts import Res, Stack, gcp_region
from policies.facts.gcp import GCP_AUDIT_LOG_TYPES, INGRESS, PUBLIC_IPS, audit_config_gaps, gcp_label_key, tpu_slice
from policies.facts.gcp import LABELS as LABEL_READER
from policies.facts.model import Exposure, Ingress
from tests.policies.conftest import res
from tests.policies.resources.gcp import (
    A3_MEGA,
    AUDIT_CONFIG,
    FIREWALL,
    LOG_BUCKET,
    LUSTRE,
    MIG,
    NETWORK,
    RESIZE,
    TEMPLATE,
    controller,
    filestore,
    firewall,
    lustre,
    mig,
    parallelstore,
    queued,
    template,
    tpu_vm,
)


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
        pytest.param(template(model="RESERVATION_BOUND"), "reserved", id="reservation-bound"),
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


def test_a_firewall_allow_without_ports_opens_every_port() -> None:
    allows = [{"protocol": "tcp"}, {"protocol": "all", "ports": ["22", "20-30", "x"]}, {"protocol": "udp"}]
    every, listed = INGRESS.read(res(FIREWALL, "fw", firewall(sourceRanges=["::/0", "0.0.0.0/0"], allows=allows)))
    assert every == Ingress("firewall fw allows[0]", ("0.0.0.0/0", "::/0"), None, "protocol tcp, ports all")
    assert (listed.where, listed.ports, listed.shown) == (
        "firewall fw allows[1]",
        ((22, 22), (20, 30)),  # a spec that is no port range opens none
        "protocol all, ports 22, 20-30, x",
    )


@pytest.mark.parametrize(
    "props",
    [
        pytest.param(firewall(), id="iap-only"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], direction="EGRESS"), id="egress"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], disabled=True), id="disabled"),
        pytest.param(firewall(sourceRanges=UNKNOWN), id="sources-known-at-up"),
        pytest.param(firewall(sourceRanges=["0.0.0.0/0"], allows=[{"protocol": "tcp", "ports": UNKNOWN}]), id="ports"),
    ],
)
def test_firewalls_the_internet_does_not_reach_are_no_ingress(props: dict[str, Any]) -> None:
    assert list(INGRESS.read(res(FIREWALL, "fw", props))) == []


def test_external_ips_of_vms_and_tpus() -> None:
    with_ip = [{"network": UNKNOWN, "accessConfigs": [{}], "ipv6AccessConfigs": []}]
    (vm,) = PUBLIC_IPS.read(controller(networkInterfaces=with_ip))
    assert vm == Exposure(
        "instance ctl gives networkInterfaces[0] an external IP (accessConfigs)",
        "remove accessConfigs: nodes egress through Cloud NAT, reach them through IAP TCP forwarding",
    )
    (tpu,) = PUBLIC_IPS.read(queued(networkConfig={"enableExternalIps": True}))
    assert tpu.what == (
        "v2 queued resource s0 gives its TPU VMs external IPs (tpu.nodeSpecs[0].node.networkConfig.enableExternalIps "
        "= true)"
    )
    assert [list(PUBLIC_IPS.read(r)) for r in (template(), controller(), queued(), tpu_vm())] == [[], [], [], []]


def test_tags_are_labels_spelled_as_gcp_label_keys() -> None:
    (labels,) = LABEL_READER.read(template())
    assert (labels.noun, labels.spell) == ("labels", gcp_label_key)
    assert labels.missing(["owner", "aicluster:cluster", "Team.Name", "team.name"]) == ["team_name (tag team.name)"]
    provided = res(NETWORK, "n", {"labels": {}})
    provided.provider_props = {"defaultLabels": {"owner": "me"}}
    (defaults,) = LABEL_READER.read(provided)
    assert defaults.keys == {"owner"}
    assert list(LABEL_READER.read(template(labels=UNKNOWN))) == []
    assert list(LABEL_READER.read(res(MIG, "m", {}))) == []  # the SDK class takes no labels: its template does
    assert gcp_label_key("A" * 70 + ":x") == "a" * 63


@pytest.mark.parametrize(
    ("changes", "gaps"),
    [
        pytest.param({}, [], id="complete"),
        pytest.param({"service": UNKNOWN, "auditLogConfigs": UNKNOWN}, [], id="known-at-up"),
        pytest.param({"service": "storage.googleapis.com"}, ["service is 'storage.googleapis.com', not allServices"]),
        pytest.param(
            {"auditLogConfigs": [{"logType": "DATA_WRITE"}]}, ["log types ADMIN_READ, DATA_READ are not enabled"]
        ),
    ],
)
def test_audit_config_gaps(changes: dict[str, Any], gaps: list[str]) -> None:
    props: dict[str, Any] = {"service": "allServices", "auditLogConfigs": [{"logType": t} for t in GCP_AUDIT_LOG_TYPES]}
    assert audit_config_gaps(res(AUDIT_CONFIG, "c", props | changes)) == gaps
