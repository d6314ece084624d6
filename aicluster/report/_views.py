"""What every report says, computed once from the records: the verdict, budget use, findings by
severity and by framework, and the number formats. Renderers only lay these out."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from ._doc import SEVERITIES, PolicyResults, PreviewDoc, Severity, Violation

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
    mandatory = sum(v.enforcement == "mandatory" for v in results.violations)
    advisory = len(results.violations) - mandatory
    counts = (mandatory, advisory, len(results.waived), len(results.passed), len(results.not_applicable))
    na = f", {len(results.not_applicable)} not applicable" if results.not_applicable else ""
    if mandatory:
        text = plural(mandatory, "mandatory violation") + (f", {advisory} advisory" if advisory else "")
        return Verdict("fail", "❌", text, *counts)
    if advisory:
        return Verdict("pass", "⚠️", f"no mandatory violations, {plural(advisory, 'advisory finding')}", *counts)
    applicable = "applicable " if results.not_applicable else ""
    passed = plural(len(results.passed), f"{applicable}policy", f"{applicable}policies")
    return Verdict("pass", "✅", f"all {passed} passed{na}", *counts)


@dataclass(frozen=True)
class BudgetUse:
    key: str
    label: str
    budget: float
    actual: float
    fmt: Callable[[float], str]

    @property
    def used_pct(self) -> float:
        return self.actual / self.budget * 100


def budget_uses(doc: PreviewDoc) -> list[BudgetUse]:
    """Budgets the stack sets, against the figure the pack checks them on (facility power, not IT)."""
    if doc.cluster is None:
        return []
    b = doc.cluster.budgets
    candidates = [
        ("monthly_usd", "Cost, $/month", b.monthly_usd, doc.summary.cost_usd_per_month, usd),
        ("power_kw", "Power (facility), kW", b.power_kw, doc.summary.power_kw_facility, kw),
    ]
    return [BudgetUse(key, label, budget, actual, fmt) for key, label, budget, actual, fmt in candidates if budget]


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


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def usd(x: float) -> str:
    return f"${x:,.2f}"


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
