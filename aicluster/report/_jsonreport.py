"""The JSON report: what the other reports show, as data (no resource inputs), byte-stable."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from ._doc import Cluster, PreviewDoc, Site
from ._sites import bill_of_materials, fullest
from ._views import budget_uses, verdict
from ._workloads import workload_data


def _cluster(cluster: Cluster | None) -> dict[str, Any] | None:
    if cluster is None:
        return None
    data = asdict(cluster)
    data["budgets"] = {
        k: v for k, v in data["budgets"].items() if v is not None
    }  # absent when unset, as in the preview
    return data


def _site(site: Site) -> dict[str, Any]:
    """The site as the preview has it, with what the other reports derive: each rack's over_limit, the fullest
    rack, and each fabric's bill of materials."""
    data = asdict(site)
    for rack, given in zip(site.racks, data["racks"], strict=True):
        given["over_limit"] = rack.over_limit
    for fabric, given in zip(site.fabrics, data["fabrics"], strict=True):
        given["bill_of_materials"] = [
            {"item": b.item, "what": b.what, "model": b.model, "quantity": b.quantity}
            for b in bill_of_materials(fabric)
        ]
    top = fullest(site.racks)
    data["fullest_rack"] = top.name if top else None
    data["racks_over_limit"] = [r.name for r in site.racks if r.over_limit]
    return data


def report_data(doc: PreviewDoc) -> dict[str, Any]:
    v = verdict(doc.policy)
    return {
        "stack": doc.stack,
        "project": doc.project,
        "verdict": {
            "status": v.status,
            "text": v.text,
            "mandatory": v.mandatory,
            "advisory": v.advisory,
            "waived": v.waived,
            "passed": v.passed,
            "not_applicable": v.not_applicable,
        },
        "cluster": _cluster(doc.cluster),
        "summary": asdict(doc.summary),
        "budgets": [
            {"name": b.key, "budget": b.budget, "actual": b.actual, "used_pct": round(b.used_pct, 2)}
            for b in budget_uses(doc)
        ],
        "pools": [asdict(p) for p in doc.pools],
        "sites": [_site(s) for s in doc.sites],
        "kubernetes": asdict(doc.kubernetes) if doc.kubernetes else None,
        # each workload as the preview has it, with the verdicts the other reports print ([]: none declared)
        "workloads": [asdict(w) | workload_data(w) for w in doc.workloads],
        "policy": asdict(doc.policy) if doc.policy else None,
        "warnings": list(doc.warnings),
    }


def render_json(doc: PreviewDoc) -> str:
    return json.dumps(report_data(doc), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
