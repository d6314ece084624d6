"""What every report says, computed once from the records: the verdict, budget use, findings by
severity and by framework, and the number formats. Renderers only lay these out."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar

from ._levels import SEVERITIES, Severity

if TYPE_CHECKING:  # the records, loaded when a report is rendered (`aicluster preview` needs only the groups)
    from ._doc import PolicyResults, PreviewDoc, Violation

GENERAL = "general"


@dataclass(frozen=True)
class Verdict:
    status: Literal["pass", "fail", "not-run"]
    icon: str
    text: str
    mandatory: int
    advisory: int
    waived: int
    passed: int
    not_applicable: int = 0  # policies that had nothing to judge: neither passed nor failed

    @property
    def label(self) -> str:
        """The status in words, for where an emoji may not render (HTML without an emoji font)."""
        return {"pass": "Passed", "fail": "Failed", "not-run": "Not checked"}[self.status]


def verdict(results: PolicyResults | None) -> Verdict:
    """Fail on any mandatory violation, as the pack does; advisory findings and waivers never fail."""
    if results is None:
        return Verdict("not-run", "⚪", "policy checks not run", 0, 0, 0, 0)
    mandatory_found = [v for v in results.violations if v.enforcement == "mandatory"]
    advisory_found = [v for v in results.violations if v.enforcement != "mandatory"]
    mandatory, advisory = len(mandatory_found), len(advisory_found)
    counts = (mandatory, advisory, len(results.waived), len(results.passed), len(results.not_applicable))
    na = f", {len(results.not_applicable)} not applicable" if results.not_applicable else ""
    if mandatory:
        text = plural(mandatory, "mandatory violation") + in_groups(mandatory_found)
        text += f", {advisory} advisory{in_groups(advisory_found)}" if advisory else ""
        return Verdict("fail", "❌", text, *counts)
    if advisory:
        text = f"no mandatory violations, {plural(advisory, 'advisory finding')}{in_groups(advisory_found)}"
        return Verdict("pass", "⚠️", text, *counts)
    applicable = "applicable " if results.not_applicable else ""
    passed = plural(len(results.passed), f"{applicable}policy", f"{applicable}policies")
    return Verdict("pass", "✅", f"all {passed} passed{na}", *counts)


@dataclass(frozen=True)
class Fact:
    """One row of a two-column table: what, and its value as shown."""

    label: str
    value: str


@dataclass(frozen=True)
class BudgetUse:
    key: str
    label: str
    budget: float
    actual: float
    fmt: Callable[[float], str]
    unpriced: tuple[str, ...] = ()  # what `actual` leaves out for want of a price

    @property
    def actual_text(self) -> str:
        return usd(self.actual, self.unpriced) if self.unpriced else self.fmt(self.actual)

    @property
    def used_pct(self) -> float:
        return self.actual / self.budget * 100


def budget_uses(doc: PreviewDoc) -> list[BudgetUse]:
    """Budgets the stack sets, against the figure the pack checks them on (facility power, not IT)."""
    if doc.cluster is None:
        return []
    b = doc.cluster.budgets
    candidates = [
        ("monthly_usd", "Cost, $/month", b.monthly_usd, doc.summary.cost_usd_per_month, usd, doc.summary.unpriced),
        ("power_kw", "Power (facility), kW", b.power_kw, doc.summary.power_kw_facility, kw, ()),
    ]
    return [
        BudgetUse(key, label, budget, actual, fmt, u) for key, label, budget, actual, fmt, u in candidates if budget
    ]


def by_severity(violations: Iterable[Violation]) -> list[tuple[Severity, list[Violation]]]:
    """Findings grouped critical first; empty severities left out; order within a group kept."""
    found = list(violations)
    groups = [(s, [v for v in found if v.severity == s]) for s in SEVERITIES]
    return [(s, vs) for s, vs in groups if vs]


def by_framework(results: PolicyResults) -> list[tuple[str, list[tuple[Severity, list[Violation]]]]]:
    """Findings under each framework their policy maps to (one finding may sit under several),
    frameworks in name order with policies that map to none under "general", last."""
    frameworks: dict[str, list[Violation]] = {}
    for v in results.violations:
        for name in results.policy(v.policy).frameworks or (GENERAL,):
            frameworks.setdefault(name, []).append(v)
    order = sorted(frameworks, key=lambda name: (name == GENERAL, name))
    return [(name, by_severity(frameworks[name])) for name in order]


@dataclass(frozen=True)
class SeverityGroups:
    """One severity's findings (counted one by one, as the verdict counts them) in groups."""

    severity: Severity
    count: int
    groups: list[FindingGroup[Violation]]


def grouped(violations: Iterable[Violation]) -> list[SeverityGroups]:
    """`by_severity`, each severity's findings grouped by policy and cause."""
    return [SeverityGroups(s, len(vs), group_findings(vs)) for s, vs in by_severity(violations)]


def grouped_by_framework(results: PolicyResults) -> list[tuple[str, list[SeverityGroups]]]:
    """`by_framework`, each severity's findings grouped by policy and cause."""
    return [
        (name, [SeverityGroups(s, len(vs), group_findings(vs)) for s, vs in severities])
        for name, severities in by_framework(results)
    ]


def in_groups(findings: Sequence[Finding]) -> str:
    """` in 2 groups` where the findings' table rows (groups by policy and cause) are fewer than the findings:
    the verdict counts findings one by one, the tables show groups; say both."""
    groups = len(group_findings(findings))
    return f" in {plural(groups, 'group')}" if groups != len(findings) else ""


def waived_in_groups(waived: Sequence[WaivedFinding]) -> str:
    groups = len(group_waived(waived))
    return f" in {plural(groups, 'group')}" if groups != len(waived) else ""


class _Named(Protocol):
    """What grouping reads of a finding: the resource it names and its message."""

    @property
    def resource(self) -> str: ...
    @property
    def message(self) -> str: ...


class Finding(_Named, Protocol):
    """A policy finding as the preview records it (a report's Violation or the preview's own)."""

    @property
    def policy(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def enforcement(self) -> str: ...


class WaivedFinding(_Named, Protocol):
    """A waived finding as the preview records it (a report's Waived or the pack's own)."""

    @property
    def policy(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def expires(self) -> str: ...


N = TypeVar("N", bound=_Named)
F = TypeVar("F", bound=Finding)
W = TypeVar("W", bound=WaivedFinding)
_KIND_CHARS = 60  # a longer text before the resource name is a sentence, not its kind ("route table")


def _split(finding: _Named) -> tuple[str, str]:
    """(kind, cause) of a message that names its resource: `subnet x lacks tags a` is kind `subnet`,
    cause `lacks tags a`; a message that does not name its resource is all cause."""
    if finding.resource:
        named = re.search(rf"(?<![\w.-]){re.escape(finding.resource)}(?![\w-])", finding.message)
        if named:
            kind, cause = finding.message[: named.start()].strip(), finding.message[named.end() :].strip()
            if cause and len(kind) <= _KIND_CHARS:
                return kind, cause
    return "", finding.message


@dataclass(frozen=True)
class FindingGroup(Generic[N]):
    """Findings of one policy with one cause (the message with its resource left out): one pool
    outside the allowed regions is one group of every resource it brings, not 26 findings."""

    cause: str
    findings: tuple[N, ...]

    @property
    def first(self) -> N:
        return self.findings[0]

    @property
    def count(self) -> int:
        return len(self.findings)

    @property
    def summary(self) -> str:
        """The finding's own message, or `26 resources, each <cause>`."""
        if self.count == 1:
            return self.first.message
        joiner = "" if self.cause[:1] in {":", ";", ",", "."} else ", each "
        return f"{self.count} resources{joiner}{self.cause}"

    def resources(self) -> list[str]:
        """Each finding's resource, with its kind where the message names one: `x-vpc (vpc)`."""
        labels = []
        for f in self.findings:
            kind, _ = _split(f)
            name = f.resource or "(stack)"
            labels.append(f"{name} ({kind})" if kind and self.count > 1 else name)
        return labels


def group_findings(findings: Iterable[F]) -> list[FindingGroup[F]]:
    """Findings grouped by policy, enforcement, severity and cause, in order of first appearance."""
    groups: dict[tuple[str, str, str, str], list[F]] = {}
    for f in findings:
        groups.setdefault((f.policy, f.enforcement, f.severity, _split(f)[1]), []).append(f)
    return [FindingGroup(key[3], tuple(found)) for key, found in groups.items()]


def group_waived(waived: Iterable[W]) -> list[FindingGroup[W]]:
    """Waived findings grouped as violations are (by policy, severity and cause), and by waiver (reason and
    expiry): one waiver over a pool's 26 resources is one row; the JSON and SARIF keep every finding."""
    groups: dict[tuple[str, str, str, str, str], list[W]] = {}
    for w in waived:
        groups.setdefault((w.policy, w.severity, _split(w)[1], w.reason, w.expires), []).append(w)
    return [FindingGroup(key[2], tuple(found)) for key, found in groups.items()]


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def whole(n: int) -> str:
    """A count with thousands separators (`1,600`), as every table prints them."""
    return f"{n:,}"


def usd(x: float | None, unpriced: Sequence[str] = ()) -> str:
    """`$1,234.50`; never `$0.00` for what has no price: `unpriced`, or `$X + unpriced items` for a partial sum
    (the words of aicluster.catalog.pricing.money, which reports may not import: they read only the preview JSON)."""
    if x is None:
        return "unpriced"
    return f"${x:,.2f}" + (" + unpriced items" if unpriced else "")


def kw(x: float) -> str:
    return f"{x:,.2f} kW"


def number(x: float) -> str:
    return f"{x:,.2f}"


def pct(x: float) -> str:
    return f"{x:.1f}%"


def signed(x: float, fmt: Callable[[float], str]) -> str:
    """`+$1.00`, `-$1.00`, `$0.00`: the sign leads, and a difference that rounds to zero has none."""
    text = fmt(abs(x))
    if text == fmt(0.0):
        return text
    return ("+" if x > 0 else "-") + text


def change_pct(base: float, head: float) -> str:
    """Relative change, signed; `new` where the base is zero and the head is not."""
    if base == 0:
        return "new" if head else "0.0%"
    return signed((head - base) / base * 100, pct)
