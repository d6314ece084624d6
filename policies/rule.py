"""How one rule becomes a CrossGuard policy: metadata, thresholds, waivers.

A rule is a check function plus `Meta`. `ResourceRule` judges one resource at a time (the engine's
`Analyze`); `StackRule` judges the whole stack (`AnalyzeStack`), which is where cluster-wide sums
and links between resources live. Both are real `pulumi_policy` policies, so the Pulumi CLI runs
them unchanged. A rule the clouds share is one check over the facts each cloud's reader makes (facts.model), bound
once per cloud (`per_cloud`) under that cloud's name.

Thresholds: the policy's config (`--policy-pack-config`) when given, else what the stack's
`AiCluster` component declares (budgets, compliance), else the documented default.

Waivers (`compliance.waivers` in the stack spec, declared on the AiCluster component, or a
`waivers` list in the policy's config): a finding on the named resource (logical name or URN) is
not reported while the waiver holds; it is recorded as waived, with its reason, for reports. Once
the waiver has expired the finding is a violation again, and says so.
"""

from __future__ import annotations

import contextvars
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .facts.engine import Reader, Res, get, items, walk
from .facts.stack import Stack

F = TypeVar("F")
Concern = Literal["cost", "power", "compliance", "fabric", "storage", "sizing"]

WAIVERS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "description": "Accepted findings: [{policy, resource, reason, expires: YYYY-MM-DD}]",
    "items": {
        "type": "object",
        "properties": {
            "policy": {"type": "string"},
            "resource": {"type": "string"},
            "reason": {"type": "string"},
            "expires": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "format": "date"},
        },
        "required": ["resource", "reason", "expires"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class Meta:
    name: str  # <provider>-<service>-<resource>-<verb>-<what>
    display_name: str
    description: str  # one line
    concern: Concern
    severity: Severity
    enforcement: EnforcementLevel
    remediation: str
    frameworks: tuple[str, ...] = ()  # soc2, gdpr, hipaa, pci-dss, iso27001, cis-aws
    controls: tuple[str, ...] = ()  # e.g. "CIS AWS Foundations v6.0.0 6.7"
    config: dict[str, dict[str, Any]] = field(default_factory=dict)  # JSON schema per threshold

    def policy_args(self) -> dict[str, Any]:
        """What every pulumi_policy policy takes from the metadata, resource or stack alike."""
        return {
            "name": self.name,
            "description": self.description,
            "enforcement_level": self.enforcement,
            "config_schema": self.schema(),
            "display_name": self.display_name,
            "severity": self.severity,
            "tags": [self.concern, *self.frameworks],
            "remediation_steps": self.remediation,
        }

    def schema(self) -> PolicyConfigSchema:
        return PolicyConfigSchema(properties={**self.config, "waivers": WAIVERS_SCHEMA})


@dataclass(frozen=True)
class Waived:
    policy: str
    severity: str
    resource: str
    type: str
    urn: str
    message: str
    reason: str
    expires: str


# Where waived findings go. The offline engine collects them for reports; under the Pulumi CLI a
# waived finding is simply not reported.
WAIVED: contextvars.ContextVar[list[Waived] | None] = contextvars.ContextVar("aicluster_waived", default=None)


@dataclass
class Ctx:
    meta: Meta
    config: Mapping[str, Any]
    stack: Stack | None = None

    def setting(self, key: str, declared: tuple[str, ...] = (), default: Any = None) -> Any:
        """A threshold: policy config, else the AiCluster declaration at `declared`, else default."""
        value = self.config.get(key)
        if value is not None:
            return value
        if declared and self.stack is not None:
            found = self.stack.declared(*declared)
            if found is not None and found != []:
                return found
        return default

    def waivers(self) -> list[Mapping[str, Any]]:
        found = [w for w in items(self.config, "waivers") if get(w, "policy", default=self.meta.name) == self.meta.name]
        if self.stack is not None:
            found += [
                w for w in items(self.stack.declared("compliance"), "waivers") if get(w, "policy") == self.meta.name
            ]
        return found


class NotApplicable(Exception):
    """Raised by a check that has nothing to judge (e.g. no budget set); reported as not applicable."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _today() -> dt.date:
    return dt.date.today()


def _deliver(ctx: Ctx, res: Res | None, message: str, report: ReportViolation) -> None:
    name, urn, type_ = (res.name, res.urn, res.type) if res else ("", "", "")
    for w in ctx.waivers():
        if get(w, "resource") not in (name, urn) or not name:
            continue
        expires = str(get(w, "expires", default=""))
        reason = str(get(w, "reason", default=""))
        try:
            expired = dt.date.fromisoformat(expires) < _today()
        except ValueError:
            expired = True
        if expired:
            report(f"{message} (waiver expired {expires}: {reason})", urn or None)
            return
        sink = WAIVED.get()
        if sink is not None:
            sink.append(Waived(ctx.meta.name, ctx.meta.severity.value, name, type_, urn, message, reason, expires))
        return
    report(message, urn or None)


ResourceCheck = Callable[[Res, Ctx], Iterable[str]]
StackCheck = Callable[[Stack, Ctx], Iterable[tuple[Res | None, str]]]


def _scope(types: frozenset[str] | None, provider: str | None) -> str:
    """Why a rule has nothing to judge, in words: "no aws:efs/fileSystem:FileSystem in the stack"."""
    if types is not None:
        return f"no {' or '.join(sorted(types))} in the stack"
    return f"no {provider} resource in the stack" if provider else "no resource in the stack"


class ResourceRule(ResourceValidationPolicy):
    """A rule over single resources of the given types (None: every type of `provider`, or every type).
    A resource it does not judge is reported not applicable, as the engine's protocol has it; a rule that
    judged no resource of a stack is not applicable to that stack, not passed."""

    def __init__(
        self, meta: Meta, types: Iterable[str] | None, check: ResourceCheck, provider: str | None = None
    ) -> None:
        self.meta = meta
        self.types = frozenset(types) if types is not None else None
        self.provider = provider
        self.scope = _scope(self.types, provider)
        self.check = check
        super().__init__(validate=self._validate, **meta.policy_args())

    def applies(self, resource_type: str) -> bool:
        if self.types is not None:
            return resource_type in self.types
        return self.provider is None or resource_type.startswith(f"{self.provider}:")

    def _validate(self, args: ResourceValidationArgs, report: ReportViolation) -> None:
        if not self.applies(args.resource_type):
            args.not_applicable(self.scope)
        provider = args.provider.props if args.provider is not None else None
        try:
            self.run(
                Res(args.resource_type, args.name, args.urn, args.props, provider), args.get_config() or {}, report
            )
        except NotApplicable as na:
            args.not_applicable(na.reason)

    def run(self, res: Res, config: Mapping[str, Any], report: ReportViolation) -> None:
        ctx = Ctx(self.meta, config)
        for message in self.check(res, ctx):
            _deliver(ctx, res, message, report)


class StackRule(StackValidationPolicy):
    """A rule over the whole stack; findings name a resource, or the cluster for stack-wide sums.
    With `types`, it judges only stacks holding a resource of one of them (else: not applicable)."""

    def __init__(self, meta: Meta, check: StackCheck, types: Iterable[str] | None = None) -> None:
        self.meta = meta
        self.check = check
        self.types = frozenset(types) if types is not None else None
        super().__init__(validate=self._validate, **meta.policy_args())

    def _validate(self, args: StackValidationArgs, report: ReportViolation) -> None:
        try:
            self.run(_stack_of(args.resources), args.get_config() or {}, report)
        except NotApplicable as na:
            args.not_applicable(na.reason)

    def run(self, stack: Stack, config: Mapping[str, Any], report: ReportViolation) -> None:
        if self.types is not None and not stack.of(*self.types):
            raise NotApplicable(_scope(self.types, None))
        ctx = Ctx(self.meta, config, stack)
        for res, message in self.check(stack, ctx):
            _deliver(ctx, res if res is not None else stack.cluster, message, report)


Rule = ResourceRule | StackRule


def per_cloud(
    meta: Meta, reader: Reader[F], check: Callable[[Iterable[F], Ctx, str], Iterable[str]], fix: str = ""
) -> ResourceRule:
    """One cloud's policy of a cross-cloud rule: the rule's one check over the facts the cloud's reader makes of each
    resource, under the cloud's own name and metadata (waivers name it; controls differ), with the cloud's fix. The
    types the policy judges are the reader's."""
    return ResourceRule(meta, reader.types, lambda res, ctx: check(reader.read(res), ctx, fix), reader.provider)


# The last stack's facts, kept while the caller holds the same resource list: the offline engine
# hands every stack policy one list, so the facts are worked out once (the Pulumi engine builds a
# new list per policy, and gets fresh facts each time).
_LAST_STACK: list[tuple[Sequence[Any], Stack]] = []


def _stack_of(resources: Sequence[Any]) -> Stack:
    if _LAST_STACK and _LAST_STACK[0][0] is resources:
        return _LAST_STACK[0][1]
    stack = Stack(list(walk(resources)))
    _LAST_STACK[:] = [(resources, stack)]
    return stack


def forget_stack() -> None:
    """Drop the last stack's facts: the offline engine calls it when a run ends, so that they (and the props they
    hold) do not outlive the run until the next one."""
    _LAST_STACK.clear()
