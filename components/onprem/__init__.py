"""On-prem: one `OnPremSite` component per owned data centre, recording what the plan decided for it.

Nothing here provisions hardware: the site's own provisioning tool installs the operating system, and the nodes
exist before the stack does. The component is the site's record in the Pulumi state, one resource per site (not
per node), so that previews, the policy pack and reports see the site's network, power, racks, fabrics, cost and
carbon as the engine hands them over. Its inputs are plain plan figures, except `bmc_credentials`: the BMC
passwords `__main__.py` read from the stack's Pulumi secrets, kept secret Outputs here (the engine stores and shows
them encrypted, never in clear).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import pulumi

from aicluster.plan import ClusterPlan, PlannedPool, PlannedSite

from ..outputs import pool_outputs

__all__ = ["OnPremSite", "OnPremSiteArgs", "build", "site_inputs"]

SITE_TYPE = "aicluster:onprem:Site"


class OnPremSiteArgs(TypedDict):
    site: PlannedSite
    pools: Sequence[PlannedPool]  # the plan's pools of this site
    # host name -> its BMC password, from the stack's secrets (hosts whose secret was not set are absent)
    bmc_credentials: Mapping[str, pulumi.Input[str]]


def _pool(pool: PlannedPool) -> dict[str, Any]:
    assert pool.onprem is not None
    return {
        "name": pool.name,
        "node_shape": pool.instance_type,
        "nodes": pool.nodes,
        "gpus": pool.gpus,
        "node_kw": pool.node_power_kw,
        "power_kw_it": pool.power_kw_it,
        "fabric": pool.onprem.fabric,
        "hardware_basis": pool.onprem.hardware_basis,
        # None: the site gives no hardware cost (the pool's `unpriced` names it), never 0
        "hardware_usd_per_month": pool.instances_usd_per_month,
        "energy_usd_per_month": pool.energy_usd_per_month,
        "co2e_t_per_month": pool.co2e_t_per_month,
    }


def _hosts(pools: Sequence[PlannedPool]) -> list[dict[str, Any]]:
    """The hosts the stack lists, with where they are and how their BMC is reached; a credential's value never
    (`bmc_secret_name` is the name of the Pulumi secret that holds it)."""
    out = []
    for pool in pools:
        assert pool.onprem is not None
        for h in pool.onprem.hosts:
            out.append(
                {
                    "name": h.name,
                    "pool": pool.name,
                    "address": h.address,
                    "bmc": h.bmc,
                    "bmc_username": h.bmc_username,
                    "bmc_secret_name": h.bmc_secret,
                    "rack": h.rack,
                    "u": h.u,
                }
            )
    return out


def site_inputs(site: PlannedSite, pools: Sequence[PlannedPool]) -> dict[str, Any]:
    """The plain inputs of a site's component: what previews, policies and reports read (`liquid_rack_kw` only at a
    site with liquid-cooled rack positions: the rack-cooling policy judges NVL72 racks against it)."""
    inputs = {
        "site": site.name,
        "cidrs": list(site.cidrs),
        "vpn_endpoint": site.vpn_endpoint,
        "bgp_asn": site.bgp_asn,
        "pue": site.pue,
        "usd_per_kwh": site.usd_per_kwh,
        "rack_kw": site.rack_kw,
        "max_kw": site.max_kw,
        "carbon_g_per_kwh": site.carbon_g_per_kwh,
        "controller_host": site.controller_host,
        "nodes": site.nodes,
        "gpus": site.gpus,
        "pools": [_pool(p) for p in pools],
        "hosts": _hosts(pools),
        "racks": [
            {"name": r.name, "nodes": r.nodes, "kw": r.power_kw, "limit_kw": r.limit_kw, "pools": list(r.pools)}
            for r in site.racks
        ],
        "fabrics": [f.model_dump(mode="json") for f in site.fabrics],
        "power": {"it_kw": site.power_kw_it, "facility_kw": site.power_kw_facility},
        "cost": {
            "hardware_usd_per_month": site.hardware_usd_per_month,
            "energy_usd_per_month": site.energy_usd_per_month,
            "usd_per_month": site.cost_usd_per_month,
        },
        "co2e_t_per_month": site.co2e_t_per_month,
    }
    if site.liquid_rack_kw is not None:
        inputs["liquid_rack_kw"] = site.liquid_rack_kw
    return inputs


class OnPremSite(pulumi.ComponentResource):
    """An owned site: its network, power, racks, fabrics, cost, carbon and hosts, as planned. Creates no children:
    the hosts exist already and are recorded here, not managed."""

    def __init__(self, name: str, args: OnPremSiteArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        site = args["site"]
        props = site_inputs(site, args["pools"])
        # the engine holds the whole map as one secret (host names included), so which hosts have a credential is
        # also said in the clear, for reports and policies
        props["bmc_credential_hosts"] = sorted(args["bmc_credentials"])
        props["bmc_credentials"] = pulumi.Output.secret(
            {host: pulumi.Output.secret(value) for host, value in sorted(args["bmc_credentials"].items())}
        )
        super().__init__(SITE_TYPE, name, props, opts)
        self.outputs: dict[str, Any] = {
            "site": site.name,
            "cidrs": list(site.cidrs),
            "vpn_endpoint": site.vpn_endpoint,
            "bgp_asn": site.bgp_asn,
            "hosts": {h["name"]: h["address"] for h in props["hosts"]},
            "controller_host": site.controller_host,
        }
        self.register_outputs(self.outputs)


def build(plan: ClusterPlan, parent: pulumi.ComponentResource) -> dict[str, Any]:
    """One OnPremSite per site of the plan, under `parent`. The BMC passwords come from the parent's
    `bmc_credentials` (host -> secret), which AiCluster takes from the Pulumi program: components never read
    config themselves."""
    credentials: Mapping[str, pulumi.Input[str]] = getattr(parent, "bmc_credentials", {})
    opts = pulumi.ResourceOptions(parent=parent)
    outputs: dict[str, Any] = {"pools": {}, "sites": {}}
    for site in plan.sites:
        pools = [p for p in plan.pools if p.onprem is not None and p.onprem.site == site.name]
        hosts = {h.name for p in pools if p.onprem is not None for h in p.onprem.hosts}
        comp = OnPremSite(
            f"{plan.name}-{site.name}",
            {
                "site": site,
                "pools": pools,
                "bmc_credentials": {h: v for h, v in credentials.items() if h in hosts},
            },
            opts,
        )
        outputs["sites"][site.name] = comp.outputs
        for p in pools:
            outputs["pools"][p.name] = pool_outputs(p, site=site.name, hosts=p.node_names())
    return outputs
