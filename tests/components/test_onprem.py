"""OnPremSite: one component per site that records what the plan decided, and BMC passwords only as secrets."""

from __future__ import annotations

import copy
import json
from typing import Any

import pulumi
import pytest
import yaml

from aicluster.catalog import Catalog
from aicluster.plan import ClusterPlan, plan
from aicluster.preview.engine import SECRET_VALUE, Capture, ProgramError, jsonable, run, run_program
from aicluster.spec import parse_cluster
from components import AiCluster
from tests.conftest import ROOT

SITE = "aicluster:onprem:Site"
PASSWORD = "Hunter2-bmc-s3cret"  # what must never appear in clear


def _example() -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.onprem-dgx-h100.yaml").read_text(encoding="utf-8"))
    return copy.deepcopy(doc["config"]["aicluster:cluster"])


def _with_hosts(cluster: dict[str, Any]) -> dict[str, Any]:
    """The example with four listed hosts (two racks), each with a Redfish BMC and a secret's name."""
    pool = cluster["pools"][0]
    pool.pop("nodes")
    pool["hosts"] = [
        {
            "name": f"dgx{i:03d}",
            "address": f"10.200.1.{10 + i}",
            "bmc": f"redfish://10.200.2.{10 + i}/redfish/v1/Systems/1",
            "bmc_username": "admin",
            "bmc_secret": f"aicluster:bmcDgx{i:03d}",
            "rack": f"r0{1 + i // 2}",
            "u": 2 + 10 * (i % 2),
        }
        for i in range(4)
    ]
    return cluster


def _plan(catalog: Catalog, cluster: dict[str, Any]) -> ClusterPlan:
    return plan(parse_cluster(cluster, "test"), catalog)


def _sites(capture: Capture) -> list[Any]:
    return [r for r in capture.resources if r.type == SITE]


def test_one_site_component_records_the_plan(catalog: Catalog) -> None:
    cp = _plan(catalog, _example())
    capture = run(lambda: AiCluster(cp.name, {"plan": cp}), "aicluster", "test")
    (site,) = _sites(capture)
    assert [r.type for r in capture.resources] == [SITE, "aicluster:index:AiCluster"]  # no resource per node
    assert site.parent is not None
    assert site.parent.endswith("::dgx-fra1")
    planned = cp.sites[0]
    i = site.inputs
    assert (i["site"], i["cidrs"], i["vpn_endpoint"], i["bgp_asn"]) == (
        "fra1",
        ["10.200.0.0/16"],
        "203.0.113.10",
        65010,
    )
    assert (i["pue"], i["usd_per_kwh"], i["rack_kw"], i["max_kw"], i["carbon_g_per_kwh"]) == (1.25, 0.12, 41, 2500, 380)
    assert i["pools"] == [
        {
            "name": "h100",
            "node_shape": "dgx-h100",
            "nodes": 128,
            "gpus": 1024,
            "node_kw": 10.2,
            "power_kw_it": 1305.6,
            "fabric": "fra1",
            "hardware_basis": "site fra1: $380,000 per node over 4 years",
            "hardware_usd_per_month": 1013333.33,
            "energy_usd_per_month": 142963.2,
            "co2e_t_per_month": 452.72,
        }
    ]
    assert i["power"] == {"it_kw": 1305.6, "facility_kw": 1632.0}
    assert i["cost"] == {
        "hardware_usd_per_month": 1013333.33,
        "energy_usd_per_month": 142963.2,
        "usd_per_month": 1156296.53,
    }
    assert i["co2e_t_per_month"] == planned.co2e_t_per_month == 452.72
    assert len(i["racks"]) == 32
    assert i["racks"][0] == {
        "name": "h100-r01",
        "nodes": 4,
        "kw": 40.8,
        "limit_kw": 41,
        "pools": ["h100"],
    }
    (fabric,) = i["fabrics"]
    # the DGX SuperPOD H100 4-SU fabric: 32 leaves, 16 spines, 1:1
    assert (fabric["leaf_switches"], fabric["spine_switches"], fabric["tiers"]) == (32, 16, 2)
    assert fabric["oversubscription_achieved"] == fabric["oversubscription_wanted"] == 1
    assert i["hosts"] == []
    assert i["bmc_credential_hosts"] == []
    assert capture.outputs == {}  # the test program exports nothing; the stack's outputs are below


def test_no_sites_no_site_component_and_clouds_build_as_before(catalog: Catalog) -> None:
    cp = plan(
        parse_cluster(
            yaml.safe_load((ROOT / "stacks" / "Pulumi.p5-small.yaml").read_text())["config"]["aicluster:cluster"], "t"
        ),
        catalog,
    )
    assert cp.providers() == ["aws"]
    capture = run(lambda: AiCluster(cp.name, {"plan": cp}), "aicluster", "test")
    assert _sites(capture) == []
    assert any(r.type == "aws:autoscaling/group:Group" for r in capture.resources)


def test_hosts_are_recorded_with_their_bmc_and_the_password_only_as_a_secret(catalog: Catalog) -> None:
    cp = _plan(catalog, _with_hosts(_example()))
    assert cp.providers() == ["onprem"]

    def program() -> None:  # Outputs live in the program's event loop, as the real program's secrets do
        secret = pulumi.Output.secret(PASSWORD)
        AiCluster(cp.name, {"plan": cp, "bmc_credentials": {"dgx000": secret, "dgx003": secret}})

    capture = run(program, "aicluster", "test")
    (site,) = _sites(capture)
    hosts = site.inputs["hosts"]
    assert hosts[1] == {
        "name": "dgx001",
        "pool": "h100",
        "address": "10.200.1.11",
        "bmc": "redfish://10.200.2.11/redfish/v1/Systems/1",
        "bmc_username": "admin",
        "bmc_secret_name": "aicluster:bmcDgx001",
        "rack": "r01",
        "u": 12,
    }
    assert [r["name"] for r in site.inputs["racks"]] == ["r01", "r02"]
    # the engine sees a secret for each host whose password the program read, and never its value
    assert site.inputs["bmc_credentials"] is SECRET_VALUE
    assert site.inputs["bmc_credential_hosts"] == ["dgx000", "dgx003"]
    dumped = json.dumps([jsonable(r.inputs) for r in capture.resources]) + json.dumps(jsonable(capture.outputs))
    assert PASSWORD not in dumped
    assert "[secret]" in dumped


def test_preview_reads_bmc_secrets_and_never_shows_them(catalog: Catalog) -> None:
    cluster = _with_hosts(_example())
    config = {"aicluster:cluster": json.dumps(cluster), **{f"aicluster:bmcDgx{i:03d}": PASSWORD for i in range(4)}}
    secret = frozenset(k for k in config if k != "aicluster:cluster")
    capture = run_program(ROOT, "aicluster", "onprem-dgx-h100", config, secret)
    (site,) = _sites(capture)
    assert site.inputs["bmc_credentials"] is SECRET_VALUE
    assert site.inputs["bmc_credential_hosts"] == [f"dgx{i:03d}" for i in range(4)]
    dumped = json.dumps([jsonable(r.inputs) for r in capture.resources]) + json.dumps(jsonable(capture.outputs))
    assert PASSWORD not in dumped
    assert capture.outputs["sites"]["fra1"]["hosts"]["dgx002"] == "10.200.1.12"


def test_preview_without_the_secrets_still_runs_and_records_no_credential(catalog: Catalog) -> None:
    config = {"aicluster:cluster": json.dumps(_with_hosts(_example()))}
    capture = run_program(ROOT, "aicluster", "onprem-dgx-h100", config, frozenset())
    (site,) = _sites(capture)
    assert site.inputs["bmc_credential_hosts"] == []
    assert len(site.inputs["hosts"]) == 4


def test_up_refuses_a_site_whose_bmc_secrets_are_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pulumi up` (not a dry run): a site record with hosts whose credentials were never set is refused, every
    missing secret named at once, with the command that sets it."""
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: False)
    config = {"aicluster:cluster": json.dumps(_with_hosts(_example())), "aicluster:bmcDgx000": PASSWORD}
    with pytest.raises(ProgramError) as err:
        run_program(ROOT, "aicluster", "onprem-dgx-h100", config, frozenset({"aicluster:bmcDgx000"}))
    message = str(err.value)
    assert (
        "BMC secrets not set: aicluster:bmcDgx001 (host dgx001), aicluster:bmcDgx002 (host dgx002), "
        "aicluster:bmcDgx003 (host dgx003)"
    ) in message
    assert "pulumi config set --secret NAME" in message
    assert PASSWORD not in message
