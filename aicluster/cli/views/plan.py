"""The plan as `plan` and `preview` print it: the pools table (compute, storage, networks, VPNs, control plane,
controller, totals) and the details under it (sites, fabrics, facts, per-pool notes, Kubernetes, networks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from ..console import out
from .format import accelerators, hourly, money, where, window_text
from .kubernetes import print_kubernetes
from .pool_notes import pool_notes
from .sites import fabrics_table, sites_table

if TYPE_CHECKING:
    from aicluster.plan import ClusterPlan, PlannedPool


def pools_table(plan: ClusterPlan, title: str = "Pools") -> Table:
    t = Table(title=title, title_justify="left")
    for col, just in [
        ("pool", "left"),
        ("provider", "left"),
        ("where", "left"),
        ("instance type", "left"),
        ("nodes", "right"),
        (accelerators(plan.pools), "right"),
        ("market", "left"),
        ("$/h", "right"),
        ("$/month", "right"),
        ("kW IT", "right"),
        ("kW facility", "right"),
    ]:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for p in plan.pools:
        t.add_row(
            p.name,
            p.provider,
            where(p.region, p.zone),
            p.instance_type,
            f"{p.nodes:,}",
            f"{p.gpus:,}",
            p.market,
            money(p.cost_usd_per_hour, p.unpriced),
            money(p.cost_usd_per_month, p.unpriced),
            # TPU hosts: Google publishes no power figure, so say so rather than print 0
            f"{p.power_kw_it:,.1f}" if p.power_basis != "unpublished" else "n/a",
            f"{p.power_kw_facility:,.1f}" if p.power_basis != "unpublished" else "n/a",
        )
    for f in plan.filesystems:
        t.add_row(
            f.name,
            f.provider,
            where(f.region, f.zone),
            f"{f.service} {f.deployment}",
            "",
            "",
            f"{f.capacity_tib:,.1f} TiB",
            money(f.cost_usd_per_hour),
            money(f.cost_usd_per_month),
            "",
            "",
        )
    for n in plan.networks:
        t.add_row(
            "network",
            n.provider,
            n.region,
            f"{n.nat_gateways} NAT gateway(s)",
            "",
            "",
            "",
            money(hourly(n.cost_usd_per_month, plan.hours_per_month), n.unpriced),
            money(n.cost_usd_per_month, n.unpriced),
            "",
            "",
        )
    for v in plan.vpns:
        t.add_row(
            "vpn",
            v.a.provider,
            v.a.region or "",
            f"to {'site ' if v.b.kind == 'site' else ''}{v.b.key}: {len(v.tunnels)} tunnel(s)",
            "",
            "",
            "IPsec",
            money(hourly(v.cost_usd_per_month, plan.hours_per_month), v.unpriced),
            money(v.cost_usd_per_month, v.unpriced),
            "",
            "",
        )
    k = plan.kubernetes
    if k is not None:  # the control plane and its system nodes: in the totals, so in the table
        t.add_row(
            "kubernetes",
            k.provider,
            k.region,
            f"{k.service} control plane + {k.system_nodes} x {k.system_instance_type}",
            "",
            "",
            "on-demand",
            money(hourly(k.cost_usd_per_month, plan.hours_per_month), k.unpriced),
            money(k.cost_usd_per_month, k.unpriced),
            f"{k.system_power_kw_it:,.2f}",
            f"{k.system_power_kw_facility:,.2f}",
        )
    if plan.controller is not None:
        c = plan.controller
        if c.host is not None:  # an existing site host: its cost and power are the site's, not a $0.00 instance
            t.add_row(
                "controller",
                c.provider,
                where(c.region, c.zone),
                escape(c.host + (f" ({c.address})" if c.address else "")),
                "1",
                "",
                "owned",
                "site's",
                "site's",
                "—",
                "—",
            )
        else:
            t.add_row(
                "controller",
                c.provider,
                where(c.region, c.zone),
                c.instance_type,
                "1",
                "",
                "on-demand",
                money(c.cost_usd_per_hour, c.unpriced),
                money(c.cost_usd_per_month, c.unpriced),
                f"{c.node_power_kw:,.2f}",
                f"{c.power_kw_facility:,.2f}",
            )
    m = plan.monitoring
    if m.samples_per_month is not None:  # a managed Prometheus bills the samples the nodes send it: in the totals
        t.add_row(
            "monitoring",
            m.provider or "",
            m.region or "",
            f"managed Prometheus, {m.samples_per_month / 1e9:,.1f}B samples",
            "",
            "",
            "usage",
            money(hourly(m.ingestion_usd_per_month, plan.hours_per_month)),
            money(m.ingestion_usd_per_month),
            "—",
            "—",
        )
    tot = plan.totals
    t.add_section()
    t.add_row(
        "total",
        "",
        "",
        "",
        f"{tot.nodes:,}",
        f"{tot.gpus:,}",
        "",
        money(tot.cost_usd_per_hour, tot.unpriced),
        money(tot.cost_usd_per_month, tot.unpriced),
        f"{tot.power_kw_it:,.1f}",
        f"{tot.power_kw_facility:,.1f}",
        style="bold",
    )
    return t


def nvlink_note(p: PlannedPool) -> str:
    """A rack-scale pool's NVLink domains, one line: how many, their size, and each one's nodes."""
    assert p.nvlink is not None
    n = p.nvlink
    unit = {"ultraserver": "UltraServer", "subblock": "sub-block", "rack": "rack"}[n.unit]
    domains = ", ".join(
        f"{d.name} ({'' if d.whole else f'partial, {d.nodes * p.accelerators_per_node} GPUs: '}nodes "
        f"{d.first_node}-{d.first_node + d.nodes - 1})"
        for d in n.domains
    )
    return (
        f"{p.name}: {len(n.domains)} NVLink domain(s) of {n.nodes_per_domain} nodes x {p.accelerators_per_node} GPUs "
        f"({n.gpus_per_domain} GPUs, one {unit} each): {domains}; {p.cpu_arch} hosts"
    )


def rollout_note(p: PlannedPool) -> str:
    """How a change that recreates or removes the pool's nodes reaches them (the pool's `rollout`)."""
    r = p.rollout
    at_once = f"at most {r.max_unavailable} node{'s' if r.max_unavailable != 1 else ''} at a time, each drained first"
    if r.strategy == "window" and r.window_start is not None and r.window_hours is not None:
        window = window_text(r.window_days, r.window_start, r.window_hours)
        return f"{p.name}: rollout in the window {window}, {at_once}"
    return f"{p.name}: rollout drain-first, {at_once}"


def print_plan_details(plan: ClusterPlan) -> None:
    """What the pools table leaves out, printed under it: sites and fabrics, the cluster's facts, rounding of
    file systems, each pool's notes, the Kubernetes control plane, a site controller, the networks."""
    tot = plan.totals
    if plan.sites:
        out.print(sites_table(plan))
        if any(s.fabrics for s in plan.sites):
            out.print(fabrics_table(plan))
    facts = [
        f"BF16 peak {tot.bf16_pflops:,.1f} PFLOP/s",
        f"carbon {tot.co2e_t_per_month:,.1f} t CO2e/month",
    ]
    if tot.racks is not None:
        facts.append(f"{tot.racks:,} racks" + (f" at {plan.budgets.rack_kw:g} kW" if plan.budgets.rack_kw else ""))
    if plan.filesystems:
        facts.append(f"storage {tot.storage_tib:,.1f} TiB at {tot.storage_throughput_gb_s:,.1f} GB/s")
    out.print("  ".join(facts))
    for f in plan.filesystems:
        if f.rounding:
            out.print(f"[dim]{escape(f.name)}: {escape(f.rounding)}[/]")
    from aicluster.plan.registry import SCHEDULERS

    stack_images = SCHEDULERS[plan.scheduler].pool_images
    for p in plan.pools:
        for note in pool_notes(p, stack_images=stack_images):
            out.print(f"[dim]{escape(note)}[/]")
        if p.nvlink is not None:
            out.print(f"[dim]{escape(nvlink_note(p))}[/]")
        out.print(f"[dim]{escape(rollout_note(p))}[/]")
    if plan.kubernetes is not None:
        print_kubernetes(plan)
    m = plan.monitoring
    if m.samples_per_month is not None:
        priced = (
            f"{money(m.ingestion_usd_per_month)}/month at the catalog's ingestion tiers"
            if m.ingestion_usd_per_month is not None
            else f"not priced: the catalog has no verified ingestion price for it in {m.region}"
        )
        text = (
            f"monitoring: {m.service_name}, {m.series:,} series every {m.ingest_interval_s} s = "
            f"{m.samples_per_month:,} samples/month; {priced}"
        )
        out.print(f"[dim]{escape(text)}[/]")
    c = plan.controller
    if c is not None and c.host is not None:
        at = f" at {c.address}" if c.address else ""
        text = f"controller: site host {c.host}{at} in {c.region} (an existing host: its cost and power are the site's)"
        out.print(f"[dim]{escape(text)}[/]")
    for n in plan.networks:
        subnets = ", ".join(
            f"{s.role}{f' {s.index}' if s.role in ('gpu', 'rdma') else ''}{f' {s.zone}' if s.zone else ''} {s.cidr}"
            for s in n.subnets
        )
        mtu = f"; MTU {n.mtu}" if n.mtu else ""
        vpcs = f"; GPU NIC VPCs: {', '.join(f'{v.name} (MTU {v.mtu})' for v in n.vpcs)}" if n.vpcs else ""
        out.print(f"[dim]{escape(f'network {n.key}: {n.cidr} ({subnets}){mtu}{vpcs}')}[/]")
