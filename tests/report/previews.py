"""Hand-built preview documents that follow docs/preview-json.md (tests stay independent of the
engine): one where every policy passes, one with mandatory and advisory violations, waivers and
three pools, and one whose strings are hostile to Markdown, HTML and XML; and their builders."""

from __future__ import annotations

import copy
from typing import Any

STACK = "p5-small"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"


def urn(type_: str, name: str, stack: str = STACK) -> str:
    return f"urn:pulumi:{stack}::aicluster::aicluster:index:AiCluster${type_}::{name}"


def pool(
    name: str, *, nodes: int, cost_month: float, kw_it: float, kw_facility: float, **changes: Any
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": name,
        "provider": "aws",
        "region": "us-east-1",
        "zone": "us-east-1a",
        "instance_type": "p5.48xlarge",
        "market": "on-demand",
        "nodes": nodes,
        "gpus": nodes * 8,
        "cost_usd_per_hour": round(cost_month / 730, 2),
        "cost_usd_per_month": cost_month,
        "power_kw_it": kw_it,
        "power_kw_facility": kw_facility,
    }
    data.update(changes)
    return data


def resource(type_: str, name: str, stack: str = STACK, **inputs: Any) -> dict[str, Any]:
    return {
        "urn": urn(type_, name, stack),
        "type": type_,
        "name": name,
        "parent": None,
        "custom": True,
        "inputs": inputs,
    }


def policy(name: str, *, severity: str = "high", enforcement: str = "mandatory", **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": name,
        "display_name": name.replace("-", " ").capitalize(),
        "description": f"Checks {name}.",
        "concern": "compliance",
        "kind": "resource",
        "severity": severity,
        "enforcement": enforcement,
        "remediation": f"Fix {name}.",
        "frameworks": [],
        "controls": [],
    }
    data.update(changes)
    return data


def violation(policy_name: str, resource_name: str, message: str, *, type_: str = LT, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "policy": policy_name,
        "severity": "high",
        "enforcement": "mandatory",
        "resource": resource_name,
        "type": type_ if resource_name else "",
        "urn": urn(type_, resource_name) if resource_name else "",
        "message": message,
        "stack_field": None,
        "stack_line": None,
    }
    data.update(changes)
    return data


PASSING: dict[str, Any] = {
    "stack": STACK,
    "project": "aicluster",
    "cluster": {
        "name": "llm-dev",
        "tags": {"owner": "ml-platform", "cost-center": "4711"},
        "regions": ["aws/us-east-1"],
        "frameworks": ["soc2"],
        "allowed_regions": ["us-east-1"],
        "budgets": {"monthly_usd": 250000, "power_kw": 60},
    },
    "summary": {
        "nodes": 4,
        "gpus": 32,
        "cost_usd_per_hour": 234.65,
        "cost_usd_per_month": 171295.64,
        "power_kw_it": 40.84,
        "power_kw_facility": 46.56,
        "carbon_t_per_month": 13.2,
        "resources": 3,
    },
    "pools": [pool("h100", nodes=4, cost_month=160877.4, kw_it=40.8, kw_facility=46.51)],
    "resources": [
        resource(LT, "llm-dev-h100-lt", instanceType="p5.48xlarge", metadataOptions={"httpTokens": "required"}),
        resource(ASG, "llm-dev-h100-asg", desiredCapacity=4, maxSize=4, minSize=4),
        resource(FSX, "llm-dev-scratch", storageCapacity=4800, kmsKeyId="<computed>"),
    ],
    "outputs": {"cluster": "llm-dev"},
    "warnings": [],
    "policy": {
        "pack": {"name": "aicluster", "version": "0.1.0"},
        "policies": [
            policy(
                "aws-ec2-launchtemplate-enforce-imdsv2",
                frameworks=["cis-aws", "soc2"],
                controls=["CIS AWS Foundations v6.0.0 6.7", "SOC 2 CC6.1"],
            ),
            policy("cluster-budget-enforce-monthly-cost", concern="cost", kind="stack", severity="critical"),
            policy("cluster-power-enforce-facility-budget", concern="power", kind="stack", severity="medium"),
        ],
        "violations": [],
        "waived": [],
        "passed": [
            "aws-ec2-launchtemplate-enforce-imdsv2",
            "cluster-budget-enforce-monthly-cost",
            "cluster-power-enforce-facility-budget",
        ],
        "not_applicable": [],
    },
}

IMDS = "aws-ec2-launchtemplate-enforce-imdsv2"
PUBLIC_IP = "aws-ec2-launchtemplate-disallow-public-ip"
COST = "cluster-budget-enforce-monthly-cost"
POWER = "cluster-power-enforce-facility-budget"
ENCRYPT = "aws-fsx-lustre-enable-encryption"
SPOT = "cluster-pool-configure-spot-checkpointing"
TAGS = "cluster-tags-missing-owner"


def failing() -> dict[str, Any]:
    doc = copy.deepcopy(PASSING)
    doc["cluster"]["budgets"] = {"monthly_usd": 250000, "power_kw": 60, "rack_kw": 40}
    doc["summary"].update(
        nodes=10,
        gpus=80,
        cost_usd_per_hour=410.0,
        cost_usd_per_month=299300.0,
        power_kw_it=70.2,
        power_kw_facility=80.0,
    )
    doc["pools"] = [
        pool(
            "a100-spot",
            nodes=2,
            cost_month=0.0,
            kw_it=0.0,
            kw_facility=0.0,
            market="spot",
            instance_type="p4d.24xlarge",
        ),
        pool("h100", nodes=4, cost_month=160000.0, kw_it=40.0, kw_facility=45.0),
        pool("h200", nodes=4, cost_month=120000.0, kw_it=30.0, kw_facility=33.75, instance_type="p5e.48xlarge"),
    ]
    doc["warnings"] = ["pool a100-spot: spot capacity may be reclaimed"]
    doc["policy"] = {
        "pack": {"name": "aicluster", "version": "0.2.0"},
        "policies": [
            policy(
                PUBLIC_IP, severity="critical", frameworks=["cis-aws", "soc2"], controls=["CIS AWS Foundations 5.6"]
            ),
            policy(IMDS, frameworks=["cis-aws", "soc2"], controls=["CIS AWS Foundations v6.0.0 6.7"]),
            policy(ENCRYPT, severity="high", concern="storage", frameworks=["hipaa", "soc2"]),
            policy(COST, severity="critical", concern="cost", kind="stack"),
            policy(SPOT, severity="low", concern="fabric", enforcement="disabled"),
            policy(POWER, severity="medium", concern="power", kind="stack", enforcement="advisory"),
            policy(TAGS, severity="low", concern="compliance", kind="stack", frameworks=["soc2"]),
        ],
        "violations": [
            violation(
                PUBLIC_IP,
                "llm-dev-h100-lt",
                "associatePublicIpAddress is true; set pools[1].public_ip: false",
                severity="critical",
            ),
            violation(
                PUBLIC_IP,
                "llm-dev-h200-lt",
                "associatePublicIpAddress is true; set pools[2].public_ip: false",
                severity="critical",
            ),
            violation(COST, "", "$299,300.00/month exceeds budgets.monthly_usd $250,000.00", severity="critical"),
            violation(
                POWER, "", "80.0 kW facility exceeds budgets.power_kw 60 kW", severity="medium", enforcement="advisory"
            ),
        ],
        "waived": [
            {
                "policy": ENCRYPT,
                "severity": "high",
                "resource": "llm-dev-scratch",
                "type": FSX,
                "urn": urn(FSX, "llm-dev-scratch"),
                "message": "kmsKeyId is not set",
                "reason": "scratch data only, deleted after each run",
                "expires": "2027-01-31",
                "stack_field": None,
                "stack_line": None,
            }
        ],
        "passed": [IMDS, ENCRYPT],
        "not_applicable": [{"policy": TAGS, "reason": "the stack sets no tags"}],
    }
    return doc


def hostile() -> dict[str, Any]:
    """Strings an attacker controls (stack file, resource names, tags) trying to break out."""
    doc = failing()
    script = "<script>alert('x')</script>"
    doc["stack"] = "evil|stack"
    doc["cluster"]["name"] = f"llm {script}"
    doc["cluster"]["tags"] = {"owner": "Zürich & Co 🚀", "note": '"><img src=x onerror=alert(1)>'}
    doc["pools"][1]["name"] = "h100|<b>bold</b>"
    v = doc["policy"]["violations"][0]
    v["resource"] = "lt|<script>"
    v["message"] = f"line one | {script}\nline two *not bold* [link](javascript:alert(1)) \x1b[31mred\x1b[0m"
    doc["policy"]["waived"][0]["reason"] = "ok & fine\r\n</td></tr></table> ünïcödé ✓"
    doc["warnings"] = ["`code` _under_ ~strike~ \\ back"]
    return doc


REGIONS = "aicluster-resource-enforce-allowed-regions"
OUTSIDE = "is in us-east-1, outside compliance.allowed_regions [us-west-2]; move it or add us-east-1 to allowed_regions"
VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"


def outside_regions(n: int = 26) -> dict[str, Any]:
    """One pool outside the allowed regions: the same finding on every resource it brings (n of them,
    a VPC, subnets, ...), each message naming its resource; plus one finding with another cause."""
    doc = failing()
    doc["policy"]["policies"].append(policy(REGIONS, kind="stack"))
    found = [violation(REGIONS, "llm-dev-vpc", f"vpc llm-dev-vpc {OUTSIDE}", type_=VPC)]
    found += [
        violation(REGIONS, f"llm-dev-subnet-{i}", f"subnet llm-dev-subnet-{i} {OUTSIDE}", type_=SUBNET)
        for i in range(n - 1)
    ]
    found.append(violation(REGIONS, "llm-dev-scratch", "lustre file system llm-dev-scratch is in eu-west-1", type_=FSX))
    doc["policy"]["violations"] = found
    doc["policy"]["passed"] = [p for p in doc["policy"]["passed"] if p != REGIONS]
    return doc


def waived_outside_regions(n: int = 4) -> dict[str, Any]:
    """`outside_regions`, waived: one waiver over the pool's n resources (one cause), and the file system's own."""
    doc = outside_regions(n)
    reason, expires = "moving to us-west-2 in Q3", "2027-09-30"
    doc["policy"]["waived"] = [
        {k: x for k, x in v.items() if k != "enforcement"} | {"reason": reason, "expires": expires}
        for v in doc["policy"]["violations"]
    ]
    doc["policy"]["waived"][-1]["reason"] = "the file system is deleted on Friday"
    doc["policy"]["violations"] = []
    doc["policy"]["passed"] = [*doc["policy"]["passed"], REGIONS]
    return doc


def rack(name: str, power_kw: float = 40.8, *, nodes: int = 4, limit_kw: float = 41.0) -> dict[str, Any]:
    return {"name": name, "nodes": nodes, "power_kw": power_kw, "limit_kw": limit_kw, "pools": ["h100"], "named": False}


def fabric(name: str = "fra1", **changes: Any) -> dict[str, Any]:
    """The DGX SuperPOD H100 4-SU fabric the example stack plans: 128 DGX, 8 rails, QM9700 (radix 64), two tiers."""
    data: dict[str, Any] = {
        "name": name,
        "kind": "rail-optimized",
        "planes": "shared",
        "switch": "qm9700",
        "fabric": "infiniband",
        "radix": 64,
        "link_gbps": 400,
        "rails": 8,
        "nodes": 128,
        "reserved_ports": 0,
        "endpoints": 1024,
        "tiers": 2,
        "leaf_down_ports": 32,
        "leaf_up_ports": 32,
        "nodes_per_leaf_group": 32,
        "leaf_groups": 4,
        "pods": 1,
        "leaf_switches": 32,
        "spine_switches": 16,
        "core_switches": 0,
        "links_per_leaf_spine": 2,
        "cables_node_leaf": 1024,
        "cables_leaf_spine": 1024,
        "cables_spine_core": 0,
        "switch_transceivers": 1536,
        "node_transceivers": 512,
        "ports_total": 3072,
        "ports_used": 3072,
        "ports_free": 0,
        "oversubscription_wanted": 1.0,
        "oversubscription_achieved": 1.0,
        "max_endpoints": 2048,
        "max_nodes": 256,
        "switch_power_w": None,
    }
    data.update(changes)
    return data


def onprem() -> dict[str, Any]:
    """The passing preview as the on-prem DGX H100 example stack has it: one site of 128 DGX H100 in 32 racks of
    40.8 kW against 41 kW, one fat tree of 32 leaves and 16 spines."""
    doc = copy.deepcopy(PASSING)
    doc["stack"] = "onprem-dgx-h100"
    doc["pools"] = [
        pool(
            "h100",
            nodes=128,
            cost_month=1156296.53,
            kw_it=1305.6,
            kw_facility=1632.0,
            provider="onprem",
            region="fra1",
            zone=None,
            instance_type="dgx-h100",
            market="owned",
        )
    ]
    doc["sites"] = [
        {
            "name": "fra1",
            "cidrs": ["10.200.0.0/16"],
            "vpn_endpoint": "203.0.113.10",
            "bgp_asn": 65010,
            "pue": 1.25,
            "usd_per_kwh": 0.12,
            "rack_kw": 41.0,
            "max_kw": 2500.0,
            "carbon_g_per_kwh": 380.0,
            "pools": ["h100"],
            "nodes": 128,
            "gpus": 1024,
            "power_kw_it": 1305.6,
            "power_kw_facility": 1632.0,
            "hardware_usd_per_month": 1013333.33,
            "energy_usd_per_month": 142963.2,
            "cost_usd_per_month": 1156296.53,
            "co2e_t_per_month": 452.72,
            "controller_host": "slurm01",
            "fabrics": [fabric()],
            "racks": [rack(f"h100-r{i:02d}") for i in range(1, 33)],
        }
    ]
    return doc
