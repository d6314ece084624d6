"""Rack-scale (multi-node NVLink) stacks and resources for the NVLink, IMEX and rack-cooling rules: two stacks run
through the real program under the offline engine (A4X on GCP: 2 sub-blocks of 18 VMs; a DGX GB200 NVL72 site: 8
racks of 18 trays, liquid-cooled positions of 140 kW), and hand-built resources for the clouds whose rack-scale types
the catalog does not hold yet (AWS p6e-gb200, Azure ND GB200 v6), judged against a catalog that adds them."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from aicluster.catalog import Catalog, InstanceType, NvlinkDomain, load_catalog
from aicluster.preview.engine import Capture, run_program
from aicluster.stackfile import find_project, read_stack
from policies import StackRule
from policies.facts import Res, Stack
from tests.conftest import ROOT
from tests.policies.conftest import policy

TAGS = {"owner": "ml-platform", "cost-center": "4711"}

A4X: dict[str, Any] = {
    "config": {
        "gcp:region": "us-east1",
        "aicluster:cluster": {
            "name": "a4x",
            "tags": TAGS,
            "pools": [
                {
                    "name": "gb200",
                    "provider": "gcp",
                    "region": "us-east1",
                    "zone": "us-east1-d",
                    "instance_type": "a4x-highgpu-4g",
                    "nodes": 36,
                    "market": "reserved",
                    "reservation": "projects/ml-capacity/reservations/gb200-us-east1-d",
                }
            ],
            "scheduler": {"kind": "slurm"},
            "pricing": {
                "overrides": [
                    {
                        "sku": "a4x-highgpu-4g",
                        "region": "us-east1",
                        "offered": True,  # the catalog lists no A4X in us-east1: a rate alone never makes it offered
                        "reason": "reservation gb200-us-east1-d",
                        "market": "reserved",
                        "usd_per_hour": 40.0,
                    }
                ]
            },
        },
    }
}

GB200_SITE: dict[str, Any] = {
    "config": {
        "aicluster:cluster": {
            "name": "gb200-su",
            "tags": TAGS,
            "sites": [
                {
                    "name": "dfw1",
                    "network": {"cidrs": ["10.210.0.0/16"], "vpn_endpoint": "203.0.113.20", "bgp_asn": 65020},
                    "power": {
                        "pue": 1.15,
                        "usd_per_kwh": 0.08,
                        "rack_kw": 20,
                        "liquid_rack_kw": 140,
                        "max_kw": 1500,
                    },
                    "carbon_g_per_kwh": 350,
                    "hardware_cost": {"purchase_usd_per_node": 1000000, "amortization_years": 4},
                    "fabric": {"kind": "infiniband", "link_gbps": 400, "switch_radix": 64, "oversubscription": 1},
                }
            ],
            "pools": [
                {
                    "name": "gb200",
                    "provider": "onprem",
                    "site": "dfw1",
                    "instance_type": "dgx-gb200-nvl72",
                    "nodes": 144,
                }
            ],
            "scheduler": {"kind": "slurm", "controller": {"host": "slurm01", "address": "10.210.0.5"}},
        }
    }
}

_CAPTURES: dict[str, Capture] = {}


def capture(name: str, doc: dict[str, Any], tmp: Path) -> Capture:
    """The stack file `doc` (written to tmp) run through the project's real program under the offline engine, as the
    pack receives it: a fresh deep copy each call, of one run per stack per test process."""
    if name not in _CAPTURES:
        path = tmp / f"Pulumi.{name}.yaml"
        path.write_text(yaml.safe_dump(doc), encoding="utf-8")
        st = read_stack(find_project(ROOT), name, path)
        _CAPTURES[name] = run_program(st.project.root, st.project.name, st.stack, st.engine_config(), st.secret_keys)
    return copy.deepcopy(_CAPTURES[name])


def _cloud_type(base: InstanceType, provider: str, name: str, **changes: Any) -> InstanceType:
    return base.model_copy(update={"provider": provider, "name": name, "offerings": (), **changes})


def rack_scale_catalog() -> Catalog:
    """The catalog plus the AWS and Azure GB200 types (cloned from A4X, what the rules read: accelerators and the
    NVLink domain): p6e-gb200.36xlarge sold in UltraServers of 9 and 18, Standard_ND128isr_NDR_GB200_v6 in racks of
    18 VMs. Test data only: the catalog's own records come with their sources."""
    cat = load_catalog()
    a4x = cat.instance_type("gcp", "a4x-highgpu-4g")
    assert a4x is not None
    assert a4x.nvlink_domain is not None
    p6e = _cloud_type(
        a4x,
        "aws",
        "p6e-gb200.36xlarge",
        nvlink_domain=NvlinkDomain(nodes=18, unit="ultraserver", sizes=(9, 18)),
        markets=("capacity-block",),
    )
    nd = _cloud_type(
        a4x, "azure", "Standard_ND128isr_NDR_GB200_v6", nvlink_domain=NvlinkDomain(nodes=18, unit="rack", sizes=(18,))
    )
    types = {**cat.instance_types, ("aws", p6e.name): p6e, ("azure", nd.name): nd}
    return dataclasses.replace(cat, instance_types=types)


def res(type_: str, name: str, props: dict[str, Any], **links: list[Res]) -> Res:
    r = Res(type_, name, f"urn:pulumi:s::p::{type_}::{name}", props)
    r.property_dependencies = dict(links)
    return r


def found(name: str, resources: Sequence[Res], catalog: Catalog | None = None) -> list[str]:
    """What the stack policy `name` reports on these resources, judged with `catalog` (default: the real one)."""
    out: list[str] = []
    rule = policy(name)
    assert isinstance(rule, StackRule)
    rule.run(Stack(resources, catalog), {}, lambda m, u=None: out.append(m))
    return out
