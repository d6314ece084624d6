"""A Kubernetes stack's control plane, node groups, add-ons and queue, as `plan` and `preview` print them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from ..console import out
from .format import money, where, window_text

if TYPE_CHECKING:
    from aicluster.plan import ClusterPlan, PlannedKubernetes, PlannedNodeGroup


def _taints(g: PlannedNodeGroup, service: str) -> str:
    own = [f"{t.key}={t.value}:{t.effect}" for t in g.taints]
    return ", ".join([*own, *(f"{t.key}={t.value}:{t.effect} (set by {service})" for t in g.service_taints)])


def _per_node(g: PlannedNodeGroup) -> str:
    return ", ".join(f"{name}: {amount}" for name, amount in g.resources.items())


def kubernetes_tables(plan: ClusterPlan) -> list[Table]:
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
    zones = ", ".join(where(k.region, z) for z in k.system_zones) or k.region
    cp.add_row(
        escape(k.service_name),
        k.version,
        k.support,
        escape(endpoint),
        k.region,
        escape(f"{k.system_nodes} x {k.system_instance_type} in {zones}"),
        money(k.control_plane_usd_per_month),
        money(k.system_usd_per_month, k.unpriced),
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
            escape(where(k.region, g.zone)),
            f"{g.nodes:,}",
            escape(_taints(g, k.service.upper())),
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


def kubernetes_notes(plan: ClusterPlan) -> list[str]:
    """What the tables leave out: the queue, the topology levels, the node image, the pod and service ranges."""
    k = plan.kubernetes
    if k is None:
        return []
    notes = [
        f"kueue: ClusterQueue {k.cluster_queue}, LocalQueue {k.namespace}/{k.local_queue}",
        *(f"kueue topology {t.name}: {' > '.join(t.levels)}" for t in k.topologies),
        f"node groups boot {k.node_image} ({k.service_name}'s node image for Kubernetes {k.version}), which the "
        "control plane keeps in step with its version (a Kubernetes stack sets no pool image)",
        *(
            [f"Arm (Grace) node groups boot {k.node_image_arm64}"]
            if k.node_image_arm64 is not None and k.node_image_arm64 != k.node_image
            else []
        ),
        *(
            [
                "NVLink domains: one node group each, labelled aicluster.io/nvlink-domain; Kueue level "
                f"{k.nvlink_level}; each job brings its own ComputeDomain (NVIDIA's DRA driver), `aicluster "
                "acceptance` one per domain"
            ]
            if k.nvlink_level is not None
            else []
        ),
        f"pods: {k.pod_cidr or 'VPC addresses (VPC CNI)'}; services: {k.service_cidr}; secrets encrypted with "
        f"{k.secrets_encryption.upper()}; audit log {'on' if k.audit_logs else 'off'}",
        *_health_notes(k),
    ]
    w = k.maintenance_window
    if w is not None:
        notes.append(
            f"maintenance window: {k.service_name}'s automatic upgrades (node images, patch versions) run only in "
            f"{window_text(w.days, w.start, w.hours)}, the window of pool(s) {', '.join(w.pools)}; a change "
            "`pulumi up` makes reaches the nodes when you run it"
        )
    return notes


REPAIR_SETTING = {"node-group": "on every node group", "node-pool": "on the node pools", "always": "always on"}


def _health_notes(k: PlannedKubernetes) -> list[str]:
    """What watches the GPU nodes and what repairs them (the plan's node health)."""
    h = k.health
    if h is None:
        return []
    detector = (
        f"GPU node health: Node Problem Detector sets {h.xid_condition} on the {len(h.drain_xids)} XIDs that drain "
        f"a node (the XID catalog; an event for the {len(h.event_xids)} others) and {h.count_condition} when a "
        "node shows fewer GPUs than its pool"
    )
    if h.quarantine_max_share is None or h.quarantine_taint is None:
        detector += "; a condition cordons nothing by itself (a GPU the device plugin sees fail leaves the node's "
        detector += "allocatable GPUs)"
    else:
        detector += (
            f"; while either is True, aicluster's quarantine controller taints the node ({h.quarantine_taint}:"
            f"NoSchedule) and cordons it, at most {h.quarantine_max_share * 100:g} % of the GPU nodes at once (the "
            "others: an event), and gives it back when the condition clears"
        )
    repair = f"repair: {k.service_name} node auto-repair {REPAIR_SETTING[h.auto_repair]}, acting on {h.repair_triggers}"
    if h.agent_addon is not None:
        repair += f"; the {h.agent_addon} add-on sets {h.service_condition}"
    if h.repair_overrides:
        told = {a: sum(o.action == a for o in h.repair_overrides) for a in ("Reboot", "Replace", "NoAction")}
        repair += (
            f", and the repair is told per XID from its catalog bucket: {told['Reboot']} reboot, "
            f"{told['Replace']} replace, {told['NoAction']} no action"
        )
    if not h.service_gpu_checks and h.service_condition is not None:
        repair += (
            f"; {k.service_name}'s own GPU checks ({h.service_condition}) skip these pools, whose driver the GPU "
            "Operator installs"
        )
    return [detector, repair]


def print_kubernetes(plan: ClusterPlan) -> None:
    for table in kubernetes_tables(plan):
        out.print(table)
    for note in kubernetes_notes(plan):
        out.print(f"[dim]{escape(note)}[/]")
