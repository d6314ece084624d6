"""The update policy of each stack field, per platform, observed: the field is changed on a base example stack of the
platform, both stacks previewed offline, the steps classified by the catalog's change rules, and the steps reduced
to one effect. aicluster/catalog/data/update_policies.yaml records what this finds (regenerate with
AICLUSTER_UPDATE_GOLDENS=1 pytest tests/changes/test_update_policies.py); docs/spec-reference.md shows it and
`aicluster validate STACK --base BASE` names it for each field a change touches."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aicluster.catalog import load_catalog
from aicluster.changes import ChangeSet, classify
from tests.changes.harness import preview_doc, scratch_project, stack_doc

# one example stack per platform: the base every field is changed on
PLATFORMS = {  # <provider>-<scheduler kind>
    "aws-slurm": "p5-small",
    "azure-slurm": "azure-nd-h100",
    "gcp-slurm": "gcp-a3mega-slurm",
    "aws-kubernetes": "eks-p5",
    "gcp-kubernetes": "gke-a3mega",
    "azure-kubernetes": "aks-nd-h100",
    "onprem-slurm": "onprem-dgx-h100",
}
Edit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class FieldEdit:
    field: str  # as the spec reference names it, `pools[].nodes`
    change: str  # what the edit does, in words ("grow", "p5 -> p4d")
    platform: str
    edit: Edit
    reverse: bool = False  # the edit makes the base (an upgrade or shrink is the way back)
    prepare: Edit | None = None  # applied to both sides first (a field that exists only with another set)
    stack: str | None = None  # the example stack to try it on; default the platform's (PLATFORMS)

    @property
    def example(self) -> str:
        return self.stack or PLATFORMS[self.platform]


def _pool(key: str, value: Any) -> Edit:
    return lambda c: c["pools"][0].update({key: value})


def _pool_set(**values: Any) -> Edit:
    """Several keys of the first pool at once (a key that is None is removed)."""

    def edit(c: dict[str, Any]) -> None:
        pool = c["pools"][0]
        for key, value in values.items():
            if value is None:
                pool.pop(key, None)
            else:
                pool[key] = value

    return edit


def _add_nodes(n: int) -> Edit:
    return lambda c: c["pools"][0].update(nodes=c["pools"][0]["nodes"] + n)


def _double_nodes(c: dict[str, Any]) -> None:
    """Twice the nodes: a growth that crosses any power-of-two sizing (a pod range sized from the node count would
    grow a prefix bit, and replace the cluster)."""
    c["pools"][0]["nodes"] *= 2


def _fs(key: str, value: Callable[[Any], Any]) -> Edit:
    return lambda c: c["storage"][0].update({key: value(c["storage"][0][key])})


def _fs_set(**values: Any) -> Edit:
    def edit(c: dict[str, Any]) -> None:
        fs = c["storage"][0]
        for key, value in values.items():
            if value is None:
                fs.pop(key, None)
            else:
                fs[key] = value

    return edit


def _sched(key: str, value: Any) -> Edit:
    return lambda c: c["scheduler"].update({key: value})


def _sub(where: str, key: str, value: Any) -> Edit:
    """scheduler.<where>.<key> = value (the controller, the system pool)."""
    return lambda c: c["scheduler"].setdefault(where, {}).update({key: value})


def _rollout(**values: Any) -> Edit:
    return lambda c: c["pools"][0].setdefault("rollout", {}).update(copy.deepcopy(values))


def _window(**values: Any) -> Edit:
    return lambda c: c["pools"][0]["rollout"]["window"].update(values)


def _rename_pool(name: str) -> Edit:
    """The first pool renamed, and the workloads that name it with it."""

    def edit(c: dict[str, Any]) -> None:
        old = c["pools"][0]["name"]
        c["pools"][0]["name"] = name
        for w in c.get("workloads") or []:
            w["pools"] = [name if p == old else p for p in w.get("pools") or []]

    return edit


def _host(key: str, value: Any) -> Edit:
    return lambda c: c["pools"][0]["hosts"][0].update({key: value})


def _fabric(**values: Any) -> Edit:
    return lambda c: c["pools"][0]["fabric"].update(values)


def _with_hosts(c: dict[str, Any]) -> None:
    """Name the on-prem pool's hosts (two, on rack r01), so a host's fields can change."""
    pool = c["pools"][0]
    pool["nodes"] = 2
    pool["hosts"] = [
        {"name": f"dgx00{i}", "address": f"10.200.1.1{i}", "bmc": f"redfish://10.200.2.1{i}/redfish/v1/Systems/1",
         "bmc_username": "admin", "bmc_secret": "aicluster:bmcPassword", "rack": "r01", "u": 10 * i}
        for i in (1, 2)
    ]  # fmt: skip


def _with_fabric(**values: Any) -> Edit:
    """The pool's own fabric, its site's with `values`, so a fabric field can change."""
    return lambda c: c["pools"][0].update(fabric={**c["sites"][0]["fabric"], **values})


CLOUD_SLURM = ("aws-slurm", "azure-slurm", "gcp-slurm")
KUBERNETES = ("aws-kubernetes", "gcp-kubernetes", "azure-kubernetes")
CLOUD = (*CLOUD_SLURM, *KUBERNETES)
AZURE = ("azure-slurm", "azure-kubernetes")
GCP = ("gcp-slurm", "gcp-kubernetes")
INSTANCE_TYPES = {
    "aws-slurm": "p4d.24xlarge",
    "azure-slurm": "Standard_ND96asr_v4",
    "gcp-slurm": "a3-highgpu-8g",
    "aws-kubernetes": "p5en.48xlarge",
    "gcp-kubernetes": "a3-highgpu-8g",
    "azure-kubernetes": "Standard_ND96asr_v4",
    "onprem-slurm": "dgx-h200",
}
THROUGHPUT = {"aws-slurm": 500, "azure-slurm": 125, "gcp-slurm": 250}
ZONES = {
    "aws-slurm": "us-east-1b",
    "azure-slurm": "2",
    "gcp-slurm": "us-central1-b",
    "aws-kubernetes": "us-east-1a",
    "gcp-kubernetes": "us-central1-b",
    "azure-kubernetes": "2",
}
REGIONS = {  # another region and a zone of it
    "aws-slurm": ("us-west-2", "us-west-2a"),
    "azure-slurm": ("westus", None),
    "gcp-slurm": ("us-east4", "us-east4-a"),
    "aws-kubernetes": ("us-west-2", "us-west-2a"),
    "gcp-kubernetes": ("us-east4", "us-east4-a"),
    "azure-kubernetes": ("westus", None),
}
IMAGES = {
    "aws-slurm": "ami-0123456789abcdef0",
    "azure-slurm": "microsoft-dsvm:ubuntu-hpc:2204:22.04.2025010101",
    "gcp-slurm": "projects/my-images/global/images/family/gpu-base",
    "aws-kubernetes": "ami-0123456789abcdef0",
    "gcp-kubernetes": "projects/my-images/global/images/family/gpu-base",
    "azure-kubernetes": "microsoft-dsvm:ubuntu-hpc:2204:22.04.2025010101",
}
SPOT = {"aws-slurm": "spot", "azure-slurm": "spot", "gcp-slurm": "spot", "gcp-kubernetes": "spot",
        "azure-kubernetes": "spot"}  # fmt: skip
# a window GKE (48 h in 32 days) and AKS (one day, or all seven) both hold
WINDOW = {"strategy": "window", "window": {"days": ["sun"], "start": "02:00", "hours": 12}}
ALL_DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

EDITS: list[FieldEdit] = [
    # pools: every platform
    *(FieldEdit("pools[].nodes", "more nodes", p, _double_nodes) for p in PLATFORMS),
    *(FieldEdit("pools[].nodes", "fewer nodes", p, _add_nodes(1), reverse=True) for p in PLATFORMS),
    *(
        FieldEdit("pools[].instance_type", "another type", p, _pool("instance_type", t))
        for p, t in INSTANCE_TYPES.items()
    ),
    *(FieldEdit("pools[].name", "renamed", p, _rename_pool("gpu")) for p in PLATFORMS),
    FieldEdit("pools[].provider", "another provider", "aws-slurm", _pool("provider", "gcp")),
    *(FieldEdit("pools[].region", "another region", p, _pool_set(region=r, zone=z)) for p, (r, z) in REGIONS.items()),
    *(FieldEdit("pools[].zone", "another zone", p, _pool("zone", z)) for p, z in ZONES.items()),
    *(FieldEdit("pools[].market", "on-demand -> spot", p, _pool("market", m)) for p, m in SPOT.items()),
    FieldEdit(
        "pools[].market",
        "capacity block -> on-demand",
        "aws-kubernetes",
        _pool_set(market="on-demand", reservation=None),
    ),
    FieldEdit(
        "pools[].reservation", "another reservation", "aws-kubernetes", _pool("reservation", "cr-0f0e0d0c0b0a09080")
    ),
    FieldEdit(
        "pools[].reservation",
        "another reservation",
        "gcp-slurm",
        _pool("reservation", "projects/ml-capacity/reservations/h200-us-central1-b"),
        stack="gcp-a3ultra-reservation",
    ),
    FieldEdit(
        "pools[].reservations",
        "another capacity block",
        "aws-slurm",
        lambda c: c["pools"][0]["reservations"].__setitem__(1, "cr-0a1b2c3d4e5f60003"),
        stack="aws-p6e-gb200",
    ),
    FieldEdit("pools[].placement_group", "an existing group", "aws-slurm", _pool("placement_group", "pg-reserved")),
    *(FieldEdit("pools[].image", "another image", p, _pool("image", i)) for p, i in IMAGES.items()),
    *(
        FieldEdit("pools[].root_volume_gib", "larger", p, _pool("root_volume_gib", 1024))
        for p in (*CLOUD_SLURM, *KUBERNETES)
    ),
    *(
        FieldEdit(
            "pools[].spot_eviction",
            "delete -> deallocate",
            p,
            _pool("spot_eviction", "deallocate"),
            prepare=_pool("market", "spot"),
        )
        for p in AZURE
    ),
    *(
        FieldEdit("pools[].resource_group", "an existing group", p, _pool("resource_group", "rg-ml-prod"))
        for p in AZURE
    ),
    *(FieldEdit("pools[].ib_domain_max_vms", "smaller domains", p, _pool("ib_domain_max_vms", 8)) for p in AZURE),
    FieldEdit("pools[].tpu", "another slice size", "gcp-slurm", _pool("tpu", "v5p-128"), stack="gcp-tpu-v5p"),
    FieldEdit("pools[].slices", "more slices", "gcp-slurm", _pool("slices", 3), stack="gcp-tpu-v5p"),
    FieldEdit(
        "pools[].runtime_version",
        "another version",
        "gcp-slurm",
        _pool("runtime_version", "v2-alpha-tpuv5-lite"),
        stack="gcp-tpu-v5p",
    ),
    *(
        FieldEdit(
            "pools[].max_run_hours",
            "longer",
            p,
            _pool("max_run_hours", 48),
            prepare=_pool_set(market="flex-start", max_run_hours=24),
        )
        for p in GCP
    ),
    *(FieldEdit("pools[].compact_placement", "off", p, _pool("compact_placement", False)) for p in GCP),
    FieldEdit("pools[].site", "another site", "onprem-slurm", _pool("site", "ams1")),
    *(
        FieldEdit(f"pools[].hosts[].{k}", "another value", "onprem-slurm", _host(k, v), prepare=_with_hosts)
        for k, v in (
            ("name", "dgx009"),
            ("address", "10.200.1.19"),
            ("bmc", "ipmi://10.200.2.19:623"),
            ("bmc_username", "ops"),
            ("bmc_secret", "aicluster:bmcPassword2"),
            ("rack", "r02"),
            ("u", 30),
        )
    ),
    # each fabric change with what the catalog's switches need beside it (RoCE at 400G and InfiniBand at 200G: 128
    # ports)
    *(
        FieldEdit(f"pools[].fabric.{k}", "another value", "onprem-slurm", _fabric(**v), prepare=_with_fabric(**before))
        for k, v, before in (
            ("kind", {"kind": "roce", "switch_radix": 128}, {}),
            ("link_gbps", {"link_gbps": 200, "switch_radix": 128}, {}),
            ("switch_radix", {"switch_radix": 40}, {"link_gbps": 200, "switch_radix": 128}),
            ("switch", {"switch": "qm9700"}, {}),
            ("planes", {"planes": "per-rail"}, {}),
            ("reserved_ports", {"reserved_ports": 4}, {}),
            ("rails", {"rails": 4}, {}),
            ("oversubscription", {"oversubscription": 2}, {}),
        )
    ),
    # rollout: every platform
    *(FieldEdit("pools[].rollout.strategy", "drain-first -> window", p, _rollout(**WINDOW)) for p in PLATFORMS),
    *(FieldEdit("pools[].rollout.max_unavailable", "more at once", p, _rollout(max_unavailable=2)) for p in PLATFORMS),
    *(
        FieldEdit("pools[].rollout.window.days", "every day", p, _window(days=ALL_DAYS), prepare=_rollout(**WINDOW))
        for p in PLATFORMS
    ),
    *(
        FieldEdit("pools[].rollout.window.start", "later", p, _window(start="04:00"), prepare=_rollout(**WINDOW))
        for p in PLATFORMS
    ),
    *(
        FieldEdit("pools[].rollout.window.hours", "longer", p, _window(hours=16), prepare=_rollout(**WINDOW))
        for p in PLATFORMS
    ),
    # storage: the Slurm platforms' first file system (Lustre)
    *(FieldEdit("storage[].capacity_tib", "larger", p, _fs("capacity_tib", lambda x: x * 2)) for p in THROUGHPUT),
    *(
        FieldEdit("storage[].capacity_tib", "smaller", p, _fs("capacity_tib", lambda x: x * 2), reverse=True)
        for p in THROUGHPUT
    ),
    *(
        FieldEdit(
            "storage[].throughput_mb_s_per_tib", "another rate", p, _fs("throughput_mb_s_per_tib", lambda _, t=t: t)
        )
        for p, t in THROUGHPUT.items()
    ),
    *(FieldEdit("storage[].mount", "another path", p, _fs("mount", lambda _: "/data")) for p in THROUGHPUT),
    *(FieldEdit("storage[].name", "renamed", p, _fs_set(name="data")) for p in THROUGHPUT),
    *(
        FieldEdit(
            "storage[].kind", "lustre -> nfs", p, _fs_set(kind="nfs", capacity_tib=64, throughput_mb_s_per_tib=None)
        )
        for p in THROUGHPUT
    ),
    FieldEdit("storage[].provider", "another provider", "aws-slurm", _fs_set(provider="gcp")),
    FieldEdit("storage[].region", "another region", "aws-slurm", _fs_set(region="us-west-2")),
    FieldEdit("storage[].zone", "another zone", "aws-slurm", _fs_set(zone="us-east-1b")),
    # scheduler
    *(
        FieldEdit("scheduler.version", "upgrade", p, _sched("version", "1.34"), reverse=True)
        for p in ("aws-kubernetes", "gcp-kubernetes", "azure-kubernetes")
    ),
    *(
        FieldEdit("scheduler.kind", "slurm -> kubernetes", p, lambda c: c.update(scheduler={"kind": "kubernetes"}))
        for p in ("aws-slurm", "azure-slurm", "gcp-slurm")
    ),
    *(
        FieldEdit("scheduler.kind", "kubernetes -> slurm", p, lambda c: c.update(scheduler={"kind": "slurm"}))
        for p in KUBERNETES
    ),
    *(
        FieldEdit(
            "scheduler.endpoint",
            "private -> public",
            p,
            lambda c: c["scheduler"].update(endpoint="public", authorized_networks=["203.0.113.0/24"]),
        )
        for p in KUBERNETES
    ),
    *(
        FieldEdit(
            "scheduler.authorized_networks",
            "one more",
            p,
            lambda c: c["scheduler"]["authorized_networks"].append("198.51.100.0/24"),
            prepare=lambda c: c["scheduler"].update(endpoint="public", authorized_networks=["203.0.113.0/24"]),
        )
        for p in KUBERNETES
    ),
    *(FieldEdit("scheduler.namespace", "another", p, _sched("namespace", "jobs")) for p in KUBERNETES),
    *(FieldEdit("scheduler.system_pool.nodes", "more nodes", p, _sub("system_pool", "nodes", 4)) for p in KUBERNETES),
    *(
        FieldEdit("scheduler.system_pool.instance_type", "another type", p, _sub("system_pool", "instance_type", t))
        for p, t in (
            ("aws-kubernetes", "m7i.4xlarge"),
            ("gcp-kubernetes", "n2-standard-16"),
            ("azure-kubernetes", "Standard_D16s_v5"),
        )
    ),
    *(
        FieldEdit("scheduler.controller.instance_type", "another type", p, _sub("controller", "instance_type", t))
        for p, t in (("aws-slurm", "m7i.4xlarge"), ("gcp-slurm", "n2-standard-16"), ("azure-slurm", "Standard_D16s_v5"))
    ),
    FieldEdit("scheduler.controller.provider", "another cloud", "aws-slurm", _sub("controller", "provider", "gcp")),
    FieldEdit("scheduler.controller.region", "another region", "aws-slurm", _sub("controller", "region", "us-east-2")),
    FieldEdit("scheduler.controller.site", "another site", "onprem-slurm", _sub("controller", "site", "ams1")),
    FieldEdit("scheduler.controller.host", "another host", "onprem-slurm", _sub("controller", "host", "slurm02")),
    FieldEdit(
        "scheduler.controller.address", "another address", "onprem-slurm", _sub("controller", "address", "10.200.0.6")
    ),
]


EFFECTS = ("refused", "replaces-data", "replaces-nodes", "rollout", "removes-nodes", "new-nodes-only", "live", "none")
_SOURCE = re.compile(r"\(([a-z0-9-]+)(?::[^()]*)?\)$")


def effect(changes: ChangeSet) -> tuple[str, list[str]]:
    """The change's effect, the most costly first (EFFECTS), and the catalog sources of the rules that decide it.
    An update the provider previews but the cloud's API refuses is refused (`pulumi up` fails at that step) unless
    the change also loses data: other steps may run before the refused one, and `preview --base` blocks the loss."""
    steps = changes.steps

    def cited(chosen: list[Any]) -> list[str]:
        return sorted({m.group(1) for s in chosen for w in s.why if (m := _SOURCE.search(w))})

    data = [s for s in steps if s.op in ("replace", "delete") and "data-loss" in s.risks]
    if data:
        return "replaces-data", cited(data)
    rejected = [s for s in steps if s.rejected]
    if rejected:
        return "refused", cited(rejected)
    rolled = [s for s in steps if s.rollout]
    # a group replaced (or deleted) recreates all its nodes at once; a replaced template's nodes are its groups'
    nodes = [s for s in steps if s.op in ("replace", "delete") and "job-kill" in s.risks]
    if nodes and not changes.pools:
        return "replaces-nodes", cited(nodes)
    if rolled:
        return "rollout", cited(rolled)
    if changes.pools:
        return "removes-nodes", cited([s for s in steps if s.nodes_removed])
    drift = [s for s in steps if any("running" in w for w in s.why)]
    if drift:
        return "new-nodes-only", cited(drift)
    return ("live", []) if steps else ("none", [])


def tried(edit: FieldEdit) -> str:
    """What was changed, on which example: `p5-small: pools[h100].market on-demand -> spot`."""
    from aicluster.changes.fields import field_changes

    base = copy.deepcopy(stack_doc(edit.example)["config"]["aicluster:cluster"])
    if edit.prepare is not None:
        edit.prepare(base)
    head = copy.deepcopy(base)
    edit.edit(head)
    if edit.reverse:
        base, head = head, base

    def show(value: Any) -> str:
        if value is None:
            return "(unset)"
        if isinstance(value, dict):
            return "{...}"  # a pool or file system added or removed (renamed)
        return json.dumps(value, separators=(",", ":")).strip('"')

    changes = "; ".join(f"{c.path} {show(c.old)} -> {show(c.new)}" for c in field_changes(base, head, []))
    return f"{edit.example}: {changes}"


def observe(edit: FieldEdit, tmp: Path) -> tuple[str, list[str], str]:
    """Preview the example (prepared where the edit needs it) and the edited stack, classify, and reduce to one
    effect (with the rules' sources, and for a change `validate` refuses, its message)."""
    from aicluster.spec import SpecError
    from tests.changes.harness import base_preview

    stack = edit.example
    doc = copy.deepcopy(stack_doc(stack))
    cluster = doc["config"]["aicluster:cluster"]
    example: dict[str, Any] | None = None
    if edit.prepare is not None:
        edit.prepare(cluster)
        (tmp / "base").mkdir()
        example = preview_doc(scratch_project(tmp / "base"), stack, copy.deepcopy(doc))
    edit.edit(cluster)
    (tmp / "head").mkdir()
    try:
        edited = preview_doc(scratch_project(tmp / "head"), stack, doc)
    except SpecError as exc:
        message = str(exc).splitlines()[0]
        return "refused", [], message.split(": ", 2)[-1][:300]
    if example is None:
        example = base_preview(stack)
    base, head = (edited, example) if edit.reverse else (example, edited)
    changes = classify(base, head, load_catalog().change_rules)
    found, sources = effect(changes)
    return found, sources, refusal(changes) if found == "refused" else ""


def refusal(changes: ChangeSet) -> str:
    """What the cloud's API refuses, resource by resource (the note of an API-refused change)."""
    parts = [f"{s.type} {s.name}: {', '.join(s.rejected)}" for s in changes.steps if s.rejected]
    return f"the cloud's API refuses updating {'; '.join(parts)} (the provider previews an update; `pulumi up` fails)"


def write(path: Path) -> None:
    """Observe every edit (serially, in one process) and write the update policies."""
    import tempfile

    import yaml

    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for e in EDITS:
        with tempfile.TemporaryDirectory() as tmp:
            found, sources, note = observe(e, Path(tmp))
        entry: dict[str, Any] = {"effect": found, "tried": tried(e)}
        if sources:
            entry["sources"] = sources
        if note:
            entry["note"] = note
        rows.setdefault((e.field, e.change), {"field": e.field, "change": e.change, "effects": {}})["effects"][
            e.platform
        ] = entry
    header = (
        "# What changing a stack field does, per platform (the example stack each platform is tried on:\n"
        "# tests/changes/field_matrix.py), observed by previewing both stacks and classifying the steps with the\n"
        "# change rules (data/changes/): the effect, the sources of the rules that decide it, and what was tried\n"
        "# (the example stack, the changed fields and their values). Regenerate with\n"
        "# `python -m tests.changes.field_matrix`; tests/changes/test_update_policies.py checks it is current.\n"
        "# Effects: refused (validate, or the cloud's API, refuses the change), replaces-data, replaces-nodes,\n"
        "# rollout (running nodes recreated), removes-nodes, new-nodes-only (running nodes keep the old\n"
        "# configuration), live, none.\n"
    )
    path.write_text(header + yaml.safe_dump(list(rows.values()), sort_keys=False, width=118), encoding="utf-8")


if __name__ == "__main__":
    from aicluster.catalog import DATA_DIR

    write(DATA_DIR / "update_policies.yaml")
