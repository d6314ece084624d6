"""`aicluster`: validate, plan and preview stacks offline.

Exit codes: 0 success; 1 the program or a check failed; 2 bad input (stack file, arguments).
Bad input never prints a traceback and never writes a file.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from . import __version__, timings
from .catalog.pricing import cents, money
from .files import WriteError, check_target, write_atomic
from .plan import ClusterPlan, PlannedNodeGroup, PlannedPool
from .plan.fabric import PlannedFabric
from .spec import SpecError, json_schema
from .stackfile import Project, ProjectNotFound, StackNotFound, find_project, read_stack
from .term import SafeConsole, strip_control
from .timings import phase

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2

# Logs (CI) are not terminals: give tables room instead of rich's 80-column fallback.
_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
# SafeConsole: control characters in user-derived text (stack values, waiver reasons) never reach the terminal.
out = SafeConsole(highlight=False, soft_wrap=True, width=_WIDTH)
err = SafeConsole(stderr=True, highlight=False, soft_wrap=True, width=_WIDTH)


@dataclass
class _Settings:
    """Global flags that change how output looks; set by main() for each run."""

    quiet: bool = False  # --quiet: warnings are not printed (errors still are)


settings = _Settings()


class UsageError(Exception):
    pass


class OperationFailed(Exception):
    """Something outside the input failed (a cloud, a plugin): exit 1 with the reason."""


# ------------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------------


def _money(x: float | None, unpriced: Sequence[str] = ()) -> str:
    """A cost cell: never $0.00 for what has no price ("unpriced"; "$X + unpriced items" for a partial sum)."""
    return escape(money(x, bool(unpriced)))


def _basis(p: PlannedPool) -> str:
    return p.price.basis if p.price is not None else "none (not in the cost)"


def _hourly(x: float | None, hours: float) -> float | None:
    return cents(x / hours) if x is not None else None


def _accelerators(pools: Sequence[PlannedPool]) -> str:
    """What a count of accelerators is called: GPUs, TPU chips, Trainium chips, or accelerators when mixed."""
    kinds = {p.accelerator_kind for p in pools if p.accelerator_kind}
    return {"gpu": "GPUs", "tpu": "TPU chips", "trainium": "Trainium chips"}.get(
        next(iter(kinds)) if len(kinds) == 1 else "", "accelerators"
    )


# A warning about one item of the stack starts with its path: "pools[0] (h100): ..." or "pools[0] (h100) has ...".
_SUBJECT = re.compile(r"([a-z_.]+\[\d+\](?: \([^()]*\))?)(?::\s+|\s+(?=\S))(.+)", re.DOTALL)


def _group_warnings(warnings: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Warnings grouped for reading, in their order: (subjects, messages), each stack item named once and the
    items with the same warnings (e.g. several pools without a zone) together. Subject "" : about no one item."""
    by_subject: dict[str, list[str]] = {}
    for w in warnings:
        m = _SUBJECT.fullmatch(w)
        subject, text = (m.group(1), m.group(2)) if m else ("", w)
        texts = by_subject.setdefault(subject, [])
        if text not in texts:
            texts.append(text)
    groups: list[tuple[list[str], list[str]]] = []  # (items, their warnings)
    items_with: dict[tuple[str, ...], list[str]] = {}  # warnings -> the items that have exactly these
    for subject, texts in by_subject.items():
        if not subject:
            groups.append(([], texts))
        elif tuple(texts) in items_with:
            items_with[tuple(texts)].append(subject)
        else:
            items_with[tuple(texts)] = [subject]
            groups.append((items_with[tuple(texts)], texts))
    return [(", ".join(subjects), texts) for subjects, texts in groups]


def _print_warnings(plan: ClusterPlan) -> None:
    """The plan's warnings on stderr (see `_warn`)."""
    _warn(list(plan.warnings))


def _warn(warnings: list[str]) -> None:
    """Warnings on stderr: one line for a single warning; else one header and the warnings grouped by the stack
    item they are about. `--quiet` hides them. Every warning the CLI prints goes through here."""
    if settings.quiet or not warnings:
        return
    if len(warnings) == 1:
        err.print(f"[yellow]warning:[/] {escape(warnings[0])}")
        return
    err.print(f"[yellow]warning:[/] {len(warnings)} warnings [dim](--quiet hides them)[/]")
    for subject, texts in _group_warnings(warnings):
        if not subject:
            for text in texts:
                err.print(f"  - {escape(text)}")
        elif len(texts) == 1:
            err.print(f"  - {escape(subject)}: {escape(texts[0])}")
        else:
            err.print(f"  - {escape(subject)}:")
            for text in texts:
                err.print(f"      {escape(text)}")


def _pools_table(plan: ClusterPlan, title: str = "Pools") -> Table:
    t = Table(title=title, title_justify="left")
    for col, just in [
        ("pool", "left"),
        ("provider", "left"),
        ("where", "left"),
        ("instance type", "left"),
        ("nodes", "right"),
        (_accelerators(plan.pools), "right"),
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
            _where(p.region, p.zone),
            p.instance_type,
            f"{p.nodes:,}",
            f"{p.gpus:,}",
            p.market,
            _money(p.cost_usd_per_hour, p.unpriced),
            _money(p.cost_usd_per_month, p.unpriced),
            # TPU hosts: Google publishes no power figure, so say so rather than print 0
            f"{p.power_kw_it:,.1f}" if p.power_basis != "unpublished" else "n/a",
            f"{p.power_kw_facility:,.1f}" if p.power_basis != "unpublished" else "n/a",
        )
    for f in plan.filesystems:
        t.add_row(
            f.name,
            f.provider,
            _where(f.region, f.zone),
            f"{f.service} {f.deployment}",
            "",
            "",
            f"{f.capacity_tib:,.1f} TiB",
            _money(f.cost_usd_per_hour),
            _money(f.cost_usd_per_month),
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
            _money(_hourly(n.cost_usd_per_month, plan.hours_per_month), n.unpriced),
            _money(n.cost_usd_per_month, n.unpriced),
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
            _money(_hourly(v.cost_usd_per_month, plan.hours_per_month), v.unpriced),
            _money(v.cost_usd_per_month, v.unpriced),
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
            _money(_hourly(k.cost_usd_per_month, plan.hours_per_month), k.unpriced),
            _money(k.cost_usd_per_month, k.unpriced),
            f"{k.system_power_kw_it:,.2f}",
            f"{k.system_power_kw_facility:,.2f}",
        )
    if plan.controller is not None:
        c = plan.controller
        if c.host is not None:  # an existing site host: its cost and power are the site's, not a $0.00 instance
            t.add_row(
                "controller",
                c.provider,
                _where(c.region, c.zone),
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
                _where(c.region, c.zone),
                c.instance_type,
                "1",
                "",
                "on-demand",
                _money(c.cost_usd_per_hour, c.unpriced),
                _money(c.cost_usd_per_month, c.unpriced),
                f"{c.node_power_kw:,.2f}",
                f"{c.power_kw_facility:,.2f}",
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
        _money(tot.cost_usd_per_hour, tot.unpriced),
        _money(tot.cost_usd_per_month, tot.unpriced),
        f"{tot.power_kw_it:,.1f}",
        f"{tot.power_kw_facility:,.1f}",
        style="bold",
    )
    return t


def _where(region: str, zone: str | None) -> str:
    """AWS zones name their region (us-east-1a); Azure's are bare numbers, so say eastus/1."""
    if zone is None:
        return region
    return zone if zone.startswith(region) else f"{region}/{zone}"


def _ratio(x: float) -> str:
    return f"{x:g}:1"


def _sites_table(plan: ClusterPlan) -> Table:
    """Each owned site: what its pools draw, cost and emit, against what the site and its racks can deliver."""
    t = Table(title="Sites", title_justify="left")
    for col, just in [
        ("site", "left"),
        ("pools", "left"),
        ("nodes", "right"),
        (_accelerators(plan.pools), "right"),
        ("kW IT / max", "right"),
        ("kW facility", "right"),
        ("racks", "right"),
        ("fullest rack / limit", "right"),
        ("hardware $/month", "right"),
        ("energy $/month", "right"),
        ("t CO2e/month", "right"),
    ]:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for s in plan.sites:
        # the site's ceiling (max_kw) is on its IT load, as the site-power policy judges it
        used = s.power_kw_it / s.max_kw * 100 if s.max_kw else 0.0
        it_load = f"{s.power_kw_it:,.1f} / {s.max_kw:,.0f} ({used:.0f}%)"
        if s.power_kw_it > s.max_kw:
            it_load = f"[red]{it_load} over[/]"
        fullest = max(s.racks, key=lambda r: r.power_kw, default=None)
        over = [r for r in s.racks if r.over_limit]
        rack = "" if fullest is None else f"{fullest.power_kw:,.1f} / {s.rack_kw:g} kW"
        if over:
            rack = f"[red]{rack}, {len(over)} over[/]"
        t.add_row(
            escape(s.name),
            escape(", ".join(s.pools)),
            f"{s.nodes:,}",
            f"{s.gpus:,}",
            it_load,
            f"{s.power_kw_facility:,.1f}",
            f"{len(s.racks):,}",
            rack,
            _money(s.hardware_usd_per_month),
            _money(s.energy_usd_per_month),
            f"{s.co2e_t_per_month:,.1f}",
        )
    return t


def _cables(f: PlannedFabric) -> tuple[int, ...]:
    """Cables per tier, node-leaf first: leaf-spine in two tiers, spine-core too in three."""
    tiers = (f.cables_node_leaf, f.cables_leaf_spine, f.cables_spine_core)
    return tiers[: f.tiers]


def _fabrics_table(plan: ClusterPlan) -> Table:
    """Each site fabric: its switches by tier, cables by tier, transceivers, ports and oversubscription."""
    t = Table(title="Fabrics", title_justify="left")
    for col, just in [
        ("site", "left"),
        ("fabric", "left"),
        ("switch", "left"),
        ("kind", "left"),
        ("tiers", "right"),
        ("leaf/spine/core switches", "right"),
        ("cables per tier", "right"),
        ("transceivers switch+node", "right"),
        ("ports used/free", "right"),
        ("oversubscription wanted/got", "right"),
    ]:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for s in plan.sites:
        for f in s.fabrics:
            t.add_row(
                escape(s.name),
                escape(f.name),
                escape(f"{f.switch} {f.radix}x{f.link_gbps}G"),
                f"{f.fabric}, {f.rails} rails" + (", per-rail planes" if f.planes == "per-rail" else ""),
                str(f.tiers),
                f"{f.leaf_switches:,}/{f.spine_switches:,}/{f.core_switches:,}",
                "/".join(f"{n:,}" for n in _cables(f)),
                f"{f.switch_transceivers:,}+{f.node_transceivers:,}",
                f"{f.ports_used:,}/{f.ports_free:,}",
                f"{_ratio(f.oversubscription_wanted)}/{_ratio(f.oversubscription_achieved)}",
            )
    return t


def _plan_details(plan: ClusterPlan) -> None:
    tot = plan.totals
    if plan.sites:
        out.print(_sites_table(plan))
        if any(s.fabrics for s in plan.sites):
            out.print(_fabrics_table(plan))
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
    for p in plan.pools:
        if p.aws is not None:
            efa = p.aws.efa_devices
            text = (
                f"{p.name}: {efa} EFA + 1 ENA interfaces per node; placement group: "
                f"{p.aws.placement_group} ({p.aws.placement_group_reason}); price {_basis(p)}"
            )
            out.print(f"[dim]{escape(text)}[/]")
            if not p.aws.image_pinned and plan.kubernetes is None:
                note = (
                    f"{p.name}: image {p.aws.image} is not pinned: nodes launched later may boot a newer AMI "
                    "(driver, EFA and NCCL versions drift); pin it with image: ami-... or resolve:ssm:...:<version>"
                )
                out.print(f"[dim]{escape(note)}[/]")
        if p.azure is not None:
            fabric = "InfiniBand domain" if p.azure.infiniband else "scale set"
            domains = ", ".join(
                f"{s.name} ({s.nodes} VMs: nodes {s.first_node}-{s.first_node + s.nodes - 1})"
                for s in p.azure.scale_sets
            )
            text = f"{p.name}: one {fabric} per scale set, at most {p.azure.max_vms_per_scale_set} VMs each: {domains}"
            out.print(f"[dim]{escape(text)}; price {escape(_basis(p))}[/]")
            if not p.azure.image_pinned and plan.kubernetes is None:
                note = (
                    f"{p.name}: image {p.azure.image} is not pinned: VMs added later may boot a newer image (driver, "
                    "OFED and NCCL versions drift); pin a version, e.g. image: publisher:offer:sku:<version>"
                )
                out.print(f"[dim]{escape(note)}[/]")
        for note in _gcp_notes(p, kubernetes=plan.kubernetes is not None):
            out.print(f"[dim]{escape(note)}[/]")
    if plan.kubernetes is not None:
        _print_kubernetes(plan)
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


def _gcp_notes(p: PlannedPool, *, kubernetes: bool = False) -> list[str]:
    """What a GCP pool's plan decided: NICs, placement groups, TPU slice shape. A Kubernetes stack's node pools
    boot the service's node image, so the image-family note does not apply there (`_kubernetes_notes` says so)."""
    notes = []
    if p.gcp is not None:
        d = p.gcp
        kinds = [n.nic_type for n in d.nics]
        groups = ", ".join(
            f"{g.name} ({g.nodes} VMs: nodes {g.first_node}-{g.first_node + g.nodes - 1}"
            + (f", max distance {g.max_distance}" if g.max_distance else "")
            + ")"
            for g in d.groups
        )
        notes.append(
            f"{p.name}: {len(d.nics)} NICs per VM ({kinds.count('GVNIC')} gVNIC"
            + (f" + {kinds.count('MRDMA')} MRDMA" if "MRDMA" in kinds else "")
            + f", {p.fabric}); placement: {d.placement} ({d.placement_reason}); groups: {groups}; "
            f"{d.provisioning_model.lower()} capacity, reservation affinity {d.reservation_affinity}"
            + (f" {d.reservation}" if d.reservation else "")
            + f"; price {_basis(p)}"
        )
        if not d.image_pinned and not kubernetes:
            notes.append(
                f"{p.name}: image {d.image} is an image family: VMs created later may boot a newer image (driver "
                "and NCCL versions drift); pin one with image: projects/<project>/global/images/<name>"
            )
    if p.tpu is not None:
        t = p.tpu
        notes.append(
            f"{p.name}: {len(t.slices)} x {t.accelerator_type} = {t.chips_per_slice} chips on {t.hosts_per_slice} "
            f"TPU VM(s) per slice ({t.chips_per_host} chips each); {t.api_reason}; runtime {t.runtime_version}; "
            f"price {_basis(p)} per chip-hour"
        )
    return notes


def _taints(g: PlannedNodeGroup) -> str:
    return ", ".join(f"{t.key}={t.value}:{t.effect}" for t in g.taints)


def _per_node(g: PlannedNodeGroup) -> str:
    return ", ".join(f"{name}: {amount}" for name, amount in g.resources.items())


def _kubernetes_tables(plan: ClusterPlan) -> list[Table]:
    """A Kubernetes stack's control plane, its node groups (one per fabric domain of a pool) and its add-ons."""
    k = plan.kubernetes
    if k is None:
        return []
    cp = Table(title=f"Kubernetes control plane ({k.cluster_name})", title_justify="left")
    for col, just in [
        ("service", "left"),
        ("version", "left"),
        ("support", "left"),
        ("endpoint", "left"),
        ("region", "left"),
        ("system nodes", "left"),
        ("control plane $/month", "right"),
        ("system nodes $/month", "right"),
    ]:
        cp.add_column(col, justify=just)  # type: ignore[arg-type]
    endpoint = k.endpoint + (f" ({', '.join(k.authorized_networks)})" if k.authorized_networks else "")
    zones = ", ".join(_where(k.region, z) for z in k.system_zones) or k.region
    cp.add_row(
        escape(k.service_name),
        k.version,
        k.support,
        escape(endpoint),
        k.region,
        escape(f"{k.system_nodes} x {k.system_instance_type} in {zones}"),
        _money(k.control_plane_usd_per_month),
        _money(k.system_usd_per_month, k.unpriced),
    )
    groups = Table(title="Node groups", title_justify="left")
    for col, just in [
        ("node group", "left"),
        ("pool", "left"),
        ("zone", "left"),
        ("nodes", "right"),
        ("taints", "left"),
        ("per node", "left"),
    ]:
        groups.add_column(col, justify=just)  # type: ignore[arg-type]
    for g in k.node_groups:
        groups.add_row(
            escape(g.name),
            escape(g.pool),
            escape(_where(k.region, g.zone)),
            f"{g.nodes:,}",
            escape(_taints(g)),
            escape(_per_node(g)),
        )
    addons = Table(title="Add-ons", title_justify="left")
    for col in ("add-on", "chart", "version", "namespace"):
        addons.add_column(col)
    for a in k.addons:
        # a chart as its repository names it; a manifest by its file (the catalog source has the commit and URL)
        chart = f"{a.repository}/{a.chart}" if a.kind == "helm" else f"{a.chart} (manifest)"
        addons.add_row(escape(a.name), escape(chart), escape(a.version), escape(a.namespace))
    return [cp, groups, addons]


def _kubernetes_notes(plan: ClusterPlan) -> list[str]:
    """What the tables leave out: the queue, the topology levels, the node image, the pod and service ranges."""
    k = plan.kubernetes
    if k is None:
        return []
    notes = [
        f"kueue: ClusterQueue {k.cluster_queue}, LocalQueue {k.namespace}/{k.local_queue}",
        *(f"kueue topology {t.name}: {' > '.join(t.levels)}" for t in k.topologies),
        f"node groups boot {k.node_image} ({k.service_name}'s node image for Kubernetes {k.version}), which the "
        "control plane keeps in step with its version (a Kubernetes stack sets no pool image)",
        f"pods: {k.pod_cidr or 'VPC addresses (VPC CNI)'}; services: {k.service_cidr}; secrets encrypted with "
        f"{k.secrets_encryption.upper()}; audit log {'on' if k.audit_logs else 'off'}",
    ]
    return notes


def _print_kubernetes(plan: ClusterPlan) -> None:
    for table in _kubernetes_tables(plan):
        out.print(table)
    for note in _kubernetes_notes(plan):
        out.print(f"[dim]{escape(note)}[/]")


# ------------------------------------------------------------------------------------------------
# Commands
# ------------------------------------------------------------------------------------------------


def _stack(args: argparse.Namespace) -> tuple[Project, Any]:
    """The project and the stack the argument names: a stack name, or the path of a Pulumi.<stack>.yaml."""
    from .stackfile import stack_file_name, stack_name_problem

    given: str = args.stack
    path: Path | None = None
    if "/" in given or os.sep in given or given.endswith((".yaml", ".yml")):
        path = Path(given)
        name = stack_file_name(path)
        if name is None or stack_name_problem(name) is not None:
            raise UsageError(
                f"{given}: not a stack file; a stack file is named Pulumi.<stack>.yaml "
                "(e.g. stacks/Pulumi.p5-small.yaml)"
            )
        if not path.is_file():
            raise UsageError(f"{given}: no such stack file")
        given = name
    elif stack_name_problem(given) is not None:
        raise UsageError(str(stack_name_problem(given)))
    project = find_project(Path(args.project_dir) if args.project_dir else None)
    return project, read_stack(project, given, path)


def _json_target(path: str | None) -> Path | None:
    """--json FILE, checked before any work: '-' (stdout) is None."""
    if path is None or path == "-":
        return None
    return check_target(path, "--json")


def cmd_validate(args: argparse.Namespace) -> int:
    """Every problem of the stack at once: the spec's (all layers), the waivers', the catalog's (the planner)
    and what the mandatory data-residency and tag policies would fail in preview."""
    from .preview.check import check_stack

    _, stack = _stack(args)
    plan = check_stack(stack, policy_checks=True)
    _print_warnings(plan)
    out.print(
        f"[green]ok[/] {stack.source}: cluster {plan.name}, {len(plan.pools)} pool(s), "
        f"{plan.totals.nodes:,} nodes, {plan.totals.gpus:,} {_accelerators(plan.pools)}, "
        f"{_money(plan.totals.cost_usd_per_month, plan.totals.unpriced)}/month"
    )
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from .preview import plan_stack

    target = _json_target(args.json)
    _, stack = _stack(args)
    plan = plan_stack(stack)
    data = json.dumps(plan.model_dump(mode="json"), indent=2, sort_keys=False) + "\n"
    if args.json == "-":
        sys.stdout.write(data)
        return EXIT_OK
    _print_warnings(plan)
    out.print(_pools_table(plan, title=f"Plan for {stack.stack} ({plan.name})"))
    _plan_details(plan)
    if target is not None:
        write_atomic(target, data, flag="--json")
        out.print(f"wrote {escape(str(target))}")
    return EXIT_OK


def _read_json(path: str, what: str) -> Any:
    """A JSON input the user gives: bounded in size, nesting and numbers, so that a hostile file is a clear
    error (exit 2) and not a RecursionError or a 4,300-digit ValueError further on."""
    from .stackfile import JsonInputError, read_json_input

    try:
        return read_json_input(Path(path))
    except JsonInputError as exc:
        raise UsageError(f"{what} {path}: {exc}") from None


def _policy_config(args: argparse.Namespace) -> dict[str, Any] | None:
    """The --policy-config file, checked against every policy's config schema before anything runs."""
    if not args.policy_config:
        return None
    from .preview.policy import config_problems

    try:
        doc = _read_json(args.policy_config, "--policy-config")
    except (ValueError, RecursionError) as exc:  # an integer beyond Python's digit limit; nesting beyond the stack
        what = "nested too deeply" if isinstance(exc, RecursionError) else "holds a number too long to read"
        raise UsageError(f"--policy-config {args.policy_config}: not a usable policy config: it {what}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"--policy-config {args.policy_config}: expected a JSON object of policy name -> settings")
    problems = config_problems(doc)
    if problems:
        raise SpecError(args.policy_config, problems)
    return doc


def _verdict(result: Any) -> tuple[int, str]:
    """Exit code and one line for a policy result: mandatory violations fail the run."""
    from .report import in_groups, waived_in_groups

    pol = result.policy
    mandatory, advisory = len(pol.mandatory), len(pol.violations) - len(pol.mandatory)
    # findings counted one by one, and the groups (table rows) they make where those are fewer
    summary = (
        f"policy pack {pol.pack['name']}@{pol.pack['version']}: {len(pol.passed)} passed, "
        f"{mandatory} mandatory and {advisory} advisory violation(s){in_groups(pol.violations)}, "
        f"{len(pol.waived)} waived{waived_in_groups(pol.waived)}, {len(pol.not_applicable)} not applicable"
    )
    return (EXIT_FAILED if mandatory else EXIT_OK), summary


_LISTED = 5  # resources named per group in the terminal; the JSON and the reports list every one


def _not_applicable_line(result: Any) -> str | None:
    """The policies that had nothing to judge (neither passed nor failed), named apart from the passed ones."""
    na = result.policy.not_applicable
    if not na:
        return None
    return f"not applicable ({len(na)}): " + ", ".join(n["policy"] for n in na) + " (reasons in --json and reports)"


def _findings_table(result: Any) -> Table | None:
    """Findings grouped by policy and cause (one pool outside the allowed regions is one row naming
    its resources, not 26 rows); waived findings likewise, by policy, cause and waiver."""
    from .report import FindingGroup, group_findings, group_waived

    def listed(g: FindingGroup[Any]) -> str:
        names = g.resources()
        shown = ", ".join(names[:_LISTED]) + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")
        return shown if g.count == 1 else f"{g.count}: {shown}"

    pol = result.policy
    if not pol.violations and not pol.waived:
        return None
    t = Table(title="Policy findings", title_justify="left")
    for col in ("level", "severity", "policy", "resources", "message"):
        t.add_column(col, overflow="fold")
    style = {"mandatory": "red", "advisory": "yellow"}
    for g in group_findings(pol.violations):
        v = g.first
        t.add_row(
            f"[{style[v.enforcement]}]{v.enforcement}[/]", v.severity, v.policy, escape(listed(g)), escape(g.summary)
        )
    for wg in group_waived(pol.waived):
        w = wg.first
        t.add_row(
            "[dim]waived[/]",
            w.severity,
            w.policy,
            escape(listed(wg)),
            escape(f"{wg.summary} [waived until {w.expires}: {w.reason}]"),
        )
    return t


def _resource_tree(stack: str, resources: Sequence[Any]) -> Tree:
    """The resources by name and type, children under their parent component, as `pulumi preview`
    shows them; siblings in registration order. A resource whose parent is not in the preview (the
    stack itself) hangs from the root."""
    root = Tree(f"[bold]pulumi:pulumi:Stack[/] {escape(stack)}", guide_style="dim")
    urns = {r.urn for r in resources}
    children: dict[str | None, list[Any]] = {}
    for r in resources:
        children.setdefault(r.parent if r.parent in urns else None, []).append(r)
    pending: list[tuple[Tree, str | None]] = [(root, None)]
    while pending:  # iterative: a deep component nesting cannot exhaust the stack
        node, urn = pending.pop()
        for r in children.get(urn, []):
            kind = "" if r.custom else " [dim](component)[/]"
            branch = node.add(f"[cyan]{escape(r.type)}[/] {escape(r.name)}{kind}")
            pending.append((branch, r.urn))
    return root


def cmd_preview(args: argparse.Namespace) -> int:
    from .preview import preview_stack

    target = _json_target(args.json)
    config = _policy_config(args)
    _, stack = _stack(args)
    result = preview_stack(stack, config)
    with phase("output"):
        return _preview_output(args, stack, result, target)


def _preview_output(args: argparse.Namespace, stack: Any, result: Any, target: Path | None) -> int:
    data = json.dumps(result.to_json(), indent=2) + "\n"
    code, verdict = _verdict(result)
    if args.json == "-":
        sys.stdout.write(data)
        err.print(verdict)
        return code
    _print_warnings(result.plan)
    title = f"Resources ({len(result.capture.resources)}) in preview of {escape(stack.stack)}"
    if args.tree:
        out.print(f"{title}:")
        out.print(_resource_tree(stack.stack, result.capture.resources))
    else:
        t = Table(title=title, title_justify="left")
        t.add_column("type")
        t.add_column("count", justify="right")
        for typ, n in result.resource_counts():
            t.add_row(typ, str(n))
        out.print(t)
    out.print(_pools_table(result.plan))
    _plan_details(result.plan)
    out.print(f"[dim]offline preview: {result.capture.seconds:.2f} s, no cloud account used[/]")
    findings = _findings_table(result)
    if findings is not None:
        out.print(findings)
    na_line = _not_applicable_line(result)
    if na_line is not None:
        out.print(f"[dim]{escape(na_line)}[/]")
    out.print(f"[{'red' if code else 'green'}]{escape(verdict)}[/]")
    if target is not None:
        write_atomic(target, data, flag="--json")
        out.print(f"wrote {escape(str(target))}")
    return code


def _live_outputs(project: Project, stack: str) -> dict[str, Any] | None:
    """The deployed stack's outputs through the Pulumi CLI, or None when there is no CLI or no deployment."""
    import shutil
    import subprocess

    exe = shutil.which("pulumi")
    if exe is None:
        return None
    proc = subprocess.run(
        [exe, "stack", "output", "--json", "--stack", stack],
        cwd=project.root,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        _warn([f"pulumi stack output failed ({proc.stderr.strip()[:200]}); using the offline preview"])
        return None
    try:
        data = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _addresses(path: str | None, names: set[str]) -> dict[str, str]:
    """--hosts FILE: node name -> address, for nodes the cloud outputs do not address (on-prem, tests)."""
    if path is None:
        return {}
    from .inventory import read_hosts

    return read_hosts(Path(path), names)


def _discover(project: Project, stack: Any, plan: ClusterPlan, outputs: Mapping[str, Any]) -> dict[str, str]:
    """--discover: the pools' VMs from the clouds' inventory plugins, named after the plan's nodes. The
    assignment is kept in .work/<stack>/nodes.yml so a VM keeps its name from one run to the next."""
    import yaml

    from . import discover

    work = _work_dir(project, stack.stack)
    try:
        configs = discover.plugin_configs(plan, stack.config)
    except discover.DiscoveryError as exc:
        raise UsageError(str(exc)) from None
    owned = [p.name for p in plan.pools if p.onprem is not None]
    if owned:
        out.print(
            f"[yellow]--discover: on-prem pool(s) {escape(', '.join(owned))}: their hosts and addresses come from "
            "the stack (pools[].hosts) and the controller's from scheduler.controller, never from a cloud[/]"
        )
    if not configs:
        out.print("[yellow]--discover: no pool of this stack is discoverable (TPU hosts come from --hosts)[/]")
        return {}
    directory = work / "discover"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    for stale in set(directory.glob("*.yml")) - {directory / f for f in configs}:
        stale.unlink()
    for filename, config in configs.items():
        write_atomic(directory / filename, yaml.safe_dump(config, sort_keys=False), mode=0o600)
    state = work / "nodes.yml"
    previous: dict[str, str] = {}
    if state.is_file():
        try:
            doc = yaml.safe_load(state.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError:
            doc = None
        if not isinstance(doc, dict):
            _warn([f"{state} is not a node -> VM id mapping; naming the VMs afresh"])
            doc = {}
        previous = {str(k): str(v) for k, v in doc.items()}
    try:
        found = discover.instances(discover.list_hosts(directory))
    except discover.DiscoveryError as exc:
        raise OperationFailed(str(exc)) from None
    result = discover.assign(plan, found, outputs, previous)
    write_atomic(state, yaml.safe_dump(result.ids(), sort_keys=True), mode=0o600)
    out.print(
        f"discovered {len(found)} VM(s) with {', '.join(c['plugin'] for c in configs.values())}: "
        f"{len(result.nodes)} named, {len(result.missing)} planned node(s) missing, {len(result.strays)} not placed"
    )
    for inst, why in result.strays:
        out.print(
            f"[yellow]  not placed: {escape(inst.provider)} {escape(inst.name)} ({escape(inst.id)}): {escape(why)}[/]"
        )
    if result.missing:
        shown = ", ".join(result.missing[:8]) + (" ..." if len(result.missing) > 8 else "")
        out.print(f"[yellow]  no VM yet for: {escape(shown)}[/]")
    return result.addresses


SLURM_OLDEST = (20, 11)  # SlurmctldParameters=cloud_reg_addrs, which CLOUD nodes registering by name need


def _slurm_version(text: str | None) -> tuple[int, int]:
    """--slurm-version YY.MM: the Slurm release the nodes run (the Slurm files are rendered for it)."""
    if text is None:
        return (22, 5)
    import re

    m = re.fullmatch(r"(\d{2})\.(\d{1,2})(?:\.\d+)?", text.strip())
    version = (int(m.group(1)), int(m.group(2))) if m else None
    if version is None or not 1 <= version[1] <= 12:
        raise UsageError(f"--slurm-version {text}: expected a Slurm release as YY.MM, e.g. 22.05 or 23.11")
    if version < SLURM_OLDEST:
        raise UsageError(
            f"--slurm-version {text}: aicluster renders Slurm files for {SLURM_OLDEST[0]}.{SLURM_OLDEST[1]} and later "
            "(CLOUD nodes register their address with SlurmctldParameters=cloud_reg_addrs)"
        )
    return version


def _work_dir(project: Project, stack: str) -> Path:
    """.work/<stack>: the stack's own work directory, never anywhere else (a stack named `..` or `a/b` is refused
    here too, whatever the stack file's checks say)."""
    work = project.root / ".work"
    target = work / stack
    if not stack or stack in (".", "..") or Path(stack).name != stack or "\\" in stack:
        raise UsageError(
            f'stack "{stack}": not a name aicluster can keep work under (.work/<stack>/); rename the stack'
        )
    if target.resolve().parent != work.resolve():
        raise UsageError(f"{target}: resolves outside {work}; remove the link or rename the stack")
    return target


@dataclass
class _Inventory:
    """An inventory planned for a stack but not written yet (`_plan_inventory`), and what its message says."""

    project: Project
    stack: Any
    target: Path  # where it goes
    shown: str  # how messages name that directory (the user's spelling)
    plan: ClusterPlan
    files: dict[str, str]  # relative path -> text
    addresses: dict[str, str]
    source: str  # where the outputs came from
    reused: int  # addresses kept from the previous inventory
    user_out: bool  # --out given

    def write(self, target: Path | None = None) -> None:
        """Write it to `target` (a scratch directory) or, by default, where it goes."""
        from . import inventory as inv

        try:
            inv.write(target or self.target, self.files, self.addresses, shown=self.shown)
        except inv.InventoryDirError as exc:
            raise UsageError(f"--out {exc}" if self.user_out else str(exc)) from None
        if target is not None:
            return
        plan = self.plan
        hosts = sum(len(p.node_names()) for p in plan.pools) + (1 if plan.controller else 0)
        addressed = len(set(self.addresses) | set(inv.stack_addresses(plan)))
        out.print(
            f"wrote {self.target}/hosts.yml and {len(self.files) - 1} group_vars file(s): {hosts} host(s), "
            f"{addressed} with an address"
            f"{f' ({self.reused} kept from the previous inventory)' if self.reused else ''}; "
            f"outputs from the {self.source}"
        )


def _plan_inventory(args: argparse.Namespace, given_plan: ClusterPlan | None = None) -> _Inventory:
    """Plan the stack (unless `given_plan` is its plan) and its inventory, writing nothing of it yet. Addresses an
    earlier run was given (--hosts, --discover) are kept when this one gives none. A Kubernetes stack has no
    inventory: exit 2 with the reason."""
    from . import inventory as inv
    from .preview import offline_outputs, plan_stack

    slurm_version = _slurm_version(getattr(args, "slurm_version", None))  # bad input fails before any write
    project, stack = _stack(args)
    work = _work_dir(project, stack.stack)
    target = Path(args.out) if args.out else work / "inventory"
    shown = args.out or str(target)
    playbooks = (project.root / "playbooks").resolve()
    if target.resolve() == playbooks or playbooks in target.resolve().parents:
        raise UsageError(f"--out {args.out}: inside playbooks/; inventories go to a work directory (e.g. .work/)")
    plan = given_plan or plan_stack(stack)
    reason = inv.kubernetes_reason(plan, stack.stack)
    if reason is not None:
        raise UsageError(reason)
    names = {n for p in plan.pools for n in p.node_names()} | ({plan.controller_host()} if plan.controller else set())
    given = _addresses(args.hosts, names)
    kept = {k: v for k, v in inv.previous_addresses(target).items() if k in names} if not target.is_symlink() else {}
    outputs = _live_outputs(project, stack.stack)
    source = "pulumi stack output"
    if outputs is None:
        outputs = offline_outputs(stack)
        source = "offline preview"
    if getattr(args, "discover", False):
        given = {**_discover(project, stack, plan, outputs), **given}  # --hosts wins
    discovering = bool(getattr(args, "discover", False))
    # Addresses this run gives (--hosts, --discover) replace the earlier ones; a run that gives none (`tune` after
    # `inventory --hosts`) keeps them, rather than losing every address.
    addresses = given if (args.hosts or discovering) else kept
    files = inv.inventory(plan, outputs, addresses, source, slurm_version=slurm_version, stack_config=stack.config)
    reused = 0 if (args.hosts or discovering) else len(kept)
    return _Inventory(project, stack, target, shown, plan, files, addresses, source, reused, bool(args.out))


def _write_inventory(args: argparse.Namespace) -> tuple[Project, Any, Path, ClusterPlan, dict[str, str]]:
    """Plan the stack and write its inventory (files 0600 in a work directory); the directory, the plan and the
    nodes' addresses."""
    planned = _plan_inventory(args)
    planned.write()
    return planned.project, planned.stack, planned.target, planned.plan, planned.addresses


def cmd_inventory(args: argparse.Namespace) -> int:
    _write_inventory(args)
    return EXIT_OK


def _score_table(hosts: Mapping[str, Any], title: str, *, running: bool = False) -> Table:
    t = Table(title=title, title_justify="left")
    for col, just in (
        ("host", "left"),
        ("ok", "right"),
        ("changed", "right"),
        ("failed", "right"),
        ("unreachable", "right"),
        ("skipped", "right"),
        ("task now" if running else "last failure", "left"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for host, s in hosts.items():
        style = "red" if s.bad else None
        t.add_row(
            host,
            str(s.ok),
            str(s.changed),
            str(s.failed),
            str(s.unreachable),
            str(s.skipped),
            escape(s.task if running else (s.message or "")),
            style=style,
        )
    return t


def _extra_vars(pairs: list[str] | None) -> dict[str, Any]:
    """-e KEY=VALUE pairs; VALUE is read as YAML (true, 3, [a, b]) like Ansible's own -e."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--extra-vars {pair}: expected KEY=VALUE with KEY a variable name")
        try:
            out[key] = yaml.safe_load(value)
        except yaml.YAMLError:
            out[key] = value
    return out


def _check_targets(args: argparse.Namespace, target: Any, playbook: Path, inventory_dir: Path, local: bool) -> None:
    """Before anything runs: known tags, every --limit pattern matching a host or group, at least one host under
    --limit, an address for every host (unless the connection is local)."""
    from .inventory import read_yaml
    from .tune import SPECIAL_TAGS, unmatched_patterns

    tags = [t.strip() for t in (args.tags or "").split(",") if t.strip()]
    known = set(target.tags) | set(SPECIAL_TAGS)
    unknown = [t for t in tags if t not in known]
    if unknown:
        from .spec import did_you_mean

        hint = did_you_mean(unknown[0], sorted(target.tags))
        raise UsageError(
            f"--tags {args.tags}: {', '.join(unknown)} not a tag of {playbook.name}"
            + (f" ({hint})" if hint else "")
            + (f"; known tags: {', '.join(target.tags)}" if target.tags else "; the playbook has no tags")
        )
    if args.limit:
        missing, groups = unmatched_patterns(inventory_dir / "hosts.yml", args.limit)
        if missing:
            raise UsageError(
                f"--limit {args.limit}: {', '.join(missing)} {'matches' if len(missing) == 1 else 'match'} no host or "
                f"group of the inventory; give node names (h100-000), groups ({', '.join(groups[:10])}) or patterns "
                "(h100-00*, slurm_compute:!h100-001)"
            )
    if not target.hosts:
        doc = read_yaml((inventory_dir / "hosts.yml").read_text(encoding="utf-8"))
        groups = sorted((doc.get("all") or {}).get("children") or {})
        where = f"--limit {args.limit}: no host of the inventory matched" if args.limit else "no host to run on"
        raise UsageError(f"{where}; give a node name, a group ({', '.join(groups[:10])}) or a pattern (h100-00*)")
    if local:
        return
    addressed = _addressed(read_yaml((inventory_dir / "hosts.yml").read_text(encoding="utf-8")))
    missing = [h for h in target.hosts if h not in addressed]
    if missing:
        shown = ", ".join(missing[:8]) + (f" ... ({len(missing)} in all)" if len(missing) > 8 else "")
        raise UsageError(
            f"no address for {shown}: give them with --hosts FILE (node name -> address) or --discover (cloud "
            f"pools; on-prem nodes: list them with their addresses under the pool's hosts in the stack), "
            f"or leave them out with --limit"
        )


def _addressed(doc: Any) -> set[str]:
    """Hosts of an inventory document that have an `ansible_host`."""
    found: set[str] = set()

    def walk(group: Any) -> None:
        if not isinstance(group, dict):
            return
        for name, hostvars in (group.get("hosts") or {}).items():
            if isinstance(hostvars, dict) and hostvars.get("ansible_host"):
                found.add(str(name))
        for child in (group.get("children") or {}).values():
            walk(child)

    walk(doc.get("all") if isinstance(doc, dict) else None)
    return found


def cmd_tune(args: argparse.Namespace) -> int:
    import tempfile

    from rich.live import Live

    from . import tune

    extravars = _extra_vars(args.extra_vars)  # bad input fails before anything is written
    for flag, value, instead in (
        ("--tags", args.tags, "the tags to run (e.g. --tags base,nccl), or leave it out to run the whole playbook"),
        ("--limit", args.limit, "hosts or groups (e.g. --limit slurm_compute), or leave it out to run on every host"),
    ):
        if value is not None and not value.strip(" ,:"):  # Ansible would run everything
            raise UsageError(f"{flag} is empty: give {instead}")
    from .preview import plan_stack

    project, stack = _stack(args)
    plan = plan_stack(stack)
    if plan.kubernetes is not None:  # no Ansible: the add-ons and the service own the nodes (exit 0, nothing written)
        _print_warnings(plan)
        for line in tune.kubernetes_message(plan, stack.stack):
            out.print(escape(line))
        given = [
            flag
            for flag, value in (
                ("--limit", args.limit),
                ("--tags", args.tags),
                ("--check", args.check),
                ("--hosts", args.hosts),
                ("--discover", getattr(args, "discover", None)),
                ("--playbook", args.playbook),
                ("--extra-vars", args.extra_vars),
            )
            if value
        ]
        if given:
            err.print(
                f"note: {', '.join(given)} apply to the Ansible run, which a Kubernetes stack has none of: ignored"
            )
        return EXIT_OK
    playbook = Path(args.playbook) if args.playbook else project.root / "playbooks" / "site.yml"
    if not playbook.is_file():
        raise UsageError(f"{playbook}: no such playbook")
    planned = _plan_inventory(args, plan)
    project, stack = planned.project, planned.stack
    roles_path = playbook.parent / "roles"
    local = os.environ.get("ANSIBLE_TRANSPORT") == "local" or extravars.get("ansible_connection") == "local"
    # Exit 2 writes nothing: Ansible lists the hosts and tags over a scratch copy of the inventory, and the
    # inventory goes into place only once the tags, the limit and the addresses pass.
    with tempfile.TemporaryDirectory(prefix="aicluster-inventory-") as scratch:
        checked = Path(scratch) / "inventory"
        planned.write(checked)
        try:
            target = tune.targets(playbook, checked / "hosts.yml", roles_path=roles_path, limit=args.limit)
        except tune.TuneError as exc:
            raise UsageError(f"{playbook}: {exc}") from None
        _check_targets(args, target, playbook, checked, local)
    planned.write()
    inventory_dir = planned.target
    work = _work_dir(project, stack.stack) / "runner"
    printed = 0

    def lines(board: tune.Scoreboard) -> None:  # no terminal (CI): a line per play and per host that drops out
        nonlocal printed
        for line in board.progress[printed:]:
            out.print(escape(line), soft_wrap=True)
        printed = len(board.progress)

    with Live(console=out, transient=True, auto_refresh=False) as live:

        def show(board: tune.Scoreboard) -> None:
            if not out.is_terminal:
                lines(board)
                return
            live.update(_score_table(board.hosts, f"tuning {stack.stack}: {board.task}", running=True), refresh=True)

        result = tune.run(
            playbook,
            inventory_dir / "hosts.yml",
            work,
            roles_path=roles_path,
            limit=args.limit,
            tags=args.tags,
            check=args.check,
            extravars=extravars,
            on_change=show,
        )
    mode = " (check mode: nothing changed)" if args.check else ""
    out.print(_score_table(result.hosts, f"tune {stack.stack}{mode}: {result.tasks} task(s) in {result.seconds:.1f} s"))
    out.print(f"[dim]artifacts: {result.artifacts}[/]")
    idle = [h for h in target.hosts if h not in result.failed_hosts and not result.hosts.get(h, tune.HostScore()).ran]
    if result.failed_hosts or result.status != "successful" or idle or not result.hosts:
        failed = ",".join(result.failed_hosts)
        if failed or result.status != "successful":
            out.print(f"[red]{len(result.failed_hosts)} host(s) failed: {escape(failed) or result.status}[/]")
        if idle:
            shown = ", ".join(idle[:8]) + (" ..." if len(idle) > 8 else "")
            out.print(f"[red]{len(idle)} host(s) ran no task: {escape(shown)} (check --tags and --limit)[/]")
        if failed:
            out.print(f"retry them: aicluster tune {stack.stack} --limit {failed}")
        return EXIT_FAILED
    # A task "reached" a host when it ran there: assertions on inventory variables (the validate role) and tasks
    # delegated elsewhere run on the controller, so a host that had only those was checked, not tuned.
    tuned = [h for h, s in result.hosts.items() if s.reached]
    checked_only = [h for h, s in result.hosts.items() if s.ran and not s.reached]
    if tuned:
        out.print(f"[green]{len(tuned)} host(s) tuned[/]")
    if checked_only:
        shown = ", ".join(checked_only[:8]) + (" ..." if len(checked_only) > 8 else "")
        out.print(f"[green]{len(checked_only)} host(s) checked (no task reached the host): {escape(shown)}[/]")
    return EXIT_OK


KUBECONFIG_HEADER = "# aicluster kubeconfig for stack "  # first line of every kubeconfig `aicluster kubeconfig` writes


def _kubernetes_plan(args: argparse.Namespace, command: str, instead: str) -> tuple[Project, Any, ClusterPlan]:
    """The project, stack and plan of a Kubernetes stack; a Slurm stack is bad input (exit 2) naming `instead`."""
    from .preview import plan_stack

    project, stack = _stack(args)
    plan = plan_stack(stack)
    if plan.kubernetes is None:
        raise UsageError(
            f"{command} {stack.stack}: a Slurm stack (scheduler.kind: slurm) has no Kubernetes control plane; {instead}"
        )
    return project, stack, plan


def _secret_outputs(project: Project, stack: str) -> dict[str, Any]:
    """The deployed stack's outputs, secrets in clear (`pulumi stack output --json --show-secrets`). The text is
    never echoed: a failure says only what failed."""
    import shutil
    import subprocess

    exe = shutil.which("pulumi")
    if exe is None:
        raise OperationFailed(
            "the Pulumi CLI is not installed: the kubeconfig is a stack output of the deployed stack; install it, or "
            "give the outputs with --outputs FILE (pulumi stack output --json --show-secrets > FILE)"
        )
    proc = subprocess.run(
        [exe, "stack", "output", "--json", "--show-secrets", "--stack", stack],
        cwd=project.root,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise OperationFailed(f"pulumi stack output failed: {strip_control(proc.stderr.strip())[:300]}")
    try:
        data = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        raise OperationFailed("pulumi stack output printed no JSON object") from None
    if not isinstance(data, dict):
        raise OperationFailed("pulumi stack output printed no JSON object")
    return data


def _kubeconfig_text(value: Any, where: str) -> str:
    """The `kubeconfig` output as YAML text, checked to be a kubeconfig (never quoted back in an error)."""
    import yaml

    from .preview import COMPUTED, SECRET

    if value is None:
        raise UsageError(f"{where}: no `kubeconfig` output; has the stack been deployed (pulumi up)?")
    if value == SECRET:
        raise UsageError(
            f"{where}: the `kubeconfig` output is masked; read it with `pulumi stack output --json --show-secrets`"
        )
    if value == COMPUTED:
        raise UsageError(f"{where}: the `kubeconfig` output is not known before `pulumi up` (an offline preview)")
    if isinstance(value, dict):
        value = yaml.safe_dump(value, sort_keys=False)
    if not isinstance(value, str):
        raise UsageError(f"{where}: the `kubeconfig` output is not a kubeconfig (expected YAML text)")
    try:
        doc = yaml.safe_load(value)
    except yaml.YAMLError:
        doc = None
    if not isinstance(doc, dict) or not doc.get("clusters") or not doc.get("users"):
        raise UsageError(f"{where}: the `kubeconfig` output is not a kubeconfig (no clusters and users)")
    return value if value.endswith("\n") else value + "\n"


def _check_kubeconfig_target(target: Path, stack: str, force: bool) -> None:
    """Refuse to replace a file aicluster did not write for this stack (unless --force), and anything that is not
    a plain file (a terminal, a pipe: the kubeconfig must never be shown)."""
    import stat

    label = f"-o {target}"
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{label}: not a plain file; the kubeconfig is a secret and is only written to a file")
    if force:
        return
    with open(target, encoding="utf-8", errors="replace") as fh:
        first = fh.readline().rstrip("\n")
    if first != f"{KUBECONFIG_HEADER}{stack}":
        raise UsageError(
            f"{label}: exists and was not written by `aicluster kubeconfig {stack}`; "
            "give another file, or --force to replace it"
        )


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    """Write the deployed stack's kubeconfig (a secret stack output) to a 0600 file; never to the terminal."""
    project, stack, plan = _kubernetes_plan(
        args, "kubeconfig", "reach the cluster through its login node (the Slurm controller)"
    )
    if args.output in ("-", ""):
        raise UsageError("-o -: the kubeconfig is a secret and is only written to a file; give a file name")
    target = check_target(args.output or (_work_dir(project, stack.stack) / "kubeconfig"), "-o")
    _check_kubeconfig_target(target, stack.stack, args.force)
    if args.outputs:
        outputs = _read_json(args.outputs, "--outputs")
        if not isinstance(outputs, dict):
            raise UsageError(f"--outputs {args.outputs}: expected the JSON object of `pulumi stack output --json`")
        where = f"--outputs {args.outputs}"
    else:
        outputs = _secret_outputs(project, stack.stack)
        where = f"stack {stack.stack}"
    deployed = outputs.get("cluster")
    if deployed is not None and deployed != plan.name:
        raise UsageError(
            f"{where}: these are the outputs of cluster {escape(str(deployed))!r}, not of {plan.name} (stack "
            f"{stack.stack}): give the outputs of this stack"
        )
    text = _kubeconfig_text(outputs.get("kubeconfig"), where)
    header = f"{KUBECONFIG_HEADER}{stack.stack}\n# rewritten by `aicluster kubeconfig`; keep your edits elsewhere\n"
    write_atomic(target, header + text, mode=0o600, flag="-o")
    shown = escape(str(target))
    out.print(f"wrote {shown} (mode 0600); use it with: KUBECONFIG={shown} kubectl get nodes")
    return EXIT_OK


def _ssh_key_pair() -> tuple[str, str]:
    """A fresh ed25519 key pair (OpenSSH private key, public key line), made in memory; never written elsewhere."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode("ascii") + " aicluster-acceptance\n"


def cmd_acceptance(args: argparse.Namespace) -> int:
    """The NCCL acceptance test of a Kubernetes stack: the SSH key Secret (a fresh key pair) and the JobSet, in one
    0600 file. The Secret makes the file a secret: it is never written to the terminal."""
    import yaml

    from .render.kubernetes import ACCEPTANCE_SSH_SECRET, acceptance_jobset, acceptance_ssh_secret

    project, stack, plan = _kubernetes_plan(
        args, "acceptance", f"`aicluster tune {args.stack}` runs the NCCL acceptance test on Slurm nodes"
    )
    if args.output in ("-", ""):
        raise UsageError(
            f"-o -: the manifest holds the Secret {ACCEPTANCE_SSH_SECRET} (an SSH private key) and is only written to "
            "a file; give a file name"
        )
    target = check_target(args.output or (_work_dir(project, stack.stack) / "nccl-acceptance.yaml"), "-o")
    _print_warnings(plan)
    jobset = acceptance_jobset(plan)
    secret = acceptance_ssh_secret(plan, *_ssh_key_pair())

    class _Plain(yaml.SafeDumper):  # shared dicts (requests == limits) written out, not as &id001 anchors
        def ignore_aliases(self, data: Any) -> bool:
            return True

    text = yaml.dump_all([secret, jobset], Dumper=_Plain, sort_keys=False)
    write_atomic(target, text, mode=0o600, flag="-o")
    shown = escape(str(target))
    namespace = escape(jobset["metadata"]["namespace"])
    out.print(
        f"wrote {shown} (mode 0600: the Secret {ACCEPTANCE_SSH_SECRET} with a fresh SSH key pair, and the JobSet "
        f"{escape(jobset['metadata']['name'])}); run it with: kubectl apply -f {shown} && "
        f"kubectl -n {namespace} logs -f jobs/{escape(jobset['metadata']['name'])}-node-0"
    )
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from .preview import preview_stack
    from .report import render

    output = check_target(args.output, "-o")
    config = _policy_config(args)
    _, stack = _stack(args)
    result = preview_stack(stack, config)
    text = render(result.to_json(), args.format)
    write_atomic(output, text, flag="-o")
    _, verdict = _verdict(result)
    out.print(f"wrote {escape(args.output)} ({args.format}); {escape(verdict)}")
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from .report import DiffInputError, diff_markdown

    base = _read_json(args.base, "base")
    head = _read_json(args.head, "head")
    try:
        text = diff_markdown(base, head)
    except DiffInputError as exc:
        path = args.base if exc.side == "base" else args.head
        raise UsageError(
            f"{exc.side} {path}: not a preview JSON ({exc.problem}); write one with "
            "`aicluster preview STACK --json FILE`"
        ) from None
    return _emit(text, args.output)


def _emit(text: str, output: str | None) -> int:
    """Write a command's text to `output` (atomically) or to stdout (without control characters: the text
    carries user-derived values, and the stdout may be a terminal)."""
    if output:
        write_atomic(Path(output), text, flag="-o")
        out.print(f"wrote {escape(output)}")
    else:
        sys.stdout.write(strip_control(text))
    return EXIT_OK


def cmd_policies(args: argparse.Namespace) -> int:
    from policies import POLICIES

    from .preview.policy import describe, resolve_config

    levels, _ = resolve_config(_policy_config(args))
    t = Table(title=f"Policies ({len(POLICIES)})", title_justify="left")
    for col in ("policy", "concern", "kind", "severity", "enforcement", "frameworks", "description"):
        t.add_column(col, overflow="fold")
    for p in POLICIES:
        d = describe(p, levels[p.name])
        t.add_row(
            d["name"],
            d["concern"],
            d["kind"],
            d["severity"],
            d["enforcement"],
            ", ".join(d["frameworks"]),
            d["description"],
        )
    out.print(t)
    return EXIT_OK


def cmd_policy_config(args: argparse.Namespace) -> int:
    from .preview import plan_stack
    from .preview.policy import stack_pack_config

    _, stack = _stack(args)
    text = json.dumps(stack_pack_config(plan_stack(stack)), indent=2) + "\n"
    return _emit(text, args.output)


def cmd_schema(args: argparse.Namespace) -> int:
    return _emit(json.dumps(json_schema(), indent=2) + "\n", args.output)


def cmd_stacks(args: argparse.Namespace) -> int:
    project = find_project(Path(args.project_dir) if args.project_dir else None)
    for name in project.stacks():
        out.print(name)
    return EXIT_OK


# ------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own exit code for usage errors is 2, as ours
        self.print_usage(sys.stderr)
        err.print(f"aicluster: error: {escape(message)}")
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="aicluster",
        description="Declarative GPU/TPU clusters: validate, plan and preview "
        "stacks offline (no cloud account, no Pulumi CLI).",
    )
    parser.add_argument("--version", action="version", version=f"aicluster {__version__}")
    parser.add_argument("-C", "--project-dir", help="the project directory (default: the nearest with Pulumi.yaml)")
    quiet_help = "do not print warnings (errors are still printed)"
    parser.add_argument("-q", "--quiet", action="store_true", help=quiet_help)
    parser.add_argument(
        "--timings",
        action="store_true",
        help="print on stderr where the command's time went (startup and imports, catalog, plan, program, "
        "policies, output)",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add(
        name: str, fn: Callable[[argparse.Namespace], int], help_: str, stack: bool = True
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        # global, and accepted after the command too (`aicluster preview x -q`); SUPPRESS keeps the global value
        p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=quiet_help)
        if stack:
            p.add_argument(
                "stack",
                help="stack name (p5-small reads stacks/Pulumi.p5-small.yaml) or the path of a stack file "
                "Pulumi.<stack>.yaml",
            )
        p.set_defaults(func=fn)
        return p

    add("validate", cmd_validate, "check a stack file against the schema and the catalog")
    p = add("plan", cmd_plan, "show the resolved plan: instance facts, CIDRs, cost, power, racks")
    p.add_argument("--json", metavar="FILE", help="also write the plan as JSON ('-' for stdout only)")
    p = add(
        "preview",
        cmd_preview,
        "run the Pulumi program offline under mocks, show what it would create and run the policy pack "
        "(exit 1 on a mandatory violation)",
    )
    p.add_argument("--json", metavar="FILE", help="also write the preview as JSON ('-' for stdout only)")
    p.add_argument("--policy-config", metavar="FILE", help="CrossGuard policy config JSON (as --policy-pack-config)")
    p.add_argument(
        "--tree", action="store_true", help="show the resources by name and type under their parent, as pulumi preview"
    )
    p = add("report", cmd_report, "preview the stack and write a policy report: md, html, sarif, junit or json")
    p.add_argument("--format", required=True, choices=("md", "html", "sarif", "junit", "json"))
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the report")
    p.add_argument("--policy-config", metavar="FILE", help="CrossGuard policy config JSON (as --policy-pack-config)")
    p = add("diff", cmd_diff, "Markdown for a PR comment: what changes between two preview JSONs", stack=False)
    p.add_argument("base", help="preview JSON of the base branch")
    p.add_argument("head", help="preview JSON of the change")
    p.add_argument("-o", "--output", metavar="FILE", help="write it to FILE (default: stdout)")
    p = add("policies", cmd_policies, "list the policy pack's policies", stack=False)
    p.add_argument("--policy-config", metavar="FILE", help="show enforcement levels under this policy config")
    p = add(
        "policy-config",
        cmd_policy_config,
        "write the --policy-pack-config that carries the stack's waivers to the Pulumi CLI",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write it to FILE (default: stdout)")
    p = add(
        "inventory",
        cmd_inventory,
        "write the Ansible inventory and group_vars for the tuning step (files 0600, in a work directory)",
    )
    p.add_argument("--out", metavar="DIR", help="where to write it (default: .work/<stack>/inventory)")
    p.add_argument("--hosts", metavar="FILE", help="YAML mapping of node name -> address, for nodes without one")
    p.add_argument(
        "--slurm-version",
        metavar="YY.MM",
        help="the nodes' Slurm release, for the Slurm files (default 22.05, Debian 12's; 23.11 adds block topology)",
    )
    p.add_argument(
        "--discover",
        action="store_true",
        help="find the pools' VMs with the clouds' Ansible inventory plugins and name them after the plan's nodes",
    )
    p = add(
        "tune",
        cmd_tune,
        "write the inventory and run playbooks/site.yml over it with ansible-runner (exit 1 if any host failed)",
    )
    # a run over many hosts handles an event per task and host, each leaving a few reference cycles (json's
    # encoder closures): it needs the cyclic collector that the console entry turns off (aicluster/__main__.py)
    p.set_defaults(collect_cycles=True)
    p.add_argument("--limit", metavar="HOSTS", help="only these hosts or groups (Ansible --limit)")
    p.add_argument("--tags", metavar="TAGS", help="only these roles/tags (comma-separated)")
    p.add_argument("--check", action="store_true", help="check mode: report what would change, change nothing")
    p.add_argument("--hosts", metavar="FILE", help="YAML mapping of node name -> address, for nodes without one")
    p.add_argument(
        "--slurm-version",
        metavar="YY.MM",
        help="the nodes' Slurm release, for the Slurm files (default 22.05, Debian 12's; 23.11 adds block topology)",
    )
    p.add_argument(
        "--discover",
        action="store_true",
        help="find the pools' VMs with the clouds' Ansible inventory plugins and name them after the plan's nodes",
    )
    p.add_argument("--out", metavar="DIR", help="where to write the inventory (default: .work/<stack>/inventory)")
    p.add_argument("--playbook", metavar="FILE", help="another playbook than playbooks/site.yml")
    p.add_argument("-e", "--extra-vars", action="append", metavar="KEY=VALUE", help="set a role variable (repeatable)")
    p = add(
        "kubeconfig",
        cmd_kubeconfig,
        "write the deployed Kubernetes stack's kubeconfig (a secret stack output) to a 0600 file, never the terminal",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="where to write it (default: .work/<stack>/kubeconfig)")
    p.add_argument(
        "--outputs",
        metavar="FILE",
        help="read the stack outputs from FILE (pulumi stack output --json --show-secrets) instead of the Pulumi CLI",
    )
    p.add_argument("--force", action="store_true", help="replace FILE even if aicluster did not write it")
    p = add(
        "acceptance",
        cmd_acceptance,
        "write the topology-aware NCCL acceptance JobSet of a Kubernetes stack and its SSH key Secret "
        "(kubectl apply -f it)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write it to FILE, mode 0600 (default: .work/STACK/nccl-acceptance.yaml; never stdout: it holds a key)",
    )
    from .commands import COMMANDS

    for command in COMMANDS:
        command.add_arguments(add(command.NAME, command.run, command.HELP, stack=command.STACK))
    p = add("schema", cmd_schema, "print the JSON schema of aicluster:cluster", stack=False)
    p.add_argument("-o", "--output", metavar="FILE", help="write it to FILE")
    add("stacks", cmd_stacks, "list the stacks of the project", stack=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    startup = timings.since_process_start()
    started = time.perf_counter()
    timings.reset()
    parser = build_parser()
    args = parser.parse_args(argv)
    settings.quiet = bool(args.quiet)
    if getattr(args, "collect_cycles", False):
        gc.enable()
    try:
        return _run(args)
    finally:
        if args.timings:
            _print_timings(startup, time.perf_counter() - started)


def _print_timings(startup: float | None, total: float) -> None:
    """One line: `timings: startup and imports 0.412 s, catalog 0.031 s, ..., main 0.802 s` (main: the
    command from start to end, phases and the rest; what follows it is the exit)."""
    parts = [] if startup is None else [f"startup and imports {startup:.3f} s"]
    parts += [f"{name} {seconds:.3f} s" for name, seconds in timings.phases().items()]
    parts.append(f"main {total:.3f} s")
    err.print(f"timings: {', '.join(parts)}", highlight=False)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except SpecError as exc:
        for line in str(exc).splitlines():
            err.print(f"[red]error:[/] {escape(line)}")
        n = len(exc.problems)
        err.print(f"{n} problem{'s' if n != 1 else ''} found; nothing was written.")
        return EXIT_BAD_INPUT
    except (StackNotFound, ProjectNotFound, UsageError, WriteError, _policy_config_error()) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_BAD_INPUT
    except OSError as exc:  # a path the user gave cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"[red]error:[/] {escape(where + (exc.strerror or str(exc)))}; nothing was written.")
        return EXIT_BAD_INPUT
    except _program_error() as exc:
        err.print(f"[red]error:[/] the Pulumi program failed: {escape(str(exc))}")
        return EXIT_FAILED
    except OperationFailed as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_FAILED


def entry() -> None:
    """The `aicluster` console script: main(), then exit.

    A preview imports the provider SDKs: tens of thousands of classes, whose teardown at interpreter exit
    takes longer than some whole commands (about 0.6-0.9 s for a preview). When the command succeeded (exit 0),
    every output it wrote is complete: files are written atomically and closed before main returns, and the
    terminal streams are flushed here. Only then does the process leave without the teardown, after the
    atexit handlers (logging, temporary directories) have run. On any other exit code, on an error being
    reported, or when a stream cannot be flushed (a closed pipe), it exits normally."""
    code = main()
    if code == EXIT_OK and _flushed():
        _after_output()
        engine = sys.modules.get("aicluster.preview.engine")
        if engine is not None:
            engine.stop_call_thread()  # idle since the program ended: the thread its runs kept
        if threading.active_count() == 1:  # a normal exit would wait for other non-daemon threads
            import atexit

            atexit._run_exitfuncs()
            if _flushed():
                os._exit(EXIT_OK)
    sys.exit(code)


def _after_output() -> None:
    """Work that may wait until the command's output is complete: cache the provider SDK modules a preview
    loaded without a cached copy (aicluster/preview/sdkload.py), so that the next preview is faster."""
    sdkload = sys.modules.get("aicluster.preview.sdkload")
    if sdkload is not None:
        sdkload.fill()


def _flushed() -> bool:
    """Flush stdout and stderr; False when either cannot be (the reader went away)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


def _policy_config_error() -> type[Exception]:
    from .preview import PolicyConfigError

    return PolicyConfigError


def _program_error() -> type[Exception]:
    from .preview import ProgramError

    return ProgramError


if __name__ == "__main__":
    # `python -m aicluster.cli` runs this file as __main__, a second copy of the module. Command modules import
    # aicluster.cli (its UsageError, consoles, settings); run the canonical module's main so that they and main
    # share one copy, and a command's UsageError exits 2 as it does under the console script.
    from aicluster.cli import entry as _canonical_entry

    _canonical_entry()
