"""JUnit XML for CI test views (GitLab merge-request widget, Jenkins, GitHub test-report actions).

One `<testsuite>` named "<pack> (<stack>)", one `<testcase>` per policy (not per resource:
the test is the rule, and a test list that grows with the cluster hides what changed), with the
policy's concern as `classname` so CI tools group cost/power/compliance rules together.

The build's pass/fail matches the pack's verdict, because CI tools fail a pipeline on any
`<failure>`:
- a policy with mandatory violations is a `<failure type="<severity>">`; its message counts them
  and gives the first cause; its text lists every violation, grouped by cause (one pool outside the
  allowed regions is one cause naming its 26 resources), and the remediation;
- advisory violations never fail: they go to the test's `<system-out>`, which GitLab and Jenkins
  show on the test's page;
- a disabled policy, or one that does not apply to the stack, is `<skipped message=...>`;
- waived findings go to `<system-out>` with the waiver's reason and expiry, on a passing test.
Counts on `<testsuite>` and `<testsuites>` are those of the testcases; `errors` is always 0.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ._doc import Policy, PolicyResults, PreviewDoc, Violation, Waived
from ._levels import SEVERITIES
from ._views import group_findings, plural, verdict

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """XML 1.0 cannot carry control characters (ANSI colours in a message): drop them."""
    return _NOT_XML.sub("", text)


def _line(finding: Violation | Waived) -> str:
    where = f"{finding.resource} ({finding.urn})" if finding.resource else "(stack)"
    return f"{where}: {finding.message}"


def _failure(case: ET.Element, policy: Policy, mandatory: list[Violation]) -> None:
    """One failure per policy; its text lists the findings grouped by cause, every resource named."""
    worst = min((v.severity for v in mandatory), key=SEVERITIES.index)
    groups = group_findings(mandatory)
    first = groups[0]
    head = f"{first.first.resource or '(stack)'}: {first.summary}" if first.count == 1 else first.summary
    summary = head.splitlines()[0]
    more = f" (and {plural(len(groups) - 1, 'other cause')})" if len(groups) > 1 else ""
    message = f"{plural(len(mandatory), 'mandatory violation')}: {summary}{more}"
    failure = ET.SubElement(case, "failure", type=worst, message=_xml(message))
    lines = []
    for g in groups:
        if g.count == 1:
            lines.append(_line(g.first))
        else:
            lines.extend([f"{g.summary}:", *(f"  - {_line(v)}" for v in g.findings)])
    failure.text = _xml("\n".join([*lines, f"Remediation: {policy.remediation}"]))


def _testcase(results: PolicyResults, policy: Policy) -> ET.Element:
    case = ET.Element("testcase", classname=_xml(policy.concern), name=_xml(policy.name), time="0")
    violations = [v for v in results.violations if v.policy == policy.name]
    mandatory = [v for v in violations if v.enforcement == "mandatory"]
    not_applicable = [n.reason for n in results.not_applicable if n.policy == policy.name]
    if mandatory:
        _failure(case, policy, mandatory)
    elif policy.enforcement == "disabled":
        ET.SubElement(case, "skipped", message="disabled in the policy pack's configuration")
    elif not_applicable:
        ET.SubElement(case, "skipped", message=_xml(f"not applicable: {not_applicable[0]}"))
    notes = [
        *(f"advisory: {_line(v)}" for v in violations if v.enforcement == "advisory"),
        *(
            f"waived until {w.expires}: {_line(w)} (reason: {w.reason})"
            for w in results.waived
            if w.policy == policy.name
        ),
    ]
    if notes:
        ET.SubElement(case, "system-out").text = _xml("\n".join(notes))
    return case


def _counts(cases: list[ET.Element]) -> dict[str, str]:
    return {
        "tests": str(len(cases)),
        "failures": str(sum(c.find("failure") is not None for c in cases)),
        "errors": "0",
        "skipped": str(sum(c.find("skipped") is not None for c in cases)),
        "time": "0",
    }


def render_junit(doc: PreviewDoc, results: PolicyResults) -> str:
    cases = [_testcase(results, p) for p in results.policies]
    name = f"{results.pack.name} ({doc.stack})"
    root = ET.Element("testsuites", {"name": _xml(name), **_counts(cases)})
    suite = ET.SubElement(root, "testsuite", {"name": _xml(name), **_counts(cases)})
    properties = ET.SubElement(suite, "properties")
    facts = {
        "stack": doc.stack,
        "project": doc.project,
        "pack.version": results.pack.version,
        "verdict": verdict(results).text,
    }
    for key, value in facts.items():
        ET.SubElement(properties, "property", name=key, value=_xml(value))
    suite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
