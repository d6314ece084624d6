"""Run the policy pack in-process over an offline preview's captured resources.

Mirrors what the Pulumi engine and the SDK's analyzer servicer do with a pack (the pack is the same
`policies.POLICIES` the CLI serves): enforcement levels from the pack, overridden by a CrossGuard
policy config (`{"all": ..., "<policy>": "mandatory" | {"enforcementLevel": ..., <properties>}}`);
`Analyze` for every resource, then `AnalyzeStack` over all of them with parents and property
dependencies linked; a property unknown during preview turns a finding into the engine's advisory
"can't run policy ... during preview". Waived findings are collected for reports.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import inspect
import json
import math
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeGuard

from pulumi_policy import (
    EnforcementLevel,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    proxy,
)
from pulumi_policy.policy import PolicyCustomTimeouts, _NotApplicableError
from pulumi_policy.proxy import UnknownValueError

from aicluster.plan import ClusterPlan
from aicluster.spec import Budgets, Problem, Waiver, clip, did_you_mean, model_problems, number_bounds
from aicluster.spec import Path as SpecPath
from policies import PACK_NAME, POLICIES, ResourceRule, Rule, Waived, pack_version
from policies.facts import Res
from policies.rule import WAIVED, NotApplicable, forget_stack

from .engine import SECRET_VALUE, Capture, Resource

_LEVELS = {level.value: level for level in EnforcementLevel}
# The engine's sentinels for values unknown during preview, as the SDK's proxy checks them.
_UNKNOWNS = frozenset(
    {
        proxy.UNKNOWN_BOOLEAN_VALUE,
        proxy.UNKNOWN_NUMBER_VALUE,
        proxy.UNKNOWN_STRING_VALUE,
        proxy.UNKNOWN_ARRAY_VALUE,
        proxy.UNKNOWN_ASSET_VALUE,
        proxy.UNKNOWN_ARCHIVE_VALUE,
        proxy.UNKNOWN_OBJECT_VALUE,
    }
)


@dataclass(frozen=True)
class Violation:
    policy: str
    severity: str
    enforcement: str  # advisory | mandatory
    resource: str
    type: str
    urn: str
    message: str


@dataclass
class PolicyResult:
    pack: dict[str, str]
    policies: list[dict[str, Any]]
    violations: list[Violation] = field(default_factory=list)
    waived: list[Waived] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    not_applicable: list[dict[str, str]] = field(default_factory=list)

    @property
    def mandatory(self) -> list[Violation]:
        return [v for v in self.violations if v.enforcement == "mandatory"]

    def to_json(self) -> dict[str, Any]:
        return {
            "pack": self.pack,
            "policies": self.policies,
            "violations": [asdict(v) for v in self.violations],
            "waived": [asdict(w) for w in self.waived],
            "passed": self.passed,
            "not_applicable": self.not_applicable,
        }


class PolicyConfigError(ValueError):
    """The policy config breaks the pack's schemas: every problem, one per line."""

    def __init__(self, problems: Sequence[Problem], source: str = "policy config") -> None:
        self.problems = list(problems)
        self.source = source
        super().__init__("\n".join(p.render(source) for p in self.problems))


LEVELS_TEXT = ", ".join(sorted(_LEVELS))

# The JSON Schema keywords `config_problems` understands: every schema the pack declares uses only these
# (tests/policies/test_config.py holds the pack to it, and checks the verdicts against jsonschema's).
SCHEMA_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "pattern",
        "format",
    }
)
_TYPES = {
    "number": "a finite number",
    "integer": "a whole number",
    "string": "a string",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
}
_FORMATS = {"date": "a date (YYYY-MM-DD)"}
_MAX_SHOWN_DIGITS = 40


def _json_show(value: Any) -> str:
    """A JSON value as the user wrote it (`true`, `"lots"`, `1e+308`), never a Python repr; one line, short."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        if value.bit_length() > _MAX_SHOWN_DIGITS * 3.33:  # str() of a huge integer is slow, or refused
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
        return str(value)
    if isinstance(value, float):
        return json.dumps(value)  # Infinity, -Infinity, NaN, 1e+308
    if isinstance(value, str):
        return json.dumps(clip(value))  # escapes control characters: one problem, one line
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a value JSON does not have"


def _ecma(pattern: str) -> re.Pattern[str]:
    """A JSON Schema pattern (ECMA 262): `$` ends the string, where Python's also matches before a final newline."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


def _allowed(schema: Mapping[str, Any]) -> str:
    """What a schema allows, in words: "a finite number greater than 0 and at most 1"."""
    if "enum" in schema:
        return "one of " + ", ".join(_json_show(v) for v in schema["enum"])
    text = _TYPES.get(str(schema.get("type")), "a value")
    if "format" in schema:
        text = _FORMATS.get(schema["format"], text)
    bounds = []
    for key, words in (
        ("exclusiveMinimum", "greater than"),
        ("minimum", "at least"),
        ("exclusiveMaximum", "less than"),
        ("maximum", "at most"),
    ):
        if key in schema:
            bounds.append(f"{words} {_json_show(schema[key])}")
    return text + (" " + " and ".join(bounds) if bounds else "")


def _is_type(value: Any, type_: str) -> bool:
    if type_ == "number":
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if type_ == "integer":
        if isinstance(value, float):
            return math.isfinite(value) and value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    kinds: dict[str, type | tuple[type, ...]] = {"string": str, "boolean": bool, "array": list, "object": Mapping}
    return isinstance(value, kinds[type_])


def schema_problems(schema: Mapping[str, Any], value: Any, path: SpecPath = ()) -> list[Problem]:
    """Where `value` breaks `schema` (the subset of JSON Schema in SCHEMA_KEYWORDS), one problem per place.
    Numbers must also be finite: JSON's `Infinity` and `NaN` are no budget."""
    got = f"got {_json_show(value)}; must be "
    if "enum" in schema and value not in schema["enum"]:
        return [Problem(path, got + _allowed(schema))]
    type_ = schema.get("type")
    if type_ is not None and not _is_type(value, type_):
        return [Problem(path, got + _allowed(schema))]
    if type_ in ("number", "integer"):
        broken = {
            "minimum": value < schema.get("minimum", value),
            "exclusiveMinimum": "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"],
            "maximum": value > schema.get("maximum", value),
            "exclusiveMaximum": "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"],
        }
        if any(broken.values()):
            return [Problem(path, got + _allowed(schema))]
    if isinstance(value, str):
        if "pattern" in schema and not _ecma(schema["pattern"]).search(value):
            # never the raw pattern: the format, or the setting's description, says the shape in words
            shown = "" if "format" in schema else f" of the form: {schema.get('description', 'see the policy')}"
            return [Problem(path, got + _allowed(schema) + shown)]
        if schema.get("format") == "date":
            try:
                dt.date.fromisoformat(value)
            except ValueError:
                return [Problem(path, got + _allowed(schema))]
    out: list[Problem] = []
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += schema_problems(schema["items"], item, (*path, i))
    if isinstance(value, Mapping):
        props: Mapping[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                out.append(Problem((*path, key), f"missing; {_allowed(props.get(key, {}))} is required here"))
        for key, item in value.items():
            if key in props:
                out += schema_problems(props[key], item, (*path, key))
            elif schema.get("additionalProperties") is False:
                out.append(
                    Problem(
                        (*path, key),
                        f"no such setting; allowed: {', '.join(props)}",
                        hint=did_you_mean(key, list(props)),
                    )
                )
    return out


# A policy setting that stands in for a stack budget (`monthly_usd` for budgets.monthly_usd) is bounded as the
# stack's budget is: one definition, the spec's.
_BUDGET_BOUNDS = number_bounds(Budgets)


def entry_schema(policy: Rule) -> dict[str, Any]:
    """The schema one policy's entry in a policy config meets: its declared properties and required keys
    (what the engine checks) plus `enforcementLevel`; no other key (a typo would silently change nothing)."""
    declared = policy.config_schema
    properties = {
        key: {**value, **_BUDGET_BOUNDS.get(key, {})}
        for key, value in (declared.properties if declared else {}).items()
    }
    return {
        "type": "object",
        "properties": {**properties, "enforcementLevel": {"type": "string", "enum": sorted(_LEVELS)}},
        "required": list(declared.required or []) if declared else [],
        "additionalProperties": False,
    }


_ALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"enforcementLevel": {"type": "string", "enum": sorted(_LEVELS)}},
    "additionalProperties": False,
}


def config_problems(config: Any, policies: Sequence[Rule] = POLICIES) -> list[Problem]:
    """Every way a CrossGuard policy config breaks the pack: keys that name no policy, enforcement levels,
    and each policy's settings against the config schema it declares, as the Pulumi engine checks them."""
    if not isinstance(config, Mapping):
        return [Problem((), f"got {_json_show(config)}; must be a JSON object of policy name -> settings")]
    by_name = {p.name: p for p in policies}
    out: list[Problem] = []
    for name, entry in config.items():
        policy = by_name.get(name)
        if name != "all" and policy is None:
            out.append(
                Problem(
                    (name,),
                    "no such policy in the pack (`aicluster policies` lists them; `all` sets every policy's level)",
                    hint=did_you_mean(name, list(by_name)),
                )
            )
            continue
        if isinstance(entry, str):
            if entry not in _LEVELS:
                out.append(Problem((name,), f"got {_json_show(entry)}; must be an enforcement level: {LEVELS_TEXT}"))
            continue
        if not isinstance(entry, Mapping):
            out.append(
                Problem(
                    (name,),
                    f"got {_json_show(entry)}; must be an enforcement level ({LEVELS_TEXT}) or an object of settings",
                )
            )
            continue
        schema = _ALL_SCHEMA if policy is None else entry_schema(policy)
        if "waivers" in schema["properties"]:  # each waiver is checked as a stack's waiver is, below
            schema = {**schema, "properties": {**schema["properties"], "waivers": {"type": "array"}}}
        out += schema_problems(schema, entry, (name,))
        for i, waiver in enumerate(entry.get("waivers") or []) if isinstance(entry.get("waivers"), list) else ():
            out += _waiver_problems(name, i, waiver)
    return out


def _waiver_problems(name: str, i: int, waiver: Any) -> list[Problem]:
    """A policy config's waiver meets the rules of a stack's (`compliance.waivers`): the same model."""
    where = (name, "waivers", i)
    if not isinstance(waiver, Mapping):
        return [Problem(where, f"got {_json_show(waiver)}; must be a mapping of policy, resource, reason, expires")]
    if waiver.get("policy", name) != name:
        return [
            Problem(
                (*where, "policy"),
                f"got {_json_show(waiver['policy'])}; a waiver under {name} waives only {name}'s findings "
                f"(move it under {_json_show(waiver['policy'])}, or leave policy out)",
            )
        ]
    return model_problems(Waiver, {"policy": name, **waiver}, where)


def _level(value: Any) -> EnforcementLevel:
    return _LEVELS[value]


def resolve_config(
    config: Mapping[str, Any] | None, policies: Sequence[Rule] = POLICIES
) -> tuple[dict[str, EnforcementLevel], dict[str, dict[str, Any]]]:
    """Per-policy enforcement level and properties from a CrossGuard policy config, as the engine
    resolves them: the policy's own entry beats `all`, which beats the policy's default.
    A config that breaks the pack's schemas raises PolicyConfigError with every problem."""
    config = dict(config or {})
    problems = config_problems(config, policies)
    if problems:
        raise PolicyConfigError(problems)
    levels: dict[str, EnforcementLevel] = {}
    props: dict[str, dict[str, Any]] = {}
    every = config.get("all")
    for p in policies:
        level = p.meta.enforcement
        if isinstance(every, str):
            level = _level(every)
        elif isinstance(every, Mapping) and "enforcementLevel" in every:
            level = _level(every["enforcementLevel"])
        entry = config.get(p.name)
        if isinstance(entry, str):
            level = _level(entry)
        elif isinstance(entry, Mapping):
            if "enforcementLevel" in entry:
                level = _level(entry["enforcementLevel"])
            props[p.name] = {k: v for k, v in entry.items() if k != "enforcementLevel"}
        levels[p.name] = level
    return levels, props


def _wire(value: Any) -> Any:
    """Inputs as the engine hands them to a pack: unknowns stay sentinels, secrets stay hidden."""
    if value is SECRET_VALUE:
        return "[secret]"
    if isinstance(value, Mapping):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


def _checked(key: Any, value: Any, path: list[str]) -> Any:
    """A value read from wired props: an unknown raises the SDK's error, naming its path as the SDK does."""
    if isinstance(value, str) and value in _UNKNOWNS:
        raise UnknownValueError(value, [*path, str(key)])
    return value


# Whether values of a type are containers a policy reads into (what `_wire` rebuilds and the SDK proxies): decided
# once per type, as an ABC isinstance on every scalar read costs more than the read.
_NESTS: dict[type, bool] = {}


def _nests(t: type) -> bool:
    _NESTS[t] = nests = issubclass(t, Mapping) or issubclass(t, list)
    return nests


def _lazy(value: Any, path: list[str]) -> Any:
    """`unknown_checking_proxy(_wire(value))` of one value, one level at a time (containers on first read)."""
    if value is SECRET_VALUE:
        return "[secret]"
    if isinstance(value, Mapping):
        return _WiredMap(value, path)
    if isinstance(value, list):
        return _WiredList(value, path)
    return value


class _WiredMap(Mapping[str, Any]):
    """What `unknown_checking_proxy(_wire(inputs))` gives a policy, built as it is read rather than up front.

    The SDK's proxy copies every resource's inputs twice (wiring, then proxying) before any policy runs, though
    most policies read a few keys of a few resource types; this wires and proxies a container the first time it
    is read, and then hands out the same object (as the eager copy did). Reads behave as the SDK's proxy: an
    unknown raises `UnknownValueError` with the same path, secrets read "[secret]", a missing key is a KeyError.
    """

    __slots__ = ("_made", "_path", "_target")

    def __init__(self, target: Mapping[str, Any], path: list[str]) -> None:
        self._target = target
        self._path = path
        self._made: dict[Any, Any] = {}

    def __getitem__(self, key: Any) -> Any:
        made = self._made
        if key in made:
            return made[key]
        value = self._target[key]
        nests = _NESTS.get(type(value))
        if nests is None:
            nests = _nests(type(value))
        if nests:
            made[key] = value = _lazy(value, [*self._path, str(key)])
            return value
        return _checked(key, "[secret]" if value is SECRET_VALUE else value, self._path)

    def __contains__(self, key: Any) -> bool:  # as Mapping's (a read: an unknown raises), without building the value
        if key in self._made:
            return True
        try:
            value = self._target[key]
        except KeyError:
            return False
        _checked(key, value, self._path)
        return True

    def __setitem__(self, key: Any, value: Any) -> None:  # the SDK's proxy allows it; the capture stays as it was
        if key not in self._target:
            self._target = {**self._target, key: None}
        self._made[key] = value

    def __len__(self) -> int:
        return len(self._target)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._target)


class _WiredList(Sequence[Any]):
    """The list counterpart of `_WiredMap` (the SDK's `_ListProxy`)."""

    __slots__ = ("_made", "_path", "_target")

    def __init__(self, target: list[Any], path: list[str]) -> None:
        self._target = target
        self._path = path
        self._made: dict[int, Any] = {}

    def __getitem__(self, key: Any) -> Any:
        target = self._target
        if isinstance(key, slice):  # as the SDK's: a plain list of wired items, unknowns not checked
            return [self._item(i) for i in range(len(target))[key]]
        value = target[key]
        nests = _NESTS.get(type(value))
        if nests is None:
            nests = _nests(type(value))
        if nests:
            return self._item(key + len(target) if key < 0 else key)
        return _checked(key, "[secret]" if value is SECRET_VALUE else value, self._path)

    def _item(self, index: int) -> Any:
        made = self._made
        if index not in made:
            made[index] = _lazy(self._target[index], [*self._path, str(index)])
        return made[index]

    def __len__(self) -> int:
        return len(self._target)


def wired_props(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    """A resource's inputs as a policy reads them (`unknown_checking_proxy(_wire(inputs))`), wired lazily."""
    return _WiredMap(inputs, [])


def _screens(policy: Rule) -> TypeGuard[ResourceRule]:
    """A ResourceRule with its own validate: `if not self.applies(type): args.not_applicable(self.scope)`, then
    `self.run(Res(...), config, report)` with NotApplicable as not applicable; the engine here does the same
    without the SDK's per-call arguments."""
    return isinstance(policy, ResourceRule) and type(policy)._validate is ResourceRule._validate


def _opts(parent: str | None) -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], False, [], PolicyCustomTimeouts(0, 0, 0), [], parent=parent)


class _Loop:
    """The event loop of one policy run, made when the first policy returns an awaitable (the SDK lets validate be
    a coroutine function) and closed when the run ends: never one loop per call, never one left to the garbage
    collector (as in `engine.run`)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def call(self, fn: Any, *args: Any) -> None:
        result = fn(*args)
        if inspect.isawaitable(result):
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(result)

    def close(self) -> None:
        if self._loop is not None:
            try:
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            finally:
                self._loop.close()
                self._loop = None


@dataclass
class Timings:
    """Where a run's time went (what benchmarks/policy_scale.py prints): seconds per phase, in run order
    (setup: config, policy list, props wiring; resource policies; stack resources; stack policies; findings), and
    per policy. A stack policy's time includes the stack facts it is the first to ask for."""

    phases: dict[str, float] = field(default_factory=dict)
    policies: dict[str, float] = field(default_factory=dict)

    def add(self, key: str, seconds: float, into: str = "policies") -> None:
        table = self.policies if into == "policies" else self.phases
        table[key] = table.get(key, 0.0) + seconds


def evaluate(
    capture: Capture,
    config: Mapping[str, Any] | None = None,
    policies: Sequence[Rule] = POLICIES,
    timings: Timings | None = None,
) -> PolicyResult:
    """Run the pack over a capture as the engine would (see the module's docstring); `timings`, when given, is
    filled with where the time went."""
    collecting = gc.isenabled()
    # No cycle collection while the pack runs: it makes many small objects that live until the run ends (props
    # read, facts, findings), and the collections they set off walk them, and every full one the whole heap, the
    # capture included (at 10,000 resources that was half the run). Cycles the run leaves are collected after it.
    gc.disable()
    try:
        return _evaluate(capture, config, policies, timings)
    finally:
        if collecting:
            gc.enable()


def _evaluate(
    capture: Capture, config: Mapping[str, Any] | None, policies: Sequence[Rule], timings: Timings | None
) -> PolicyResult:
    clock = time.perf_counter
    started = clock()

    def lap(phase: str) -> None:
        nonlocal started
        if timings is not None:
            now = clock()
            timings.add(phase, now - started, into="phases")
            started = now

    levels, props = resolve_config(config, policies)
    result = PolicyResult(
        pack={"name": PACK_NAME, "version": pack_version()},
        policies=sorted((describe(p, levels[p.name]) for p in policies), key=lambda d: d["name"]),
    )
    by_urn = {r.urn: r for r in capture.resources}
    wired = {r.urn: wired_props(r.inputs) for r in capture.resources}
    providers = {
        r.urn: PolicyProviderResource(r.type, wired[r.urn], r.urn, r.name)
        for r in capture.resources
        if r.type.startswith("pulumi:providers:")
    }
    failed: set[str] = set()
    not_applicable: dict[str, str] = {}

    def reporter(policy: Rule, level: EnforcementLevel, res: Resource | None) -> Any:
        def report(message: str, urn: str | None = None) -> None:
            target = by_urn.get(urn) if urn else res
            failed.add(policy.name)
            result.violations.append(
                Violation(
                    policy.name,
                    policy.meta.severity.value,
                    "advisory" if level == EnforcementLevel.ADVISORY else "mandatory",
                    target.name if target else "",
                    target.type if target else "",
                    target.urn if target else "",
                    message,
                )
            )

        return report

    judged: set[str] = set()  # resource policies that judged at least one resource

    def guarded(policy: Rule, level: EnforcementLevel, res: Resource | None, fn: Any, *args: Any) -> None:
        if timings is not None:
            begun = clock()
            try:
                judge(policy, level, res, fn, *args)
            finally:
                timings.add(policy.name, clock() - begun)
        else:
            judge(policy, level, res, fn, *args)

    def judge(policy: Rule, level: EnforcementLevel, res: Resource | None, fn: Any, *args: Any) -> None:
        try:
            loop.call(fn, *args, reporter(policy, level, res))
            judged.add(policy.name)
        except UnknownValueError as e:
            judged.add(policy.name)
            pack = f"{PACK_NAME}@v{result.pack['version']}"
            report = reporter(policy, EnforcementLevel.ADVISORY, res)
            report(f"can't run policy '{policy.name}' from policy pack '{pack}' during preview: {e.message}")
        except (_NotApplicableError, NotApplicable) as e:
            not_applicable.setdefault(policy.name, e.reason or "")

    lap("setup")
    loop = _Loop()
    token = WAIVED.set(result.waived)
    try:
        active = [p for p in policies if levels[p.name] != EnforcementLevel.DISABLED]
        resource_policies = [p for p in active if isinstance(p, ResourceValidationPolicy)]
        # Which resource policies judge a type, worked out once per type: a rule says "not applicable" (its scope)
        # to every resource of a type it does not judge, before it reads anything, so that answer is recorded at
        # the type's first resource (as the first of those answers would be) and the rule is not called again.
        judging: dict[str, list[Rule]] = {}
        for r in capture.resources:
            if not r.custom or r.type.startswith("pulumi:providers:"):
                continue
            todo = judging.get(r.type)
            if todo is None:
                todo = judging[r.type] = []
                for p in resource_policies:
                    if _screens(p) and not p.applies(r.type):
                        not_applicable.setdefault(p.name, p.scope)
                    else:
                        todo.append(p)
            provider = providers.get(r.provider or "")
            opts = _opts(r.parent)
            for rule in todo:
                config = props.get(rule.name, {})
                if _screens(rule):  # what its validate does once it applies, without the SDK's arguments
                    res = Res(r.type, r.name, r.urn, wired[r.urn], provider.props if provider is not None else None)
                    guarded(rule, levels[rule.name], r, rule.run, res, config)
                    continue
                args = ResourceValidationArgs(r.type, wired[r.urn], r.urn, r.name, opts, provider, config, {})
                guarded(rule, levels[rule.name], r, rule.validate, args)
        # As the engine sums up the per-resource answers: a resource policy is not applicable to the stack
        # when it judged none of its resources (each said not applicable, or there were none), else it ran.
        for rp in resource_policies:
            if rp.name in judged:
                not_applicable.pop(rp.name, None)
            else:
                not_applicable.setdefault(rp.name, getattr(rp, "scope", "no resource it judges in the stack"))
        lap("resource policies")
        stack_resources = _policy_resources(capture, wired, providers)
        lap("stack resources")
        for sp in active:
            if isinstance(sp, ResourceValidationPolicy):
                continue
            stack_args = StackValidationArgs(stack_resources, props.get(sp.name, {}), {})
            guarded(sp, levels[sp.name], None, sp.validate, stack_args)
    finally:
        WAIVED.reset(token)
        loop.close()
        forget_stack()
    lap("stack policies")
    result.violations.sort(key=lambda v: (v.policy, v.urn, v.message))
    result.waived.sort(key=lambda w: (w.policy, w.urn, w.message))
    result.passed = sorted(p.name for p in active if p.name not in failed and p.name not in not_applicable)
    result.not_applicable = [{"policy": k, "reason": v} for k, v in sorted(not_applicable.items())]
    lap("findings")
    return result


def _policy_resources(
    capture: Capture, wired: Mapping[str, Any], providers: Mapping[str, PolicyProviderResource]
) -> list[PolicyResource]:
    made = {
        r.urn: PolicyResource(
            r.type, wired[r.urn], r.urn, r.name, _opts(r.parent), providers.get(r.provider or ""), None, [], {}
        )
        for r in capture.resources
    }
    for r in capture.resources:
        pr = made[r.urn]
        pr.parent = made.get(r.parent or "")
        pr.dependencies = [made[d] for d in r.dependencies if d in made]
        pr.property_dependencies = {k: [made[u] for u in v if u in made] for k, v in r.property_dependencies.items()}
    return list(made.values())


def describe(policy: Rule, level: EnforcementLevel) -> dict[str, Any]:
    m = policy.meta
    return {
        "name": m.name,
        "display_name": m.display_name,
        "description": m.description,
        "concern": m.concern,
        "kind": "resource" if isinstance(policy, ResourceValidationPolicy) else "stack",
        "severity": m.severity.value,
        "enforcement": level.value,
        "remediation": m.remediation,
        "frameworks": list(m.frameworks),
        "controls": list(m.controls),
    }


IB_SIZE_POLICY = "azure-compute-vmss-disallow-over-100-vms"


def pack_config(
    waivers: Sequence[Any], policies: Sequence[Rule] = POLICIES, ib_domain_max_vms: int = 100
) -> dict[str, Any]:
    """A `--policy-pack-config` file carrying what resource policies cannot read from AiCluster under the
    Pulumi CLI: the stack's waivers, to every policy they name, and a raised InfiniBand-domain limit."""
    out: dict[str, Any] = {}
    if ib_domain_max_vms != 100:
        out[IB_SIZE_POLICY] = {"max_vms": ib_domain_max_vms}
    for w in waivers:
        entry = out.setdefault(w.policy, {})
        entry.setdefault("waivers", []).append(
            {"policy": w.policy, "resource": w.resource, "reason": w.reason, "expires": str(w.expires)}
        )
    known = {p.name for p in policies}
    return {k: v for k, v in sorted(out.items()) if k in known}


def stack_pack_config(plan: ClusterPlan, policies: Sequence[Rule] = POLICIES) -> dict[str, Any]:
    """What a planned stack implies for the pack's config (what `aicluster policy-config` writes)."""
    return pack_config(plan.compliance.waivers, policies, ib_domain_max_vms=plan.ib_domain_max_vms())


def with_stack_config(derived: Mapping[str, Any], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The config a preview runs with: what the stack implies (`pack_config`) under what the user gave.
    The user's settings win key by key; waivers from both apply; a bare level ("advisory") keeps the
    stack's settings for that policy."""
    out: dict[str, Any] = {k: dict(v) for k, v in derived.items()}
    for name, entry in (given or {}).items():
        base = out.get(name)
        if base is None:
            out[name] = entry
        elif isinstance(entry, str):
            out[name] = {**base, "enforcementLevel": entry}
        elif isinstance(entry, Mapping):
            waivers = [*base.get("waivers", []), *entry.get("waivers", [])]
            out[name] = {**base, **entry, **({"waivers": waivers} if waivers else {})}
        else:
            out[name] = entry  # not a valid entry: resolve_config reports it as given
    return out
