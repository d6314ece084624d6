"""SARIF 2.1.0 for code scanning (GitHub, GitLab, Azure DevOps).

One run; its driver is the policy pack and its rules are every policy of the pack, in the pack's
order, so `ruleIndex` is stable. A violation is a result at the resource (a logical location named
by its URN; stack-wide findings at the stack's own URN) and at the stack file (a physical location
relative to `%SRCROOT%`, or a `file://` URI outside the project), at the line of the stack field it comes
from where the preview knows it (`stack_line`: a pool's region, the tags, a budget; `properties.stackField`
names the field) and without a region where it does not.

One result per finding, not per group of findings with one cause (as the terminal and the human
reports show them): code scanning tracks, dismisses and closes alerts one result at a time, by
rule, location and fingerprint, and a waiver covers one resource; so each resource keeps its own
result and fingerprint, and the UI's grouping by rule does what the reports' grouping does. A waived
finding is a result too, with an accepted external suppression that carries the waiver's reason and
expiry, so a code-scanning UI shows it as dismissed rather than dropping it. A policy that had nothing
to judge is a result of kind `notApplicable` with its reason (never counted as passed). `partialFingerprints`
hash (policy, URN, message), so the same finding on the next run is the same alert.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from ._doc import Policy, PolicyResults, PreviewDoc, Violation, Waived

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT = "aiclusterFinding/v1"
SECURITY_SEVERITY = {"critical": "9.0", "high": "7.0", "medium": "4.0", "low": "2.0"}
LEVEL = {"mandatory": "error", "advisory": "warning", "disabled": "none"}


def fingerprint(policy: str, urn: str, message: str) -> str:
    return hashlib.sha256("\0".join((policy, urn, message)).encode()).hexdigest()


def _rule(policy: Policy) -> dict[str, Any]:
    return {
        "id": policy.name,
        "name": policy.display_name,
        "shortDescription": {"text": policy.description},
        "help": {"text": policy.remediation},
        "defaultConfiguration": {"level": LEVEL[policy.enforcement], "enabled": policy.enforcement != "disabled"},
        "properties": {
            "security-severity": SECURITY_SEVERITY[policy.severity],
            "tags": list(dict.fromkeys([policy.concern, *policy.frameworks])),
            "severity": policy.severity,
            "kind": policy.kind,
            "controls": list(policy.controls),
        },
    }


def _artifact(stack_file: str) -> dict[str, str]:
    """The stack file relative to `%SRCROOT%` when it lies in the project; outside it (an absolute path) a
    `file://` URI with no base, since SARIF forbids an absolute URI together with a `uriBaseId`."""
    if PurePosixPath(stack_file).is_absolute():
        return {"uri": PurePosixPath(stack_file).as_uri()}
    return {"uri": quote(stack_file), "uriBaseId": "%SRCROOT%"}


def _location(doc: PreviewDoc, finding: Violation | Waived | None) -> dict[str, Any]:
    """At the finding's resource, else (a stack-wide finding, a policy not applicable) at the stack."""
    if finding is not None and finding.resource:
        logical = {"name": finding.resource, "fullyQualifiedName": finding.urn, "kind": "resource"}
    else:
        stack_urn = f"urn:pulumi:{doc.stack}::{doc.project}::pulumi:pulumi:Stack::{doc.project}-{doc.stack}"
        logical = {"name": doc.stack, "fullyQualifiedName": stack_urn, "kind": "stack"}
    physical: dict[str, Any] = {"artifactLocation": _artifact(doc.stack_file)}
    if finding is not None and finding.stack_line is not None:
        physical["region"] = {"startLine": finding.stack_line}
    return {"physicalLocation": physical, "logicalLocations": [logical]}


def _result(doc: PreviewDoc, index: dict[str, int], finding: Violation | Waived, level: str) -> dict[str, Any]:
    return {
        "ruleId": finding.policy,
        "ruleIndex": index[finding.policy],
        "level": level,
        "message": {"text": finding.message},
        "locations": [_location(doc, finding)],
        "partialFingerprints": {FINGERPRINT: fingerprint(finding.policy, finding.urn, finding.message)},
        "properties": {
            "severity": finding.severity,
            **({"stackField": finding.stack_field} if finding.stack_field else {}),
        },
    }


def _waived_result(doc: PreviewDoc, results: PolicyResults, index: dict[str, int], w: Waived) -> dict[str, Any]:
    result = _result(doc, index, w, LEVEL[results.policy(w.policy).enforcement])
    suppression = {"kind": "external", "status": "accepted", "justification": w.reason}
    result["suppressions"] = [{**suppression, "properties": {"expires": w.expires}}]
    return result


def _not_applicable_result(doc: PreviewDoc, index: dict[str, int], policy: str, reason: str) -> dict[str, Any]:
    """A policy that had nothing to judge: SARIF's `notApplicable` kind (level `none`, as 3.27.9 requires
    of every kind but `fail`), at the stack, with the reason; not a pass and not an alert."""
    return {
        "ruleId": policy,
        "ruleIndex": index[policy],
        "kind": "notApplicable",
        "level": "none",
        "message": {"text": f"not applicable: {reason}" if reason else "not applicable"},
        "locations": [_location(doc, None)],
    }


def render_sarif(doc: PreviewDoc, results: PolicyResults) -> str:
    index = {p.name: i for i, p in enumerate(results.policies)}
    run = {
        "tool": {
            "driver": {
                "name": results.pack.name,
                "version": results.pack.version,
                "rules": [_rule(p) for p in results.policies],
            }
        },
        "automationDetails": {"id": f"{doc.project}/{doc.stack}/"},
        "results": [
            *(_result(doc, index, v, LEVEL[v.enforcement]) for v in results.violations),
            *(_waived_result(doc, results, index, w) for w in results.waived),
            *(_not_applicable_result(doc, index, n.policy, n.reason) for n in results.not_applicable),
        ],
    }
    log = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
