"""Rendered text the schedulers share (cloud-init, NCCL, the burst config): pure `plan -> str`
functions over jinja2 templates with StrictUndefined, so a missing value is an error, not a blank."""

from __future__ import annotations

import functools
import json
from typing import Any

import jinja2

from aicluster.plan import ClusterPlan, PlannedPool


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("aicluster", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["to_json"] = lambda v, indent=2: json.dumps(v, indent=indent, sort_keys=True)
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def node_facts(plan: ClusterPlan, pool: PlannedPool) -> dict[str, Any]:
    """What a node knows about itself at boot (written to /etc/aicluster/node.json)."""
    return {
        "cluster": plan.name,
        "pool": pool.name,
        "provider": pool.provider,
        "region": pool.region,
        "zone": pool.zone,
        "instance_type": pool.instance_type,
        "accelerator": pool.accelerator,
        "accelerators_per_node": pool.accelerators_per_node,
        "fabric": pool.fabric,
        "efa_devices": pool.aws.efa_devices if pool.aws else 0,
        # GCP: NICs that carry GPU traffic (TCPX/TCPXO GPU NICs, or A3 Ultra/A4 MRDMA NICs)
        "gpu_nics": sum(1 for n in pool.gcp.nics if n.subnet_role in ("gpu", "rdma")) if pool.gcp else 0,
        "scheduler": plan.scheduler,
        "filesystems": [
            {"name": fs.name, "kind": fs.kind, "service": fs.service, "mount": fs.mount}
            for fs in plan.filesystems
            if fs.provider == pool.provider and fs.region == pool.region
        ],
    }


def node_cloud_init(plan: ClusterPlan, pool: PlannedPool) -> str:
    return render("cloud-init/node.yaml.j2", plan=plan, pool=pool, facts=node_facts(plan, pool))


def controller_cloud_init(plan: ClusterPlan) -> str:
    assert plan.controller is not None
    # Nothing that changes with the pools (node counts): a new user-data means a new template version.
    facts = {"cluster": plan.name, "role": "controller", "scheduler": plan.scheduler}
    return render("cloud-init/controller.yaml.j2", plan=plan, facts=facts)
