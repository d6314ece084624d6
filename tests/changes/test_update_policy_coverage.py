"""Every pool, storage and scheduler field the spec reference lists has an update policy (data/update_policies.yaml),
each observed on an example stack with what was tried recorded (a refused change: what validate says)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from aicluster.catalog import Catalog
from aicluster.changes.fields import field_changes
from tests.conftest import ROOT

STACKS = {p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml")}
SCHEMA = json.loads((ROOT / "schema" / "cluster.schema.json").read_text(encoding="utf-8"))
TOP = ("pools", "storage", "scheduler")


def _refs(node: dict[str, Any]) -> list[str]:
    """The object definitions a property holds (itself, optional, in a union, or as list items)."""
    if "$ref" in node:
        return [node["$ref"].rsplit("/", 1)[-1]]
    out = []
    for key in ("anyOf", "oneOf"):
        for option in node.get(key, []):
            out += _refs(option)
    if "items" in node:
        out += _refs(node["items"])
    return out


def _fields(definition: str, prefix: str) -> Iterator[str]:
    for name, node in SCHEMA["$defs"][definition]["properties"].items():
        path = f"{prefix}.{name}"
        refs = _refs(node)
        if not refs:
            yield path
        items = node.get("type") == "array" or any(o.get("type") == "array" for o in node.get("anyOf", []))
        for ref in refs:
            yield from _fields(ref, f"{path}[]" if items else path)


def spec_fields() -> set[str]:
    """`pools[].market`, `pools[].rollout.window.days`, `scheduler.controller.host`: every leaf field of the pool,
    storage and scheduler variants, as the spec reference names them."""
    out: set[str] = set()
    for key in TOP:
        node = SCHEMA["properties"][key]
        prefix = f"{key}[]" if node.get("type") == "array" else key
        for ref in _refs(node):
            out |= set(_fields(ref, prefix))
    return out


def test_the_schema_walk_finds_the_nested_fields() -> None:
    fields = spec_fields()
    for f in ("pools[].nodes", "pools[].rollout.window.hours", "pools[].hosts[].bmc", "pools[].fabric.planes",
              "storage[].throughput_mb_s_per_tib", "scheduler.controller.address", "scheduler.system_pool.nodes",
              "scheduler.kind"):  # fmt: skip
        assert f in fields
    assert "pools[].rollout" not in fields  # an object: its fields are listed instead


def test_every_pool_storage_and_scheduler_field_has_an_update_policy(catalog: Catalog) -> None:
    recorded = {p.field for p in catalog.update_policies}
    missing = sorted(spec_fields() - recorded)
    assert missing == [], f"no update policy for {missing}: add a FieldEdit to tests/changes/field_matrix.py"
    assert recorded <= spec_fields(), sorted(recorded - spec_fields())  # no policy for a field that is gone


def test_every_policy_says_how_it_was_found(catalog: Catalog) -> None:
    for p in catalog.update_policies:
        for platform, e in p.effects.items():
            where = f"{p.field} ({p.change}) on {platform}"
            assert e.tried.split(": ", 1)[0] in STACKS, where  # the example it was tried on
            assert e.tried.split(": ", 1)[1], where  # and the fields it changed there
            assert bool(e.note) == (e.effect == "refused"), where
            if e.effect == "rollout":  # an update that recreates nodes is always a rule's (rollout fields)
                assert e.sources, where


def test_a_list_of_values_is_one_field() -> None:
    base = {"scheduler": {"kind": "kubernetes", "authorized_networks": ["203.0.113.0/24"]}}
    head = {"scheduler": {"kind": "kubernetes", "authorized_networks": ["198.51.100.0/24"]}}
    (change,) = field_changes(base, head, [])
    assert change.field == "scheduler.authorized_networks"
    pool = {"pools": [{"name": "h100", "rollout": {"window": {"days": ["sun"]}}}]}
    other = {"pools": [{"name": "h100", "rollout": {"window": {"days": ["sat"]}}}]}
    (change,) = field_changes(pool, other, [])
    assert (change.field, change.path) == ("pools[].rollout.window.days", "pools[h100].rollout.window.days[0]")


def _cluster(scheduler: str, **pool: Any) -> dict[str, Any]:
    return {"pools": [{"name": "h100", "provider": "aws", **pool}], "scheduler": {"kind": scheduler}}


def test_validate_names_the_row_whose_values_a_change_matches(catalog: Catalog) -> None:
    """`validate --base`: a field with several rows takes the one naming the old and new values, else the one tried
    on the platform; a section added whole (a pool's first `rollout`) is the fields it sets."""
    eks = field_changes(
        _cluster("kubernetes", market="capacity-block", reservation="cr-1"),
        _cluster("kubernetes", market="on-demand"),
        catalog.update_policies,
    )
    market = next(c for c in eks if c.field == "pools[].market")
    assert (market.platform, market.change, market.effect) == (
        "aws-kubernetes", "capacity block -> on-demand", "replaces-nodes"
    )  # fmt: skip
    policies = catalog.update_policies
    (spot,) = field_changes(_cluster("slurm", market="on-demand"), _cluster("slurm", market="spot"), policies)
    assert (spot.change, spot.effect) == ("on-demand -> spot", "new-nodes-only")
    (batch,) = field_changes(
        _cluster("kubernetes"), _cluster("kubernetes", rollout={"max_unavailable": 2}), catalog.update_policies
    )
    assert (batch.path, batch.field, batch.effect) == (
        "pools[h100].rollout.max_unavailable", "pools[].rollout.max_unavailable", "live"
    )  # fmt: skip


def test_an_update_the_cloud_refuses_is_refused_with_what_it_refuses(catalog: Catalog) -> None:
    """The provider previews an update the cloud's API refuses (an AKS pool's zones): `pulumi up` would fail, so
    the table says refused, not applied live, with the resource and input, and the rule's source."""
    from aicluster.changes import classify
    from tests.changes.field_matrix import effect, refusal
    from tests.changes.test_classify import doc
    from tests.report.previews import resource

    pool = "azure-native:containerservice:AgentPool"
    old, new = (resource(pool, "h100", availabilityZones=[z], count=4) for z in ("1", "2"))
    changes = classify(doc(old), doc(new), catalog.change_rules)
    assert effect(changes) == ("refused", ["azure-specs-mutability"])
    assert refusal(changes) == (
        f"the cloud's API refuses updating {pool} h100: availabilityZones[0] (the provider previews an update; "
        "`pulumi up` fails)"
    )
    grown = classify(doc(old), doc(resource(pool, "h100", availabilityZones=["1"], count=8)), catalog.change_rules)
    assert effect(grown) == ("live", [])
